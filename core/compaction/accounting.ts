import { InvalidInputError } from "../errors.ts";
import type { CompactionAccounting, Usage } from "../schema/mod.ts";

/** The figures of one completed compaction, as {@linkcode accumulateCompaction} adds them. */
export interface CompactionStep {
  /** Messages moved out of Active into the new segment. */
  readonly removedMessages: number;
  /** The estimate of those messages' tokens. */
  readonly removedTokensEstimate: number;
  /** What the summary call cost, when the summarizer reported it. */
  readonly costUsdMicros?: number;
  /** The summarizer's own token usage, when it reported one. */
  readonly summaryUsage?: Usage;
  /** Estimated model-input tokens before the compaction (summary + Active). */
  readonly beforeTokens: number;
  /** Estimated model-input tokens after it (new summary + kept Active). */
  readonly afterTokens: number;
}

/** What a manual `compact()` returns. */
export interface CompactionOutcome {
  /** The session revision the compaction committed. */
  readonly revision: number;
  readonly removedMessages: number;
  readonly keptMessages: number;
  /** The new segment's inclusive sequence range. */
  readonly segment: { readonly start: number; readonly end: number };
  readonly beforeTokens: number;
  readonly afterTokens: number;
  readonly costUsdMicros?: number;
  /** The summarizer's own token usage for this compaction, when it reported one. */
  readonly summaryUsage?: Usage;
  /** Length of the new cumulative summary, in characters. */
  readonly summaryChars: number;
}

/**
 * Adds one completed compaction to the session's accounting (`meta.json`'s
 * `compaction`, docs/FORMAT.md "`meta.json`"): completed operations, removed messages and estimated tokens are
 * summed; the cost is summed once any is known and stays absent until then, and so is
 * the summarizer's reported usage (`summary_usage`, each count summed); the last
 * before/after estimates are replaced. Unknown fields of `previous` are kept.
 *
 * @example
 * ```ts
 * const a = accumulateCompaction(undefined, { removedMessages: 450, removedTokensEstimate: 90_000, beforeTokens: 121_600, afterTokens: 40_100 });
 * a.completed; // 1
 * a.cost_usd_micros; // undefined
 * ```
 * @throws {InvalidInputError} when a figure of `step` is not a non-negative integer.
 */
export function accumulateCompaction(previous: CompactionAccounting | undefined, step: CompactionStep): CompactionAccounting {
  const figures = ["removedMessages", "removedTokensEstimate", "beforeTokens", "afterTokens", "costUsdMicros"] as const;
  for (const name of figures) {
    const value = step[name];
    if (value === undefined && name === "costUsdMicros") continue;
    if (!Number.isSafeInteger(value) || (value as number) < 0) {
      throw new InvalidInputError(`compaction step ${name} ${String(value)} is not a non-negative integer`, { field: name, value });
    }
  }
  const next: CompactionAccounting = {
    ...previous,
    completed: (previous?.completed ?? 0) + 1,
    removed_messages: (previous?.removed_messages ?? 0) + step.removedMessages,
    removed_tokens_estimate: (previous?.removed_tokens_estimate ?? 0) + step.removedTokensEstimate,
    last_before_tokens: step.beforeTokens,
    last_after_tokens: step.afterTokens,
  };
  if (step.costUsdMicros !== undefined) next.cost_usd_micros = (previous?.cost_usd_micros ?? 0) + step.costUsdMicros;
  if (step.summaryUsage !== undefined) next.summary_usage = addUsage(previous?.summary_usage, step.summaryUsage);
  return next;
}

/** Two usages summed count by count (a count either lacks is taken from the other); the cost stays in `cost_usd_micros`. */
function addUsage(total: Usage | undefined, step: Usage): Usage {
  const sum: Record<string, unknown> = { ...total };
  for (const [key, value] of Object.entries(step)) {
    if (key === "cost_usd_micros" || !Number.isSafeInteger(value) || (value as number) < 0) continue;
    const before = sum[key];
    sum[key] = (typeof before === "number" ? before : 0) + (value as number);
  }
  sum.input_tokens ??= 0;
  sum.output_tokens ??= 0;
  return sum as Usage;
}
