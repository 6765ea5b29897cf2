/**
 * Hand-written checks of the records an open reads on every turn (a message line, a
 * segment's footer, `meta.json`, the draft), for the hot read path: a check that passes
 * means the zod schema accepts the value and would return it unchanged, key order
 * included (zod puts the schema's fields first, in its order, then the unknown ones), so the
 * reader keeps the parsed value itself. A check that fails proves nothing: the reader then
 * asks the zod schema, which stays the source of truth and gives the typed diagnostic. A
 * check may only ever be stricter than its schema (test/core/fast-check.test.ts holds
 * them to that on a corpus).
 *
 * @module
 */
import type { z } from "zod";
import { DraftRecord, MessageRecord } from "./message.ts";
import { SessionMeta } from "./meta.ts";
import { SummaryRecord } from "./summary.ts";
import { isTimestampText } from "./timestamp-check.ts";

type Plain = Record<string, unknown>;

/** Field name → place in the schema, for the order check. */
function order(...keys: string[]): ReadonlyMap<string, number> {
  return new Map(keys.map((key, i) => [key, i]));
}

/**
 * Whether one check accepts schema fields out of the schema's order (`meta.json`, whose
 * writers order some fields otherwise; a check that does returns a copy in the schema's order).
 */
let anyOrder = false;

/**
 * `true` when `value` is a plain object whose schema fields come first, in the schema's
 * order, and whose other fields (kept by a loose schema) come after them: the order zod's
 * output has (any order while `anyOrder` is set). `__proto__` is never plain: zod would not
 * copy it as a field.
 */
function inOrder(value: unknown, keys: ReadonlyMap<string, number>): value is Plain {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  let last = -1;
  let extra = false;
  for (const key in value) {
    const at = keys.get(key);
    if (at === undefined) {
      if (key === "__proto__") return false;
      extra = true;
    } else {
      if (!anyOrder && (extra || at < last)) return false;
      last = at;
    }
  }
  return true;
}

/** A copy of the plain object `value` as zod returns it: the schema's fields in its order, then the others; `nested` objects likewise. */
function inSchemaOrder(value: Plain, keys: ReadonlyMap<string, number>, nested: Readonly<Record<string, ReadonlyMap<string, number>>> = {}): Plain {
  const out: Plain = {};
  for (const key of keys.keys()) {
    if (!(key in value)) continue;
    const inner = nested[key];
    out[key] = inner ? inSchemaOrder(value[key] as Plain, inner, key === "compaction" ? { summary_usage: USAGE_KEYS } : {}) : value[key];
  }
  for (const key in value) if (!keys.has(key)) out[key] = value[key];
  return out;
}

const isText = (value: unknown): value is string => typeof value === "string";
const isName = (value: unknown): boolean => typeof value === "string" && value.length > 0;
const isCount = (value: unknown): boolean => Number.isSafeInteger(value) && (value as number) >= 0;
const isSequence = (value: unknown): boolean => Number.isSafeInteger(value) && (value as number) >= 1;
const isTime = (value: unknown): boolean => typeof value === "string" && isTimestampText(value);
const optional = (value: Plain, key: string, check: (v: unknown) => boolean): boolean => !(key in value) || check(value[key]);

const TEXT_KEYS = order("sequence", "type", "text");
const TOOL_KEYS = order("sequence", "type", "tool_call_id", "tool_name", "state", "input", "output", "error");
const FILE_KEYS = order("sequence", "type", "media_type", "name", "data", "url");
const CONTEXT_KEYS = order("sequence", "type", "provider", "api", "model", "data");
const TOOL_STATES = new Set(["input-available", "output-available", "output-error"]);

function isPart(part: unknown): boolean {
  if (typeof part !== "object" || part === null) return false;
  const type = (part as Plain)["type"];
  if (type === "text" || type === "reasoning" || type === "reasoning-summary") {
    return inOrder(part, TEXT_KEYS) && isSequence(part["sequence"]) && isText(part["text"]);
  }
  return isRichPart(part as Plain, type);
}

/** {@linkcode isPart} of a tool call, a file or a provider's context: apart, so that a session of text alone never compiles it. */
function isRichPart(part: Plain, type: unknown): boolean {
  if (type === "tool") {
    return inOrder(part, TOOL_KEYS) && isSequence(part["sequence"]) && isName(part["tool_call_id"]) && isName(part["tool_name"]) &&
      TOOL_STATES.has(part["state"] as string) && "input" in part && optional(part, "error", isText);
  }
  if (type === "file") {
    return inOrder(part, FILE_KEYS) && isSequence(part["sequence"]) && isName(part["media_type"]) && optional(part, "name", isText) &&
      optional(part, "data", isText) && optional(part, "url", isText) && (part["data"] !== undefined || part["url"] !== undefined);
  }
  if (type === "provider-context") {
    return inOrder(part, CONTEXT_KEYS) && isSequence(part["sequence"]) && isName(part["provider"]) && isName(part["api"]) &&
      isName(part["model"]) && "data" in part;
  }
  return false;
}

function isParts(value: unknown): boolean {
  if (!Array.isArray(value)) return false;
  // One part (most messages) is unique without a set.
  if (value.length === 1) return isPart(value[0]);
  const seen = new Set<unknown>();
  for (let i = 0; i < value.length; i++) {
    const part: unknown = value[i];
    if (!isPart(part)) return false;
    seen.add((part as Plain)["sequence"]);
  }
  return seen.size === value.length;
}

