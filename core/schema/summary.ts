import * as z from "zod";
import { Sequence, Timestamp } from "./common.ts";

/** The cumulative summary footer: the last line of every segment, and only there. */
export const SummaryRecord: z.ZodObject<
  {
    record_type: z.ZodLiteral<"summary">;
    session_id: z.ZodString;
    summary_id: z.ZodString;
    through_sequence: z.ZodInt;
    text: z.ZodString;
    created_at: z.ZodISODateTime;
  },
  z.core.$loose
> = z.looseObject({
  record_type: z.literal("summary"),
  session_id: z.string().min(1),
  summary_id: z.string().min(1),
  through_sequence: Sequence,
  text: z.string().min(1),
  created_at: Timestamp,
});

/** The parsed shape of {@linkcode SummaryRecord}. */
export type SummaryRecord = z.infer<typeof SummaryRecord>;

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
export function cumulativeSummary(footer: SummaryRecord | undefined): string | null {
  return footer && footer[RESET_FIELD] !== true ? footer.text : null;
}
