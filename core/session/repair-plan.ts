/**
 * What `Session.repair()` would do, worked out from a session's files and nothing else
 * (docs/FORMAT.md "Repair"): every line that recovery reports or would cut goes to a
 * quarantine file beside the session, every valid record stays where it is with its exact
 * bytes and its sequence, and `meta.json` is rebuilt. A gap between sequences that no line
 * left in the files closes is refused with the reason. The one message repair renumbers is a
 * second writer's whose sequence another message holds (`repair-duplicates.ts`): it is kept,
 * after the rest, never dropped.
 *
 * @module
 */
import { CorruptSessionError, UnsupportedSchemaError } from "../errors.ts";
import { decodeJsonl } from "../jsonl/decode.ts";
import type { SessionRef } from "../layout/ids.ts";
import { relativeToSession, type SessionPaths } from "../layout/paths.ts";
import { parseSegmentName, type SegmentRange } from "../layout/segments.ts";
import {
  MessageRecord,
  SessionMeta,
  SummaryRecord,
  decodeUtf8,
  encodeJsonDocument,
  isBlankDocument,
  nowTimestamp,
  parseDraftJson,
  parseMetaJson,
} from "../schema/mod.ts";
import type { StoragePort } from "../storage/port.ts";
import { incompleteFinalBatch } from "./batch.ts";
import { joinLines } from "./lines.ts";
import { PENDING_FIELD } from "./load.ts";
import { SecondWriterLines } from "./repair-duplicates.ts";
import { newestSegmentHint, withNewestSegment } from "./segment-hint.ts";

/** One line moved out of a JSONL file into its quarantine file. */
export interface MovedLine {
  /** Its 1-based line number in the file it left. */
  readonly line: number;
  /**
   * Why: a diagnostic code (`invalid_json`, `invalid_record`, `oversized_line`,
   * `truncated_tail`, `overlap_removed`) or `duplicate` (a second copy of a kept line) or
   * `interrupted_commit` (a final batch missing some of its messages) or `renumbered` (a
   * second writer's message, kept under a new sequence after the rest).
   */
  readonly code: string;
  /** The reason in words (no content of the line is quoted). */
  readonly reason: string;
  /** Its length in bytes, without its newline. */
  readonly bytes: number;
}

/** What moved into the quarantine: lines out of a JSONL file, or a whole file. */
export interface RepairMove {
  /** The file it came from, relative to the session folder (`messages/active.jsonl`). */
  readonly from: string;
  /** The quarantine file it went to, relative to the session folder (`quarantine/…`). */
  readonly to: string;
  /** The lines moved, in file order; absent when the whole file moved. */
  readonly lines?: readonly MovedLine[];
  /** Bytes moved. */
  readonly bytes: number;
  /** Why, in words. */
  readonly reason: string;
}

/** Why repair will not touch a session. */
export interface RepairRefusal {
  readonly file: string;
  readonly line: number | null;
  readonly reason: string;
}

/**
 * What `Session.repair()` found and did (or, without `apply`, would do). It quotes nothing
 * of a line but the short escaped excerpt a diagnostic gives.
 */
export interface RepairReport {
  /** `<agent_id>/<workspace_id>/<session_id>`. */
  readonly ref: string;
  /** `true` when the plan was carried out. */
  readonly applied: boolean;
  /** `true` when there was nothing to repair. */
  readonly clean: boolean;
  /** Why repair refuses the session; when not empty nothing is (or would be) changed. */
  readonly refused: readonly RepairRefusal[];
  /** Everything moved into quarantine, by source file. */
  readonly moves: readonly RepairMove[];
  /** Files written again without the moved lines (relative to the session folder). */
  readonly rewritten: readonly string[];
  /** What stays: messages in all, closed segments, and the highest sequence (unchanged by repair). */
  readonly kept: { readonly messages: number; readonly segments: number; readonly lastSequence: number };
  /**
   * `meta.json`: `"updated"` (its counts and revision set from the files), `"rebuilt"` (it was
   * missing or unreadable: made anew, with the fields of the old one that were still valid,
   * listed in `salvaged`), or `"unchanged"`.
   */
  readonly meta: { readonly action: "unchanged" | "updated" | "rebuilt"; readonly previousRevision: number | null; readonly revision: number; readonly salvaged?: readonly string[] };
}

