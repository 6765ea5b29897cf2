import type { MessageRecord, Usage } from "../schema/mod.ts";

/** What a summarizer is given: the previous cumulative summary and the oldest half of Active. */
export interface SummaryRequest {
  readonly previousSummary: string | null;
  readonly messages: readonly MessageRecord[];
  readonly signal: AbortSignal;
}

/** A summarizer's answer; `usage.cost_usd_micros` feeds the compaction accounting. */
export interface SummaryResult {
  readonly text: string;
  readonly usage?: Usage;
}

/** Makes the cumulative summary for a compaction. Exactly one call per compaction. */
export interface Summarizer {
  summarize(request: SummaryRequest): Promise<SummaryResult>;
}
