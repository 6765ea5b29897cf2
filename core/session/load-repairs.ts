/**
 * What an open does beyond a sound session's first reads (`load.ts`): naming a misplaced
 * `meta.json`, dropping an interrupted commit's lines and the lines a segment already holds,
 * finding the newest segment, taking a lease holder's lines past `meta.json`, and rebuilding
 * `meta.json` (docs/FORMAT.md "Recovery"). Apart from the open's own code, so that the first
 * open of a sound session in a process compiles none of it.
 *
 * @module
 */
import type { DecodedRecord } from "../jsonl/decode.ts";
import type { Diagnostic } from "../jsonl/diagnostic.ts";
import { relativeToSession, type SessionPaths } from "../layout/paths.ts";
import type { SessionRef } from "../layout/ids.ts";
import { formatSegmentName, type SegmentRange } from "../layout/segments.ts";
import type { MessageRecord, SessionMeta, SummaryRecord } from "../schema/mod.ts";
import type { ReadResult, StoragePort } from "../storage/port.ts";
import { withPrefetchedTail } from "../storage/read-many.ts";
import { lineRevision } from "./batch.ts";
import {
  describeOrderBreak,
  readSegmentFooter,
  type SegmentFooter,
  segmentFooterInTail,
  segmentListing,
  segmentOrderBreaks,
  sequenceStep,
} from "./segment-rules.ts";
import { lastSequence, type PendingRepairs, type Report, type SessionState } from "./state.ts";

/**
 * The names in `segments/` as ranges, oldest first, reporting names that are not segments
 * and breaks of the segment order (corruption: it blocks writes).
 */
export async function listSegments(storage: StoragePort, paths: SessionPaths, report: Report): Promise<SegmentRange[]> {
  const { ranges, strangers } = segmentListing(await storage.list(paths.segmentsDir));
  for (const name of strangers) report(`messages/segments/${name}`, null, "unexpected_file", false, "not a segment name; ignored");
  for (const found of segmentOrderBreaks(ranges)) {
    report(relativeToSession(paths, paths.segment(found.range)), null, "invalid_segment", true, describeOrderBreak(found));
  }
  return ranges;
}

/** Reports `meta.json` missing, or `blank` (empty or zero-filled): it is rebuilt from the messages. */
export function reportMissingMeta(blank: boolean, report: Report): void {
  // A commit's meta.json is not flushed (it is rebuilt from the messages), so a machine crash
  // may leave it empty or zero-filled on some file systems: that is "missing", not corruption.
  report("meta.json", null, "missing_meta", false, `meta.json is ${blank ? "empty" : "missing"}; rebuilt from the messages`);
}

/** Reports a `meta.json` that names another session than the folder it lies in. */
export function reportMisplacedMeta(meta: SessionMeta, ref: SessionRef, report: Report): void {
  report(
    "meta.json",
    null,
    "invalid_record",
    true,
    `meta.json names ${meta.agent_id}/${meta.workspace_id}/${meta.session_id} but lies in ${ref.agentId}/${ref.workspaceId}/${ref.sessionId}`,
  );
}

/** Reports the incomplete final batch that starts at `records[torn]` (an interrupted commit); returns the bytes of Active kept. */
export function withoutIncompleteBatch(
  records: readonly DecodedRecord<MessageRecord>[],
  torn: number,
  activeBytes: Uint8Array,
  activeFile: string,
  report: Report,
  repairs: PendingRepairs,
): number {
  const first = records[torn]!;
  const keptBytes = lineStart(activeBytes, first.line);
  repairs.truncateActiveTo = keptBytes;
  report(
    activeFile,
    first.line,
    "truncated_tail",
    false,
    `interrupted commit: ${records.length - torn} of ${String((first.record as Record<string, unknown>)["batch_size"])} messages were written; ignored`,
  );
  return keptBytes;
}

/** What the newest segment adds to an open ({@linkcode segmentSide}). */
export interface SegmentSide {
  /** The listing of `segments/`, when the open had to list it. */
  readonly segments: SegmentRange[] | undefined;
  readonly newest: SegmentRange | undefined;
  readonly footer: SummaryRecord | undefined;
  /** Active's lines without those the newest segment already holds. */
  readonly records: DecodedRecord<MessageRecord>[];
  /** Whether Active held lines the newest segment holds (dropped from `records`, reported). */
  readonly overlap: boolean;
  /** Why `meta.json`'s hint is stale, when the files do not confirm it. */
  readonly staleHint: string | undefined;
}

