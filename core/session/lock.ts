import { WriterLockedError, type LockOwner } from "../errors.ts";
import { encodeJsonDocument, parseLockJson } from "../schema/parse.ts";
import { nowTimestamp } from "../schema/common.ts";
import { releaseLockFile, takeLockFile } from "../storage/commit-plan.ts";
import type { StoragePort } from "../storage/port.ts";
import { newId } from "./ids.ts";
import type { WriterIdentity } from "./owner.ts";

/** A held `writer.lock`; `lock_id` tells this holder's lock from anyone else's. */
export interface HeldLock {
  readonly path: string;
  readonly owner: LockOwner & { lock_id: string };
  /** Ownership comes from the backend's held lock (`acquireLock`), not from the file alone. */
  readonly platformLock: boolean;
}

/**
 * Takes the session's `writer.lock` with create-new semantics for one mutating operation.
 *
 * @throws {WriterLockedError} at once when another writer holds it, with that writer's lock content.
 */
export async function acquireWriterLock(
  storage: StoragePort,
  path: string,
  identity: WriterIdentity,
  operation: string,
  clock: () => number,
): Promise<HeldLock> {
  const owner = newLockOwner(identity, operation, clock);
  const taken = await takeLockFile(storage, path, encodeJsonDocument(owner));
  if (taken) return { path, owner, platformLock: taken.platformLock };
  throw await writerLockedError(storage, path);
}

/** The content of a new `writer.lock`: who writes, what for, and a `lock_id` of its own. */
export function newLockOwner(identity: WriterIdentity, operation: string, clock: () => number): HeldLock["owner"] {
  return { ...identity, operation, created_at: nowTimestamp(clock), lock_id: newId("lock") };
}

/** The error for a lock someone else holds, naming that holder from the lock's content. */
export async function writerLockedError(storage: StoragePort, path: string): Promise<WriterLockedError> {
  const existing = await readLockOwner(storage, path);
  const who = existing ? describeLockOwner(existing) : "an unreadable lock";
  return new WriterLockedError(`${path}: session is locked by ${who}; nothing was written`, {
    path,
    ...(existing ? { owner: existing } : {}),
  });
}

/** `pid 123 on host (node) for "append" since …`, with `?` for what the record lacks. */
export function describeLockOwner(owner: Partial<LockOwner>): string {
  return `pid ${String(owner.pid ?? "?")} on ${owner.hostname ?? "?"} (${owner.runtime ?? "?"}) for "${owner.operation ?? "?"}" since ${owner.created_at ?? "?"}`;
}

/** Removes the lock only if it is still this holder's: nobody deletes another owner's lock. */
export function releaseWriterLock(storage: StoragePort, lock: HeldLock): Promise<void> {
  return releaseLockFile(storage, lock.path, lock.owner.lock_id, lock);
}

/** The content of a `writer.lock`, or `undefined` when there is none or it cannot be parsed. */
export async function readLockOwner(storage: StoragePort, path: string): Promise<LockOwner | undefined> {
  const bytes = await storage.read(path);
  if (!bytes) return undefined;
  try {
    return parseLockJson(bytes, path) as LockOwner;
  } catch {
    return undefined;
  }
}
