/**
 * What sync reads from and writes to one store, at the level of a session's files
 * (docs/FORMAT.md): the history after a sequence (segments, then Active), a session's head,
 * a whole session installed from files (built in a hidden folder and moved into place in
 * one step, as a fork or an import is), and the labels and `instruction.md` written under
 * the session's `writer.lock`. Both sides of a sync use these, so both keep the format's
 * invariants the same way.
 *
 * @module
 */
import { InvalidInputError } from "../errors.ts";
import { SESSION_KEYS_FILE } from "../encryption/places.ts";
import { decodeJsonl } from "../jsonl/decode.ts";
import { formatSessionRef, parseSessionRef, type SessionRef } from "../layout/ids.ts";
import { sessionPaths, sessionsDir } from "../layout/paths.ts";
import { formatSegmentName, parseSegmentName, type SegmentRange } from "../layout/segments.ts";
import { encodeJsonDocument, messageCheck, type MessageRecord, nowTimestamp, type SessionMeta, summaryCheck, type SummaryRecord } from "../schema/records.ts";
import { BATCH_FIELD } from "../session/batch.ts";
import { newId } from "../session/ids.ts";
import { acquireWriterLock, releaseWriterLock } from "../session/lock.ts";
import { applyCommitPlan } from "../session/apply-commit-plan.ts";
import type { WriterIdentity } from "../session/owner.ts";
import type { NewMessage } from "../session/message-input.ts";
import type { Session } from "../session/session.ts";
import { withNewestSegment } from "../session/segment-hint.ts";
import { syncedActivity } from "../session/planned-change.ts";
import type { Sessions } from "../session/registry.ts";
import type { StoragePort } from "../storage/port.ts";
import type { SegmentFile, SessionHead, SessionLabels } from "./protocol.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Who sync's own locked writes are by (stamped into `writer.lock`), and the time. */
export interface SyncWriter {
  readonly identity: WriterIdentity;
  readonly clock: () => number;
}

/**
 * The `onProblem` of sync's own listings of a store: a session the listing cannot read, or a folder it refuses above
 * its sessions, is left out and the rest are listed (docs/decisions.md "Sync: one session's problem stays that
 * session's"); without a listener a refused folder would refuse the whole listing.
 */
export function skipUnlisted(): void {}

/** The last sequence of a session (0 when empty). */
export function lastSequenceOf(session: Session): number {
  return session.active.at(-1)?.sequence ?? session.newestSegment?.end ?? 0;
}

/**
 * Up to `limit` messages after sequence `after`, oldest first: from the segments that reach
 * past it (each read whole), then Active. `more` says whether the history goes on.
 */
export async function messagesAfter(session: Session, after: number, limit = Number.MAX_SAFE_INTEGER): Promise<{ messages: MessageRecord[]; more: boolean }> {
  const out: MessageRecord[] = [];
  const newest = session.newestSegment;
  if (newest && after < newest.end) {
    // Within the newest segment (a page near the end, the message before Active): no listing of segments/, which grows with the history.
    for (const range of after >= newest.start - 1 ? [newest] : await session.segments()) {
      if (range.end <= after) continue;
      for (const m of (await session.readSegment(range)).messages) if (m.sequence > after) out.push(m);
      if (out.length > limit) break;
    }
  }
  if (out.length <= limit) { for (const m of session.active) if (m.sequence > after) out.push(m); }
  return { messages: out.slice(0, limit), more: out.length > limit };
}

/** The message at `sequence`, or `undefined` (0, or past the end). */
export async function messageAt(session: Session, sequence: number): Promise<MessageRecord | undefined> {
  if (sequence < 1) return undefined;
  const [first] = (await messagesAfter(session, sequence - 1, 1)).messages;
  return first?.sequence === sequence ? first : undefined;
}

/** The labels of `meta.json` that sync copies. */
export function labelsOf(meta: SessionMeta): SessionLabels {
  return {
    ...(meta.title !== undefined ? { title: meta.title } : {}),
    ...(meta.model_label !== undefined ? { model_label: meta.model_label } : {}),
    ...(meta.timezone !== undefined ? { timezone: meta.timezone } : {}),
  };
}

