/**
 * A commit written down as data: take `writer.lock`, check `meta.json`'s revision, do the
 * writes, release the lock. The core applies it with {@linkcode applyCommitPlanByCalls}; a backend that
 * sits behind a hop (a worker) offers `StoragePort.applyCommitPlan` and applies it with the same function
 * on its side, so a commit costs one round trip instead of one per storage call.
 *
 * @module
 */
import { InvalidInputError } from "../errors.ts";
import { metaRevisionOf } from "../schema/parse.ts";
import { carriesLockId, holdsWriterLock, MAX_LOCK_BYTES } from "./fence.ts";
import type { CommitPlan, CommitPlanResult, StoragePort, WriteOptions } from "./port.ts";

/**
 * The lock guards one operation of a live process: a machine crash ends that process
 * anyway, so its file needs no flush (a process crash still sees it whole: docs/FORMAT.md's
 * "nobody steals a lock" holds).
 */
const NOT_DURABLE: WriteOptions = { durable: false };

/** A lock taken by {@linkcode takeLockFile}. */
export interface TakenLock {
  /** Ownership comes from the backend's held lock (`acquireLock`), not from the file alone. */
  readonly platformLock: boolean;
}

/**
 * Runs a plan: lock, fence (a held lock must still be this holder's), revision check,
 * writes in order, then the lock is released whatever happened (unless `hold` kept it after
 * a commit), then `release`. A failed write rejects after the release, with the writes
 * before it done.
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 * const storage = new MemoryStorage();
 *
 * import type { CommitPlan } from "sessionfold";
 * declare const plan: CommitPlan;
 * const result = await applyCommitPlanByCalls(storage, plan);
 * if (result.outcome === "conflict") console.log("meta.json is at", result.revision);
 * ```
 * @throws {StorageError} (or a subclass) when a storage call fails.
 * @throws {InvalidInputError} when a write names staged bytes (`PlannedWrite.staged`); nothing is done.
 */
export async function applyCommitPlanByCalls(storage: StoragePort, plan: CommitPlan): Promise<CommitPlanResult> {
  const { lock, expect, release } = plan;
  // Staged bytes live in the backend that staged them (StoragePort.stage), which applies its plans itself.
  const staged = plan.writes.find((write) => write.staged !== undefined);
  if (staged) throw new InvalidInputError(`${staged.path}: a write of staged bytes needs the backend's own applyCommitPlan`, { path: staged.path });
  let taken: TakenLock | undefined;
  let committed = false;
  try {
    taken = lock && (await takeLockFile(storage, lock.path, lock.bytes));
    if (lock && !taken) return { outcome: "locked" };
    // The fence's tail read awaited here, not through holdsWriterLock: one async call fewer on every held commit.
    if (plan.fence && !carriesLockId(await storage.readTail(plan.fence.path, MAX_LOCK_BYTES), plan.fence.lockId)) return { outcome: "locked" };
    if (expect) {
      const revision = metaRevisionOf(await storage.read(expect.path)) ?? null;
      if (revision !== expect.revision) return { outcome: "conflict", revision };
    }
    for (const write of plan.writes) {
      if (write.op === "append") await storage.append(write.path, write.bytes);
      else await storage.replace(write.path, write.bytes, write.durable === false ? NOT_DURABLE : undefined);
    }
    committed = true;
    return { outcome: "committed" };
  } finally {
    if (lock && taken && !(plan.hold && committed)) await releaseLockFile(storage, lock.path, lock.lockId, taken).catch(() => undefined);
    if (release) await releaseLockFile(storage, release.path, release.lockId, { platformLock: hasPlatformLock(storage) }).catch(() => undefined);
  }
}

/** Whether {@linkcode takeLockFile} takes the backend's own lock on `storage` (then the file only records the owner). */
function hasPlatformLock(storage: StoragePort): storage is StoragePort & Required<Pick<StoragePort, "acquireLock" | "releaseLock">> {
  return Boolean(storage.acquireLock && storage.releaseLock);
}

/**
 * Creates `writer.lock` with create-new semantics (or, when the backend offers
 * `acquireLock`, takes the platform lock and records the owner in the file).
 * Resolves `undefined` when another holder has it.
 *
 * @throws {StorageError} when the storage call fails.
 */
async function takeLockFile(storage: StoragePort, path: string, bytes: Uint8Array): Promise<TakenLock | undefined> {
  if (hasPlatformLock(storage)) {
    // The platform frees a dead holder's lock, so a record found while we hold it is stale.
    if (!(await storage.acquireLock(path))) return undefined;
    try {
      await storage.replace(path, bytes, NOT_DURABLE);
    } catch (error) {
      await storage.releaseLock(path);
      throw error;
    }
    return { platformLock: true };
  }
  return (await storage.createExclusive(path, bytes, NOT_DURABLE)) ? { platformLock: false } : undefined;
}

/**
 * Removes `writer.lock` only if it still carries `lockId`: nobody deletes another owner's
 * lock (after `unlock --force` someone else may hold it). Then frees the platform lock.
 *
 * @throws {StorageError} when the storage call fails.
 */
async function releaseLockFile(storage: StoragePort, path: string, lockId: string, taken: TakenLock): Promise<void> {
  try {
    if (await holdsWriterLock(storage, path, lockId)) await storage.remove(path, NOT_DURABLE);
  } finally {
    if (taken.platformLock) await storage.releaseLock?.(path);
  }
}
