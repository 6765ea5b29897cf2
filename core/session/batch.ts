import type { DecodedRecord } from "../jsonl/decode.ts";
import type { MessageRecord } from "../schema/mod.ts";
import { plainClone } from "./plain-clone.ts";

/**
 * The field that makes a multi-message commit atomic in an append-only file: the
 * first message of a batch of N > 1 messages carries `batch_size: N`. A final batch
 * with fewer than N complete lines was torn by a crash and is not committed (see
 * docs/decisions.md). Readers that do not know the field ignore it.
 */
export const BATCH_FIELD = "batch_size";

/** Marks a batch for an atomic append (a single message needs no mark). */
export function markBatch(messages: MessageRecord[]): MessageRecord[] {
  if (messages.length < 2) return messages;
  const [first, ...rest] = messages;
  return [{ ...first!, [BATCH_FIELD]: messages.length }, ...rest];
}

/**
 * The field every line a commit appends carries last: the revision that commit created
 * (docs/FORMAT.md `revision`). Opens take the greater of `meta.json`'s and the last line's,
 * so `meta.json` may lag behind the lines.
 */
export const LINE_REVISION_FIELD = "revision";

/**
 * `messages` as the lines of the commit that creates `revision`: the field set last, so it
 * ends each line; with `firstSequence`, numbered from it too (in the same copy).
 */
export function stampRevision(messages: readonly MessageRecord[], revision: number, firstSequence?: number): MessageRecord[] {
  return messages.map((message, i) => {
    // One copy per commit's record, a plain clone (a spread with other fields beside it, or a
    // rest pattern, copies field by field at several times the cost); the fields set on it.
    // Not a spread: the revision added after it, and the line's bytes, would take V8's slow path.
    const line: Record<string, unknown> = plainClone(message);
    if (firstSequence !== undefined) line["sequence"] = firstSequence + i;
    if (LINE_REVISION_FIELD in line) delete line[LINE_REVISION_FIELD];
    line[LINE_REVISION_FIELD] = revision;
    return line as MessageRecord;
  });
}

/** The revision a line carries, or 0 for a line written before lines carried one. */
export function lineRevision(message: MessageRecord): number {
  const value = (message as Record<string, unknown>)[LINE_REVISION_FIELD];
  return typeof value === "number" && Number.isSafeInteger(value) && value > 0 ? value : 0;
}

/** A message as a host sees it: without the fields only its line needs (batch mark, line revision). */
export function publicRecord(message: MessageRecord): MessageRecord {
  if (!(BATCH_FIELD in message) && !(LINE_REVISION_FIELD in message)) return message;
  const { [BATCH_FIELD]: _mark, [LINE_REVISION_FIELD]: _revision, ...rest } = message as MessageRecord & {
    [BATCH_FIELD]?: unknown;
    [LINE_REVISION_FIELD]?: unknown;
  };
  return rest as MessageRecord;
}

/** Removes the batch mark (a record moved into a segment keeps its line revision and its bytes). */
export function withoutBatchMark(message: MessageRecord): MessageRecord {
  if (!(BATCH_FIELD in message)) return message;
  const { [BATCH_FIELD]: _mark, ...rest } = message as MessageRecord & { [BATCH_FIELD]?: unknown };
  return rest as MessageRecord;
}

/**
 * Index of the first message of an incomplete final batch, or -1 when every batch is whole.
 * Only the final batch can be incomplete: a torn batch is cut before the next append.
 */
export function incompleteFinalBatch(records: readonly DecodedRecord<MessageRecord>[]): number {
  for (let i = records.length - 1; i >= 0; i--) {
    const size = (records[i]!.record as Record<string, unknown>)[BATCH_FIELD];
    if (typeof size === "number" && Number.isInteger(size) && size > 1) {
      return i + size > records.length ? i : -1;
    }
  }
  return -1;
}
