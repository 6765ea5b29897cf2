/**
 * What a segment's footer gives the model context, apart from its schema
 * (core/schema/summary.ts re-exports it), so that composing never loads zod.
 *
 * @module
 */
/**
 * Extension field of a footer closed by `reset()`: the history before it no longer
 * belongs to the model context, so the footer contributes no summary (docs/decisions.md).
 */
export const RESET_FIELD = "reset";

/**
 * The cumulative summary a footer gives the model context: its text, or `null` when
 * there is no footer or the footer marks a reset.
 *
 * @example
 * ```ts
 * cumulativeSummary(undefined); // null
 * ```
 */
export function cumulativeSummary(footer: { readonly text: string; readonly [RESET_FIELD]?: unknown } | undefined): string | null {
  return footer && footer[RESET_FIELD] !== true ? footer.text : null;
}
