import { WriterLockedError, type LockOwner } from "../errors.ts";
import { encodeJsonDocument, parseLockJson } from "../schema/parse.ts";
import { nowTimestamp } from "../schema/common.ts";
import type { StoragePort } from "../storage/port.ts";
import { newId } from "./ids.ts";
import type { WriterIdentity } from "./owner.ts";

/**
 * The lock guards one operation of a live process: a machine crash ends that process
 * anyway, so its file needs no flush (a process crash still sees it whole: FORMAT.md's
 * "nobody steals a lock" holds). This saves a commit about half its fsyncs.
 */
const NOT_DURABLE = { durable: false } as const;

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
  const owner = { ...identity, operation, created_at: nowTimestamp(clock), lock_id: newId("lock") };
  if (storage.acquireLock && storage.releaseLock) {
    // The platform frees a dead holder's lock, so a record found while we hold it is stale.
    if (await storage.acquireLock(path)) {
      try {
        await storage.replace(path, encodeJsonDocument(owner));
      } catch (error) {
        await storage.releaseLock(path);
        throw error;
      }
      return { path, owner, platformLock: true };
    }
  } else if (await storage.createExclusive(path, encodeJsonDocument(owner), NOT_DURABLE)) {
    return { path, owner, platformLock: false };
  }
  const existing = await readLockOwner(storage, path);
  const who = existing
    ? `pid ${existing.pid} on ${existing.hostname} (${existing.runtime}) for "${existing.operation}" since ${existing.created_at}`
    : "an unreadable lock";
  throw new WriterLockedError(`${path}: session is locked by ${who}; nothing was written`, {
    path,
    ...(existing ? { owner: existing } : {}),
  });
}

/** Removes the lock only if it is still this holder's: nobody deletes another owner's lock. */
export async function releaseWriterLock(storage: StoragePort, lock: HeldLock): Promise<void> {
  try {
    const current = await readLockOwner(storage, lock.path);
    if (current && current["lock_id"] === lock.owner.lock_id) await storage.remove(lock.path, NOT_DURABLE);
  } finally {
    if (lock.platformLock) await storage.releaseLock?.(lock.path);
  }
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