/**
 * The newest segment of an open that has a hint or a prefetched tail (`load.ts`): the segment
 * and its footer ({@linkcode newestSegment}), the footer's diagnostics, whether `meta.json`'s
 * hint is stale, and Active's `records` without the lines the segment already holds
 * (docs/FORMAT.md recovery rule 3). Apart, so that the first open of a session without
 * segments compiles none of it.
 */
export async function segmentSide(
  storage: StoragePort,
  paths: SessionPaths,
  hint: SegmentRange | undefined,
  newestTail: ReadResult | null | undefined,
  records: DecodedRecord<MessageRecord>[],
  meta: SessionMeta | undefined,
  diagnostics: Diagnostic[],
  activeFile: string,
  report: Report,
  repairs: PendingRepairs,
): Promise<SegmentSide> {
  const { segments, newest, tail } = await newestSegment(storage, paths, hint, newestTail, records[0]?.record.sequence, meta, report);
  diagnostics.push(...(tail?.diagnostics ?? []));
  const segmentEnd = newest?.end ?? 0;
  const staleHint = hint && !(newest && newest.start === hint.start && newest.end === hint.end)
    ? `meta.json names ${formatSegmentName(hint)} as the newest segment, which the files do not confirm`
    : undefined;
  // Without a segment no line overlaps one (sequences start at 1).
  const overlap = segmentEnd === 0 ? [] : records.filter((r) => sequenceStep(r.record.sequence, segmentEnd + 1, segmentEnd) === "overlap");
  const kept = overlap.length > 0 ? withoutOverlap(records, overlap, segmentEnd, activeFile, report, repairs) : records;
  return { segments, newest, footer: tail?.footer, records: kept, overlap: overlap.length > 0, staleHint };
}

/**
 * The newest segment and its footer: `meta.json`'s `hint` when the files confirm it (its
 * footer from the prefetched `newestTail`), else the newest in a listing of `segments/`.
 */
async function newestSegment(
  storage: StoragePort,
  paths: SessionPaths,
  hint: SegmentRange | undefined,
  newestTail: ReadResult | null | undefined,
  first: number | undefined,
  meta: SessionMeta | undefined,
  report: Report,
): Promise<{ segments: SegmentRange[] | undefined; newest: SegmentRange | undefined; tail: SegmentFooter | undefined }> {
  // The footer from the prefetch when it is the segment the hint names and holds its last line whole.
  const prefetched = hint && newestTail?.path === paths.segment(hint) ? segmentFooterInTail(newestTail, paths, hint) : undefined;
  let tail = hint && (prefetched ?? (await readSegmentFooter(withPrefetchedTail(storage, newestTail), paths, hint)));
  if (hint && tail && (first !== undefined ? first >= hint.start && first <= hint.end + 1 : meta!.message_count === hint.end)) {
    return { segments: undefined, newest: hint, tail };
  }
  const segments = await listSegments(storage, paths, report);
  const newest = segments.at(-1);
  if (newest && !(tail && hint && hint.start === newest.start && hint.end === newest.end)) tail = await readSegmentFooter(storage, paths, newest);
  return { segments, newest, tail };
}

/** Reports the lines of Active that the newest segment (through `segmentEnd`) already holds; returns the others. */
function withoutOverlap(
  records: readonly DecodedRecord<MessageRecord>[],
  overlap: readonly DecodedRecord<MessageRecord>[],
  segmentEnd: number,
  activeFile: string,
  report: Report,
  repairs: PendingRepairs,
): DecodedRecord<MessageRecord>[] {
  report(
    activeFile,
    overlap[0]!.line,
    "overlap_removed",
    false,
    `${overlap.length} messages through sequence ${segmentEnd} are already in the newest segment; dropped from Active`,
  );
  repairs.rewriteActive = true;
  return records.filter((r) => r.record.sequence > segmentEnd);
}

/**
 * `state.meta` when `meta.json` (`meta`, undefined when missing) does not agree with the files
 * (recovery rule 5): a lease holder's lines past it are taken as they are; otherwise it is
 * rebuilt. `overlap`: Active held lines of the newest segment; `staleHint`: why `meta.json`'s
 * segment hint is wrong.
 */
