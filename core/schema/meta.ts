import { z } from "zod";
import { Count, Timestamp } from "./common.ts";

/** The only `meta.json` schema version this reader knows. */
export const META_SCHEMA_VERSION = 1;

/** Compaction accounting (seed 004), accumulated over the session's life. */
export const CompactionAccounting = z.looseObject({
  completed: Count,
  removed_messages: Count,
  removed_tokens_estimate: Count,
  cost_usd_micros: Count.optional(),
  last_before_tokens: Count.optional(),
  last_after_tokens: Count.optional(),
});

/** Where a forked session came from. */
export const ForkOrigin = z.looseObject({ session_id: z.string().min(1), through_sequence: Count });

/** `meta.json`, schema version 1. */
export const SessionMeta = z.looseObject({
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
});

/** The `writer.lock` content: who holds the session for which operation. */
export const WriterLockRecord = z.looseObject({
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
