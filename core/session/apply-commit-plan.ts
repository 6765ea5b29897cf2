/**
 * The one way the session engine applies a {@linkcode CommitPlan}: the backend's own
 * `StoragePort.applyCommitPlan` when it has one (one round trip through a worker or one
 * database transaction), else the core's `applyCommitPlanByCalls` over the port's calls. Every write
 * of a session (commit, compaction, reset, recovery's repairs, the lock) goes through it.
 *
 * @module
 */
import { applyCommitPlanByCalls } from "../storage/commit-plan.ts";
import type { CommitPlan, CommitPlanResult, StoragePort } from "../storage/port.ts";

/** Applies `plan` to `storage` in one storage call when the backend offers it. */
export function applyCommitPlan(storage: StoragePort, plan: CommitPlan): Promise<CommitPlanResult> {
  return storage.applyCommitPlan ? storage.applyCommitPlan(plan) : applyCommitPlanByCalls(storage, plan);
}
