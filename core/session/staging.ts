/**
 * Building a new session folder out of sight (fork, import): a hidden folder beside the
 * workspace's sessions, laid out by the same layout helpers as a session (`sessionPaths`),
 * `meta.json` written last, and the folder moved into place in one step, so a crash or a
 * refusal never leaves half a session.
 *
 * @module
 */
import { InvalidInputError } from "../errors.ts";
import { formatSessionRef, type SessionRef } from "../layout/ids.ts";
import { type SessionPaths, sessionPaths, type SessionPlace, sessionsDir } from "../layout/paths.ts";
import { describeValue } from "../schema/excerpt.ts";
import { encodeJsonDocument, metaCheck, type SessionMeta } from "../schema/records.ts";
import { assertFileFits, MAX_FILE_BYTES } from "../storage/limits.ts";
import type { StoragePort } from "../storage/port.ts";
import { newId } from "./ids.ts";

/** A session folder being built: its hidden folder and the session's paths inside it. */
export interface Staging {
  readonly target: SessionRef;
  /** The session's paths with the hidden folder in place of the session folder. */
  readonly paths: SessionPaths;
}

/** A hidden folder beside the sessions (its name is never a valid id), where `target` is built for `purpose`. */
export function stageSession(target: SessionRef, purpose: string): Staging {
  const final = sessionPaths(target);
  const dir = `${sessionsDir(target.agentId, target.workspaceId)}/.${purpose}-${target.sessionId}-${newId("t")}`;
  const moved = (path: string) => `${dir}${path.slice(final.dir.length)}`;
  const paths: SessionPaths = {
    dir,
    meta: moved(final.meta),
    instruction: moved(final.instruction),
    lock: moved(final.lock),
    messagesDir: moved(final.messagesDir),
    active: moved(final.active),
    draft: moved(final.draft),
    segmentsDir: moved(final.segmentsDir),
    segment: (range) => moved(final.segment(range)),
  };
  return { target, paths };
}

/** Writes `meta.json` last (refused, as {@linkcode newMetaDocument} says, before anything is moved) and moves the staged folder into place in one step. */
export async function installStaged(storage: StoragePort, staging: Staging, meta: SessionMeta, where: string, names?: MetaFieldNames): Promise<void> {
  await storage.replace(staging.paths.meta, newMetaDocument(storage, meta, where, names));
  if (!(await storage.move(staging.paths.dir, sessionPaths(staging.target).dir))) throw alreadyExists(staging.target);
}

/**
 * A session exists when its `meta.json` does, or (meta lost) when it has messages. A point
 * read first: listing the session folder would cost O(files) on backends that list by key
 * range over every descendant (IndexedDB), and a turn must not grow with history.
 */
export async function sessionExists(storage: StoragePort, ref: SessionRef, place: SessionPlace): Promise<boolean> {
  const paths = sessionPaths(ref, place);
  if (await storage.readTail(paths.meta, 0)) return true;
  return (await storage.list(paths.messagesDir)).length > 0;
}

/** The error for a new session whose id is taken. */
export function alreadyExists(ref: SessionRef): InvalidInputError {
  return new InvalidInputError(`a session ${formatSessionRef(ref)} already exists`, { ref: formatSessionRef(ref) });
}

/** The caller's name of each `meta.json` field it gave (`model_label`: `modelLabel`), for the errors of {@linkcode newMetaDocument}. */
export type MetaFieldNames = Readonly<Record<string, string>>;

/**
 * The bytes of a new session's `meta.json` (a create, a fork, an import), refused when an open
 * could not read them back (docs/FORMAT.md "The write limits are the read limits"): what
 * JSON cannot encode (a BigInt), a field the reader's check would refuse (a `title` that is
 * not a string), a document over the store's file limit. The document is checked as an open
 * reads it, after its own JSON round trip, so what the check passes is what an open gets.
 *
 * @throws {InvalidInputError} naming the caller's field (`where.title`) and what was found; nothing was written.
 * @throws {LimitExceededError} when the document is over the store's file limit.
 */
export function newMetaDocument(storage: StoragePort, meta: SessionMeta, where: string, names: MetaFieldNames = {}): Uint8Array {
  let bytes: Uint8Array;
  try {
    bytes = encodeJsonDocument(meta);
  } catch (error) {
    throw new InvalidInputError(
      `${where}: meta.json cannot be written as JSON (${error instanceof Error ? error.message : String(error)}); nothing was written`,
    );
  }
  assertFileFits(bytes.length, "meta.json", storage.maxFileBytes ?? MAX_FILE_BYTES);
  const document: unknown = JSON.parse(new TextDecoder().decode(bytes));
  const checked = metaCheck.safeParse(document);
  if (checked.success) return bytes;
  const issue = checked.error.issues[0]!;
  const field = issue.path.map((key, i) => (i === 0 ? names[key] ?? key : key)).join(".");
  const found = issue.path.reduce<unknown>((value, key) => (value as Record<string, unknown> | undefined)?.[key], meta);
  throw new InvalidInputError(
    `${where}.${field}: found ${describeValue(found)}, which meta.json cannot hold (${issue.message}); nothing was written`,
    { field, found: describeValue(found) },
  );
}
