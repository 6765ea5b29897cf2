/**
 * How much a request carries: a mutation's estimated bytes, messages and segments cut into
 * parts within `batchBytes` (docs/SYNC.md "Batches"), and the conflict of one mutation a
 * remote refused as too large.
 *
 * @module
 */
import type { SyncRefusedError } from "../errors.ts";
import type { MessageRecord } from "../schema/mod.ts";
import type { Mutation, SegmentFile } from "./protocol.ts";

/**
 * A request of the one mutation `mutation` refused as too large: that mutation's session's
 * refusal (docs/SYNC.md "One session at a time"), with the remote's limit when it said it.
 */
export function tooLarge(mutation: Mutation, error: SyncRefusedError): { reason: string; message: string; ref: string } {
  const limit = error.details["limit"];
  const most = typeof limit === "number" ? `at most ${limit} bytes` : `less (${error.message})`;
  return {
    reason: "too-large",
    ref: mutation.ref,
    message: `${mutation.ref}: its ${mutation.op} (about ${byteEstimate(mutation)} bytes) is larger than the remote takes in a request, ${most}; ` +
      "the local copy is kept as it is, and a later sync sends it again",
  };
}

/**
 * `messages` as runs of consecutive messages of at most `bytes` as JSON each (a larger message
 * alone): the appends of a page, so that one stays within `batchBytes` whatever its messages
 * weigh (docs/SYNC.md "Batches").
 */
export function runsWithin(messages: readonly MessageRecord[], bytes: number): MessageRecord[][] {
  const runs: MessageRecord[][] = [];
  let size = 0;
  for (const message of messages) {
    const own = JSON.stringify(message).length;
    if (runs.length === 0 || size + own > bytes) {
      runs.push([]);
      size = 0;
    }
    runs.at(-1)!.push(message);
    size += own;
  }
  return runs;
}

/** How many of the first `segments` fit in `bytes` together. */
export function leadingWithin(segments: readonly SegmentFile[], bytes: number): number {
  let count = 0;
  for (let size = 0; count < segments.length && (size += segments[count]!.text.length) <= bytes;) count++;
  return count;
}

/** About how many bytes a mutation takes in a request: its segments' text, its messages as JSON, an encrypted session's sealed lines. */
export function byteEstimate(mutation: Mutation): number {
  const segments = mutation.op === "create" || mutation.op === "create_sealed" ? mutation.segments : mutation.op === "segment" ? [mutation.segment] : [];
  const messages = mutation.op === "create" || mutation.op === "append" ? mutation.messages : [];
  const lines = mutation.op === "create_sealed" || mutation.op === "append_sealed" ? mutation.lines : [];
  return 256 + [...segments.map((s) => s.text), ...lines].reduce((sum, text) => sum + text.length, 0) +
    (messages.length > 0 ? JSON.stringify(messages).length : 0);
}
