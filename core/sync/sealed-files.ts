/**
 * What a sync server does with an end-to-end encrypted session without a key (docs/SYNC.md
 * "End-to-end encrypted sessions"): its files are stored exactly as the devices sealed them
 * (docs/FORMAT.md "Encrypted stores"), and every decision is taken on what is in the clear:
 * the tree, each line's record type, sequence and message id, a segment's name and footer,
 * `keys.json`. The server never opens a record, never seals one, and never moves one to
 * another session or another file: a record opens only where it was sealed, so forks are
 * made (and sealed) by the device whose tail diverged.
 *
 * @module
 */
import { InvalidInputError, RevisionConflictError } from "../errors.ts";
import { EnvelopeRefusal, LINE_CLEAR_FIELDS, META_CLEAR_FIELDS, NO_CLEAR_FIELDS, parseEnvelope } from "../encryption/envelope.ts";
import { encodeSessionKeys, parseSessionKeys } from "../encryption/keys.ts";
import { SESSION_KEYS_FILE } from "../encryption/places.ts";
import { formatSessionRef, type SessionRef } from "../layout/ids.ts";
import { sessionPaths } from "../layout/paths.ts";
import { formatSegmentName, parseSegmentName, type SegmentRange } from "../layout/segments.ts";
import { acquireWriterLock, releaseWriterLock } from "../session/lock.ts";
import { applyCommitPlan } from "../session/apply-commit-plan.ts";
import type { StoragePort } from "../storage/port.ts";
import type { SealedDocuments, SealedRecord, SegmentFile, SessionHead } from "./protocol.ts";
import { installStaged, type SegmentAdoption, type SyncWriter } from "./session-files.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const ACTIVE = "messages/active.jsonl";

/** A sealed message line: its stored text and the clear fields the server orders and deduplicates by. */
export interface SealedLine {
  readonly line: string;
  readonly sequence: number;
  readonly message_id: string;
}

/** A sealed record of a stored file, with its clear order fields. */
export interface SealedMessage extends SealedRecord, SealedLine {}

/** An encrypted session as the server holds it. */
export interface SealedSession {
  readonly ref: SessionRef;
  readonly place: "live" | "archived";
  readonly dir: string;
  readonly keys: string;
  readonly documents: SealedDocuments;
  readonly segments: readonly SegmentRange[];
  readonly active: readonly SealedLine[];
}

/** The clear fields of one sealed line, or `undefined` when it is not a sealed envelope. */
function clearOf(text: string): { record_type?: unknown; sequence?: unknown; message_id?: unknown; through_sequence?: unknown } | undefined {
  const envelope = parseEnvelope(encoder.encode(text), LINE_CLEAR_FIELDS);
  return envelope instanceof EnvelopeRefusal ? undefined : envelope.clear;
}

/**
 * A sealed message line as sent by a device: a sealed envelope of a message with a sequence and a message id in the clear.
 *
 * @throws {InvalidInputError} naming `where` when it is not one (a plaintext record sent for an encrypted session among them).
 */
export function sealedLineOf(line: string, where: string): SealedLine {
  const clear = clearOf(line);
  if (!clear) throw new InvalidInputError(`${where}: not a sealed envelope (an encrypted session takes sealed records only)`, { file: where });
  const { record_type: type, sequence, message_id: id } = clear;
  if (type !== "message" || typeof sequence !== "number" || typeof id !== "string") {
    throw new InvalidInputError(`${where}: a sealed message needs record_type "message", a sequence and a message_id in the clear`, { file: where });
  }
  return { line, sequence, message_id: id };
}

/** Whether a file's text is sealed: its first line is a sealed envelope (a plaintext segment sent for an encrypted session is not). */
export function isSealedText(text: string): boolean {
  return clearOf(text.slice(0, Math.max(0, text.indexOf("\n")) || text.length)) !== undefined;
}

/** The sealed lines of a JSONL file's text: every complete line (a torn final one is not there yet). */
function linesOf(text: string, where: string): { messages: SealedLine[]; footer?: number } {
  const parts = text.split("\n");
  parts.pop();
  const messages: SealedLine[] = [];
  let footer: number | undefined;
  parts.forEach((line, i) => {
    if (line === "") return;
    const clear = clearOf(line);
    // A footer is the last line of a segment; anything after it is not this layout.
    if (footer !== undefined) throw new InvalidInputError(`${where}:${i + 1}: a line after the segment's footer`, { file: where });
    if (clear?.record_type === "summary" && typeof clear.through_sequence === "number") footer = clear.through_sequence;
    else messages.push(sealedLineOf(line, `${where}:${i + 1}`));
  });
  return footer === undefined ? { messages } : { messages, footer };
}

