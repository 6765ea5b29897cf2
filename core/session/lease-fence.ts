/**
 * Fencing a lease (docs/FORMAT.md `writer.lock`, "Fencing"): every plan a held session runs
 * carries its lease as the plan's `fence`, so the backend checks, inside the same plan and
 * before any write, that `writer.lock` still carries this holder's `lock_id`. When it does
 * not (the lock was removed with `unlock --force`, or taken by a writer that judged this one
 * dead), nothing is written, the registry's `onLeaseLost` is told, and the commit fails with
 * a typed {@linkcode LeaseLostError}: a lost lock is noticed before the next write lands,
 * not after.
 *
 * @module
 */
import { LeaseLostError, type LockOwner } from "../errors.ts";
import type { CommitPlan, CommitPlanResult, StoragePort } from "../storage/port.ts";
import { describeLockOwner, readLockOwner, type WriterLease } from "./lock.ts";
import { applyCommitPlan } from "./apply-commit-plan.ts";
import { plainClone } from "./plain-clone.ts";

/**
 * A lease found lost by a fenced commit (`SessionsOptions.onLeaseLost`): which session, which
 * lock, and who holds it now. Told by the fence of the stores whose lock is the `writer.lock`
 * file (files, IndexedDB, memory); `PostgresStorage` tells of a lost connection through its
 * own `onLeaseLost`.
 */
export interface LeaseLostNotice {
  /** The session's ref as text, `<agent_id>/<workspace_id>/<session_id>`. */
  readonly refText: string;
  /** The lock's storage path. */
  readonly path: string;
  /** The `lock_id` this handle held. */
  readonly lockId: string;
  /** The lock found in its place, if any (absent when `writer.lock` is gone or unreadable). */
  readonly owner?: LockOwner;
}

/**
 * Applies `plan` fenced by `lease` (a plan whose `fence` is `lease` already is applied as it is,
 * otherwise a copy with it). Resolves the plan's result when the lease still stands;
 * otherwise calls `lost` with what was found and waits for it (before throwing, so the
 * handle has dropped the lease, and closed what it kept open, whether or not the caller
 * catches), then throws.
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 * const storage = new MemoryStorage();
 * const lease = { path: "s/writer.lock", lockId: "lock_1" };
 * // No writer.lock carries lock_1: nothing is appended.
 * await applyFencedPlan(storage, { writes: [{ op: "append", path: "s/messages/active.jsonl", bytes: new Uint8Array([0x0a]) }] }, lease, "a1/w1/s1", () => {})
 *   .catch((e) => console.log(e.name)); // "LeaseLostError"
 * ```
 * @throws {LeaseLostError} when `writer.lock` no longer carries `lease.lockId`; nothing was written.
 * @throws {StorageError} when a storage call fails.
 */
export async function applyFencedPlan(
  storage: StoragePort,
  plan: CommitPlan,
  lease: WriterLease,
  refText: string,
  lost: (event: LeaseLostNotice) => void | Promise<void>,
): Promise<CommitPlanResult> {
  const result = await applyCommitPlan(storage, plan.fence === lease ? plan : withFence(plan, lease));
  if (result.outcome !== "locked") return result;
  const owner = await readLockOwner(storage, lease.path).catch(() => undefined);
  const event: LeaseLostNotice = { refText, path: lease.path, lockId: lease.lockId, ...(owner ? { owner } : {}) };
  await lost(event);
  const now = owner ? `is now held by ${describeLockOwner(owner)}` : "is gone";
  throw new LeaseLostError(`${lease.path}: this handle's lease (${lease.lockId}) was lost: the lock ${now}; nothing was written (reload, then hold again)`, {
    path: lease.path,
    lockId: lease.lockId,
    outcome: "not-written",
    ...(owner ? { owner } : {}),
  });
}

/** `plan` with `fence`, as a copy. Not `{ ...plan, fence }`: a field beside a spread takes V8's slow path (`plain-clone.ts`). */
function withFence(plan: CommitPlan, fence: WriterLease): CommitPlan {
  const fenced: { -readonly [K in keyof CommitPlan]: CommitPlan[K] } = plainClone(plan);
  fenced.fence = fence;
  return fenced;
}