/** Whether two label sets say the same. */
export function sameLabels(a: SessionLabels, b: SessionLabels): boolean {
  return a.title === b.title && a.model_label === b.model_label && a.timezone === b.timezone;
}

/** Every segment name of a session, oldest first (one listing of `segments/`). */
export async function segmentNamesOf(session: Session): Promise<string[]> {
  return (await session.segments()).map(formatSegmentName);
}

/** What a pull tells about a session: its newest segment by name, the others never listed. */
export async function headOf(storage: StoragePort, session: Session): Promise<SessionHead> {
  const instruction = await storage.read(session.paths.instruction);
  return {
    ref: formatSessionRef(session.ref),
    place: session.place,
    revision: session.revision,
    last_sequence: lastSequenceOf(session),
    last_message_id: session.active.at(-1)?.message_id ?? null,
    newest_segment: session.newestSegment ? formatSegmentName(session.newestSegment) : null,
    labels: labelsOf(session.meta),
    instruction: instruction ? decoder.decode(instruction) : null,
  };
}

/** A segment's exact text, read from the store (segments are immutable and named by range). */
export async function readSegmentFile(storage: StoragePort, session: Session, name: string): Promise<SegmentFile | undefined> {
  const range = parseSegmentName(name);
  if (!range) return undefined;
  const bytes = await storage.read(session.paths.segment(range));
  return bytes && { name, text: decoder.decode(bytes) };
}

/** The messages of segment files, checked: every line valid, the footer through the segment's end. */
export function messagesOfSegments(ref: string, segments: readonly SegmentFile[]): MessageRecord[] {
  const out: MessageRecord[] = [];
  for (const segment of segments) {
    const file = `${ref}/messages/segments/${segment.name}`;
    const result = decodeJsonl<MessageRecord | SummaryRecord>(encoder.encode(segment.text), {
      file,
      schemas: { message: messageCheck, summary: summaryCheck },
      tornTailRecoverable: false,
    });
    const bad = result.diagnostics.find((d) => d.fatal);
    if (bad) throw new InvalidInputError(`${file}: ${bad.message}`, { file, line: bad.line });
    const records = result.records.map((r) => r.record);
    const footer = records.at(-1);
    const range = parseSegmentName(segment.name)!;
    if (footer?.record_type !== "summary" || footer.through_sequence !== range.end) {
      throw new InvalidInputError(`${file}: expected a summary footer through ${range.end} as the last line`, { file, line: records.length });
    }
    const messages = records.filter((r): r is MessageRecord => r.record_type === "message");
    messages.forEach((m, i) => {
      if (m.sequence !== range.start + i) {
        throw new InvalidInputError(`${file}: line ${i + 1} has sequence ${m.sequence}; expected ${range.start + i}`, { file, line: i + 1 });
      }
    });
    if (messages.length !== range.end - range.start + 1) {
      throw new InvalidInputError(`${file}: holds ${messages.length} messages; its name says ${range.end - range.start + 1}`, { file });
    }
    out.push(...messages);
  }
  return out;
}

/** What a new session is installed from. */
export interface SessionFiles {
  readonly meta: SessionMeta;
  readonly instruction: string | null;
  readonly segments: readonly SegmentFile[];
  readonly active: readonly MessageRecord[];
}

/**
 * Installs a whole session that does not exist in `storage`: segments (exact bytes), Active,
 * `instruction.md`, then `meta.json` (its revision at least every line's, its counts from
 * the files), all in a hidden folder moved into place in one step; a crash leaves no half
 * session. Resolves `false` (nothing installed) when a session with that ref appeared. An
 * encrypted session's `keys` (its `keys.json`, docs/SYNC.md "End-to-end encrypted sessions")
 * go in first.
 */
export async function installSession(storage: StoragePort, ref: SessionRef, files: SessionFiles, clock: () => number, keys?: string): Promise<boolean> {
  return moveStaged(storage, ref, await stageSessionFiles(storage, ref, files, clock, keys));
}

/**
 * Writes a whole session as {@linkcode installSession} does, into a hidden folder beside the
 * sessions, and resolves that folder (moved into place by the caller: a re-read swaps it for
 * the old copy, docs/SYNC.md "Re-reads").
 */
