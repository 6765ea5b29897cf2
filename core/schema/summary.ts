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

export { cumulativeSummary, RESET_FIELD } from "./footer.ts";
