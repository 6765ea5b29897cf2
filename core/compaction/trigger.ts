import { InvalidInputError } from "../errors.ts";
import type { Usage } from "../schema/mod.ts";
import { assertCompactionPolicy, type CompactionPolicy } from "./policy.ts";
import { usageTokens } from "./usage.ts";

/** What the trigger may look at before a provider step. */
export interface CompactionFacts {
  /** The real usage of the latest provider step (the newest message carrying `usage`). */
  readonly lastUsage?: Usage;
  /** The model's configured context window, in tokens. */
  readonly contextWindow?: number;
  /** How many messages Active holds. */
  readonly activeCount: number;
  /**
   * The provider-neutral estimate of Active and the tool schemas. A thunk, so it is
   * only computed by the `at-context-tokens` policy (the default never estimates).
   */
  readonly estimatedTokens?: () => number;
  /** A validation after the last compaction asked for another, deep one (docs/decisions.md "On-disk format"). */
  readonly deepCompactionPending?: boolean;
  /**
   * The provider refused a request as too long since the last compaction: the strongest
   * evidence that Active no longer fits, whatever the (folded) retry's usage says.
   */
  readonly contextRefused?: boolean;
}

/** The trigger's answer, with a one-line reason for logs and events. */
export interface CompactionDecision {
  readonly compact: boolean;
  readonly reason: string;
}

/**
 * Decides, purely, whether to compact before the next provider step.
 *
 * - `real-usage`: `usageTokens(lastUsage) >= ratio * contextWindow`; with no usage or
 *   no window it never compacts and never estimates.
 * - `after-messages`: `activeCount >= messages`.
 * - `at-context-tokens`: `estimatedTokens() >= tokens`.
 * - `manual`: never.
 *
 * A pending deep compaction, or a context-length refusal since the last compaction,
 * compacts under every automatic policy. Nothing is ever
 * compacted while Active holds fewer than 2 messages: no plan exists then.
 *
 * @example
 * ```ts
 * import { realUsage } from "sessionfold";
 *
 * compactionTrigger(realUsage(), {
 *   lastUsage: { input_tokens: 950, output_tokens: 0 },
 *   contextWindow: 1000,
 *   activeCount: 12,
 * }); // { compact: true, reason: "usage 950 tokens reached 95% of the 1000-token context window" }
 * ```
 * @throws {InvalidInputError} when the policy is invalid, `contextWindow` or
 * `activeCount` is out of range, or `at-context-tokens` has no `estimatedTokens`.
 */
export function compactionTrigger(policy: CompactionPolicy, facts: CompactionFacts): CompactionDecision {
  assertCompactionPolicy(policy);
  const { activeCount, contextWindow } = facts;
  if (!Number.isSafeInteger(activeCount) || activeCount < 0) {
    throw new InvalidInputError(`activeCount ${String(activeCount)} is not a non-negative integer`, { activeCount });
  }
  if (contextWindow !== undefined) assertContextWindow(contextWindow);
  if (policy.kind === "manual") return no("the policy is manual: only compact() compacts");
  if (activeCount < 2) return no(`Active holds ${activeCount} message(s): nothing to compact`);
  if (facts.contextRefused) return yes("the provider refused a request as too long since the last compaction");
  if (facts.deepCompactionPending) return yes("the last compaction left usage above 50% of the context window: deep compaction");
  switch (policy.kind) {
    case "real-usage": {
      if (facts.lastUsage === undefined) return no("no real usage yet");
      if (contextWindow === undefined) return no("no context window configured");
      const tokens = usageTokens(facts.lastUsage);
      const share = `${formatPercent(policy.ratio)} of the ${contextWindow}-token context window`;
      // Integer / integer is correctly rounded, so exactly 95% compares equal to 0.95.
      return tokens / contextWindow >= policy.ratio ? yes(`usage ${tokens} tokens reached ${share}`) : no(`usage ${tokens} tokens is below ${share}`);
    }
    case "after-messages":
      return activeCount >= policy.messages
        ? yes(`Active holds ${activeCount} messages (policy: ${policy.messages})`)
        : no(`Active holds ${activeCount} messages, below ${policy.messages}`);
    case "at-context-tokens": {
      if (facts.estimatedTokens === undefined) {
        throw new InvalidInputError("the at-context-tokens policy needs facts.estimatedTokens", { policy: policy.kind });
      }
      const estimate = facts.estimatedTokens();
      return estimate >= policy.tokens
        ? yes(`estimated ${estimate} tokens reached ${policy.tokens}`)
        : no(`estimated ${estimate} tokens is below ${policy.tokens}`);
    }
  }
}

/**
 * Throws unless `contextWindow` is a positive integer.
 *
 * @example
 * ```ts
 * assertContextWindow(200_000); // ok
 * ```
 * @throws {InvalidInputError} when it is not a positive integer.
 */
export function assertContextWindow(contextWindow: number): void {
  if (!Number.isSafeInteger(contextWindow) || contextWindow <= 0) {
    throw new InvalidInputError(`contextWindow ${String(contextWindow)} is not a positive integer`, { contextWindow });
  }
}

function yes(reason: string): CompactionDecision {
  return { compact: true, reason };
}

function no(reason: string): CompactionDecision {
  return { compact: false, reason };
}

function formatPercent(ratio: number): string {
  return `${Math.round(ratio * 10_000) / 100}%`;
}
