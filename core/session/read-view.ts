/**
 * The read side of a session handle beyond what it holds in memory: the list of closed
 * segments (an open reads only the newest, so its cost does not grow with the history) and
 * whole segments read on demand, one at a time. Reads only; corruption found here is kept
 * in the handle's diagnostics and blocks writes, as on open.
 *
 * @module
 */
import { CorruptSessionError, InvalidInputError } from "../errors.ts";
import { decodeJsonl } from "../jsonl/decode.ts";
import type { Diagnostic } from "../jsonl/diagnostic.ts";
import { relativeToSession, type SessionPaths } from "../layout/paths.ts";
import type { SegmentRange } from "../layout/segments.ts";
import { messageCheck, type MessageRecord, summaryCheck, type SummaryRecord } from "../schema/records.ts";
import type { StoragePort } from "../storage/port.ts";
import { publicRecord } from "./batch.ts";
import { listSegments } from "./load-repairs.ts";
import type { SessionState } from "./state.ts";

/** What the read view reads: the store, the session's paths, and the handle's current state. */
export interface ReadSource {
  readonly storage: StoragePort;
  readonly paths: SessionPaths;
  readonly state: SessionState;
}

/** Every closed segment's range, oldest first; the first call lists `segments/`. */
export async function segmentRanges(source: ReadSource): Promise<readonly SegmentRange[]> {
  const { state } = source;
  if (!state.segments) {
    const report = (file: string, line: number | null, code: Diagnostic["code"], fatal: boolean, message: string) => {
      if (!state.diagnostics.some((d) => d.file === file && d.code === code)) {
        state.diagnostics.push({ file, line, code, fatal, message: `${file}: ${message}` });
      }
    };
    const listed = await listSegments(source.storage, source.paths, report);
    // A compaction of this handle may have closed a segment while the listing ran.
    state.segments ??= listed;
  }
  return [...state.segments];
}

/** Active's messages, or the whole newest segment whose end is below `beforeSequence` (`[]` when none). */
export async function messagesBefore(source: ReadSource, beforeSequence: number | undefined): Promise<MessageRecord[]> {
  const { state } = source;
  if (beforeSequence === undefined) return state.active.map(publicRecord);
  if (!Number.isSafeInteger(beforeSequence) || beforeSequence < 1) {
    throw new InvalidInputError(`beforeSequence ${String(beforeSequence)} is not a positive integer`, { beforeSequence });
  }
  const newest = state.newest;
  const range = newest && newest.end < beforeSequence ? newest : (await segmentRanges(source)).findLast((s) => s.end < beforeSequence);
  if (!range) return [];
  return (await readSegment(source, range)).messages;
}

/**
 * Reads one whole segment: its messages and its footer.
 *
 * @throws {CorruptSessionError} naming file and line for any invalid line.
 */
export async function readSegment(source: ReadSource, range: SegmentRange): Promise<{ messages: MessageRecord[]; footer: SummaryRecord | undefined }> {
  const { paths, state } = source;
  const path = paths.segment(range);
  const file = relativeToSession(paths, path);
  const bytes = (await source.storage.read(path)) ?? new Uint8Array(0);
  const result = decodeJsonl<MessageRecord | SummaryRecord>(bytes, {
    file,
    schemas: { message: messageCheck, summary: summaryCheck },
    tornTailRecoverable: false,
  });
  const fatal = result.diagnostics.find((d) => d.fatal);
  if (fatal) {
    // Rule 2: corruption, once found, blocks every write to the session.
    if (!state.diagnostics.some((d) => d.fatal && d.file === fatal.file && d.line === fatal.line)) state.diagnostics.push(fatal);
    throw new CorruptSessionError(fatal.message, { file, line: fatal.line, diagnostic: fatal.code });
  }
  const messages: MessageRecord[] = [];
  let footer: SummaryRecord | undefined;
  for (const { record } of result.records) {
    if (record.record_type === "message") messages.push(publicRecord(record));
    else footer = record;
  }
  return { messages, footer };
}
