/**
 * The bytes of each Active message's line, as read from `active.jsonl` or as this handle
 * wrote it. A compaction or a rewrite of Active copies these bytes instead of encoding the
 * JSON again: it costs a copy, not a serialization, and a line keeps its exact bytes
 * (unknown fields included). Keyed by record object: a committed record is never mutated.
 *
 * @module
 */
import { encodeJsonlLine } from "../jsonl/encode.ts";

const NEWLINE = 0x0a;
const encoder = new TextEncoder();
const lineBytes = new WeakMap<object, Uint8Array>();

/** Remembers the bytes (without `\n`) `record` was decoded from or encoded to. */
export function rememberLine(record: object, bytes: Uint8Array): void {
  lineBytes.set(record, bytes);
}

/** The line of `record` without its `\n`: remembered, or encoded now and remembered. */
export function lineOf(record: object): Uint8Array {
  let bytes = lineBytes.get(record);
  if (!bytes) {
    const line = encodeJsonlLine(record);
    bytes = encoder.encode(line.slice(0, -1));
    lineBytes.set(record, bytes);
  }
  return bytes;
}

/**
 * The JSONL bytes of `records` (each line remembered, as {@linkcode lineOf} does). One
 * record not yet encoded, a commit's usual case, is encoded once and its line is a view of
 * those bytes: no second copy.
 */
export function linesOf(records: readonly object[]): Uint8Array {
  const [only] = records;
  if (records.length !== 1 || lineBytes.has(only!)) return joinLines(records.map(lineOf));
  const bytes = encoder.encode(encodeJsonlLine(only));
  lineBytes.set(only!, bytes.subarray(0, bytes.length - 1));
  return bytes;
}

/** JSONL bytes of `lines`, each followed by `\n`, in one allocation. */
export function joinLines(lines: readonly Uint8Array[]): Uint8Array {
  let size = 0;
  for (const line of lines) size += line.length + 1;
  const out = new Uint8Array(size);
  let offset = 0;
  for (const line of lines) {
    out.set(line, offset);
    offset += line.length;
    out[offset++] = NEWLINE;
  }
  return out;
}
