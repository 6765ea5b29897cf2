/**
 * Short, escaped quotes of file content for error messages. A message may be printed to a
 * terminal, logged or sent on: it quotes at most {@linkcode EXCERPT_CHARS} characters of
 * what it found, with every character outside printable ASCII escaped, so a file can neither
 * flood a message nor move a terminal's cursor, and no more than a few bytes of it leave.
 *
 * @module
 */
import { parse as parseLenient, printParseErrorCode, type ParseError } from "jsonc-parser";

/** The most characters of a file an error message quotes. */
export const EXCERPT_CHARS = 24;

/**
 * `text` quoted for a message: at most `max` characters, `"`-quoted, with `"` and `\`
 * escaped and every character outside printable ASCII written `\uXXXX` (control
 * characters, DEL, C1 controls, bidirectional overrides, everything non-ASCII). A cut
 * quote ends with `…` outside the quotes.
 *
 * @example
 * ```ts
 * escapedExcerpt("root:x:0:0:root:/root:/bin/bash\n", 8); // '"root:x:0"…'
 * escapedExcerpt("\u001b[2J"); // '"\\u001b[2J"'
 * ```
 */
export function escapedExcerpt(text: string, max = EXCERPT_CHARS): string {
  const shown = [...text.slice(0, max * 2)].slice(0, max).join("");
  const cut = shown.length < text.length;
  const escaped = shown.replace(/["\\]|[^\x20-\x7e]/gu, (ch) => {
    if (ch === '"' || ch === "\\") return `\\${ch}`;
    return [...ch].map((unit) => unitEscape(unit)).join("");
  });
  return `"${escaped}"${cut ? "…" : ""}`;
}

function unitEscape(ch: string): string {
  let out = "";
  for (let i = 0; i < ch.length; i++) out += `\\u${ch.charCodeAt(i).toString(16).padStart(4, "0")}`;
  return out;
}

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

/** jsonc-parser options that accept exactly what `JSON.parse` accepts. */
export const STRICT_JSON = { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false } as const;

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