/** The writes of a plan, in the order they must happen (quarantine first: nothing is removed before it is kept). */
export interface RepairWrites {
  /** New quarantine files: created exclusively, durably. */
  readonly quarantine: readonly { readonly path: string; readonly bytes: Uint8Array }[];
  /** Whole files moved into quarantine. */
  readonly moves: readonly { readonly from: string; readonly to: string }[];
  /** Files replaced without their moved lines (segments, then Active). */
  readonly replace: readonly { readonly path: string; readonly bytes: Uint8Array }[];
  /** The new `meta.json`, written last. */
  readonly meta: Uint8Array | undefined;
}

/** A plan: the report and the writes that carry it out. */
export interface RepairPlan {
  readonly report: RepairReport;
  readonly writes: RepairWrites;
}

interface Line {
  readonly line: number;
  readonly bytes: Uint8Array;
}

/** A line to move, before it is given its quarantine file. */
interface Moving extends MovedLine {
  readonly lineBytes: Uint8Array;
}

/** One JSONL file after planning: the lines kept (exact bytes) and the ones to move. */
interface FilePlan {
  readonly kept: Line[];
  readonly moved: Moving[];
  readonly refused: RepairRefusal[];
  /** The file must be written again even if nothing moved (its final newline is missing). */
  readonly rewrite: boolean;
}

const utf8 = new TextEncoder();
const QUARANTINE_DIR = "quarantine";
const SEGMENT_SCHEMAS = { message: MessageRecord, summary: SummaryRecord } as const;

/**
 * Plans the repair of one session from its files: reads `meta.json`, every segment in full,
 * `active.jsonl`, the draft and `instruction.md`; writes nothing.
 *
 * @example
 * ```ts
 * import { MemoryStorage, sessionPaths } from "sessionfold";
 * const storage = new MemoryStorage();
 * const ref = { agentId: "a1", workspaceId: "w1", sessionId: "s1" };
 *
 * const { report } = await planRepair(storage, sessionPaths(ref), ref, Date.now);
 * for (const move of report.moves) console.log(move.from, "→", move.to, move.lines?.map((l) => l.line));
 * ```
 * @throws {UnsupportedSchemaError} is not thrown: a `meta.json` of an unknown version is a refusal.
 * @throws {StoreEntryError} when a file of the session is a link, a FIFO or otherwise refused by the storage.
 */
