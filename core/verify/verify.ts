/**
 * `verifySession`: reads every file of one session in full and reports what is wrong,
 * changing nothing. A normal open reads only what the model context needs (docs/FORMAT.md
 * recovery rule 2); verify is where corruption in older segments is found.
 *
 * Checked: `meta.json` (schema version, ids, counts, history bytes), `instruction.md`,
 * every segment decoded whole with no torn tail allowed (contiguous names from 1, messages
 * `start..end` in order, the last line and only it a summary footer through `end`),
 * `active.jsonl` (torn tail, corruption, overlap, sequence gaps), the draft, and a
 * leftover `writer.lock`.
 *
 * @module
 */
import { StoreEntryError, UnsupportedSchemaError } from "../errors.ts";
import { decodeJsonl } from "../jsonl/mod.ts";
import {
  formatSessionRef,
  isValidId,
  type SegmentRange,
  type SessionPaths,
  sessionPaths,
  type SessionPlace,
  type SessionRef,
  sessionsDir,
} from "../layout/mod.ts";
import type { MessageRecord, SummaryRecord } from "../schema/mod.ts";
import { describeLockOwner, readLockOwner } from "../session/lock.ts";
import { describeOrderBreak, notAFooter, SEGMENT_RECORDS, segmentListing, segmentOrderBreaks, sequenceStep } from "../session/segment-rules.ts";
import type { Sessions } from "../session/mod.ts";
import type { StoragePort } from "../storage/port.ts";
import { listOrRefuse, type OnRefusedEntry, workspacesOf } from "../storage/store-walk.ts";

/** One finding of {@linkcode verifySession}: where, what, and whether it makes the session unreadable. */
export interface VerifyDiagnostic {
  /** The file, relative to the session's folder. */
  readonly file: string;
  /** 1-based line, or `null` for the file as a whole. */
  readonly line: number | null;
  /** A stable code (the recovery diagnostics' codes, plus verify's own). */
  readonly code: string;
  readonly message: string;
  /** `true` when the session cannot be opened or would lose data as it is. */
  readonly fatal: boolean;
}

/** What {@linkcode verifySession} found about one session. */
export interface VerifyReport {
  /** `<agent_id>/<workspace_id>/<session_id>`. */
  readonly ref: string;
  /** `true` when no diagnostic is fatal. */
  readonly ok: boolean;
  readonly diagnostics: VerifyDiagnostic[];
  /** Where the session lies. */
  readonly place: SessionPlace;
}

/** A session found in the store, live or archived. */
export interface StoredSession {
  readonly ref: SessionRef;
  readonly place: SessionPlace;
}

const SEGMENTS = "messages/segments/";

/**
 * Reads every file of a session and reports every problem as a diagnostic. Reads only.
 * An unknown `schema_version` is reported (fatal) and nothing else is read: a reader
 * never guesses what a newer format means.
 *
 * @example
 * ```ts
 * import { Sessions, parseSessionRef } from "sessionfold";
 * declare const sessions: Sessions;
 *
 * const report = await verifySession(sessions, parseSessionRef("a1/w1/s1"));
 * if (!report.ok) for (const d of report.diagnostics) console.log(d.message);
 * ```
 * @throws {NotFoundError} when there is no such session.
 */
export async function verifySession(sessions: Sessions, ref: SessionRef, place: SessionPlace = "live"): Promise<VerifyReport> {
  const paths = sessionPaths(ref, place);
  const diagnostics: VerifyDiagnostic[] = [];
  try {
    await verifyFiles(sessions, ref, place, paths, diagnostics);
  } catch (error) {
    // Nothing more of the session is read after either: a newer format is never guessed, a refused entry never followed.
    if (error instanceof UnsupportedSchemaError) diagnostics.push(unsupportedSchema(error));
    else if (error instanceof StoreEntryError) diagnostics.push(unsafeEntry(error, paths));
    else throw error;
  }
  return report(ref, place, diagnostics);
}

async function verifyFiles(sessions: Sessions, ref: SessionRef, place: SessionPlace, paths: SessionPaths, diagnostics: VerifyDiagnostic[]): Promise<void> {
  const storage = sessions.storage;
  // The session's folder itself first: a link or a file there is refused here (StoreEntryError), not read as no session.
  await storage.list(paths.dir);
  const session = await sessions.open(ref, { archived: place === "archived" });
  // Open judged only the newest segment's tail; every segment is judged whole below.
  diagnostics.push(...session.diagnostics.filter((d) => !d.file.startsWith(SEGMENTS)));
  const segments = await verifySegments(storage, paths);
  diagnostics.push(...segments.diagnostics);
  if (diagnostics.length === 0) {
    const activeBytes = (await storage.readTail(paths.active, 0))?.size ?? 0;
    const actual = segments.bytes + activeBytes;
    if (actual !== session.meta.history_bytes) {
      diagnostics.push({
        file: "meta.json",
        line: null,
        code: "meta_mismatch",
        message: `meta.json: history_bytes is ${session.meta.history_bytes} but the .jsonl files hold ${actual} bytes`,
        fatal: false,
      });
    }
  }
  diagnostics.push(...(await lockDiagnostics(storage, paths)));
}

