/**
 * Sessions: the registry, the session handle with its revisions, locks, commits,
 * drafts and compaction, and the provider-neutral agent loop `run()`.
 *
 * @example
 * ```ts
 * import { MemoryStorage, Sessions } from "sessionfold";
 * const sessions = new Sessions({ storage: new MemoryStorage() });
 * const session = await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1", title: "Demo" });
 * await session.append({ role: "user", parts: [{ type: "text", text: "hello" }] });
 * ```
 * @module
 */
export * from "./options.ts";
export * from "./owner.ts";
export * from "./state.ts";
export { newId } from "./ids.ts";
export { DraftFlusher, type DraftFlushOptions } from "./draft-flusher.ts";
export { BATCH_FIELD, withoutBatchMark } from "./batch.ts";
export { PENDING_FIELD } from "./load-draft.ts";
export { NEWEST_SEGMENT_FIELD } from "./segment-hint.ts";
export { describeLockOwner, readLockOwner, reclaimDeadLock } from "./lock.ts";
export { type MovedLine, planRepair, type RepairMove, type RepairPlan, type RepairRefusal, type RepairReport, type RepairWrites } from "./repair-plan.ts";
export { applyRepair } from "./repair.ts";
export { type NoCompaction, Session } from "./session.ts";
export { SessionView } from "./session-view.ts";
export type { CommitNotice, RemovalNotice, SessionContext, StaleLockReclaimed } from "./context.ts";
export type { LeaseLostNotice } from "./lease-fence.ts";
export type { ExportPortableOptions } from "./export-portable.ts";
export { LAST_COMPACTED_FIELD } from "./state.ts";
export { type NewMessage, toMessageRecord } from "./message-input.ts";
export type { CommitResult, LockedOperation } from "./locked-operation.ts";
export {
  type CreateSessionInput,
  type DeletedSession,
  type ForkOptions,
  type HoldOption,
  type ListProblem,
  type ListSessionsOptions,
  Sessions,
  type SessionsOptions,
} from "./registry.ts";
export type { SessionList } from "./registry-options.ts";
export type { PurgeEntry, PurgeOptions, PurgeResult } from "./purge.ts";
export type { CompactOptions, MessagesOptions, RepairOptions } from "./session-call-options.ts";
export { type RunInput, runLoop, type RunOptions } from "./run.ts";
export { type RunEvent, RunHandle, type RunOutcome } from "./run-events.ts";
