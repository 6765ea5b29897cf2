/**
 * Every mutation of a session as a value, planned from the session state and applied by the
 * one commit path (`commit-path.ts`): nothing here reads or writes storage. An append is an
 * {@linkcode AppendChange}; a compaction or a reset closes part of Active into a segment,
 * a {@linkcode SegmentClose} (`segment-close.ts` plans those).
 *
 * @module
 */
import { InvalidInputError } from "../errors.ts";
import type { SessionPaths } from "../layout/paths.ts";
import type { SegmentRange } from "../layout/segments.ts";
import { type MessageRecord, type SessionMeta, type SummaryRecord } from "../schema/records.ts";
import { encodeMetaDocument } from "../storage/catalog.ts";
import { assertJsonlFits, MAX_FILE_BYTES, MAX_LINE_BYTES } from "../storage/limits.ts";
import type { PlannedWrite } from "../storage/port.ts";
import { markBatch, stampRevision } from "./batch.ts";
import { linesOf } from "./lines.ts";
import { plainClone } from "./plain-clone.ts";
import type { StagedBytes } from "./staged-close.ts";
import { hasNewestSegment, withNewestSegment } from "./segment-hint.ts";
import { lastSequence, type SessionState } from "./state.ts";

/** An append of messages: their numbered records, the lines to append, `meta.json` after. */
export interface AppendChange {
  readonly sequenced: MessageRecord[];
  readonly bytes: Uint8Array;
  readonly meta: SessionMeta;
}

/**
 * The oldest messages of Active closed into the segment `range` (compaction, reset): the
 * segment's bytes with its `footer`, the messages that stay in Active and their bytes, and
 * `meta.json` after.
 */
export interface SegmentClose {
  readonly range: SegmentRange;
  readonly footer: SummaryRecord;
  readonly segmentBytes: Uint8Array;
  readonly kept: MessageRecord[];
  readonly activeBytes: Uint8Array;
  readonly meta: SessionMeta;
  /**
   * The segment's lines and Active's bytes staged in the backend (`StoragePort.stage`, `staged-close.ts`): `segmentBytes`
   * is then the footer's line that follows the staged lines, and `activeBytes` empty.
   */
  readonly staged?: { readonly segment: StagedBytes; readonly active: StagedBytes };
}

/**
 * The `updated_at` a sync writes: the later of the session's own `before` and the newest `created_at` of what it
 * writes (`written`), never the time of the sync (docs/SYNC.md "Activity"). A time that is not a date counts for
 * nothing.
 *
 * @example
 * ```ts
 * syncedActivity("2020-01-01T00:00:00.000Z", [{ created_at: "2020-01-02T00:00:00.000Z" }]); // "2020-01-02T00:00:00.000Z"
 * ```
 */
export function syncedActivity(before: string, written: readonly { readonly created_at: string }[]): string {
  let latest = before;
  let latestMs = Date.parse(before);
  for (const { created_at } of written) {
    const ms = Date.parse(created_at);
    if (ms > latestMs || (Number.isNaN(latestMs) && !Number.isNaN(ms))) [latest, latestMs] = [created_at, ms];
  }
  return latest;
}

/** `meta.json` with `patch`, `updated_at` = `now` and the newest-segment hint (`newest`, else the current one). */
export function nextMeta(state: Pick<SessionState, "meta" | "newest">, patch: Partial<SessionMeta>, now: string, newest = state.newest): SessionMeta {
  return withNewestSegment({ ...state.meta, ...patch, updated_at: now }, newest);
}

/**
 * Sequences, line bytes and the next `meta.json` of an append of `records` at `now`.
 *
 * @throws {LimitExceededError} when a line or `active.jsonl` after it would be over a read
 * limit (`maxFileBytes`: the store's): a commit an open could not read back is refused before
 * it is written (docs/FORMAT.md "Limits").
 */