/**
 * A sealed segment file's messages, checked in the clear: each line sealed, sequences from the
 * name's start to its end, a footer through the end as the last line.
 *
 * @throws {InvalidInputError} naming the file when it is not one.
 */
export function sealedSegmentMessages(ref: string, segment: SegmentFile): SealedLine[] {
  const where = `${ref}/messages/segments/${segment.name}`;
  const range = parseSegmentName(segment.name)!;
  const { messages, footer } = linesOf(segment.text, where);
  const contiguous = messages.every((m, i) => m.sequence === range.start + i) && messages.length === range.end - range.start + 1;
  if (!contiguous || footer !== range.end) {
    throw new InvalidInputError(`${where}: expected sealed messages ${range.start} to ${range.end} and a sealed footer through ${range.end}`, { file: where });
  }
  return messages;
}

/** Whether the store holds `ref` in `place` as an encrypted session (its `keys.json` is there). */
export async function isSealedSession(storage: StoragePort, ref: SessionRef, place: "live" | "archived"): Promise<boolean> {
  return (await storage.readTail(`${sessionPaths(ref, place).dir}/${SESSION_KEYS_FILE}`, 0)) !== undefined;
}

/** The encrypted session `ref` in `place`, or `undefined` when there is none (or it is in the clear). */
export async function readSealedSession(storage: StoragePort, ref: SessionRef, place: "live" | "archived"): Promise<SealedSession | undefined> {
  const paths = sessionPaths(ref, place);
  const keys = await storage.read(`${paths.dir}/${SESSION_KEYS_FILE}`);
  if (!keys) return undefined;
  const meta = await storage.read(paths.meta);
  const instruction = await storage.read(paths.instruction);
  const segments = (await storage.list(paths.segmentsDir)).flatMap((name) => parseSegmentName(name) ?? []).sort((a, b) => a.start - b.start);
  const active = linesOf(decoder.decode((await storage.read(paths.active)) ?? new Uint8Array()), `${formatSessionRef(ref)}/${ACTIVE}`).messages;
  return {
    ref,
    place,
    dir: paths.dir,
    keys: decoder.decode(keys),
    documents: { meta: meta ? decoder.decode(meta) : "", instruction: instruction ? decoder.decode(instruction) : null },
    segments,
    active,
  };
}

/** The last sequence of an encrypted session (0 when empty). */
export function sealedLastSequence(session: SealedSession): number {
  return session.active.at(-1)?.sequence ?? session.segments.at(-1)?.end ?? 0;
}

/** Up to `limit` sealed messages after `after`, oldest first, each with the file it is sealed for; `more` when the history goes on. */
export async function sealedMessagesAfter(
  storage: StoragePort,
  session: SealedSession,
  after: number,
  limit = Number.MAX_SAFE_INTEGER,
): Promise<{ messages: SealedMessage[]; more: boolean }> {
  const out: SealedMessage[] = [];
  const ref = formatSessionRef(session.ref);
  for (const range of session.segments) {
    if (range.end <= after || out.length > limit) continue;
    const name = formatSegmentName(range);
    const text = decoder.decode((await storage.read(`${session.dir}/messages/segments/${name}`)) ?? new Uint8Array());
    const file = `messages/segments/${name}`;
    for (const m of sealedSegmentMessages(ref, { name, text })) if (m.sequence > after) out.push({ ...m, file });
  }
  const newest = session.segments.at(-1)?.end ?? 0;
  if (out.length <= limit) { for (const m of session.active) if (m.sequence > Math.max(after, newest)) out.push({ ...m, file: ACTIVE }); }
  return { messages: out.slice(0, limit), more: out.length > limit };
}

/** What a pull tells about an encrypted session: the clear facts and the sealed documents. */
export function sealedHeadOf(session: SealedSession): SessionHead {
  const meta = parseEnvelope(encoder.encode(session.documents.meta), META_CLEAR_FIELDS);
  return {
    ref: formatSessionRef(session.ref),
    place: session.place,
    revision: meta instanceof EnvelopeRefusal ? 0 : Number(meta.clear.revision ?? 0),
    last_sequence: sealedLastSequence(session),
    last_message_id: session.active.at(-1)?.message_id ?? null,
    newest_segment: session.segments.length > 0 ? formatSegmentName(session.segments.at(-1)!) : null,
    labels: {},
    instruction: null,
    sealed: { ...session.documents, keys: session.keys },
  };
}

