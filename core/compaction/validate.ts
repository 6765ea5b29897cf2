import type { Usage } from "../schema/mod.ts";
import { COMPACTION_TARGET_RATIO } from "./policy.ts";
import { assertContextWindow } from "./trigger.ts";
import { usageTokens } from "./usage.ts";

/**
 * Judges a compaction by the next real usage after it (docs/decisions.md "On-disk format", `compaction.last_compacted_sequence`): at most 50% of the
 * context window passes; above schedules a deep compaction before the next step.
 *
 * @example
 * ```ts
 * validateAfterCompaction({ input_tokens: 500, output_tokens: 0 }, 1000); // "pass"
 * validateAfterCompaction({ input_tokens: 501, output_tokens: 0 }, 1000); // "deep"
 * ```
 * @throws {InvalidInputError} when `contextWindow` is not a positive integer or the usage is malformed.
 */
export function validateAfterCompaction(usage: Usage, contextWindow: number): "pass" | "deep" {
  assertContextWindow(contextWindow);
  return usageTokens(usage) / contextWindow <= COMPACTION_TARGET_RATIO ? "pass" : "deep";
}
