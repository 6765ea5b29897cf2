import { WriterLockedError, type LockOwner } from "../errors.ts";
import { encodeJsonDocument, parseLockJson } from "../schema/parse.ts";
import { nowTimestamp } from "../schema/common.ts";
import { runCommitPlan } from "../storage/commit-plan.ts";
import type { CommitPlan, CommitPlanResult, PlannedWrite, StoragePort } from "../storage/port.ts";
import { newId } from "./ids.ts";
import type { WriterIdentity } from "./owner.ts";

/** What gives a held `writer.lock` back: its path and this holder's `lock_id` (a plan's `release`). */
export type WriterLease = NonNullable<CommitPlan["release"]>;

/** Runs a plan in one storage call when the backend offers it (one round trip through a worker). */
export function runPlan(storage: StoragePort, plan: CommitPlan): Promise<CommitPlanResult> {
  return storage.runCommitPlan ? storage.runCommitPlan(plan) : runCommitPlan(storage, plan);
}

/** What {@linkcode takeWriterLock} does under the new lock. */
export interface LockedWrites {
  /** Who takes the lock and what for, stamped into `writer.lock`. */
  readonly identity: WriterIdentity;
  readonly operation: string;
  readonly clock: () => number;
  /** Keep the lock once the writes committed (give it back with {@linkcode releaseWriterLock}). */
  readonly hold: boolean;
  /** `meta.json` must still hold this revision (`null`: be missing), or nothing is written. */
  readonly expect?: { readonly path: string; readonly revision: number | null };
  readonly writes?: readonly PlannedWrite[];
}

/**
 * The one way the core takes a session's `writer.lock`: a commit plan that creates the lock
 * (or takes the backend's platform lock), optionally checks the revision, does `writes`, and
 * with `hold` keeps the lock. Returns the lease that gives it back, or how it was refused.
 *
 * @throws {StorageError} when a storage call fails.
 */
export async function takeWriterLock(
  storage: StoragePort,
  path: string,
  locked: LockedWrites,
): Promise<{ readonly outcome: "committed"; readonly lease: WriterLease } | Exclude<CommitPlanResult, { outcome: "committed" }>> {
  const owner = newLockOwner(locked.identity, locked.operation, locked.clock);
  const lock = { path, bytes: encodeJsonDocument(owner), lockId: owner.lock_id };
  const result = await runPlan(storage, { lock, hold: locked.hold, ...(locked.expect ? { expect: locked.expect } : {}), writes: locked.writes ?? [] });
  return result.outcome === "committed" ? { outcome: "committed", lease: { path, lockId: lock.lockId } } : result;
}

/**
 * Takes the session's `writer.lock` for one mutating operation that writes on its own
 * (fork, delete) and keeps it until {@linkcode releaseWriterLock}.
 *
 * @throws {WriterLockedError} at once when another writer holds it, with that writer's lock content.
 */
export async function acquireWriterLock(storage: StoragePort, path: string, identity: WriterIdentity, operation: string, clock: () => number): Promise<WriterLease> {
  const taken = await takeWriterLock(storage, path, { identity, operation, clock, hold: true });
  if (taken.outcome === "committed") return taken.lease;
  throw await writerLockedError(storage, path);
}

/** Gives a held lock back; the file is removed only if it still carries this holder's `lock_id`. */
export async function releaseWriterLock(storage: StoragePort, lease: WriterLease): Promise<void> {
  await runPlan(storage, { writes: [], release: lease });
}

/** The content of a new `writer.lock`: who writes, what for, and a `lock_id` of its own. */
export function newLockOwner(identity: WriterIdentity, operation: string, clock: () => number): LockOwner & { lock_id: string } {
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
