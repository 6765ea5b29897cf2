/**
 * Segment writes: closing the oldest part of Active into an immutable segment, by
 * compaction (seed 000: the oldest half, one summary call) or by reset (all of Active, a
 * footer that marks the reset). Each runs inside a held lock (its transaction's `locked`).
 *
 * @module
 */
import { accumulateCompaction, estimateTextTokens, estimateTokens, planCompaction, type CompactionOutcome } from "../compaction/mod.ts";
import { CompactionFailedError, LeaseLostError, SessionBusyError } from "../errors.ts";
import { formatSessionRef } from "../layout/ids.ts";
import type { SegmentRange } from "../layout/segments.ts";
import type { Summarizer } from "../model/mod.ts";
import { RESET_FIELD, cumulativeSummary, encodeJsonDocument, nowTimestamp, type MessageRecord, type SessionMeta, type SummaryRecord } from "../schema/mod.ts";
import type { PlannedWrite } from "../storage/port.ts";
import { publicRecord, withoutBatchMark } from "./batch.ts";
import { newId } from "./ids.ts";
import { unknownActiveLines } from "./recovery.ts";
import { LAST_COMPACTED_FIELD, lastSequence } from "./state.ts";
import type { SessionTransaction } from "./transaction.ts";
import { encodeWithUnknown } from "./unknown-lines.ts";

/**
 * Compacts Active with one summary call: the oldest half becomes a segment whose footer is
 * the new cumulative summary (previous summary + that half). `undefined` when Active has
 * fewer than 2 messages.
 *
 * @throws {CompactionFailedError} when the summarizer fails, is cancelled or returns an empty summary; nothing changed.
 */
export async function compactActive(tx: SessionTransaction, summarizer: Summarizer, signal: AbortSignal): Promise<CompactionOutcome | undefined> {
  const state = tx.state;
  const plan = planCompaction(state.active);
  if (!plan) return undefined;
  const previous = cumulativeSummary(state.footer);
  let text: string;
  let cost: number | undefined;
  try {
    signal.throwIfAborted();
    const result = await summarizer.summarize({ previousSummary: previous, messages: plan.selected.map(publicRecord), signal });
    signal.throwIfAborted();
    text = typeof result?.text === "string" ? result.text : "";
    cost = result?.usage?.cost_usd_micros;
  } catch (error) {
    const reason = signal.aborted ? "it was cancelled" : `the summarizer failed: ${error instanceof Error ? error.message : String(error)}`;
    throw new CompactionFailedError(`compaction of ${formatSessionRef(tx.ref)} failed: ${reason}; nothing changed`, { cancelled: signal.aborted }, { cause: error });
  }
  if (text.trim() === "") {
    throw new CompactionFailedError(`compaction of ${formatSessionRef(tx.ref)} failed: the summarizer returned an empty summary; nothing changed`, { empty: true });
  }
  // The estimate adds up message by message: Active = the selected half + the kept half.
  const removedTokens = estimateTokens(plan.selected);
  const keptTokens = estimateTokens(plan.kept);
  const beforeTokens = estimateTextTokens(previous) + removedTokens + keptTokens;
  const footer: SummaryRecord = {
    record_type: "summary",
    session_id: tx.ref.sessionId,
    summary_id: newId("sum"),
    through_sequence: plan.range.end,
    text,
    created_at: nowTimestamp(tx.ctx.clock),
  };
  const selected = plan.selected.map(withoutBatchMark);
  const kept = plan.kept.map(withoutBatchMark);
  const unknown = await unknownActiveLines(tx);
  const segmentBytes = encodeWithUnknown(selected, unknown, false, [footer]);
  const activeBytes = encodeWithUnknown(kept, unknown, true);
  const afterTokens = estimateTextTokens(text) + keptTokens;
  const accounting = accumulateCompaction(state.meta.compaction, {
    removedMessages: selected.length,
    removedTokensEstimate: removedTokens,
    ...(cost !== undefined ? { costUsdMicros: cost } : {}),
    beforeTokens,
    afterTokens,
  });
  await closeSegment(tx, plan.range, footer, segmentBytes, kept, activeBytes, {
    history_bytes: state.meta.history_bytes - state.activeBytes + activeBytes.length + segmentBytes.length,
    revision: state.meta.revision + 1,
    compaction: { ...accounting, [LAST_COMPACTED_FIELD]: lastSequence(state) },
  });
  return {
    revision: state.meta.revision,
    removedMessages: selected.length,
    keptMessages: kept.length,
    segment: { start: plan.range.start, end: plan.range.end },
    beforeTokens,
    afterTokens,
    ...(cost !== undefined ? { costUsdMicros: cost } : {}),
    summaryChars: text.length,
  };
}

