import * as z from "zod";
import { Count, Timestamp } from "./common.ts";
import { ProviderIdentity, Usage } from "./message.ts";
import { META_SCHEMA_VERSION } from "./version.ts";

export { META_SCHEMA_VERSION };

/** Compaction accounting (docs/FORMAT.md "`meta.json`"), accumulated over the session's life. */
export const CompactionAccounting: z.ZodObject<
  {
    completed: z.ZodInt;
    removed_messages: z.ZodInt;
    removed_tokens_estimate: z.ZodInt;
    cost_usd_micros: z.ZodOptional<z.ZodInt>;
    last_before_tokens: z.ZodOptional<z.ZodInt>;
    last_after_tokens: z.ZodOptional<z.ZodInt>;
    summary_usage: z.ZodOptional<typeof Usage>;
  },
  z.core.$loose
> = z.looseObject({
  completed: Count,
  removed_messages: Count,
  removed_tokens_estimate: Count,
  cost_usd_micros: Count.optional(),
  last_before_tokens: Count.optional(),
  last_after_tokens: Count.optional(),
  /** The summarizer's own reported token usage, summed over the compactions that reported one. */
  summary_usage: Usage.optional(),
});

/** Where a forked session came from. */
export const ForkOrigin: z.ZodObject<{ session_id: z.ZodString; through_sequence: z.ZodInt }, z.core.$loose> = z.looseObject({
  session_id: z.string().min(1),
  through_sequence: Count,
});

/** `meta.json`, schema version 1. */
export const SessionMeta: z.ZodObject<
  {
    schema_version: z.ZodLiteral<1>;
    session_id: z.ZodString;
    agent_id: z.ZodString;
    workspace_id: z.ZodString;
    title: z.ZodOptional<z.ZodString>;
    model_label: z.ZodOptional<z.ZodString>;
    created_at: z.ZodISODateTime;
    updated_at: z.ZodISODateTime;
    message_count: z.ZodInt;
    history_bytes: z.ZodInt;
    timezone: z.ZodOptional<z.ZodString>;
    revision: z.ZodInt;
    forked_from: z.ZodOptional<typeof ForkOrigin>;
    compaction: z.ZodOptional<typeof CompactionAccounting>;
    provider: z.ZodOptional<typeof ProviderIdentity>;
  },
  z.core.$loose
> = z.looseObject({
  schema_version: z.literal(META_SCHEMA_VERSION),
  session_id: z.string().min(1),
  agent_id: z.string().min(1),
  workspace_id: z.string().min(1),
  title: z.string().optional(),
  model_label: z.string().optional(),
  created_at: Timestamp,
  updated_at: Timestamp,
  message_count: Count,
  history_bytes: Count,
  timezone: z.string().optional(),
  revision: Count,
  forked_from: ForkOrigin.optional(),
  compaction: CompactionAccounting.optional(),
  /** The identity that produced the newest assistant message, or until then an import's source provider. */
  provider: ProviderIdentity.optional(),
});

/** The `writer.lock` content: who holds the session for which operation. */
export const WriterLockRecord: z.ZodObject<
  { pid: z.ZodInt; hostname: z.ZodString; runtime: z.ZodString; operation: z.ZodString; created_at: z.ZodISODateTime },
  z.core.$loose
> = z.looseObject({
  pid: z.int(),
  hostname: z.string(),
  runtime: z.string().min(1),
  operation: z.string().min(1),
  created_at: Timestamp,
});

/** The parsed shape of {@linkcode CompactionAccounting}. */
export type CompactionAccounting = z.infer<typeof CompactionAccounting>;
/** The parsed shape of {@linkcode ForkOrigin}. */
export type ForkOrigin = z.infer<typeof ForkOrigin>;
/** The parsed shape of {@linkcode SessionMeta}. */
export type SessionMeta = z.infer<typeof SessionMeta>;
/** The parsed shape of {@linkcode WriterLockRecord}. */
export type WriterLockRecord = z.infer<typeof WriterLockRecord>;