export function stageSessionFiles(storage: StoragePort, ref: SessionRef, files: SessionFiles, clock: () => number, keys?: string): Promise<string> {
  return stageFolder(storage, ref, async (staging) => {
    // An encrypted session's wrapped keys first: an encrypted store seals the rest with them, as every other replica does.
    if (keys !== undefined) await storage.replace(`${staging}/${SESSION_KEYS_FILE}`, encoder.encode(keys));
    let historyBytes = 0;
    let newest: SegmentRange | undefined;
    for (const segment of files.segments) {
      const bytes = encoder.encode(segment.text);
      await storage.replace(`${staging}/messages/segments/${segment.name}`, bytes);
      historyBytes += bytes.length;
      newest = parseSegmentName(segment.name);
    }
    let revision = files.meta.revision;
    const lines = files.active.map((m) => {
      const { [BATCH_FIELD]: _batch, ...record } = m as MessageRecord & { [BATCH_FIELD]?: unknown };
      revision = Math.max(revision, typeof record.revision === "number" ? record.revision : 0);
      return `${JSON.stringify(record)}\n`;
    });
    const active = encoder.encode(lines.join(""));
    if (active.length > 0) await storage.replace(`${staging}/messages/active.jsonl`, active);
    historyBytes += active.length;
    if (files.instruction !== null) await storage.replace(`${staging}/instruction.md`, encoder.encode(files.instruction));
    const meta = withNewestSegment(
      {
        ...files.meta,
        session_id: ref.sessionId,
        agent_id: ref.agentId,
        workspace_id: ref.workspaceId,
        message_count: files.active.at(-1)?.sequence ?? newest?.end ?? 0,
        history_bytes: historyBytes,
        revision,
        updated_at: files.meta.updated_at ?? nowTimestamp(clock),
      },
      newest,
    );
    await storage.replace(`${staging}/meta.json`, encodeJsonDocument(meta));
  });
}

/**
 * Builds a session with `write` in a hidden folder beside the sessions, then moves it into
 * place in one step; a crash or an error leaves no half session. `false` (nothing installed)
 * when a session with that ref appeared meanwhile.
 */
export async function installStaged(storage: StoragePort, ref: SessionRef, write: (staging: string) => Promise<void>): Promise<boolean> {
  return moveStaged(storage, ref, await stageFolder(storage, ref, write));
}

/** A hidden folder beside the sessions, named for the session `ref` (an encrypted store seals what is in it for that session). */
export function hiddenFolder(ref: SessionRef): string {
  return `${sessionsDir(ref.agentId, ref.workspaceId)}/.sync-${ref.sessionId}-${newId("t")}`;
}

/** Builds a session with `write` in a new hidden folder and resolves the folder; an error removes it. */
async function stageFolder(storage: StoragePort, ref: SessionRef, write: (staging: string) => Promise<void>): Promise<string> {
  const staging = hiddenFolder(ref);
  try {
    await write(staging);
    return staging;
  } catch (error) {
    await storage.remove(staging).catch(() => undefined);
    throw error;
  }
}

/** Moves a staged session into place; `false` (the staged folder removed) when a session with that ref appeared meanwhile. */
async function moveStaged(storage: StoragePort, ref: SessionRef, staging: string): Promise<boolean> {
  try {
    if (await storage.move(staging, sessionPaths(ref).dir)) return true;
    await storage.remove(staging);
    return false;
  } catch (error) {
    await storage.remove(staging).catch(() => undefined);
    throw error;
  }
}

/**
 * Sets a session's labels and `instruction.md` under its `writer.lock`, as one new revision
 * (`instruction.md` first, `meta.json` last: a crash between leaves the old revision over
 * the new instruction, which the next sync writes again). `updated_at` stays the session's,
 * or becomes the sender's `sentUpdatedAt` when that one travelled and is later (docs/SYNC.md
 * "Activity").
 */
