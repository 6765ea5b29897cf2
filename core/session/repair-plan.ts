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
import type { SessionRef } from "../layout/ids.ts";
import { relativeToSession, type SessionPaths } from "../layout/paths.ts";
import {
  decodeUtf8,
  encodeJsonDocument,
  isBlankDocument,
  messageCheck,
  metaFieldValid,
  nowTimestamp,
  parseDraftJson,
  parseMetaJson,
  type SessionMeta,
} from "../schema/records.ts";
import type { StoragePort } from "../storage/port.ts";
import { joinLines } from "./lines.ts";
import { PENDING_FIELD } from "./load-draft.ts";
import { type FilePlan, planLines, quarantineLines } from "./repair-lines.ts";
import type { RepairMove, RepairPlan, RepairRefusal, RepairReport } from "./repair-report.ts";
import { newestSegmentHint, withNewestSegment } from "./segment-hint.ts";
import { segmentListing, segmentOrderBreaks } from "./segment-rules.ts";

export type { MovedLine, RepairMove, RepairPlan, RepairRefusal, RepairReport, RepairWrites } from "./repair-report.ts";

const QUARANTINE_DIR = "quarantine";

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
      moves.push({
        from: file,
        to: rel(to),
        lines: plan.moved.map(({ lineBytes: _bytes, ...line }) => line),
        bytes: plan.moved.reduce((sum, l) => sum + l.bytes, 0),
        reason,
      });
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
  const { ranges } = segmentListing(await storage.list(paths.segmentsDir));
  const breaks = new Map(segmentOrderBreaks(ranges).map((found) => [found.range, found.expected]));
  let segmentBytes = 0;
  for (const range of ranges) {
    const path = paths.segment(range);
    const file = rel(path);
    const expected = breaks.get(range);
    if (expected !== undefined) {
      const missing = range.start > expected
        ? `sequences ${expected}–${range.start - 1} are in no segment`
        : `it overlaps the segment before (which ends at ${expected - 1})`;
      refused.push({ file, line: null, reason: `${file}: ${missing}; repair never renumbers messages` });
    }
    const bytes = (await storage.read(path)) ?? new Uint8Array(0);
    segmentBytes += keepLines(path, file, planLines(bytes, file, { kind: "segment", range }), "unreadable or duplicated lines of a closed segment").length;
  }
  const segmentEnd = ranges.at(-1)?.end ?? 0;

  // active.jsonl: what recovery reports or cuts moves out; the messages after the newest segment stay.
  const activeFile = rel(paths.active);
  const activeRead = await storage.read(paths.active);
  const previousRevision = meta.valid?.revision ?? meta.salvageRevision ?? null;
  // Repair is a write: the revision moves on, and never below what the files imply (recovery rule 5).
  const revisionFor = (last: number) => Math.max((previousRevision ?? 0) + 1, last + ranges.length);
  const activePlan = planLines(activeRead ?? new Uint8Array(0), activeFile, { kind: "active", segmentEnd, revisionFor });
  const activeBytes = keepLines(paths.active, activeFile, activePlan, "lines recovery reports or cuts: unreadable, torn, duplicated or already in a segment");
  const lastSequence = activePlan.messages.at(-1)?.sequence ?? segmentEnd;

  // The draft and instruction.md move whole when they cannot be read (or the draft is already committed).
  const [draftBytes, instructionBytes] = await Promise.all([storage.read(paths.draft), storage.read(paths.instruction)]);
  const draftProblem = draftBytes && judgeDraft(draftBytes, rel(paths.draft), new Set(activePlan.messages.map((m) => m.message_id)));
  if (draftProblem) moveFile(paths.draft, draftBytes!, draftProblem);
  if (instructionBytes && !isUtf8(instructionBytes, rel(paths.instruction))) {
    moveFile(paths.instruction, instructionBytes, "instruction.md is not valid UTF-8 (the agent's instruction is used instead)");
  }

  if (refused.length > 0) return refusedPlan(ref, refused);
  const changed = moves.length > 0 || replace.length > 0;
  const previous = meta.valid;
  const historyBytes = segmentBytes + activeBytes.length;
  const newest = ranges.at(-1);
  const hint = previous && newestSegmentHint(previous);
  const staleHint = hint?.start !== newest?.start || hint?.end !== newest?.end;
  const behind = !previous || previous.message_count !== lastSequence || previous.history_bytes !== historyBytes || staleHint || changed;
  const action = !behind ? "unchanged" : previous ? "updated" : "rebuilt";
  const base = previous ?? salvagedMeta(meta.salvage, ref, now, activePlan.messages[0]?.created_at);
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
    if (error instanceof UnsupportedSchemaError) {
      return { refusal: { file: "meta.json", line: null, reason: `${error.message}; repair never guesses what a newer format means` }, salvage: {} };
    }
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
  const salvage: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) {
    if (REBUILT_FIELDS.has(key)) continue;
    if (metaFieldValid(key, field)) salvage[key] = field;
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
    if (!messageCheck.safeParse(value).success) return `${file}: ${PENDING_FIELD}[${i}] is not a valid message`;
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
