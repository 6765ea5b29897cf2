/**
 * Compaction and reset: each closes the oldest part of Active into an immutable segment.
 * The path goes one way down: what needs no lock is worked out from Active while the lock is
 * being taken (`prepareCompaction`), the summarizer is called once ({@linkcode summarize}), the
 * close is planned as a value from the state ({@linkcode planCompactionClose},
 * {@linkcode planResetClose}: nothing is read or written), and the commit path applies it
 * in one commit plan (`CommitPath.closeSegment`). Compaction closes the oldest half with one
 * cumulative summary (docs/FORMAT.md "Compaction"); reset closes all of Active with a footer
 * that marks the reset (docs/decisions.md).
 *
 * @module
 */
import { accumulateCompaction, type CompactionOutcome, estimateTextTokens } from "../compaction/mod.ts";
import { CompactionFailedError, SessionBusyError } from "../errors.ts";
import { formatSessionRef, type SessionRef } from "../layout/ids.ts";
import type { Summarizer } from "../model/mod.ts";
import { cumulativeSummary, type MessageRecord, RESET_FIELD, type SummaryRecord, type Usage } from "../schema/records.ts";
import { withoutBatchMark } from "./batch.ts";
import type { CommitPath } from "./commit-path.ts";
import { newId } from "./ids.ts";
import { nextMeta, type SegmentClose } from "./planned-change.ts";
import { unknownActiveLines } from "./recovery.ts";
import { LAST_COMPACTED_FIELD, lastSequence, type SessionState } from "./state.ts";
import { encodeWithUnknown, type UnknownLine } from "./unknown-lines.ts";
import { joinLines, lineOf, withLastLine } from "./lines.ts";
import { estimatesOf, prepareCompaction, type PreparedCompaction } from "./compaction-prepare.ts";
import { type StageActive, stageSegment, withStaging } from "./staged-close.ts";
import { untilAborted } from "./until-aborted.ts";

/** What `compact()` returns when Active had fewer than 2 messages: nothing changed. */
export interface NoCompaction {
  readonly revision: number;
  readonly removedMessages: 0;
  readonly keptMessages: number;
  readonly segment: null;
}

/** What one summarizer call gave: the new cumulative summary, what it cost and the usage it reported. */
export interface Summary {
  readonly text: string;
  readonly costUsdMicros?: number;
  readonly usage?: Usage;
}

/**
 * `compact()` of a session handle: the lock and revision check (one plan, while `prepareCompaction` runs), then
 * {@linkcode compactActive}, whose plan gives the lock back. Refused while a draft exists.
 *
 * @throws {SessionBusyError} when a streaming draft exists (finish it first).
 * @throws {CompactionFailedError} when the summarizer fails, is cancelled or returns an empty summary; nothing changed.
 */
export function compactLocked(path: CommitPath, summarizer: Summarizer, signal: AbortSignal): Promise<CompactionOutcome | NoCompaction> {
  const body = async (prepared?: PreparedCompaction): Promise<CompactionOutcome | NoCompaction> => {
    const state = path.state;
    const draft = state.draft?.record.message_id;
    if (draft) throw new SessionBusyError(`${formatSessionRef(path.ref)}: a streaming draft exists; finish it before compacting`, { draft });
    const outcome = await compactActive(path, summarizer, signal, prepared);
    return outcome ?? { revision: state.meta.revision, removedMessages: 0, keptMessages: state.active.length, segment: null };
  };
  // Prepared while the lock is being taken: an error there is met again under the lock.
  const prepare = (stage: StageActive) => prepareCompaction(path.state, path.paths, stage);
  type Prepared = PreparedCompaction | undefined;
  return withStaging(path.ctx.storage, path.paths, prepare, (staged) => path.locked<CompactionOutcome | NoCompaction, Prepared>("compact", body, true, staged));
}

/**
 * Compacts Active with one summary call: the oldest half becomes a segment whose footer is
 * the new cumulative summary (previous summary + that half). `undefined` when Active has
 * fewer than 2 messages. Runs inside a held lock (`CommitPath.locked`); `prepared`, when it
 * still fits Active, saves working it out again.
 *
 * @throws {CompactionFailedError} when the summarizer fails, is cancelled or returns an empty summary; nothing changed.
 */
