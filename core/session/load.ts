import { CorruptSessionError, NotFoundError } from "../errors.ts";
import { type DecodedRecord, decodeJsonl } from "../jsonl/decode.ts";
import type { Diagnostic } from "../jsonl/diagnostic.ts";
import { formatSessionRef, type SessionRef } from "../layout/ids.ts";
import { relativeToSession, type SessionPaths, type SessionPlace } from "../layout/paths.ts";
import { decodeUtf8, isBlankDocument, messageCheck, type MessageRecord, nowTimestamp, parseMetaJson, type SessionMeta } from "../schema/records.ts";
import type { ReadResult, StoragePort } from "../storage/port.ts";
import { readMany } from "../storage/read-many.ts";
import { incompleteFinalBatch } from "./batch.ts";
import { rememberLine } from "./lines.ts";
import { reconcileMeta, reportMisplacedMeta, reportMissingMeta, type SegmentSide, segmentSide, withoutIncompleteBatch } from "./load-repairs.ts";
import { NEWEST_SEGMENT_FIELD, newestSegmentHint, withNewestSegment } from "./segment-hint.ts";
import { sessionExists } from "./staging.ts";
import { loadDraft } from "./load-draft.ts";
import { lastSequence, type PendingRepairs, type Report, type SessionState } from "./state.ts";

const MESSAGE_SCHEMAS = { message: messageCheck } as const;

/**
 * The newest segment's tail an open reads with its other files: enough for a footer holding
 * the default extractive summary (4,000 characters, at most 3 bytes each in UTF-8) and its
 * fields, so a compacted session's open stays one storage call; a longer footer is read again.
 */
export const FOOTER_PREFETCH_BYTES = 16 * 1024;

/** What an open reads in its first storage step: `meta.json`, Active, the draft, `instruction.md` and the newest segment's tail (a prefetch). */
export type SessionFiles = (ReadResult | null | undefined)[];

/**
 * Starts an open's first storage step ({@linkcode loadSessionState} says what it reads and
 * why in one step). An open starts it before it resolves its options and before the load's
 * code first runs, so that both run while the storage (a worker thread) reads.
 */
export async function readSessionFiles(storage: StoragePort, paths: SessionPaths): Promise<SessionFiles> {
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
  return await readMany(storage, [
    { path: paths.meta },
    { path: paths.active },
    { path: paths.draft },
    { path: paths.instruction },
    { lastIn: paths.segmentsDir, tailBytes: FOOTER_PREFETCH_BYTES, namedIn: { path: paths.meta, field: NEWEST_SEGMENT_FIELD } },
  ]);
}

/**
 * A session as {@linkcode Sessions.open} reads it, without a handle: {@linkcode loadSessionState}
 * over its first storage step (`files`, started by {@linkcode readSessionFiles} unless given), and
 * a session that does not exist, live or archived as `place` says, reported as not found. What
 * `Sessions.open` runs before it makes the handle, and what a reader that only looks (the CLI's
 * `show`) runs alone, loading none of the handle's writers.
 *
 * @example
 * ```ts
 * import { MemoryStorage, sessionPaths, Sessions } from "sessionfold";
 * const storage = new MemoryStorage();
 * const ref = { agentId: "a1", workspaceId: "w1", sessionId: "s1" };
 * await new Sessions({ storage }).create(ref);
 * const state = await readSessionState(storage, ref, "live", sessionPaths(ref), Date.now);
 * state.meta.message_count; // 0
 * ```
 * @throws {NotFoundError} when there is no such session.
 * @throws {UnsupportedSchemaError} when `meta.json` has an unknown schema version.
 */
export async function readSessionState(
  storage: StoragePort,
  ref: SessionRef,
  place: SessionPlace,
  paths: SessionPaths,
  clock: () => number,
  files: Promise<SessionFiles> = readSessionFiles(storage, paths),
): Promise<SessionState> {
  // A meta.json the load read is the session's existence; only without one (or when the
  // load fails) is it asked apart, and a session that does not exist is reported as not found.
  const state = await loadSessionState(storage, paths, ref, clock, files).catch(async (error: unknown) => {
    throw (await sessionExists(storage, ref, place)) ? error : await notFound(storage, ref, place);
  });
  if (state.diskRevision === undefined && !(await sessionExists(storage, ref, place))) throw await notFound(storage, ref, place);
  return state;
}