export async function planRepair(storage: StoragePort, paths: SessionPaths, ref: SessionRef, clock: () => number): Promise<RepairPlan> {
  const rel = (path: string) => relativeToSession(paths, path);
  const stamp = nowTimestamp(clock).replace(/[:.]/g, "-");
  const quarantinePath = (file: string, suffix: string) => `${paths.dir}/${QUARANTINE_DIR}/${file.replace(/\//g, "_")}.${stamp}${suffix}`;
  const refused: RepairRefusal[] = [];
  const moves: RepairMove[] = [];
  const quarantine: { path: string; bytes: Uint8Array }[] = [];
  const fileMoves: { from: string; to: string }[] = [];
  const replace: { path: string; bytes: Uint8Array }[] = [];
  const now = nowTimestamp(clock);

  const keepLines = (path: string, file: string, plan: FilePlan, reason: string): Uint8Array => {
    refused.push(...plan.refused);
    if (plan.moved.length > 0) {
      const to = quarantinePath(file, ".jsonl");
      quarantine.push({ path: to, bytes: quarantineLines(file, plan.moved, now) });
      moves.push({ from: file, to: rel(to), lines: plan.moved.map(({ lineBytes: _bytes, ...line }) => line), bytes: plan.moved.reduce((sum, l) => sum + l.bytes, 0), reason });
    }
    const bytes = joinLines(plan.kept.map((l) => l.bytes));
    if (plan.moved.length > 0 || plan.rewrite) replace.push({ path, bytes });
    return bytes;
  };
  const moveFile = (path: string, bytes: Uint8Array, reason: string) => {
    const to = quarantinePath(rel(path), "");
    fileMoves.push({ from: path, to });
    moves.push({ from: rel(path), to: rel(to), bytes: bytes.length, reason });
  };

  // meta.json first: a version this reader does not know stops everything.
  const metaBytes = await storage.read(paths.meta);
  const meta = judgeMeta(metaBytes, ref);
  if (meta.refusal) return refusedPlan(ref, [meta.refusal]);
  if (meta.unreadable) moveFile(paths.meta, metaBytes!, meta.unreadable);

  // Segments: in order, contiguous from 1, each holding exactly its range and its footer last.
  const ranges: SegmentRange[] = [];
  for (const name of await storage.list(paths.segmentsDir)) {
    const range = parseSegmentName(name);
    if (range) ranges.push(range);
  }
  ranges.sort((a, b) => a.start - b.start);
  let segmentBytes = 0;
  let expected = 1;
  for (const range of ranges) {
    const path = paths.segment(range);
    const file = rel(path);
    if (range.start !== expected) {
      const missing = range.start > expected ? `sequences ${expected}–${range.start - 1} are in no segment` : `it overlaps the segment before (which ends at ${expected - 1})`;
      refused.push({ file, line: null, reason: `${file}: ${missing}; repair never renumbers messages` });
    }
    expected = range.end + 1;
    const bytes = (await storage.read(path)) ?? new Uint8Array(0);
    segmentBytes += keepLines(path, file, planSegment(bytes, file, range), "unreadable or duplicated lines of a closed segment").length;
  }
  const segmentEnd = ranges.at(-1)?.end ?? 0;

  // active.jsonl: what recovery reports or cuts moves out; the messages after the newest segment stay.
  const activeFile = rel(paths.active);
  const activeRead = await storage.read(paths.active);
  const previousRevision = meta.valid?.revision ?? meta.salvageRevision ?? null;
  // Repair is a write: the revision moves on, and never below what the files imply (recovery rule 5).
  const revisionFor = (last: number) => Math.max((previousRevision ?? 0) + 1, last + ranges.length);
  const activePlan = planActive(activeRead ?? new Uint8Array(0), activeFile, segmentEnd, revisionFor);
  const activeBytes = keepLines(paths.active, activeFile, activePlan.plan, "lines recovery reports or cuts: unreadable, torn, duplicated or already in a segment");
  const lastSequence = activePlan.lastSequence ?? segmentEnd;

  // The draft and instruction.md move whole when they cannot be read (or the draft is already committed).
  const [draftBytes, instructionBytes] = await Promise.all([storage.read(paths.draft), storage.read(paths.instruction)]);
  const draftProblem = draftBytes && judgeDraft(draftBytes, rel(paths.draft), activePlan.messageIds);
  if (draftProblem) moveFile(paths.draft, draftBytes!, draftProblem);
  if (instructionBytes && !isUtf8(instructionBytes, rel(paths.instruction))) moveFile(paths.instruction, instructionBytes, "instruction.md is not valid UTF-8 (the agent's instruction is used instead)");

  if (refused.length > 0) return refusedPlan(ref, refused);
  const changed = moves.length > 0 || replace.length > 0;
  const previous = meta.valid;
  const historyBytes = segmentBytes + activeBytes.length;
  const newest = ranges.at(-1);
  const hint = previous && newestSegmentHint(previous);
  const staleHint = hint?.start !== newest?.start || hint?.end !== newest?.end;
  const behind = !previous || previous.message_count !== lastSequence || previous.history_bytes !== historyBytes || staleHint || changed;
  const action = !behind ? "unchanged" : previous ? "updated" : "rebuilt";
  const base = previous ?? salvagedMeta(meta.salvage, ref, now, activePlan.firstCreatedAt);
  // Renumbered lines carry the repair's revision, above every revision in the file.
  const revision = behind ? Math.max(revisionFor(lastSequence), activePlan.renumberedRevision ?? 0) : base.revision;
  const next = withNewestSegment({ ...base, message_count: lastSequence, history_bytes: historyBytes, revision, updated_at: now }, newest);
  const report: RepairReport = {
    ref: `${ref.agentId}/${ref.workspaceId}/${ref.sessionId}`,
    applied: false,
    clean: !behind,
    refused: [],
    moves,
    rewritten: replace.map((w) => rel(w.path)),
    kept: { messages: lastSequence, segments: ranges.length, lastSequence },
    meta: { action, previousRevision, revision, ...(previous ? {} : { salvaged: Object.keys(meta.salvage) }) },
  };
  return { report, writes: { quarantine, moves: fileMoves, replace, meta: behind ? encodeJsonDocument(next) : undefined } };
}

