/**
 * Why `JSON.parse` failed, in words that quote at most a short escaped excerpt of the text
 * (never the engine's own message, which quotes the input at length).
 *
 * @module
 */
import { parse as parseLenient, type ParseError, printParseErrorCode } from "jsonc-parser";
import { escapedExcerpt } from "./excerpt.ts";

/** jsonc-parser options that accept exactly what `JSON.parse` accepts. */
export const STRICT_JSON = { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false } as const;

/**
 * Where and why `JSON.parse(text)` failed, as jsonc-parser's strict mode finds it: the UTF-16
 * offset of the first error and a reason in words (`invalid JSON (value expected)`). The
 * engine's own message is not used: it quotes the input at length.
 *
 * @example
 * ```ts
 * jsonSyntaxErrorAt('{"a":1,}'); // { offset: 7, reason: "invalid JSON (property name expected)" }
 * ```
 */
export function jsonSyntaxErrorAt(text: string): { offset: number; reason: string } {
  if (text.trim().length === 0) return { offset: text.length, reason: "an empty file" };
  const errors: ParseError[] = [];
  parseLenient(text, errors, STRICT_JSON);
  const first = errors.reduce<ParseError | undefined>((min, e) => (min === undefined || e.offset < min.offset ? e : min), undefined);
  if (!first) return { offset: 0, reason: "invalid JSON" }; // the two parsers disagree: should not happen
  const code = printParseErrorCode(first.error).replace(/([a-z])([A-Z])/g, "$1 $2").toLowerCase();
  return { offset: first.offset, reason: `invalid JSON (${code})` };
}

/**
 * Why `JSON.parse(text)` failed, quoting at most a short escaped excerpt of `text`:
 * `invalid JSON (property name expected) at character 8 near "}"`.
 *
 * @example
 * ```ts
 * describeJsonError("root:x:0:0:root:/root:/bin/bash"); // 'invalid JSON (invalid symbol) at character 1 near "root:x:0:0:root:/root:/b"…'
 * ```
 */
export function describeJsonError(text: string): string {
  const { offset, reason } = jsonSyntaxErrorAt(text);
  if (offset >= text.length) return `${reason} at its end (${text.length} characters)`;
  return `${reason} at character ${offset + 1} near ${escapedExcerpt(text.slice(offset))}`;
}