export async function compactActive(
  path: CommitPath,
  summarizer: Summarizer,
  signal: AbortSignal,
  prepared?: PreparedCompaction,
): Promise<CompactionOutcome | undefined> {
  const { active } = path.state;
  const fits = prepared !== undefined && prepared.active === active && prepared.count === active.length;
  const ready = fits ? prepared : prepareCompaction(path.state, path.paths);
  if (!ready) return undefined;
  // The lock is held: the segment's lines are staged now, flushed while the summary is made.
  if (ready.staged) stageSegment(path.ctx.storage, path.paths, ready.selection.range, ready.staged, ready.selectedLines!);
  // The summarizer is called first: the estimates are worked out while it answers.
  const summarized = summarize(path.ref, path.state, ready.input, summarizer, signal);
  const estimates = estimatesOf(ready.selection);
  const summary = await summarized;
  const unknown = ready.activeBytes || ready.staged ? [] : await unknownActiveLines(path);
  const { close, outcome } = planCompactionClose(path.state, path.ref, ready, estimates, summary, unknown, path.now);
  if (ready.staged) ready.staged.sent = true;
  await path.closeSegment(close);
  return outcome;
}

/**
 * Resets the conversation: Active is closed as a segment whose footer marks the reset, so
 * the model context starts over from the system text and history stays readable. Revision
 * + 1; the compaction continuation state is cleared (accounting totals stay).
 *
 * @throws {SessionBusyError} when a streaming draft exists.
 */
export async function resetActive(path: CommitPath): Promise<{ revision: number }> {
  if (path.state.draft) throw new SessionBusyError(`${formatSessionRef(path.ref)}: a streaming draft exists; finish it before resetting`);
  if (path.state.active.length === 0) return { revision: path.state.meta.revision };
  const unknown = await unknownActiveLines(path);
  const close = planResetClose(path.state, path.ref, unknown, path.now);
  if (close) await path.closeSegment(close);
  return { revision: path.state.meta.revision };
}

/**
 * The one summarizer call of a compaction: the previous cumulative summary and the selected
 * messages (`input`, as a host sees them) in, the new cumulative summary out.
 *
 * @throws {CompactionFailedError} when the summarizer fails, is cancelled or returns an empty summary.
 */
export async function summarize(
  ref: SessionRef,
  state: Pick<SessionState, "footer">,
  input: MessageRecord[],
  summarizer: Summarizer,
  signal: AbortSignal,
): Promise<Summary> {
  let text: string;
  let cost: number | undefined;
  let usage: Usage | undefined;
  try {
    // `aborted`, not `throwIfAborted()`: the host's signal is checked by shape (a polyfill's passes) and may lack it.
    if (signal.aborted) throw signal.reason;
    const result = await untilAborted(
      Promise.resolve(summarizer.summarize({ previousSummary: cumulativeSummary(state.footer), messages: input, signal })),
      signal,
    );
    if (signal.aborted) throw signal.reason;
    text = typeof result?.text === "string" ? result.text : "";
    cost = result?.usage?.cost_usd_micros;
    usage = result?.usage;
  } catch (error) {
    const reason = signal.aborted ? "it was cancelled" : `the summarizer failed: ${error instanceof Error ? error.message : String(error)}`;
    throw new CompactionFailedError(`compaction of ${formatSessionRef(ref)} failed: ${reason}; nothing changed`, { cancelled: signal.aborted }, {
      cause: error,
    });
  }
  if (text.trim() === "") {
    throw new CompactionFailedError(`compaction of ${formatSessionRef(ref)} failed: the summarizer returned an empty summary; nothing changed`, {
      empty: true,
    });
  }
  return { text, ...(cost !== undefined ? { costUsdMicros: cost } : {}), ...(usage !== undefined ? { usage } : {}) };
}

/**
 * A compaction as a value: the selected half closed with `summary` as its footer, the kept
 * half as Active, `meta.json` with the accounting (revision + 1), and the outcome the caller
 * reports. `unknown`: lines of unknown record types in `active.jsonl`, carried along. `now`
 * is read for the footer's `created_at`, then for `meta.json`'s `updated_at`.
 */