function refusedPlan(ref: SessionRef, refused: RepairRefusal[]): RepairPlan {
  const report: RepairReport = {
    ref: `${ref.agentId}/${ref.workspaceId}/${ref.sessionId}`,
    applied: false,
    clean: false,
    refused,
    moves: [],
    rewritten: [],
    kept: { messages: 0, segments: 0, lastSequence: 0 },
    meta: { action: "unchanged", previousRevision: null, revision: 0 },
  };
  return { report, writes: { quarantine: [], moves: [], replace: [], meta: undefined } };
}

/** The lines of a file, each without its newline (a final line without one included). */
function splitLines(bytes: Uint8Array): Line[] {
  const lines: Line[] = [];
  for (let start = 0, n = 1; start < bytes.length; n++) {
    const end = bytes.indexOf(0x0a, start);
    lines.push({ line: n, bytes: bytes.subarray(start, end === -1 ? bytes.length : end) });
    if (end === -1) break;
    start = end + 1;
  }
  return lines;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

/** Lines of a list in words: `line 4`, `lines 4, 7`. */
function linesWord(lines: readonly number[]): string {
  return lines.length === 1 ? `line ${lines[0]}` : `lines ${lines.join(", ")}`;
}

/** Walks a decoded JSONL file: each line with its record or its fatal diagnostic. */
function decodeLines(bytes: Uint8Array, file: string, tornTailRecoverable: boolean) {
  const decoded = decodeJsonl<MessageRecord | SummaryRecord>(bytes, { file, schemas: SEGMENT_SCHEMAS, tornTailRecoverable });
  const records = new Map(decoded.records.map((r) => [r.line, r.record]));
  const problems = new Map(decoded.diagnostics.filter((d) => d.fatal || d.code === "truncated_tail").map((d) => [d.line!, d]));
  return { lines: splitLines(bytes), records, problems, decoded };
}

/** A closed segment: bad lines and exact duplicates move; anything else wrong is refused. */
function planSegment(bytes: Uint8Array, file: string, range: SegmentRange): FilePlan {
  const { lines, records, problems } = decodeLines(bytes, file, false);
  const kept: Line[] = [];
  const moved: Moving[] = [];
  const refused: RepairRefusal[] = [];
  const keptBySequence = new Map<number, Uint8Array>();
  let footer: Line | undefined;
  let expected = range.start;
  for (const line of lines) {
    const problem = problems.get(line.line);
    const record = records.get(line.line);
    if (problem) {
      moved.push(reported(line, problem, file));
    } else if (record?.record_type === "summary") {
      if (footer && sameBytes(footer.bytes, line.bytes)) moved.push(duplicate(line, "a second copy of the footer"));
      else if (footer || record.through_sequence !== range.end) refused.push({ file, line: line.line, reason: `${file}:${line.line}: a summary through sequence ${record.through_sequence} where only one footer through ${range.end} belongs, last` });
      else kept.push((footer = line));
    } else if (record?.record_type === "message") {
      const earlier = keptBySequence.get(record.sequence);
      if (earlier && sameBytes(earlier, line.bytes)) {
        moved.push(duplicate(line, `a second copy of message ${record.sequence}`));
      } else if (footer || record.sequence !== expected) {
        const bad = moved.filter((m) => m.code !== "duplicate").map((m) => m.line);
        const where = footer ? "after the footer" : record.sequence > expected ? `where ${expected} was expected: sequences ${expected}–${record.sequence - 1} are missing` : `where ${expected} was expected`;
        refused.push({ file, line: line.line, reason: `${file}:${line.line}: message sequence ${record.sequence} ${where}${bad.length > 0 ? ` (${linesWord(bad)} could not be read and may have held them)` : ""}; repair never renumbers messages` });
        break;
      } else {
        keptBySequence.set(record.sequence, line.bytes);
        kept.push(line);
        expected += 1;
      }
    } else {
      kept.push(line); // a record type this reader does not know: kept as it is
    }
  }
  if (refused.length === 0 && expected !== range.end + 1) {
    const bad = moved.filter((m) => m.code !== "duplicate").map((m) => m.line);
    refused.push({ file, line: null, reason: `${file}: sequences ${expected}–${range.end} are missing${bad.length > 0 ? ` (${linesWord(bad)} could not be read and may have held them)` : ""}; repair never renumbers messages` });
  }
  if (refused.length === 0 && !footer) {
    refused.push({ file, line: null, reason: `${file}: no readable summary footer through sequence ${range.end}; repair cannot write a summary (it would need the summarizer)` });
  }
  return { kept, moved, refused, rewrite: false };
}

/** A line recovery reported (unreadable, torn, over the limit), as it moves. */
function reported(line: Line, problem: { code: string; message: string }, file: string): Moving {
  return { line: line.line, code: problem.code, reason: problem.message.replace(`${file}:${line.line}: `, ""), bytes: line.bytes.length, lineBytes: line.bytes };
}

function duplicate(line: Line, what: string): Moving {
  return { line: line.line, code: "duplicate", reason: `${what}, identical to a line kept above`, bytes: line.bytes.length, lineBytes: line.bytes };
}

/**
 * Active: unreadable lines, a torn tail, messages already in the newest segment, exact
 * duplicates and the lines of an interrupted final commit move; a second writer's messages
 * (a sequence already kept) are renumbered after the rest; a gap in the sequences is refused.
 */
function planActive(
  bytes: Uint8Array,
  file: string,
  segmentEnd: number,
  revisionFor: (last: number) => number,
): { plan: FilePlan; lastSequence: number | undefined; messageIds: Set<string>; firstCreatedAt: string | undefined; renumberedRevision?: number } {
  const { lines, records, problems, decoded } = decodeLines(bytes, file, true);
  const kept: Line[] = [];
  const moved: Moving[] = [];
  const refused: RepairRefusal[] = [];
  const keptBySequence = new Map<number, Uint8Array>();
  // Lines of a second writer (a sequence a different kept message holds): renumbered after the rest.
  const second = new SecondWriterLines();
  const keptMessages: { record: MessageRecord; line: number }[] = [];
  let expected = segmentEnd + 1;
  for (const line of lines) {
    const problem = problems.get(line.line);
    const record = records.get(line.line);
    if (problem) {
      moved.push(reported(line, problem, file));
    } else if (record?.record_type === "message") {
      const earlier = keptBySequence.get(record.sequence);
      if (record.sequence <= segmentEnd) {
        moved.push({ line: line.line, code: "overlap_removed", reason: `message ${record.sequence} is already in the newest segment (through ${segmentEnd})`, bytes: line.bytes.length, lineBytes: line.bytes });
      } else if (earlier && sameBytes(earlier, line.bytes)) {
        moved.push(duplicate(line, `a second copy of message ${record.sequence}`));
      } else if (earlier) {
        second.add(line, record);
      } else if (record.sequence !== expected) {
        const bad = moved.filter((m) => m.code === "invalid_json" || m.code === "invalid_record" || m.code === "oversized_line").map((m) => m.line);
        // Only a gap is left here: a sequence already kept is a second writer's (above).
        const why = `sequences ${expected}–${record.sequence - 1} are missing`;
        refused.push({ file, line: line.line, reason: `${file}:${line.line}: message sequence ${record.sequence} where ${expected} was expected: ${why}${bad.length > 0 ? ` (${linesWord(bad)} could not be read and may have held them)` : ""}; repair never renumbers messages` });
        break;
      } else {
        keptBySequence.set(record.sequence, line.bytes);
        keptMessages.push({ record, line: line.line });
        kept.push(line);
        expected += 1;
      }
    } else if (record?.record_type === "summary") {
      refused.push({ file, line: line.line, reason: `${file}:${line.line}: a summary record in active.jsonl; summaries belong in segments` });
      break;
    } else {
      kept.push(line); // a record type this reader does not know: kept as it is
    }
  }
  // A final batch with fewer lines than its batch_size was never committed (recovery cuts it): its lines move.
  const torn = incompleteFinalBatch(keptMessages.map(({ record, line }) => ({ record, line })));
  if (torn >= 0) {
    const lineNumbers = new Set(keptMessages.slice(torn).map((m) => m.line));
    for (const line of kept.filter((l) => lineNumbers.has(l.line))) {
      moved.push({ line: line.line, code: "interrupted_commit", reason: "part of a final commit whose other messages were never written", bytes: line.bytes.length, lineBytes: line.bytes });
    }
    moved.sort((a, b) => a.line - b.line);
    kept.splice(0, kept.length, ...kept.filter((l) => !lineNumbers.has(l.line)));
    keptMessages.splice(torn);
  }
  const chainEnd = keptMessages.at(-1)?.record.sequence ?? segmentEnd;
  const settled = refused.length > 0 ? undefined : second.settle(keptMessages.map((m) => m.record), chainEnd, lines.length, revisionFor);
  if (settled) {
    moved.push(...settled.moved);
    moved.sort((a, b) => a.line - b.line);
    kept.push(...settled.appended);
  }
  const all = [...keptMessages.map((m) => m.record), ...(settled?.records ?? [])];
  return {
    plan: { kept, moved, refused, rewrite: decoded.missingNewline },
    lastSequence: all.at(-1)?.sequence,
    messageIds: new Set(all.map((m) => m.message_id)),
    firstCreatedAt: all[0]?.created_at,
    ...(settled ? { renumberedRevision: settled.revision } : {}),
  };
}

/** What `meta.json` is: valid, unreadable (to move, with what can be salvaged), or of an unknown version (refused). */
function judgeMeta(bytes: Uint8Array | undefined, ref: SessionRef): {
  valid?: SessionMeta;
  unreadable?: string;
  refusal?: RepairRefusal;
  salvage: Record<string, unknown>;
  salvageRevision?: number;
} {
  if (!bytes || isBlankDocument(bytes)) return { salvage: {} };
  let meta: SessionMeta;
  try {
    meta = parseMetaJson(bytes, "meta.json");
  } catch (error) {
    if (error instanceof UnsupportedSchemaError) return { refusal: { file: "meta.json", line: null, reason: `${error.message}; repair never guesses what a newer format means` }, salvage: {} };
    if (!(error instanceof CorruptSessionError)) throw error;
    return { unreadable: `meta.json cannot be read: ${error.message.replace(/^meta\.json: /, "")}`, ...salvageFrom(bytes) };
  }
  if (meta.session_id !== ref.sessionId || meta.agent_id !== ref.agentId || meta.workspace_id !== ref.workspaceId) {
    return { unreadable: `meta.json names ${meta.agent_id}/${meta.workspace_id}/${meta.session_id}, not the session it lies in`, ...salvageFrom(bytes) };
  }
  return { valid: meta, salvage: {} };
}

/** Fields rebuilt from the files, never salvaged. */
const REBUILT_FIELDS = new Set(["schema_version", "session_id", "agent_id", "workspace_id", "message_count", "history_bytes", "revision", "updated_at"]);

/** The fields of an unreadable `meta.json` that are still valid on their own: known fields that pass their schema, and extension fields. */
function salvageFrom(bytes: Uint8Array): { salvage: Record<string, unknown>; salvageRevision?: number } {
  let value: unknown;
  try {
    value = JSON.parse(decodeUtf8(bytes, "meta.json"));
  } catch {
    return { salvage: {} };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return { salvage: {} };
  const shape = SessionMeta.shape as Record<string, { safeParse(value: unknown): { success: boolean } }>;
  const salvage: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) {
    if (REBUILT_FIELDS.has(key)) continue;
    if (!Object.hasOwn(shape, key) || shape[key]!.safeParse(field).success) salvage[key] = field;
  }
  const revision = (value as { revision?: unknown }).revision;
  return { salvage, ...(Number.isSafeInteger(revision) && (revision as number) >= 0 ? { salvageRevision: revision as number } : {}) };
}

function salvagedMeta(salvage: Record<string, unknown>, ref: SessionRef, now: string, firstCreatedAt: string | undefined): SessionMeta {
  return {
    schema_version: 1,
    session_id: ref.sessionId,
    agent_id: ref.agentId,
    workspace_id: ref.workspaceId,
    created_at: firstCreatedAt ?? now,
    ...salvage,
    updated_at: now,
    message_count: 0,
    history_bytes: 0,
    revision: 0,
  } as SessionMeta;
}

/** Why the draft must move, or `undefined` when it stays. */
function judgeDraft(bytes: Uint8Array, file: string, committed: ReadonlySet<string>): string | undefined {
  let record: Record<string, unknown>;
  try {
    record = parseDraftJson(bytes, file) as Record<string, unknown>;
  } catch (error) {
    return `${file} cannot be read: ${(error as Error).message.replace(`${file}: `, "")}`;
  }
  const pending = record[PENDING_FIELD];
  for (const [i, value] of (Array.isArray(pending) ? pending : []).entries()) {
    if (!MessageRecord.safeParse(value).success) return `${file}: ${PENDING_FIELD}[${i}] is not a valid message`;
  }
  const ids = [record["message_id"], ...(Array.isArray(pending) ? pending.map((m: { message_id?: unknown }) => m?.message_id) : [])];
  if (ids.some((id) => typeof id === "string" && committed.has(id))) return `${file}: the draft is already committed in Active (a stale draft)`;
  return undefined;
}

function isUtf8(bytes: Uint8Array, file: string): boolean {
  try {
    decodeUtf8(bytes, file);
    return true;
  } catch {
    return false;
  }
}

/** The quarantine file of moved lines: one JSON record per line, its bytes exactly (as text when UTF-8, else base64). */
function quarantineLines(file: string, lines: readonly Moving[], at: string): Uint8Array {
  const decoder = new TextDecoder("utf-8", { fatal: true });
  const records = lines.map(({ line, code, reason, lineBytes }) => {
    let content: { text: string } | { base64: string };
    try {
      content = { text: decoder.decode(lineBytes) };
    } catch {
      content = { base64: base64Of(lineBytes) };
    }
    return utf8.encode(JSON.stringify({ record_type: "quarantined_line", file, line, code, reason, quarantined_at: at, ...content }));
  });
  return joinLines(records);
}

function base64Of(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x2000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x2000));
  return btoa(binary);
}