/**
 * Resets the conversation (seed 004): Active is closed as a segment whose footer marks the
 * reset, so the model context starts over from the system text and history stays readable.
 * Revision + 1; the compaction continuation state is cleared (accounting totals stay).
 *
 * @throws {SessionBusyError} when a streaming draft exists.
 */
export async function resetActive(tx: SessionTransaction): Promise<{ revision: number }> {
  const state = tx.state;
  if (state.draft) throw new SessionBusyError(`${formatSessionRef(tx.ref)}: a streaming draft exists; finish it before resetting`);
  const first = state.active[0];
  if (!first) return { revision: state.meta.revision };
  const range = { start: first.sequence, end: lastSequence(state) };
  const footer: SummaryRecord = {
    record_type: "summary",
    session_id: tx.ref.sessionId,
    summary_id: newId("sum"),
    through_sequence: range.end,
    text: `The conversation was reset after sequence ${range.end}; nothing before it belongs to the model context.`,
    created_at: nowTimestamp(tx.ctx.clock),
    [RESET_FIELD]: true,
  };
  const unknown = await unknownActiveLines(tx);
  const segmentBytes = encodeWithUnknown(state.active.map(withoutBatchMark), unknown, true, [footer]);
  const compaction = state.meta.compaction ? { ...state.meta.compaction, [LAST_COMPACTED_FIELD]: range.end } : undefined;
  await closeSegment(tx, range, footer, segmentBytes, [], new Uint8Array(0), {
    history_bytes: state.meta.history_bytes - state.activeBytes + segmentBytes.length,
    revision: state.meta.revision + 1,
    ...(compaction ? { compaction } : {}),
  });
  return { revision: tx.state.meta.revision };
}

/**
 * Closes the oldest messages of Active into the segment `range`. The order is what recovery
 * relies on: `meta.json` first, naming the new segment; then the segment; then Active. A
 * crash before the segment lands leaves a hint that the files do not confirm, so the next
 * open lists `segments/` and rebuilds `meta.json`; a crash before Active is replaced leaves
 * the overlap of recovery rule 3. Either way the hint never hides a segment that exists.
 */
async function closeSegment(tx: SessionTransaction, range: SegmentRange, footer: SummaryRecord, segmentBytes: Uint8Array, kept: MessageRecord[], activeBytes: Uint8Array, patch: Partial<SessionMeta>): Promise<void> {
  const { storage } = tx.ctx;
  const state = tx.state;
  // What meta.json holds now: the operation applied recovery's repairs before this runs.
  const before = encodeJsonDocument(state.meta);
  const meta = tx.nextMeta(patch, range);
  const writes: PlannedWrite[] = [
    { op: "replace", path: tx.paths.meta, bytes: encodeJsonDocument(meta) },
    { op: "replace", path: tx.paths.segment(range), bytes: segmentBytes },
    { op: "replace", path: tx.paths.active, bytes: activeBytes },
  ];
  try {
    await tx.runPlan({ writes });
  } catch (error) {
    // Best effort: put back the meta.json that matches the files (the next open would rebuild it anyway);
    // never after a lost lease: meta.json is then the new owner's.
    if (!(error instanceof LeaseLostError) && !(await storage.readTail(tx.paths.segment(range), 0).catch(() => undefined))) await storage.replace(tx.paths.meta, before).catch(() => undefined);
    throw error;
  }
  state.segments?.push(range);
  state.newest = range;
  state.footer = footer;
  state.active = kept;
  state.activeBytes = activeBytes.length;
  tx.metaWritten(meta);
}
