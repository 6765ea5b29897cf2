import { joinLines, lineOf } from "./lines.ts";
import type { MessageRecord } from "../schema/mod.ts";

/**
 * A line of `active.jsonl` whose `record_type` this reader does not know (written by a
 * newer version). Readers skip it; rewrites of Active must not drop it. It travels with
 * the message that follows it (`beforeSequence`), or stays at the end of Active (`null`).
 */
export interface UnknownLine {
  readonly text: string;
  readonly beforeSequence: number | null;
}

const decoder = new TextDecoder();

/**
 * The unknown-record lines of Active's bytes, each tied to the message after it.
 * Called only when the decoder reported `unknown_record`, so the common path pays nothing.
 */
export function unknownLines(bytes: Uint8Array): UnknownLine[] {
  const found: { text: string }[] = [];
  const tied: UnknownLine[] = [];
  for (const text of decoder.decode(bytes).split("\n")) {
    if (text.trim() === "") continue;
    let value: { record_type?: unknown; sequence?: unknown };
    try {
      value = JSON.parse(text);
    } catch {
      continue;
    }
    if (value?.record_type === "message" && typeof value.sequence === "number") {
      for (const line of found.splice(0)) tied.push({ text: line.text, beforeSequence: value.sequence });
    } else if (typeof value?.record_type === "string") {
      found.push({ text });
    }
  }
  for (const line of found) tied.push({ text: line.text, beforeSequence: null });
  return tied;
}

/**
 * JSONL bytes of `messages` with the unknown lines that belong before each of them and,
 * with `withTrailing`, those left at the end of Active.
 */
export function encodeWithUnknown(
  messages: readonly MessageRecord[],
  unknown: readonly UnknownLine[],
  withTrailing: boolean,
  tail: readonly unknown[] = [],
): Uint8Array {
  // Unknown lines are rare: without them, Active's remembered lines as they are.
  if (unknown.length === 0) return joinLines([...messages.map(lineOf), ...tail.map((record) => lineOf(record as object))]);
  const before = new Map<number, string[]>();
  for (const line of unknown) {
    if (line.beforeSequence === null) continue;
    before.set(line.beforeSequence, [...(before.get(line.beforeSequence) ?? []), line.text]);
  }
  const encoder = new TextEncoder();
  const lines: Uint8Array[] = [];
  for (const message of messages) {
    for (const line of before.get(message.sequence) ?? []) lines.push(encoder.encode(line));
    lines.push(lineOf(message));
  }
  if (withTrailing) { for (const line of unknown) if (line.beforeSequence === null) lines.push(encoder.encode(line.text)); }
  for (const record of tail) lines.push(lineOf(record as object));
  return joinLines(lines);
}