export async function reconcileMeta(
  storage: StoragePort,
  paths: SessionPaths,
  state: SessionState,
  meta: SessionMeta | undefined,
  records: readonly DecodedRecord<MessageRecord>[],
  overlap: boolean,
  staleHint: string | undefined,
  report: Report,
): Promise<void> {
  const last = lastSequence(state);
  // A lease holder leaves meta.json behind its lines (at most 64 commits or a second, unless
  // it died): every message meta.json does not count carries a revision above meta.json's.
  // That is the format working, not damage: take the lines' figures, report nothing.
  if (meta && last > meta.message_count && !overlap && !state.repairs.addNewline && staleHint === undefined) {
    const lagging = metaOfLaggingLines(state.meta, meta, records, last);
    if (lagging) {
      state.meta = lagging;
      return;
    }
  }
  // meta.json is behind when it counts fewer messages than the files hold, and also when
  // the files show a write that meta.json cannot have accounted for: an overlap (a
  // compaction or reset interrupted before Active was replaced) or a final line without
  // its newline (an interrupted append, or a foreign writer). Their repairs change
  // history_bytes without changing the message count, so they are counted afresh.
  const behind = !meta
    ? undefined
    : meta.message_count !== last
    ? `meta.json counts ${meta.message_count} messages but the files hold ${last}`
    : overlap
    ? "meta.json predates the newest segment"
    : state.repairs.addNewline
    ? "the final line of active.jsonl lacks its newline"
    : staleHint;
  if (!meta || behind !== undefined) await rebuildMeta(storage, paths, state, meta, behind, report);
}

/**
 * `current` (the open's `meta.json`) with the figures of the lines a lease holder wrote past
 * `meta` (through sequence `last`), when every one of them carries a revision above `meta`'s;
 * `undefined` when they do not (then `meta.json` is rebuilt).
 */
function metaOfLaggingLines(
  current: SessionMeta,
  meta: SessionMeta,
  records: readonly DecodedRecord<MessageRecord>[],
  last: number,
): SessionMeta | undefined {
  const unaccounted = records.filter((r) => r.record.sequence > meta.message_count);
  if (unaccounted.length !== last - meta.message_count || !unaccounted.every((r) => lineRevision(r.record) > meta.revision)) return undefined;
  const lastRecord = unaccounted.at(-1)!.record;
  return {
    ...current,
    message_count: last,
    history_bytes: meta.history_bytes + unaccounted.reduce((sum, r) => sum + r.bytes!.length + 1, 0),
    revision: newestLineRevision(records.map((r) => r.record)),
    updated_at: lastRecord.created_at > meta.updated_at ? lastRecord.created_at : meta.updated_at,
  };
}

/**
 * Rebuilds `state.meta` from the files when `meta.json` is missing (`meta` undefined) or
 * `behind` (why), reporting it and marking it for the next write unless `meta.json` is corrupt.
 * Rebuilding reads every segment's size, so it lists them too.
 */
async function rebuildMeta(
  storage: StoragePort,
  paths: SessionPaths,
  state: SessionState,
  meta: SessionMeta | undefined,
  behind: string | undefined,
  report: Report,
): Promise<void> {
  const segments = state.segments ??= await listSegments(storage, paths, report);
  const last = lastSequence(state);
  const segmentBytes = await Promise.all(segments.map(async (range) => (await storage.readTail(paths.segment(range), 0))?.size ?? 0));
  const historyBytes = segmentBytes.reduce((a, b) => a + b, 0) + state.activeBytes;
  // Every commit adds at least one message and one revision, so the messages meta.json
  // missed bound the commits it missed: the rebuilt revision never goes backwards.
  const floor = last + segments.length;
  const counted = meta ? meta.revision + Math.max(1, last - meta.message_count) : 0;
  state.meta = {
    ...state.meta,
    message_count: last,
    history_bytes: historyBytes,
    revision: Math.max(counted, floor, newestLineRevision(state.active)),
    created_at: meta?.created_at ?? state.active[0]?.created_at ?? state.footer?.created_at ?? state.meta.created_at,
  };
  if (meta) report("meta.json", null, "meta_rebuilt", false, `${behind}; rebuilt (revision ${state.meta.revision})`);
  if (!state.diagnostics.some((d) => d.fatal && d.file === "meta.json")) state.repairs.writeMeta = true;
}

/** The highest revision the lines carry (0 without lines). */
function newestLineRevision(active: readonly MessageRecord[]): number {
  return Math.max(0, ...active.map(lineRevision));
}

/** Byte offset where 1-based `line` starts. */
function lineStart(bytes: Uint8Array, line: number): number {
  let offset = 0;
  for (let n = 1; n < line; n++) offset = bytes.indexOf(0x0a, offset) + 1;
  return offset;
}
