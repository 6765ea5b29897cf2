/**
 * Compaction, the pure parts: when to compact (policies and the trigger), what to
 * compact (the halving plan over Active), whether it worked (validation of the next
 * real usage), the in-memory fold after a context-length error, the provider-neutral
 * token estimate and the accounting. Nothing here reads or writes storage.
 *
 * @example
 * ```ts
 * import { realUsage } from "sessionfold";
 * import { compactionTrigger, planCompaction } from "sessionfold/internal";
 * import type { MessageRecord, Usage } from "sessionfold";
 * declare const active: MessageRecord[];
 * declare const lastUsage: Usage | undefined;
 * const contextWindow = 128_000;
 * if (compactionTrigger(realUsage(), { lastUsage, contextWindow, activeCount: active.length }).compact) {
 *   const plan = planCompaction(active); // plan.selected → one summary call
 * }
 * ```
 * @module
 */
export * from "./policy.ts";
export * from "./usage.ts";
export * from "./plan.ts";
export * from "./trigger.ts";
export * from "./validate.ts";
export * from "./estimate.ts";
export * from "./fold.ts";
export * from "./accounting.ts";
