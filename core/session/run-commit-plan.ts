/**
 * The one way the session engine runs a {@linkcode CommitPlan}: the backend's own
 * `StoragePort.runCommitPlan` when it has one (one round trip through a worker or one
 * database transaction), else the core's `runCommitPlan` over the port's calls. Every write
 * of a session (commit, compaction, reset, recovery's repairs, the lock) goes through it.
 *
 * @module
 */
import { runCommitPlan as runCommitPlanByCalls } from "../storage/commit-plan.ts";
import type { CommitPlan, CommitPlanResult, StoragePort } from "../storage/port.ts";

/** Runs `plan` on `storage` in one storage call when the backend offers it. */
export function runCommitPlan(storage: StoragePort, plan: CommitPlan): Promise<CommitPlanResult> {
  return storage.runCommitPlan ? storage.runCommitPlan(plan) : runCommitPlanByCalls(storage, plan);
}