/**
 * What changes when an encrypted session changes, for the pull cursor: its place, last
 * sequence, segments and a digest of its sealed documents (the server cannot read the
 * revision a device gave them).
 */
export async function sealedChangeKey(session: SealedSession): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new Uint8Array(encoder.encode(`${session.documents.meta}\n${session.documents.instruction ?? ""}`)));
  const hex = Array.from(new Uint8Array(digest).subarray(0, 8), (b) => b.toString(16).padStart(2, "0")).join("");
  return `${session.place}:sealed:${sealedLastSequence(session)}:${session.segments.length}:${hex}`;
}

/**
 * Checks a `keys.json` sent for `ref` and a sealed document: the keys file names that session,
 * `meta.json` is sealed with that session's ids in the clear, `instruction.md` is sealed.
 *
 * @throws {InvalidInputError} naming what is wrong.
 */
export function checkSealedDocuments(ref: SessionRef, keys: string | undefined, documents: Partial<SealedDocuments>): void {
  const refText = formatSessionRef(ref);
  if (keys !== undefined && parseSessionKeys(encoder.encode(keys))?.session !== refText) {
    throw new InvalidInputError(`${refText}/${SESSION_KEYS_FILE}: not a keys.json of ${refText}`, { file: `${refText}/${SESSION_KEYS_FILE}` });
  }
  if (documents.meta !== undefined) {
    const meta = parseEnvelope(encoder.encode(documents.meta), META_CLEAR_FIELDS);
    const ids = meta instanceof EnvelopeRefusal ? undefined : meta.clear;
    if (!ids || ids.session_id !== ref.sessionId || ids.agent_id !== ref.agentId || ids.workspace_id !== ref.workspaceId) {
      throw new InvalidInputError(`${refText}/meta.json: not a sealed meta.json of ${refText}`, { file: `${refText}/meta.json` });
    }
  }
  if (typeof documents.instruction === "string" && parseEnvelope(encoder.encode(documents.instruction), NO_CLEAR_FIELDS) instanceof EnvelopeRefusal) {
    throw new InvalidInputError(`${refText}/instruction.md: not a sealed document`, { file: `${refText}/instruction.md` });
  }
}

/** The files of a new encrypted session, as a device sent them. */
export interface SealedFiles extends SealedDocuments {
  readonly keys: string;
  readonly segments: readonly SegmentFile[];
  readonly lines: readonly SealedLine[];
}

/**
 * Installs an encrypted session that does not exist: `keys.json` first, then segments,
 * Active, `instruction.md` and `meta.json`, byte for byte, in a hidden folder moved into place
 * in one step. `false` (nothing installed) when a session with that ref appeared.
 */
export function installSealedSession(storage: StoragePort, ref: SessionRef, files: SealedFiles): Promise<boolean> {
  return installStaged(storage, ref, async (staging) => {
    await storage.replace(`${staging}/${SESSION_KEYS_FILE}`, encoder.encode(files.keys));
    for (const segment of files.segments) await storage.replace(`${staging}/messages/segments/${segment.name}`, encoder.encode(segment.text));
    if (files.lines.length > 0) await storage.replace(`${staging}/${ACTIVE}`, encoder.encode(files.lines.map((l) => `${l.line}\n`).join("")));
    if (files.instruction !== null) await storage.replace(`${staging}/instruction.md`, encoder.encode(files.instruction));
    await storage.replace(`${staging}/meta.json`, encoder.encode(files.meta));
  });
}

/** Runs `write` on a session under its `writer.lock`, the session read again under the lock. */
async function underLock<T>(storage: StoragePort, ref: SessionRef, writer: SyncWriter, write: (session: SealedSession) => Promise<T>): Promise<T> {
  const { lease } = await acquireWriterLock(storage, sessionPaths(ref).lock, writer, "sync");
  try {
    const session = await readSealedSession(storage, ref, "live");
    if (!session) throw new RevisionConflictError(`${formatSessionRef(ref)} is gone`, {});
    return await write(session);
  } finally {
    await releaseWriterLock(storage, lease);
  }
}

/**
 * Adds to the session's `keys.json` the data keys of `keys` it lacks (by id; a key it has
 * stays as it is), so every key a sealed line names is there for the next device.
 */
export async function mergeSealedKeys(storage: StoragePort, session: SealedSession, keys: string): Promise<void> {
  const ours = parseSessionKeys(encoder.encode(session.keys));
  const theirs = parseSessionKeys(encoder.encode(keys));
  if (!ours || !theirs || theirs.session !== ours.session) return;
  const added = theirs.keys.filter((k) => !ours.keys.some((o) => o.id === k.id));
  if (added.length === 0) return;
  await storage.replace(`${session.dir}/${SESSION_KEYS_FILE}`, encodeSessionKeys({ ...ours, keys: [...ours.keys, ...added] }));
}

