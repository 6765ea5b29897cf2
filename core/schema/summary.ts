import { z } from "zod";
import { Sequence, Timestamp } from "./common.ts";

/** The cumulative summary footer: the last line of every segment, and only there. */
export const SummaryRecord = z.looseObject({
  record_type: z.literal("summary"),
  session_id: z.string().min(1),
  summary_id: z.string().min(1),
  through_sequence: Sequence,
  text: z.string().min(1),
  created_at: Timestamp,
});

export type SummaryRecord = z.infer<typeof SummaryRecord>;
