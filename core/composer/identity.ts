import type { ProviderIdentity } from "../schema/mod.ts";

/**
 * Whether two provider identities are exactly the same: provider, API and model all
 * equal. Provider context is only ever sent back to its exact producer (docs/decisions.md "On-disk format", "Composer").
 *
 * @example
 * ```ts
 * sameIdentity(
 *   { provider: "openai", api: "responses", model: "gpt-5" },
 *   { provider: "openai", api: "chat", model: "gpt-5" },
 * ); // false
 * ```
 */
export function sameIdentity(a: ProviderIdentity, b: ProviderIdentity): boolean {
  return a.provider === b.provider && a.api === b.api && a.model === b.model;
}
