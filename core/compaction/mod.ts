/**
 * Compaction, the pure parts: when to compact (policies and the trigger), what to
 * compact (the halving plan over Active), whether it worked (validation of the next
 * real usage), the in-memory fold after a context-length error, the provider-neutral
 * token estimate and the accounting. Nothing here reads or writes storage.
 *
 * @example
 * ```ts
 * import { ExtractiveSummarizer, MemoryStorage, realUsage, Sessions } from "sessionfold";
 *
 * // Its sessions compact on their own once a step's real usage nears the window: the oldest half of Active, one summary call.
 * const sessions = new Sessions({
 *   storage: new MemoryStorage(),
 *   defaults: { policy: realUsage(), contextWindow: 128_000, summarizer: new ExtractiveSummarizer() },
 * });
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