export async function writeLabels(
  sessions: Sessions,
  ref: string,
  labels: SessionLabels,
  instruction: string | null,
  writer: SyncWriter,
  sentUpdatedAt?: string,
): Promise<void> {
  const valid = parseSessionRef(ref);
  const paths = sessionPaths(valid);
  const { lease } = await acquireWriterLock(sessions.storage, paths.lock, writer, "sync");
  try {
    // Read under the lock: no other writer can commit between this read and the write.
    const session = await sessions.open(valid);
    if (instruction === null) await sessions.storage.remove(paths.instruction);
    else await sessions.storage.replace(paths.instruction, encoder.encode(instruction));
    const { title: _t, model_label: _m, timezone: _z, ...rest } = session.meta;
    const sent = sentUpdatedAt === undefined ? [] : [{ created_at: sentUpdatedAt }];
    const meta: SessionMeta = { ...rest, ...labels, revision: session.revision + 1, updated_at: syncedActivity(session.meta.updated_at, sent) };
    await sessions.storage.replace(paths.meta, encodeJsonDocument(withNewestSegment(meta, session.newestSegment)));
  } finally {
    await releaseWriterLock(sessions.storage, lease);
  }
}

/** What became of a segment offered to a session. */
export type SegmentAdoption = "adopted" | "present" | "conflict";

/**
 * Closes a segment the other side wrote (its exact text) into a session, under its
 * `writer.lock`, when it fits: the session's newest segment ends right before it and Active
 * holds the same messages (by id) through its end. The writes are a compaction's, in its
 * order (docs/FORMAT.md "Compaction"): `meta.json` naming the new segment, the segment, then
 * `active.jsonl` without those messages (every other line kept as it is). A segment that
 * continues a history with nothing after its newest segment (Active empty: a session sent in
 * parts, docs/SYNC.md "Batches") adds its messages whole: `meta.json` naming it, then the
 * segment. `present` when the session has that segment already; `conflict` (nothing written)
 * when it does not fit, or the session has something recovery reported.
 */
export async function adoptSegment(sessions: Sessions, ref: string, segment: SegmentFile, writer: SyncWriter): Promise<SegmentAdoption> {
  const valid = parseSessionRef(ref);
  const paths = sessionPaths(valid);
  const storage = sessions.storage;
  const range = parseSegmentName(segment.name)!;
  const { lease } = await acquireWriterLock(storage, paths.lock, writer, "sync");
  try {
    const session = await sessions.open(valid);
    const ranges = await session.segments();
    if (ranges.some((r) => r.start === range.start && r.end === range.end)) {
      const ours = await storage.read(paths.segment(range));
      return ours && decoder.decode(ours) === segment.text ? "present" : "conflict";
    }
    if (range.start !== (session.newestSegment?.end ?? 0) + 1) return "conflict";
    const records = messagesOfSegments(ref, [segment]);
    const theirs = records.map((m) => m.message_id);
    // The segment's own activity, not the sync's time (docs/SYNC.md "Activity").
    const updatedAt = syncedActivity(session.meta.updated_at, records);
    const segmentBytes = encoder.encode(segment.text);
    if (session.active.length === 0 && lastSequenceOf(session) === range.start - 1 && !session.diagnostics.some((d) => d.fatal)) {
      const meta = { ...session.meta, revision: session.revision + 1, updated_at: updatedAt, message_count: range.end };
      await applyCommitPlan(storage, {
        writes: [
          {
            op: "replace",
            path: paths.meta,
            bytes: encodeJsonDocument(withNewestSegment({ ...meta, history_bytes: meta.history_bytes + segmentBytes.length }, range)),
          },
          { op: "replace", path: paths.segment(range), bytes: segmentBytes },
        ],
      });
      return "adopted";
    }
    if (session.diagnostics.length > 0) return "conflict";
    const ours = session.active.filter((m) => m.sequence <= range.end).map((m) => m.message_id);
    if (theirs.length !== ours.length || theirs.some((id, i) => id !== ours[i]) || ours.length !== range.end - range.start + 1) return "conflict";
    const raw = (await storage.read(paths.active)) ?? new Uint8Array(0);
    const keptLines = decoder
      .decode(raw)
      .split("\n")
      .filter((line) => line !== "" && !isMessageThrough(line, range.end));
    const active = encoder.encode(keptLines.map((line) => `${line}\n`).join(""));
    const meta = withNewestSegment(
      {
        ...session.meta,
        revision: session.revision + 1,
        updated_at: updatedAt,
        history_bytes: session.meta.history_bytes - raw.length + segmentBytes.length + active.length,
      },
      range,
    );
    // One plan: a backend that runs plans itself (PostgreSQL) does the three writes in one transaction.
    await applyCommitPlan(storage, {
      writes: [
        { op: "replace", path: paths.meta, bytes: encodeJsonDocument(meta) },
        { op: "replace", path: paths.segment(range), bytes: segmentBytes },
        { op: "replace", path: paths.active, bytes: active },
      ],
    });
    return "adopted";
  } finally {
    await releaseWriterLock(storage, lease);
  }
}

