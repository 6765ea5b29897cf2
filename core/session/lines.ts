/**
 * The bytes of each Active message's line, as read from `active.jsonl` or as this handle
 * wrote it. A compaction or a rewrite of Active copies these bytes instead of encoding the
 * JSON again: it costs a copy, not a serialization, and a line keeps its exact bytes
 * (unknown fields included). Held by the record object itself, in a private slot: a
 * committed record is never mutated. Its token estimate is kept the same way once asked for.
 *
 * @module
 */
import { estimateTokens } from "../compaction/estimate.ts";
import { encodeJsonlLine } from "../jsonl/encode.ts";
import { joinedLength, joinLinesInto } from "../jsonl/join.ts";
import type { MessageRecord } from "../schema/mod.ts";
import { Stamped } from "../schema/stamped.ts";
import { utf8Bytes } from "../schema/utf8.ts";

const NEWLINE = 0x0a;

/**
 * The line bytes of a record as a private field of the record: an open remembers a line per
 * message, and a field costs what adding a property costs, where a `WeakMap` entry per
 * record cost about as much as parsing the line (and weighs on every collection). Nothing
 * else sees it: not `JSON.stringify`, `Object.keys`, equality in tests or a structured clone.
 */
class RememberedLine extends Stamped {
  #bytes: Uint8Array;

  private constructor(record: object, bytes: Uint8Array) {
    super(record);
    this.#bytes = bytes;
  }

  static get(record: object): Uint8Array | undefined {
    return #bytes in record ? (record as RememberedLine).#bytes : undefined;
  }

  static set(record: object, bytes: Uint8Array): void {
    if (#bytes in record) (record as RememberedLine).#bytes = bytes;
    else new RememberedLine(record, bytes);
  }
}

/**
 * A committed message's token estimate, as a private field of its own, added when first asked for: an open, which
 * remembers every line, pays nothing for it. Only a message with a remembered line keeps it (those are never mutated).
 */
class RememberedTokens extends Stamped {
  readonly #tokens: number;

  private constructor(record: object, tokens: number) {
    super(record);
    this.#tokens = tokens;
  }

  static of(record: MessageRecord): number {
    if (#tokens in record) return (record as unknown as RememberedTokens).#tokens;
    const tokens = estimateTokens([record]);
    if (RememberedLine.get(record)) new RememberedTokens(record, tokens);
    return tokens;
  }
}

/** Remembers the bytes (without `\n`) `record` was decoded from or encoded to. */
export function rememberLine(record: object, bytes: Uint8Array): void {
  RememberedLine.set(record, bytes);
}

/**
 * `estimateTokens(messages)` where each message with a remembered line (a committed one) is estimated once and the
 * figure kept with its line: the compaction trigger (`atContextTokens`) estimates all of Active before each run step.
 */
export function storedTokens(messages: readonly MessageRecord[]): number {
  let total = 0;
  for (const message of messages) total += RememberedTokens.of(message);
  return total;
}

/** The line of `record` without its `\n`: remembered, or encoded now and remembered. */
export function lineOf(record: object): Uint8Array {
  let bytes = RememberedLine.get(record);
  if (!bytes) {
    const line = encodeJsonlLine(record);
    bytes = utf8Bytes(line.slice(0, -1));
    RememberedLine.set(record, bytes);
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
  if (records.length !== 1 || RememberedLine.get(only!)) return joinLines(records.map(lineOf));
  const bytes = utf8Bytes(encodeJsonlLine(only));
  RememberedLine.set(only!, bytes.subarray(0, bytes.length - 1));
  return bytes;
}

/** JSONL bytes of `lines`, each followed by `\n`, in one allocation (runs of lines copied as one: `joinLinesInto`). */
export function joinLines(lines: readonly Uint8Array[]): Uint8Array {
  return joinLinesWithRoom(lines, 0).bytes;
}

/**
 * Lines joined as by {@linkcode joinLines} into `bytes`, with room left after them (from `used` on) for one more line
 * known only later: a compaction joins its segment's lines while its lock is being taken, and the footer, which waits
 * for the summary, goes into that room ({@linkcode withLastLine}).
 */
export interface OpenLines {
  readonly bytes: Uint8Array;
  readonly used: number;
}

/** {@linkcode joinLines} of `lines` with `room` bytes to spare after them ({@linkcode OpenLines}). */
export function joinLinesWithRoom(lines: readonly Uint8Array[], room: number): OpenLines {
  const out = new Uint8Array(joinedLength(lines) + room);
  return { bytes: out, used: joinLinesInto(lines, out) };
}

/**
 * The JSONL bytes of `open`'s lines, then `record`'s line: written into `open`'s room when it fits (a view of its
 * bytes, so the lines are not copied again), else joined anew. `open`'s room is used up either way.
 */
export function withLastLine(open: OpenLines, record: object): Uint8Array {
  const line = lineOf(record);
  const end = open.used + line.length + 1;
  const bytes = end <= open.bytes.length ? open.bytes : new Uint8Array(end);
  if (bytes !== open.bytes) bytes.set(open.bytes.subarray(0, open.used));
  bytes.set(line, open.used);
  bytes[end - 1] = NEWLINE;
  return bytes.length === end ? bytes : bytes.subarray(0, end);
}