/**
 * Every session of the store (live, then archived, by agent, workspace and id), as
 * found on disk; hidden folders (a fork being staged) and folders holding neither
 * `meta.json` nor `messages/` are left out. An entry the backend refuses where a session's
 * folder belongs (a link, a file) is listed, for {@linkcode verifySession} to report; one
 * above every session (in place of an agent's or a workspace's folder, of `sessions/` or
 * `archived-sessions/`) goes to `onRefused`, once per entry, and nothing under it is read
 * (docs/FORMAT.md "The store's boundary"); without `onRefused` such an entry is thrown.
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 * const storage = new MemoryStorage();
 * for (const stored of await listStoredSessions(storage, (error) => console.error(error.message))) console.log(stored);
 * ```
 */
export async function listStoredSessions(storage: StoragePort, onRefused: OnRefusedEntry = throwRefused): Promise<StoredSession[]> {
  const refused = new Set<string>();
  // A workspace's folder refused is met twice, through sessions/ and archived-sessions/: one entry, one report.
  const reportOnce: OnRefusedEntry = (error) => {
    const entry = error.details.file ?? error.details.path;
    if (!refused.has(entry)) onRefused(error);
    refused.add(entry);
  };
  const found: StoredSession[] = [];
  for (const { agentId, workspaceId } of await workspacesOf(storage, {}, reportOnce)) {
    for (const place of ["live", "archived"] as const) {
      const dir = sessionsDir(agentId, workspaceId, place);
      for (const sessionId of (await listOrRefuse(storage, dir, reportOnce)).filter(isValidId)) {
        const ref = { agentId, workspaceId, sessionId };
        // A refused folder is listed all the same: verifySession reports it as unsafe_entry.
        let refusedFolder = false;
        const names = await listOrRefuse(storage, `${dir}/${sessionId}`, () => void (refusedFolder = true));
        if (refusedFolder || names.includes("meta.json") || names.includes("messages")) found.push({ ref, place });
      }
    }
  }
  return found;
}

function throwRefused(error: StoreEntryError): never {
  throw error;
}

/** The diagnostic of a `meta.json` whose schema version this reader does not know. */
export function unsupportedSchema(error: UnsupportedSchemaError): VerifyDiagnostic {
  return { file: "meta.json", line: null, code: "unsupported_schema", message: error.message, fatal: true };
}

/**
 * The diagnostic of an entry the store refuses (a link, a FIFO, a folder for a file…):
 * fatal, and nothing more of the session is read. `file` is relative to the session's folder
 * (`paths`), or the store key for an entry outside it (the folder itself, one above it, or one
 * above every session when `paths` is absent), whose message then also names where the
 * backend found it (the absolute file on Node).
 *
 * @example
 * ```ts
 * import { StoreEntryError } from "sessionfold";
 * const error = new StoreEntryError("refused", { path: "agents/evil/workspaces", file: "/store/agents/evil", found: "a symbolic link", expected: "a folder" });
 * unsafeEntry(error).message; // "agents/evil/workspaces (/store/agents/evil): found a symbolic link where a folder belongs; not read"
 * ```
 */
export function unsafeEntry(error: StoreEntryError, paths?: SessionPaths): VerifyDiagnostic {
  const { path, file: backendFile, found, expected } = error.details;
  const inside = paths !== undefined && path.startsWith(`${paths.dir}/`);
  const file = inside ? path.slice(paths.dir.length + 1) : path;
  const where = inside || backendFile === undefined ? file : `${file} (${backendFile})`;
  return { file, line: null, code: "unsafe_entry", message: `${where}: found ${found} where ${expected} belongs; not read`, fatal: true };
}

async function verifySegments(storage: StoragePort, paths: SessionPaths): Promise<{ diagnostics: VerifyDiagnostic[]; bytes: number }> {
  const diagnostics: VerifyDiagnostic[] = [];
  const { ranges, strangers } = segmentListing(await storage.list(paths.segmentsDir));
  for (const name of strangers) diagnostics.push(finding(`${SEGMENTS}${name}`, null, "unexpected_file", false, "not a segment name; ignored"));
  const breaks = new Map(segmentOrderBreaks(ranges).map((found) => [found.range, found]));
  let bytes = 0;
  for (const range of ranges) {
    const file = `${SEGMENTS}${paths.segment(range).split("/").at(-1)}`;
    const broken = breaks.get(range);
    if (broken) diagnostics.push(finding(file, null, "invalid_segment", true, describeOrderBreak(broken)));
    const content = (await storage.read(paths.segment(range))) ?? new Uint8Array(0);
    bytes += content.length;
    diagnostics.push(...checkSegment(content, file, range));
  }
  return { diagnostics, bytes };
}

