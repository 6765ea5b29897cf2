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
import { encodeJsonDocument, type SessionMeta } from "../schema/records.ts";
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

/** Writes `meta.json` last and moves the staged folder into place in one step. */
export async function installStaged(storage: StoragePort, staging: Staging, meta: SessionMeta): Promise<void> {
  await storage.replace(staging.paths.meta, encodeJsonDocument(meta));
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