function planCompactionClose(
  state: SessionState,
  ref: SessionRef,
  prepared: PreparedCompaction,
  { removedTokens, keptTokens }: ReturnType<typeof estimatesOf>,
  summary: Summary,
  unknown: readonly UnknownLine[],
  now: () => string,
): { close: SegmentClose; outcome: CompactionOutcome } {
  const { text, costUsdMicros: cost, usage: summaryUsage } = summary;
  const { selection, kept } = prepared;
  const previous = cumulativeSummary(state.footer);
  const beforeTokens = estimateTextTokens(previous) + removedTokens + keptTokens;
  const footer: SummaryRecord = {
    record_type: "summary",
    session_id: ref.sessionId,
    summary_id: newId("sum"),
    through_sequence: selection.range.end,
    text,
    created_at: now(),
  };
  // Staged: the segment's file is its staged lines and the footer's line, Active's its staged bytes.
  const staged = prepared.staged && { active: prepared.staged.active, segment: prepared.staged.segment! }; // its bytes are the backend's now
  const segmentBytes = staged
    ? joinLines([lineOf(footer)])
    : prepared.segmentLines
    ? withLastLine(prepared.segmentLines, footer)
    : encodeWithUnknown(selection.selected.map(withoutBatchMark), unknown, false, [footer]);
  const activeBytes = staged ? new Uint8Array(0) : prepared.activeBytes ?? encodeWithUnknown(kept, unknown, true);
  const stagedBytes = staged ? staged.active.size + staged.segment.size : 0;
  const afterTokens = estimateTextTokens(text) + keptTokens;
  const accounting = accumulateCompaction(state.meta.compaction, {
    removedMessages: selection.selected.length,
    removedTokensEstimate: removedTokens,
    ...(cost !== undefined ? { costUsdMicros: cost } : {}),
    ...(summaryUsage !== undefined ? { summaryUsage } : {}),
    beforeTokens,
    afterTokens,
  });
  const revision = state.meta.revision + 1;
  const meta = nextMeta(
    state,
    {
      history_bytes: state.meta.history_bytes - state.activeBytes + activeBytes.length + segmentBytes.length + stagedBytes,
      revision,
      compaction: { ...accounting, [LAST_COMPACTED_FIELD]: lastSequence(state) },
    },
    now(),
    selection.range,
  );
  const outcome: CompactionOutcome = {
    revision,
    removedMessages: selection.selected.length,
    keptMessages: kept.length,
    segment: { start: selection.range.start, end: selection.range.end },
    beforeTokens,
    afterTokens,
    ...(cost !== undefined ? { costUsdMicros: cost } : {}),
    ...(summaryUsage !== undefined ? { summaryUsage } : {}),
    summaryChars: text.length,
  };
  return { close: { range: selection.range, footer, segmentBytes, kept, activeBytes, meta, ...(staged ? { staged } : {}) }, outcome };
}

/** A reset as a value: all of Active closed under a footer that marks the reset; `undefined` when Active is empty. */
function planResetClose(state: SessionState, ref: SessionRef, unknown: readonly UnknownLine[], now: () => string): SegmentClose | undefined {
  const first = state.active[0];
  if (!first) return undefined;
  const range = { start: first.sequence, end: lastSequence(state) };
  const footer: SummaryRecord = {
    record_type: "summary",
    session_id: ref.sessionId,
    summary_id: newId("sum"),
    through_sequence: range.end,
    text: `The conversation was reset after sequence ${range.end}; nothing before it belongs to the model context.`,
    created_at: now(),
    [RESET_FIELD]: true,
  };
  const segmentBytes = encodeWithUnknown(state.active.map(withoutBatchMark), unknown, true, [footer]);
  const compaction = state.meta.compaction ? { ...state.meta.compaction, [LAST_COMPACTED_FIELD]: range.end } : undefined;
  const meta = nextMeta(
    state,
    {
      history_bytes: state.meta.history_bytes - state.activeBytes + segmentBytes.length,
      revision: state.meta.revision + 1,
      ...(compaction ? { compaction } : {}),
    },
    now(),
    range,
  );
  return { range, footer, segmentBytes, kept: [], activeBytes: new Uint8Array(0), meta };
}