export function planAppend(state: SessionState, records: readonly MessageRecord[], now: string, maxFileBytes = MAX_FILE_BYTES): AppendChange {
  if (records.length === 0) throw new InvalidInputError("a commit needs at least one message");
  const first = lastSequence(state) + 1;
  const sequence = first + records.length - 1;
  const revision = state.meta.revision + 1;
  // The line revision goes last, after a batch mark: it ends every line (docs/FORMAT.md `revision`).
  const sequenced = stampRevision(records, revision, first);
  // Each line but a batch's first (its mark) is the record Active keeps: its bytes are
  // remembered, and a compaction copies them instead of encoding the record again.
  const lines = sequenced.length < 2 ? sequenced : [...stampRevision(markBatch(sequenced).slice(0, 1), revision), ...sequenced.slice(1)];
  const bytes = encodedLines(lines);
  // Within both limits as a whole, no line is over one: the check (and what it would say) is made only when it could refuse.
  if (bytes.length > MAX_LINE_BYTES || state.activeBytes + bytes.length > maxFileBytes) {
    const describeLine = (index: number) => `message ${index + 1} of ${sequenced.length} in this commit (sequence ${sequenced[index]?.sequence})`;
    assertJsonlFits(bytes, { file: "messages/active.jsonl", sizeBefore: state.activeBytes, describeLine }, MAX_LINE_BYTES, maxFileBytes);
  }
  // docs/FORMAT.md: meta.json's provider is the identity of the newest assistant message.
  const produced = sequenced.findLast(producedByProvider)?.provider;
  // A plain clone and fields set on it: a commit's meta.json differs from the last in four
  // fields, and the hint is rebuilt only when it changed (a compaction's plan sets it).
  const meta: Record<string, unknown> = plainClone(hasNewestSegment(state.meta, state.newest) ? state.meta : withNewestSegment(state.meta, state.newest));
  if (produced) meta["provider"] = { provider: produced.provider, api: produced.api, model: produced.model };
  meta["message_count"] = sequence;
  meta["history_bytes"] = state.meta.history_bytes + bytes.length;
  meta["revision"] = revision;
  meta["updated_at"] = now;
  return { sequenced, bytes, meta: meta as SessionMeta };
}

/**
 * The lines of `records`, or, for a message holding what JSON cannot encode (a BigInt, a cycle), an
 * `InvalidInputError` naming it: nothing is written (the check costs nothing unless the encoding fails).
 */
function encodedLines(records: readonly MessageRecord[]): Uint8Array {
  try {
    return linesOf(records);
  } catch (error) {
    const index = records.findIndex((record) => !encodes(record));
    throw new InvalidInputError(
      `message ${index + 1} of ${records.length} in this commit cannot be written as JSON (${
        error instanceof Error ? error.message : String(error)
      }); nothing was written`,
      { index },
    );
  }
}

function encodes(record: MessageRecord): boolean {
  try {
    JSON.stringify(record);
    return true;
  } catch {
    return false;
  }
}

/** An assistant message that names its provider. */
function producedByProvider(message: MessageRecord): boolean {
  return message.role === "assistant" && Boolean(message.provider);
}

/**
 * An append's writes: the lines, then `meta.json`. The lines are durable when the append
 * resolves; `meta.json` need not be (recovery rule 5 rebuilds one left behind).
 */
export function appendWrites(paths: SessionPaths, change: Pick<AppendChange, "bytes" | "meta">): PlannedWrite[] {
  return [
    { op: "append", path: paths.active, bytes: change.bytes },
    { op: "replace", path: paths.meta, bytes: encodeMetaDocument(change.meta), durable: false },
  ];
}

/**
 * A segment close's writes. The order is what recovery relies on: `meta.json` first, naming
 * the new segment; then the segment; then Active. A crash before the segment lands leaves a
 * hint that the files do not confirm, so the next open lists `segments/` and rebuilds
 * `meta.json`; a crash before Active is replaced leaves the overlap of recovery rule 3.
 * Either way the hint never hides a segment that exists. The segment's and Active's bytes
 * are handed over (`PlannedWrite.handOver`): nothing reads them once the plan is applied.
 */
export function segmentCloseWrites(paths: SessionPaths, close: SegmentClose): PlannedWrite[] {
  return [
    { op: "replace", path: paths.meta, bytes: encodeMetaDocument(close.meta) },
    {
      op: "replace",
      path: paths.segment(close.range),
      bytes: close.segmentBytes,
      handOver: true,
      ...(close.staged ? { staged: close.staged.segment.id } : {}),
    },
    { op: "replace", path: paths.active, bytes: close.activeBytes, handOver: true, ...(close.staged ? { staged: close.staged.active.id } : {}) },
  ];
}
