import type { MessageRecord } from "./message.ts";

/**
 * The extension field a message record carries for what only Rho has (docs/FORMAT.md
 * "Importing and exporting"): among others the portable fallback, which the composer reads.
 *
 * @example
 * ```ts
 * import { RHO_EXTENSION_FIELD } from "sessionfold";
 * RHO_EXTENSION_FIELD; // "rho"
 * ```
 */
export const RHO_EXTENSION_FIELD = "rho";

/**
 * The portable fallback text of a message (`"rho": {"portable_fallback": …}`): what a model
 * other than the one that produced its provider context is sent instead of that context
 * (docs/FORMAT.md "What a model request reads"). `undefined` when the message has none.
 *
 * @example
 * ```ts
 * import type { MessageRecord } from "sessionfold";
 * declare const message: MessageRecord;
 * portableFallbackOf(message); // "The earlier conversation was compacted." or undefined
 * ```
 */
export function portableFallbackOf(message: MessageRecord): string | undefined {
  const extension = (message as Record<string, unknown>)[RHO_EXTENSION_FIELD];
  if (typeof extension !== "object" || extension === null) return undefined;
  const text = (extension as { portable_fallback?: unknown }).portable_fallback;
  return typeof text === "string" ? text : undefined;
}
