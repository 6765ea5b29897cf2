import { InvalidInputError } from "../errors.ts";

/**
 * When compaction runs. The default reads the provider's real usage; the two
 * opt-in policies of seed 004 are alternatives a host may choose.
 */
export type CompactionPolicy =
  /** Default: real usage (`total_tokens`, else input + output) ≥ `ratio` (0.95) of `context_window`. */
  | { readonly kind: "real-usage"; readonly ratio: number }
  /** Before a step, when Active holds at least `messages` messages (nonzero). */
  | { readonly kind: "after-messages"; readonly messages: number }
  /** Before a step, when the estimate of messages and tool schemas reaches `tokens` (nonzero). */
  | { readonly kind: "at-context-tokens"; readonly tokens: number }
  /** Only manual `compact()`. */
  | { readonly kind: "manual" };

/** Real usage must reach this share of the window to schedule a compaction. */
export const COMPACTION_TRIGGER_RATIO = 0.95;
/** After a compaction the next real usage must be at most this share of the window. */
export const COMPACTION_TARGET_RATIO = 0.5;

/**
 * The default policy: compact when real usage reaches 95% of the context window.
 *
 * @example
 * ```ts
 * const policy = realUsage(); // { kind: "real-usage", ratio: 0.95 }
 * ```
 */
export function realUsage(ratio = COMPACTION_TRIGGER_RATIO): CompactionPolicy {
  return { kind: "real-usage", ratio };
}

/**
 * Opt-in: compact before a step once Active holds `n` or more messages.
 *
 * @example
 * ```ts
 * const policy = afterMessages(200);
 * ```
 * @throws {InvalidInputError} when `n` is not a positive integer.
 */
export function afterMessages(n: number): CompactionPolicy {
  assertPositiveInteger("afterMessages", n);
  return { kind: "after-messages", messages: n };
}

/**
 * Opt-in: compact before a step once the estimate of Active and the tool schemas reaches `n` tokens.
 *
 * @example
 * ```ts
 * const policy = atContextTokens(100_000);
 * ```
 * @throws {InvalidInputError} when `n` is not a positive integer.
 */
export function atContextTokens(n: number): CompactionPolicy {
  assertPositiveInteger("atContextTokens", n);
  return { kind: "at-context-tokens", tokens: n };
}

/** Only a manual `compact()` compacts. */
export function manualOnly(): CompactionPolicy {
  return { kind: "manual" };
}

function assertPositiveInteger(name: string, n: number): void {
  if (!Number.isSafeInteger(n) || n <= 0) {
    throw new InvalidInputError(`${name}(${String(n)}): expected a positive integer`, { policy: name, value: n });
  }
}
