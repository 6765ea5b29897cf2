import { InvalidInputError } from "../errors.ts";

/**
 * When compaction runs. The default reads the provider's real usage; the two
 * opt-in policies (docs/FORMAT.md "Compaction") are alternatives a host may choose.
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
/** After a compaction the next real usage must be at most this share of the context window (its target). */
export const COMPACTION_TARGET_RATIO = 0.5;

/**
 * The default policy: compact when real usage reaches 95% of the context window (docs/FORMAT.md "Compaction").
 *
 * @example
 * ```ts
 * const policy = realUsage(); // { kind: "real-usage", ratio: 0.95 }
 * ```
 * @throws {InvalidInputError} when `ratio` is not a number in (0, 1].
 */
export function realUsage(ratio = COMPACTION_TRIGGER_RATIO): CompactionPolicy {
  const policy: CompactionPolicy = { kind: "real-usage", ratio };
  assertCompactionPolicy(policy);
  return policy;
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

/**
 * Only a manual `compact()` compacts.
 *
 * @example
 * ```ts
 * const policy = manualOnly(); // { kind: "manual" }
 * ```
 */
export function manualOnly(): CompactionPolicy {
  return { kind: "manual" };
}

/**
 * Checks a policy a host may have written as an object literal.
 *
 * @example
 * ```ts
 * assertCompactionPolicy({ kind: "after-messages", messages: 200 }); // ok
 * assertCompactionPolicy({ kind: "real-usage", ratio: 1.5 }); // throws InvalidInputError
 * ```
 * @throws {InvalidInputError} when the kind is unknown or its number is out of range.
 */
export function assertCompactionPolicy(policy: CompactionPolicy): void {
  switch (policy?.kind) {
    case "real-usage": {
      const { ratio } = policy;
      if (typeof ratio !== "number" || !Number.isFinite(ratio) || ratio <= 0 || ratio > 1) {
        throw new InvalidInputError(`realUsage(${String(ratio)}): expected a ratio in (0, 1]`, { policy: "realUsage", value: ratio });
      }
      return;
    }
    case "after-messages":
      return assertPositiveInteger("afterMessages", policy.messages);
    case "at-context-tokens":
      return assertPositiveInteger("atContextTokens", policy.tokens);
    case "manual":
      return;
    default:
      throw new InvalidInputError(`unknown compaction policy ${JSON.stringify((policy as { kind?: unknown } | null)?.kind) ?? "undefined"}`, {
        kind: String((policy as { kind?: unknown } | null)?.kind),
      });
  }
}

function assertPositiveInteger(name: string, n: number): void {
  if (!Number.isSafeInteger(n) || n <= 0) {
    throw new InvalidInputError(`${name}(${String(n)}): expected a positive integer`, { policy: name, value: n });
  }
}