/** Judges one whole segment: every line valid, messages `start..end` in order, the footer last. */
function checkSegment(content: Uint8Array, file: string, range: SegmentRange): VerifyDiagnostic[] {
  const result = decodeJsonl<MessageRecord | SummaryRecord>(content, { file, schemas: SEGMENT_RECORDS, tornTailRecoverable: false });
  const diagnostics: VerifyDiagnostic[] = [...result.diagnostics];
  const lines = countLines(content);
  let expected = range.start;
  // After an unreadable line the sequence order cannot be judged; that line is reported already.
  let sequenceBroken = result.fatal;
  for (const { record, line } of result.records) {
    if (record.record_type === "summary") {
      if (line !== lines) {
        diagnostics.push(finding(file, line, "invalid_record", true, "a summary footer before the last line; the footer is the last line only"));
      }
      continue;
    }
    if (!sequenceBroken && sequenceStep(record.sequence, expected) !== "next") {
      const why = record.sequence > range.end ? `beyond the segment's end ${range.end}` : `where ${expected} was expected`;
      diagnostics.push(finding(file, line, "invalid_record", true, `message sequence ${record.sequence} ${why}`));
      sequenceBroken = true;
    }
    expected += 1;
  }
  const lastLineBad = result.diagnostics.some((d) => d.fatal && d.line === lines);
  const last = result.records.at(-1);
  if (lines === 0) {
    diagnostics.push(
      finding(file, null, "invalid_segment", true, `the segment is empty; its last line must be a summary footer through sequence ${range.end}`),
    );
  } else if (!lastLineBad) {
    if (last?.line !== lines || last.record.record_type !== "summary") {
      diagnostics.push(finding(file, lines, "invalid_segment", true, notAFooter(range)));
    } else if (last.record.through_sequence !== range.end) {
      diagnostics.push(
        finding(file, lines, "invalid_segment", true, `the footer's through_sequence is ${last.record.through_sequence}; the segment ends at ${range.end}`),
      );
    }
  }
  if (!sequenceBroken && result.diagnostics.length === 0 && expected - 1 !== range.end) {
    diagnostics.push(
      finding(file, null, "invalid_segment", true, `the segment holds messages ${range.start}..${expected - 1}; its name says ${range.start}..${range.end}`),
    );
  }
  return diagnostics;
}

/** A non-fatal `writer_locked` diagnostic naming the owner when `writer.lock` is present. */
export async function lockDiagnostics(storage: StoragePort, paths: SessionPaths): Promise<VerifyDiagnostic[]> {
  const bytes = await storage.read(paths.lock);
  if (bytes === undefined) return [];
  const owner = await readLockOwner(storage, paths.lock);
  const who = owner ? `held by ${describeLockOwner(owner)}` : "present but unreadable";
  return [
    finding("writer.lock", null, "writer_locked", false, `${who}; a writer is running, or one stopped without removing it (sessionfold unlock REF --force)`),
  ];
}

/** Lines of a file: `\n`-terminated ones plus an unterminated last one. */
function countLines(bytes: Uint8Array): number {
  let lines = 0;
  for (const byte of bytes) if (byte === 0x0a) lines += 1;
  return bytes.length > 0 && bytes[bytes.length - 1] !== 0x0a ? lines + 1 : lines;
}

function finding(file: string, line: number | null, code: string, fatal: boolean, message: string): VerifyDiagnostic {
  return { file, line, code, message: `${line === null ? file : `${file}:${line}`}: ${message}`, fatal };
}

const FILE_ORDER = ["meta.json", "instruction.md", SEGMENTS, "messages/active.jsonl", "messages/assistant_message.json", "writer.lock"];

function report(ref: SessionRef, place: SessionPlace, diagnostics: VerifyDiagnostic[]): VerifyReport {
  const rank = (file: string) => {
    const i = FILE_ORDER.findIndex((prefix) => file.startsWith(prefix));
    return i < 0 ? FILE_ORDER.length : i;
  };
  const sorted = diagnostics.map((d, i) => ({ d, i })).sort((a, b) => rank(a.d.file) - rank(b.d.file) || a.i - b.i).map(({ d }) => d);
  return { ref: formatSessionRef(ref), ok: !sorted.some((d) => d.fatal), diagnostics: sorted, place };
}
