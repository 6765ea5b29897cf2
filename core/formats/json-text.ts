import { type Node, parse as parseLenient, parseTree, printParseErrorCode, type ParseError } from "jsonc-parser";
import { type FormatName, formatError } from "./errors.ts";
import type { PathKey, Site } from "./shape.ts";

const NEWLINE = 0x0a;
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });
const STRICT = { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false } as const;

/** Either the decoded text or a failure (the bytes are not UTF-8). */
export type Utf8Result = { ok: true; text: string } | { ok: false };

/**
 * Decodes UTF-8 strictly (no replacement characters); a leading BOM is dropped, as
 * `TextDecoder` does.
 *
 * @example
 * ```ts
 * decodeUtf8Strict(new Uint8Array([0xef, 0xbb, 0xbf, 0x7b, 0x7d])); // { ok: true, text: "{}" }
 * decodeUtf8Strict(new Uint8Array([0xff])); // { ok: false }
 * ```
 */
export function decodeUtf8Strict(bytes: Uint8Array): Utf8Result {
  try {
    return { ok: true, text: strictUtf8.decode(bytes) };
  } catch {
    return { ok: false };
  }
}

/** 1-based line of a UTF-16 offset in `text` (lines end at `\n`). */
function lineAt(lineStarts: readonly number[], offset: number): number {
  let lo = 0;
  let hi = lineStarts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (lineStarts[mid]! <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo + 1;
}

function lineStartsOf(text: string): number[] {
  const starts = [0];
  for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) starts.push(i + 1);
  return starts;
}

/** The value of `key` in an object node, the last occurrence winning as in `JSON.parse`. */
function childNode(node: Node, key: PathKey): Node | undefined {
  if (typeof key === "number") return node.type === "array" ? node.children?.[key] : undefined;
  if (node.type !== "object") return undefined;
  let found: Node | undefined;
  for (const property of node.children ?? []) {
    const name = property.children?.[0];
    const value = property.children?.[1];
    if (name?.value === key && value !== undefined) found = value;
  }
  return found;
}

/** A whole JSON document with a way to find the line of any value in it. */
export interface JsonDocument {
  readonly value: unknown;
  /** The site to validate the document against: paths resolve to the line their value starts on. */
  readonly site: Site;
}

/**
 * Parses a whole JSON document (a Rho snapshot, a DeepCode `meta.json`) strictly. A
 * syntax error, invalid UTF-8 or an empty file is a `FormatError` naming the 1-based line
 * where it was found; `site.lineOf(path)` locates any value later found invalid (a missing
 * field at the object that should hold it).
 *
 * @example
 * ```ts
 * declare const bytes: Uint8Array;
 *
 * const { value, site } = parseJsonDocument(bytes, "s1.json", "rho-snapshot");
 * site.lineOf(["history", 0]); // the line where history[0] starts
 * ```
 * @throws {FormatError} when the bytes are not UTF-8 or not one JSON value.
 */
export function parseJsonDocument(bytes: Uint8Array, file: string, format: FormatName): JsonDocument {
  const decoded = decodeUtf8Strict(bytes);
  if (!decoded.ok) {
    throw formatError({ format, file, line: firstInvalidUtf8Line(bytes) }, "bytes that are not UTF-8", "a UTF-8 JSON document");
  }
  const text = decoded.text;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const starts = lineStartsOf(text);
    const { offset, reason } = syntaxErrorAt(text, error);
    throw formatError({ format, file, line: lineAt(starts, offset) }, reason, "a JSON document");
  }
  let starts: number[] | undefined;
  let tree: Node | undefined;
  const site: Site = {
    format,
    file,
    lineOf(path) {
      starts ??= lineStartsOf(text);
      tree ??= parseTree(text, [], STRICT);
      let node = tree;
      if (node === undefined) return 1;
      for (const key of path) {
        const next = childNode(node, key);
        if (next === undefined) break;
        node = next;
      }
      return lineAt(starts, node.offset);
    },
  };
  return { value, site };
}

/** Where `JSON.parse` failed: the first error jsonc-parser's strict mode reports. */
function syntaxErrorAt(text: string, error: unknown): { offset: number; reason: string } {
  if (text.trim().length === 0) return { offset: text.length, reason: "an empty file" };
  const errors: ParseError[] = [];
  parseLenient(text, errors, STRICT);
  const first = errors.reduce<ParseError | undefined>((min, e) => (min === undefined || e.offset < min.offset ? e : min), undefined);
  if (first) {
    const code = printParseErrorCode(first.error).replace(/([a-z])([A-Z])/g, "$1 $2").toLowerCase();
    return { offset: first.offset, reason: `invalid JSON (${code})` };
  }
  // The two parsers disagree (should not happen): report what JSON.parse said, at its position if given.
  const message = error instanceof Error ? error.message : String(error);
  const position = /position (\d+)/.exec(message);
  return { offset: position ? Number(position[1]) : text.length, reason: `invalid JSON (${message})` };
}

/** 1-based line holding the first byte sequence that is not UTF-8. */
function firstInvalidUtf8Line(bytes: Uint8Array): number {
  let line = 1;
  let start = 0;
  for (;;) {
    const end = bytes.indexOf(NEWLINE, start);
    const piece = bytes.subarray(start, end === -1 ? bytes.length : end);
    if (!decodeUtf8Strict(piece).ok) return line;
    if (end === -1) return line;
    start = end + 1;
    line += 1;
  }
}
