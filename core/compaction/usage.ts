import { InvalidInputError } from "../errors.ts";
import type { Usage } from "../schema/mod.ts";

/**
 * The tokens a provider step used: `total_tokens`, else `input_tokens + output_tokens`
 * (docs/FORMAT.md "Compaction"). This is the number the default compaction trigger and the
 * post-compaction validation read.
 *
 * @example
 * ```ts
 * usageTokens({ input_tokens: 900, output_tokens: 120, total_tokens: 1030 }); // 1030
 * usageTokens({ input_tokens: 900, output_tokens: 120 }); // 1020
 * ```
 * @throws {InvalidInputError} when a count it reads is not a non-negative number.
 */
export function usageTokens(usage: Usage): number {
  // `null` comes from providers that send JSON without a total: treated as absent.
  const total: unknown = usage.total_tokens;
  if (total !== undefined && total !== null) return count(total, "total_tokens");
  return count(usage.input_tokens, "input_tokens") + count(usage.output_tokens, "output_tokens");
}

function count(value: unknown, field: string): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
    throw new InvalidInputError(`usage.${field} is ${JSON.stringify(value) ?? String(value)}, expected a non-negative number`, {
      field,
      value: typeof value === "number" ? value : String(value),
    });
  }
  return value;
}