/**
 * The error of an open that found no session at `place`. The other place is asked only here,
 * on the error path (an open that finds its session reads nothing more): a session archived
 * is named so, with the option that opens it (`{ archived: true }`), and one asked for among
 * the archived that is live, likewise.
 */
async function notFound(storage: StoragePort, ref: SessionRef, place: SessionPlace): Promise<NotFoundError> {
  const text = formatSessionRef(ref);
  const other: SessionPlace = place === "live" ? "archived" : "live";
  if (!(await sessionExists(storage, ref, other))) {
    return new NotFoundError(`no session ${text}${place === "archived" ? " in archived-sessions/" : ""}`, { ref: text });
  }
  const message = other === "archived"
    ? `no session ${text}: it is archived (in archived-sessions/); open it with open("${text}", { archived: true })`
    : `no session ${text} in archived-sessions/: it is live; open it without { archived: true }`;
  return new NotFoundError(message, { ref: text, archived: other === "archived" });
}

/**
 * Opens a session's files and applies the recovery rules of docs/FORMAT.md in order.
 * Reads `meta.json`, `active.jsonl`, the draft, `instruction.md` and the newest segment's
 * tail for its footer (in one step where the backend offers `readMany`: `files`, started by
 * {@linkcode readSessionFiles}): the segment `meta.json` names when the files confirm it, else
 * the newest in a listing of `segments/`. Nothing else, and it writes nothing (repairs wait for the
 * next write). What only a damaged or lagging session needs is in functions of its own
 * (`load-repairs.ts`), so that a sound session's first open compiles none of it.
 *
 * @throws {UnsupportedSchemaError} when `meta.json` has an unknown `schema_version`.
 * @throws {NotFoundError} is not thrown here: callers check existence first.
 */
async function loadSessionState(
  storage: StoragePort,
  paths: SessionPaths,
  ref: SessionRef,
  clock: () => number,
  files: Promise<SessionFiles>,
): Promise<SessionState> {
  const diagnostics: Diagnostic[] = [];
  const repairs: PendingRepairs = {};
  const report: Report = (file, line, code, fatal, message) =>
    diagnostics.push({ file, line, code, fatal, message: `${line === null ? file : `${file}:${line}`}: ${message}` });

  // What needs no file is done while the storage reads.
  const activeFile = relativeToSession(paths, paths.active);

  // meta.json (an unknown schema refuses the session: it is thrown, not reported)
  // Read by index: an array pattern runs the iterator protocol, several times the bytecode of the load's other lines.
  const read = await files;
  const metaBytes = read[0]?.bytes;
  const activeRead = read[1];
  const draftBytes = read[2]?.bytes;
  const instructionBytes = read[3]?.bytes;
  const newestTail = read[4];
  let meta: SessionMeta | undefined;
  if (metaBytes) meta = checkedMeta(metaBytes, ref, report);
  else reportMissingMeta(false, report);

  // active.jsonl: recovery rules 1 (torn tail), 2 (corruption) and 3 (overlap)
  const activeBytes = activeRead?.bytes ?? new Uint8Array(0);
  const decoded = decodeJsonl<MessageRecord>(activeBytes, { file: activeFile, schemas: MESSAGE_SCHEMAS, keepLineBytes: true });
  for (let i = 0; i < decoded.records.length; i++) rememberLine(decoded.records[i]!.record, decoded.records[i]!.bytes!);
  diagnostics.push(...decoded.diagnostics);
  let records = decoded.records;
  let keptBytes = decoded.validBytes;
  if (decoded.validBytes < decoded.totalBytes) repairs.truncateActiveTo = decoded.validBytes;
  const torn = incompleteFinalBatch(records);
  if (torn >= 0) {
    keptBytes = withoutIncompleteBatch(records, torn, activeBytes, activeFile, report, repairs);
    records = records.slice(0, torn);
  } else if (decoded.missingNewline) {
    repairs.addNewline = true;
  }
  // The newest segment: meta.json's hint when the files confirm it, else a listing of segments/.
  const hint = meta ? newestSegmentHint(meta) : undefined;
  // Without a hint, a store that answered the prefetch with no file has no segment to list
  // (`null`: the prefetch was not read); then no line overlaps one either (sequences start at 1).
  const side = !hint && newestTail === undefined
    ? undefined
    : await segmentSide(storage, paths, hint, newestTail, records, meta, diagnostics, activeFile, report, repairs);
  if (side) records = side.records;
  const newest = side?.newest;
  const active: MessageRecord[] = [];
  let expected = (newest?.end ?? 0) + 1;
  let inSequence = true;
  for (let i = 0; i < records.length; i++) {
    const { record, line } = records[i]!;
    active.push(record);
    // The first break in the sequence is reported (it blocks writes).
    if (!inSequence) continue;
    // `sequenceStep`'s "next" (expected is above the segment's end), compared in place: no call per line.
    if (record.sequence === expected) expected += 1;
    else inSequence = reportOutOfSequence(record.sequence, expected, activeFile, line, report);
  }

  // assistant_message.json: recovery rule 4
  const draft = draftBytes ? loadDraft(draftBytes, paths, active, report, repairs) : undefined;

  const instruction = instructionBytes ? safeUtf8(instructionBytes, "instruction.md", report) : undefined;

  // meta.json missing or behind: recovery rule 5
  const state: SessionState = {
    meta: withNewestSegment(meta ?? placeholderMeta(ref, clock), newest),
    diskRevision: meta?.revision,
    // No folder, no segment: known to hold none, not left to be listed.
    segments: side ? side.segments : [],
    newest,
    footer: side?.footer,
    active,
    activeBytes: keptBytes,
    draft,
    instruction,
    diagnostics,
    repairs,
  };
  // meta.json agrees with the files unless it counts other messages, or they show a write it cannot have accounted for.
  if (!meta || meta.message_count !== lastSequence(state) || repairs.addNewline || side?.overlap || side?.staleHint !== undefined) {
    return reconciled(storage, paths, state, meta, records, side, report);
  }
  return state;
}

