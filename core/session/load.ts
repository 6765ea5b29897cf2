import { CorruptSessionError } from "../errors.ts";
import { decodeJsonl } from "../jsonl/decode.ts";
import type { Diagnostic } from "../jsonl/diagnostic.ts";
import type { SessionRef } from "../layout/ids.ts";
import { relativeToSession, type SessionPaths } from "../layout/paths.ts";
import { formatSegmentName, type SegmentRange } from "../layout/segments.ts";
import { decodeUtf8, isBlankDocument, MessageRecord, nowTimestamp, parseMetaJson, type SessionMeta } from "../schema/mod.ts";
import type { StoragePort } from "../storage/port.ts";
import { readMany, withPrefetchedTail } from "../storage/read-many.ts";
import { incompleteFinalBatch, lineRevision } from "./batch.ts";
import { rememberLine } from "./lines.ts";
import { NEWEST_SEGMENT_FIELD, newestSegmentHint, withNewestSegment } from "./segment-hint.ts";
import { describeOrderBreak, readSegmentFooter, segmentFooterInTail, segmentListing, segmentOrderBreaks, sequenceStep } from "./segment-rules.ts";
import { loadDraft } from "./load-draft.ts";
import { lastSequence, type PendingRepairs, type Report, type SessionState } from "./state.ts";

const MESSAGE_SCHEMAS = { message: MessageRecord } as const;

/**
 * The newest segment's tail an open reads with its other files: enough for a footer holding
 * the default extractive summary (4,000 characters, at most 3 bytes each in UTF-8) and its
 * fields, so a compacted session's open stays one storage call; a longer footer is read again.
 */
const FOOTER_PREFETCH_BYTES = 16 * 1024;

/**
 * Opens a session's files and applies the recovery rules of docs/FORMAT.md in order.
 * Reads `meta.json`, `active.jsonl`, the draft, `instruction.md` and the newest segment's
 * tail for its footer (in one step where the backend offers `readMany`): the segment
 * `meta.json` names when the files confirm it, else the newest in a listing of `segments/`.
 * Nothing else, and it writes nothing (repairs wait for the next write).
 *
 * @throws {UnsupportedSchemaError} when `meta.json` has an unknown `schema_version`.
 * @throws {NotFoundError} is not thrown here: callers check existence first.
 */
