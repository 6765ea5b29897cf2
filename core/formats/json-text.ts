import { type Node, parseTree } from "jsonc-parser";
import { jsonSyntaxErrorAt, STRICT_JSON } from "../schema/json-error.ts";
import { jsonDepthOver } from "../schema/json-depth.ts";
import { MAX_JSON_DEPTH } from "../storage/limits.ts";
import { type FormatError, formatError, type FormatLocation, type FormatName } from "./errors.ts";
import type { PathKey, Site } from "./shape.ts";

const NEWLINE = 0x0a;
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

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
  } catch {
    const starts = lineStartsOf(text);
    const { offset, reason } = jsonSyntaxErrorAt(text);
    throw formatError({ format, file, line: lineAt(starts, offset) }, reason, "a JSON document");
  }
  const tooDeep = tooDeepError(value, text, { format, file, line: 1 });
  if (tooDeep) throw tooDeep;
  let starts: number[] | undefined;
  let tree: Node | undefined;
  const site: Site = {
    format,
    file,
    lineOf(path) {
      starts ??= lineStartsOf(text);
      tree ??= parseTree(text, [], STRICT_JSON);
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

/**
 * The error for a parsed value nested deeper than `MAX_JSON_DEPTH` (the readers' walkers
 * recurse), at the line of `text` where the limit is crossed; `undefined` when it is not.
 * `where.line` is the line `text` starts at.
 *
 * @example
 * ```ts
 * const text = "[".repeat(600) + "]".repeat(600);
 * tooDeepError(JSON.parse(text), text, { format: "pi", file: "s.jsonl", line: 4 })?.message; // "s.jsonl:4: found …"
 * ```
 */
export function tooDeepError(value: unknown, text: string, where: FormatLocation & { line: number }): FormatError | undefined {
  if (jsonDepthOver(value) === undefined) return undefined;
  let depth = 0;
  let line = where.line;
  let inString = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i += 1;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      depth += 1;
      if (depth > MAX_JSON_DEPTH) break;
    } else if (c === 0x5d || c === 0x7d) depth -= 1;
    else if (c === 0x0a) line += 1;
  }
  return formatError(
    { ...where, line },
    `a value nested deeper than ${MAX_JSON_DEPTH} levels of arrays and objects`,
    `at most ${MAX_JSON_DEPTH} levels (MAX_JSON_DEPTH)`,
    { limit: "MAX_JSON_DEPTH", max: MAX_JSON_DEPTH },
  );
}