/** {@linkcode loadSessionState}'s state once `reconcileMeta` brought its `meta.json` in line with the files (apart: a sound session never runs it). */
async function reconciled(
  storage: StoragePort,
  paths: SessionPaths,
  state: SessionState,
  meta: SessionMeta | undefined,
  records: readonly DecodedRecord<MessageRecord>[],
  side: SegmentSide | undefined,
  report: Report,
): Promise<SessionState> {
  await reconcileMeta(storage, paths, state, meta, records, side?.overlap ?? false, side?.staleHint, report);
  return state;
}

/** Reports a message out of sequence in Active (apart: a sound session never runs it); `false`, no longer in sequence. */
function reportOutOfSequence(sequence: number, expected: number, activeFile: string, line: number, report: Report): false {
  report(activeFile, line, "invalid_record", true, `message sequence ${sequence} where ${expected} was expected`);
  return false;
}

/** `meta.json`'s bytes checked, its problems reported (an unknown schema is thrown; a blank one is missing). */
function checkedMeta(bytes: Uint8Array, ref: SessionRef, report: Report): SessionMeta | undefined {
  let meta: SessionMeta;
  try {
    meta = parseMetaJson(bytes, "meta.json");
  } catch (error) {
    return reportUnreadableMeta(error, bytes, report);
  }
  if (meta.session_id !== ref.sessionId || meta.agent_id !== ref.agentId || meta.workspace_id !== ref.workspaceId) reportMisplacedMeta(meta, ref, report);
  return meta;
}

/**
 * Reports a `meta.json` that failed to parse: blank (missing), not JSON or not a meta record
 * (corrupt); anything else is thrown. Apart: a sound session never runs it.
 */
function reportUnreadableMeta(error: unknown, bytes: Uint8Array, report: Report): undefined {
  // A blank document never parses, so only a meta.json that failed is asked whether it is blank.
  if (isBlankDocument(bytes)) return void reportMissingMeta(true, report);
  if (!(error instanceof CorruptSessionError)) throw error;
  report("meta.json", null, (error.details["code"] as Diagnostic["code"]) ?? "invalid_record", true, error.message.replace(/^meta\.json: /, ""));
  return undefined;
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