/**
 * Appends sealed lines after the session's last sequence `last`, under its lock.
 *
 * @throws {RevisionConflictError} when another writer appended in between (the caller looks again).
 */
export async function appendSealedLines(storage: StoragePort, ref: SessionRef, last: number, lines: readonly SealedLine[], writer: SyncWriter): Promise<void> {
  await underLock(storage, ref, writer, async (session) => {
    if (sealedLastSequence(session) !== last) throw new RevisionConflictError(`${formatSessionRef(ref)} changed during the push`, {});
    await storage.append(`${session.dir}/${ACTIVE}`, encoder.encode(lines.map((l) => `${l.line}\n`).join("")));
  });
}

/**
 * Closes a sealed segment a device wrote into the session when it fits, as `adoptSegment`
 * does in the clear (docs/SYNC.md "Compactions"): the newest segment ends right before it and
 * Active holds the same message ids through its end. One plan: the segment, then Active
 * without those lines (every other line kept byte for byte). With Active empty (a new session
 * sent in parts, docs/SYNC.md "Batches") it is added whole after the newest segment. `present`
 * when a segment of that name holds the same message ids.
 */
export async function adoptSealedSegment(storage: StoragePort, ref: SessionRef, segment: SegmentFile, writer: SyncWriter): Promise<SegmentAdoption> {
  const theirs = sealedSegmentMessages(formatSessionRef(ref), segment).map((m) => m.message_id);
  const range = parseSegmentName(segment.name)!;
  return underLock(storage, ref, writer, async (session) => {
    const path = `${session.dir}/messages/segments/${segment.name}`;
    if (session.segments.some((r) => r.start === range.start && r.end === range.end)) {
      const text = decoder.decode((await storage.read(path)) ?? new Uint8Array());
      const ours = sealedSegmentMessages(formatSessionRef(ref), { name: segment.name, text }).map((m) => m.message_id);
      return ours.join("\n") === theirs.join("\n") ? "present" : "conflict";
    }
    if (range.start !== (session.segments.at(-1)?.end ?? 0) + 1) return "conflict";
    // A session sent in parts: the segment follows its history, which Active does not go on; added whole.
    if (session.active.length === 0) {
      await storage.replace(path, encoder.encode(segment.text));
      return "adopted";
    }
    const ours = session.active.filter((m) => m.sequence <= range.end).map((m) => m.message_id);
    if (ours.join("\n") !== theirs.join("\n")) return "conflict";
    const kept = session.active.filter((m) => m.sequence > range.end).map((m) => `${m.line}\n`).join("");
    await applyCommitPlan(storage, {
      writes: [
        { op: "replace", path, bytes: encoder.encode(segment.text) },
        { op: "replace", path: `${session.dir}/${ACTIVE}`, bytes: encoder.encode(kept) },
      ],
    });
    return "adopted";
  });
}

/** Replaces an encrypted session's sealed `meta.json` and `instruction.md` (last writer wins), under its lock. */
export async function writeSealedDocuments(storage: StoragePort, ref: SessionRef, documents: SealedDocuments, writer: SyncWriter): Promise<void> {
  await underLock(storage, ref, writer, async (session) => {
    if (documents.instruction === null) await storage.remove(`${session.dir}/instruction.md`);
    else await storage.replace(`${session.dir}/instruction.md`, encoder.encode(documents.instruction));
    await storage.replace(`${session.dir}/meta.json`, encoder.encode(documents.meta));
  });
}

/** Moves a live encrypted session to the archived ones, under its lock. */
export async function archiveSealedSession(storage: StoragePort, ref: SessionRef, writer: SyncWriter): Promise<void> {
  const { lease } = await acquireWriterLock(storage, sessionPaths(ref).lock, writer, "sync");
  const archived = sessionPaths(ref, "archived");
  // The lock goes with the folder, so no writer takes the live session in between; it is removed at its new place.
  if (await storage.move(sessionPaths(ref).dir, archived.dir)) await storage.remove(archived.lock);
  else await releaseWriterLock(storage, lease);
}

/** Deletes an encrypted session in `place`: its `keys.json` first, so what a crash leaves behind no key opens. */
export async function deleteSealedSession(storage: StoragePort, ref: SessionRef, place: "live" | "archived"): Promise<void> {
  const dir = sessionPaths(ref, place).dir;
  await storage.remove(`${dir}/${SESSION_KEYS_FILE}`);
  await storage.remove(dir);
}