export async function loadSessionState(
  storage: StoragePort,
  paths: SessionPaths,
  ref: SessionRef,
  clock: () => number,
): Promise<SessionState> {
  const diagnostics: Diagnostic[] = [];
  const repairs: PendingRepairs = {};
  const rel = (path: string) => relativeToSession(paths, path);
  const report = (file: string, line: number | null, code: Diagnostic["code"], fatal: boolean, message: string) =>
    diagnostics.push({ file, line, code, fatal, message: `${line === null ? file : `${file}:${line}`}: ${message}` });

  // meta.json (an unknown schema refuses the session: it is thrown, not reported)
  let meta: SessionMeta | undefined;
  // meta.json before the lines: a commit appends to active.jsonl before it replaces meta.json,
  // so lines read afterwards hold at least every message it counts. Read at once, another
  // writer's commit could fall between the two reads (each PostgreSQL query is its own
  // snapshot) and leave this handle with meta.json's new revision over the old lines: its
  // next commit would pass the revision check with a sequence already taken.
  // One step where the backend reads several files from one state of the store (PostgreSQL:
  // one statement, one snapshot), with the newest segment's tail as a prefetch for its footer;
  // elsewhere meta.json first, then the other three at once (one round trip through a worker).
  // A store that cannot find the last file of segments/ without listing it reads the segment
  // meta.json's hint names instead: a compacted session's open is one call too.
  const [metaRead, activeRead, draftRead, instructionRead, newestTail] = await readMany(storage, [
    { path: paths.meta },
    { path: paths.active },
    { path: paths.draft },
    { path: paths.instruction },
    { lastIn: paths.segmentsDir, tailBytes: FOOTER_PREFETCH_BYTES, namedIn: { path: paths.meta, field: NEWEST_SEGMENT_FIELD } },
  ]);
  const [metaBytes, draftBytes, instructionBytes] = [metaRead?.bytes, draftRead?.bytes, instructionRead?.bytes];
  if (!metaBytes) {
    report("meta.json", null, "missing_meta", false, "meta.json is missing; rebuilt from the messages");
  } else if (isBlankDocument(metaBytes)) {
    // A commit's meta.json is not flushed (it is rebuilt from the messages), so a machine crash
    // may leave it empty or zero-filled on some file systems: that is "missing", not corruption.
    report("meta.json", null, "missing_meta", false, "meta.json is empty; rebuilt from the messages");
  } else {
    try {
      meta = parseMetaJson(metaBytes, "meta.json");
    } catch (error) {
      if (!(error instanceof CorruptSessionError)) throw error;
      report("meta.json", null, (error.details["code"] as Diagnostic["code"]) ?? "invalid_record", true, error.message.replace(/^meta\.json: /, ""));
    }
    if (meta && (meta.session_id !== ref.sessionId || meta.agent_id !== ref.agentId || meta.workspace_id !== ref.workspaceId)) {
      report(
        "meta.json",
        null,
        "invalid_record",
        true,
        `meta.json names ${meta.agent_id}/${meta.workspace_id}/${meta.session_id} but lies in ${ref.agentId}/${ref.workspaceId}/${ref.sessionId}`,
      );
    }
  }

  // active.jsonl: recovery rules 1 (torn tail), 2 (corruption) and 3 (overlap)
  const activeFile = rel(paths.active);
  const activeBytes = activeRead?.bytes ?? new Uint8Array(0);
  const decoded = decodeJsonl<MessageRecord>(activeBytes, { file: activeFile, schemas: MESSAGE_SCHEMAS, keepLineBytes: true });
  for (const { record, bytes } of decoded.records) rememberLine(record, bytes!);
  diagnostics.push(...decoded.diagnostics);
  let records = decoded.records;
  let keptBytes = decoded.validBytes;
  if (decoded.validBytes < decoded.totalBytes) repairs.truncateActiveTo = decoded.validBytes;
  const torn = incompleteFinalBatch(records);
  if (torn >= 0) {
    const first = records[torn]!;
    keptBytes = lineStart(activeBytes, first.line);
    repairs.truncateActiveTo = keptBytes;
    report(
      activeFile,
      first.line,
      "truncated_tail",
      false,
      `interrupted commit: ${records.length - torn} of ${String((first.record as Record<string, unknown>)["batch_size"])} messages were written; ignored`,
    );
    records = records.slice(0, torn);
  } else if (decoded.missingNewline) {
    repairs.addNewline = true;
  }
  // The newest segment: meta.json's hint when the files confirm it, else a listing of segments/.
  const hint = meta ? newestSegmentHint(meta) : undefined;
  const first = records[0]?.record.sequence;
  let segments: SegmentRange[] | undefined;
  let newest: SegmentRange | undefined;
  // The footer from the prefetch when it is the segment the hint names and holds its last line whole.
  const prefetched = hint && newestTail?.path === paths.segment(hint) ? segmentFooterInTail(newestTail, paths, hint) : undefined;
  let tail = hint && (prefetched ?? (await readSegmentFooter(withPrefetchedTail(storage, newestTail), paths, hint)));
  if (hint && tail && (first !== undefined ? first >= hint.start && first <= hint.end + 1 : meta!.message_count === hint.end)) {
    newest = hint;
  } else {
    // Without a hint, a store that answered the prefetch with no file has no segment to list
    // (`null`: the prefetch was not read).
    segments = !hint && newestTail === undefined ? [] : await listSegments(storage, paths, report);
    newest = segments.at(-1);
    if (newest && !(tail && hint && sameRange(hint, newest))) tail = await readSegmentFooter(storage, paths, newest);
  }
  diagnostics.push(...(tail?.diagnostics ?? []));
  const footer = tail?.footer;
  const segmentEnd = newest?.end ?? 0;
  const staleHint = hint && !(newest && sameRange(hint, newest))
    ? `meta.json names ${formatSegmentName(hint)} as the newest segment, which the files do not confirm`
    : undefined;

  const overlap = records.filter((r) => sequenceStep(r.record.sequence, segmentEnd + 1, segmentEnd) === "overlap");
  if (overlap.length > 0) {
    report(
      activeFile,
      overlap[0]!.line,
      "overlap_removed",
      false,
      `${overlap.length} messages through sequence ${segmentEnd} are already in the newest segment; dropped from Active`,
    );
    records = records.filter((r) => r.record.sequence > segmentEnd);
    repairs.rewriteActive = true;
  }
  let expected = segmentEnd + 1;
  for (const { record, line } of records) {
    if (sequenceStep(record.sequence, expected) !== "next") {
      report(activeFile, line, "invalid_record", true, `message sequence ${record.sequence} where ${expected} was expected`);
      break;
    }
    expected += 1;
  }
  const active = records.map((r) => r.record);

  // assistant_message.json: recovery rule 4
  const draft = loadDraft(draftBytes, paths, active, report, repairs);

  const instruction = instructionBytes ? safeUtf8(instructionBytes, "instruction.md", report) : undefined;

  // meta.json missing or behind: recovery rule 5
  const state: SessionState = {
    meta: withNewestSegment(meta ?? placeholderMeta(ref, clock), newest),
    diskRevision: meta?.revision,
    segments,
    newest,
    footer,
    active,
    activeBytes: keptBytes,
    draft,
    instruction,
    diagnostics,
    repairs,
  };
  const last = lastSequence(state);
  const lineRevisions = active.map(lineRevision);
  const newestLineRevision = Math.max(0, ...lineRevisions);
  // A lease holder leaves meta.json behind its lines (at most 64 commits or a second, unless
  // it died): every message meta.json does not count carries a revision above meta.json's.
  // That is the format working, not damage: take the lines' figures, report nothing.
  if (meta && last > meta.message_count && overlap.length === 0 && !repairs.addNewline && staleHint === undefined) {
    const unaccounted = records.filter((r) => r.record.sequence > meta.message_count);
    if (unaccounted.length === last - meta.message_count && unaccounted.every((r) => lineRevision(r.record) > meta.revision)) {
      const lastRecord = unaccounted.at(-1)!.record;
      state.meta = {
        ...state.meta,
        message_count: last,
        history_bytes: meta.history_bytes + unaccounted.reduce((sum, r) => sum + r.bytes!.length + 1, 0),
        revision: newestLineRevision,
        updated_at: lastRecord.created_at > meta.updated_at ? lastRecord.created_at : meta.updated_at,
      };
      return state;
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
    : overlap.length > 0
    ? "meta.json predates the newest segment"
    : repairs.addNewline
    ? "the final line of active.jsonl lacks its newline"
    : staleHint;
  if (!meta || behind !== undefined) {
    // Rebuilding reads every segment's size, so it lists them too.
    segments ??= state.segments = await listSegments(storage, paths, report);
    const segmentBytes = await Promise.all(segments.map(async (range) => (await storage.readTail(paths.segment(range), 0))?.size ?? 0));
    const historyBytes = segmentBytes.reduce((a, b) => a + b, 0) + keptBytes;
    // Every commit adds at least one message and one revision, so the messages meta.json
    // missed bound the commits it missed: the rebuilt revision never goes backwards.
    const floor = last + segments.length;
    const counted = meta ? meta.revision + Math.max(1, last - meta.message_count) : 0;
    state.meta = {
      ...state.meta,
      message_count: last,
      history_bytes: historyBytes,
      revision: Math.max(counted, floor, newestLineRevision),
      created_at: meta?.created_at ?? active[0]?.created_at ?? footer?.created_at ?? state.meta.created_at,
    };
    if (meta) report("meta.json", null, "meta_rebuilt", false, `${behind}; rebuilt (revision ${state.meta.revision})`);
    if (!diagnostics.some((d) => d.fatal && d.file === "meta.json")) repairs.writeMeta = true;
  }
  return state;
}

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

function sameRange(a: SegmentRange, b: SegmentRange): boolean {
  return a.start === b.start && a.end === b.end;
}

function safeUtf8(bytes: Uint8Array, file: string, report: Report): string | undefined {
  try {
    return decodeUtf8(bytes, file);
  } catch {
    report(file, null, "invalid_record", true, "not valid UTF-8");
    return undefined;
  }
}

function placeholderMeta(ref: SessionRef, clock: () => number): SessionMeta {
  const now = nowTimestamp(clock);
  return {
    schema_version: 1,
    session_id: ref.sessionId,
    agent_id: ref.agentId,
    workspace_id: ref.workspaceId,
    created_at: now,
    updated_at: now,
    message_count: 0,
    history_bytes: 0,
    revision: 0,
  };
}

/** Byte offset where 1-based `line` starts. */
function lineStart(bytes: Uint8Array, line: number): number {
  let offset = 0;
  for (let n = 1; n < line; n++) offset = bytes.indexOf(0x0a, offset) + 1;
  return offset;
}