/**
 * The files of a fork of `session` at `atSequence` (docs/SYNC.md "Divergence"): its history
 * through `atSequence` (whole segments as they are, the rest as Active) followed by `tail`,
 * `forked_from` naming the session, labels and instruction inherited. Installed with
 * {@linkcode installSession}: by the server for a tail in the clear, by the device for an
 * encrypted one (then everything is sealed again for the fork).
 */
export async function forkFiles(
  storage: StoragePort,
  session: Session,
  fork: SessionRef,
  atSequence: number,
  tail: readonly MessageRecord[],
  clock: () => number,
): Promise<SessionFiles> {
  const ranges = (await session.segments()).filter((r) => r.end <= atSequence);
  const segments: SegmentFile[] = [];
  for (const range of ranges) segments.push((await readSegmentFile(storage, session, formatSegmentName(range)))!);
  const copiedThrough = ranges.at(-1)?.end ?? 0;
  const prefix = (await messagesAfter(session, copiedThrough, atSequence - copiedThrough)).messages;
  const now = nowTimestamp(clock);
  const { imported_from: _imported, ...inherited } = session.meta as SessionMeta & { imported_from?: unknown };
  const meta: SessionMeta = {
    ...inherited,
    session_id: fork.sessionId,
    created_at: now,
    updated_at: now,
    revision: 1,
    forked_from: { session_id: session.ref.sessionId, through_sequence: atSequence },
  };
  const instruction = await storage.read(session.paths.instruction);
  return { meta, instruction: instruction ? decoder.decode(instruction) : null, segments, active: [...prefix, ...tail].map((m) => ({ ...m, revision: 1 })) };
}

/** Whether a line of `active.jsonl` is a message at or below `end`. */
function isMessageThrough(line: string, end: number): boolean {
  try {
    const record = JSON.parse(line) as { record_type?: unknown; sequence?: unknown };
    return record.record_type === "message" && typeof record.sequence === "number" && record.sequence <= end;
  } catch {
    return false;
  }
}

/** A stored record as a message to append: its id, time, parts and extension fields kept; sequence and revision given anew. */
export function asNewMessage(record: MessageRecord): NewMessage {
  const { sequence: _s, revision: _r, record_type: _t, [BATCH_FIELD]: _b, ...rest } = record as MessageRecord & { [BATCH_FIELD]?: unknown };
  return rest as unknown as NewMessage;
}

/**
 * `files` with `messages` appended after its last message (sequences given anew), as one
 * commit whose revision is above `above` and above every revision in `files`: what a re-read
 * carries over into the copy that replaces a session (docs/SYNC.md "Re-reads"). The revision
 * is raised even with no message, so a handle opened on the replaced copy never finds the
 * revision it read and reloads before it writes.
 */
export function withCarried(files: SessionFiles, messages: readonly MessageRecord[], above: number): SessionFiles {
  const revision = files.active.reduce((max, m) => Math.max(max, typeof m.revision === "number" ? m.revision : 0), Math.max(above, files.meta.revision)) + 1;
  const last = files.active.at(-1)?.sequence ?? parseSegmentName(files.segments.at(-1)?.name ?? "")?.end ?? 0;
  return {
    ...files,
    // The carried messages are this store's activity, not the sync's (docs/SYNC.md "Activity").
    meta: { ...files.meta, revision, updated_at: syncedActivity(files.meta.updated_at, messages) },
    active: [...files.active, ...messages.map((m, i) => ({ ...m, sequence: last + i + 1, revision }))],
  };
}

/** The message ids of `files` after sequence `after` (the segments that reach past it read whole). */
export function messageIdsAfter(ref: string, files: SessionFiles, after: number): Set<string> {
  const reaching = files.segments.filter((segment) => (parseSegmentName(segment.name)?.end ?? 0) > after);
  return new Set([...messagesOfSegments(ref, reaching), ...files.active].filter((m) => m.sequence > after).map((m) => m.message_id));
}