const USAGE_KEYS = order("input_tokens", "output_tokens", "total_tokens", "cost_usd_micros");
const isUsage = (value: unknown): boolean =>
  inOrder(value, USAGE_KEYS) && isCount(value["input_tokens"]) && isCount(value["output_tokens"]) && optional(value, "total_tokens", isCount) &&
  optional(value, "cost_usd_micros", isCount);

const IDENTITY_KEYS = order("provider", "api", "model");
const isIdentity = (value: unknown): boolean => inOrder(value, IDENTITY_KEYS) && isName(value["provider"]) && isName(value["api"]) && isName(value["model"]);

const MESSAGE_KEYS = order("record_type", "sequence", "message_id", "role", "created_at", "status", "parts", "usage", "provider");
const STATUSES = new Set(["completed", "stopped", "failed"]);

function isMessageLike(value: unknown, draft: boolean): boolean {
  if (!inOrder(value, MESSAGE_KEYS)) return false;
  const { role, status } = value;
  const roleOk = draft ? role === "assistant" : role === "user" || role === "assistant";
  const statusOk = draft ? status === "streaming" : !("status" in value) || STATUSES.has(status as string);
  return value["record_type"] === "message" && roleOk && statusOk && isSequence(value["sequence"]) && isName(value["message_id"]) &&
    isTime(value["created_at"]) && isParts(value["parts"]) && optional(value, "usage", isUsage) && optional(value, "provider", isIdentity);
}

const SUMMARY_KEYS = order("record_type", "session_id", "summary_id", "through_sequence", "text", "created_at");
const isSummary = (value: unknown): boolean =>
  inOrder(value, SUMMARY_KEYS) && value["record_type"] === "summary" && isName(value["session_id"]) && isName(value["summary_id"]) &&
  isSequence(value["through_sequence"]) && isName(value["text"]) && isTime(value["created_at"]);

const COMPACTION_KEYS = order(
  "completed",
  "removed_messages",
  "removed_tokens_estimate",
  "cost_usd_micros",
  "last_before_tokens",
  "last_after_tokens",
  "summary_usage",
);
const isCompaction = (value: unknown): boolean =>
  inOrder(value, COMPACTION_KEYS) && isCount(value["completed"]) && isCount(value["removed_messages"]) && isCount(value["removed_tokens_estimate"]) &&
  optional(value, "cost_usd_micros", isCount) && optional(value, "last_before_tokens", isCount) && optional(value, "last_after_tokens", isCount) &&
  optional(value, "summary_usage", isUsage);
const FORK_KEYS = order("session_id", "through_sequence");
const isFork = (value: unknown): boolean => inOrder(value, FORK_KEYS) && isName(value["session_id"]) && isCount(value["through_sequence"]);

const META_KEYS = order(
  "schema_version",
  "session_id",
  "agent_id",
  "workspace_id",
  "title",
  "model_label",
  "created_at",
  "updated_at",
  "message_count",
  "history_bytes",
  "timezone",
  "revision",
  "forked_from",
  "compaction",
  "provider",
);
const isMeta = (value: unknown): boolean =>
  inOrder(value, META_KEYS) && value["schema_version"] === 1 && isName(value["session_id"]) && isName(value["agent_id"]) &&
  isName(value["workspace_id"]) && optional(value, "title", isText) && optional(value, "model_label", isText) && isTime(value["created_at"]) &&
  isTime(value["updated_at"]) && isCount(value["message_count"]) && isCount(value["history_bytes"]) && optional(value, "timezone", isText) &&
  isCount(value["revision"]) && optional(value, "forked_from", isFork) && optional(value, "compaction", isCompaction) &&
  optional(value, "provider", isIdentity);

/** `meta.json` in the schema's order: checked in any order, then copied when its order is not the schema's. */
function metaInSchemaOrder(value: unknown): unknown {
  if (isMeta(value)) return value;
  anyOrder = true;
  try {
    if (!isMeta(value)) return undefined;
  } finally {
    anyOrder = false;
  }
  return inSchemaOrder(value as Plain, META_KEYS, { forked_from: FORK_KEYS, compaction: COMPACTION_KEYS, provider: IDENTITY_KEYS });
}

/** The value the schema would return, or `undefined` when the hand-written check cannot tell. */
const FAST_CHECKS = new Map<z.ZodType, (value: unknown) => unknown>([
  [MessageRecord, (value) => (isMessageLike(value, false) ? value : undefined)],
  [DraftRecord, (value) => (isMessageLike(value, true) ? value : undefined)],
  [SummaryRecord, (value) => (isSummary(value) ? value : undefined)],
  [SessionMeta, metaInSchemaOrder],
]);

/**
 * What `schema.safeParse(value)` returns, without zod when `schema` has a hand-written check
 * here and `value` passes it: then `value` itself (the schema would return an equal value,
 * fields in the same order) or, for `meta.json`, a copy in the schema's order. One call in
 * place of `schema.safeParse` on the read path.
 *
 * @example
 * ```ts
 * import { SummaryRecord } from "sessionfold";
 * const footer = JSON.parse('{"record_type":"summary","session_id":"s1","summary_id":"x","through_sequence":4,"text":"t","created_at":"2026-12-02T13:00:00.000Z"}');
 * fastParse(SummaryRecord, footer).data === footer; // true
 * ```
 */
export function fastParse<S extends z.ZodType>(schema: S, value: unknown): z.ZodSafeParseResult<z.infer<S>> {
  const data = FAST_CHECKS.get(schema)?.(value);
  if (data !== undefined) return { success: true, data: data as z.infer<S> };
  return schema.safeParse(value) as z.ZodSafeParseResult<z.infer<S>>;
}
