import type { DecodedRecord } from "../jsonl/decode.ts";
import type { MessageRecord } from "../schema/mod.ts";

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

/** Removes the batch mark, e.g. when a message is shown or exported. */
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
