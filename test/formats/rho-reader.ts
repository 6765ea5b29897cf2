/**
 * What Rho's serde types accept, ported to check sessionfold's Rho snapshot exports (not a
 * test file). Followed: `matthewyjiang/rho` at 3a1b2f7, `crates/rho-sdk/src/persistence.rs`
 * (`SessionSnapshotWire`: `schema_version` 1–2, `session_id`, `revision`, `history`,
 * `provider` required; `compaction`, `metadata`, `prompt_cache_key` defaulted),
 * `crates/rho-sdk/src/id.rs` (`SessionId`: a non-empty string; `Revision`: a `u64`),
 * `crates/rho-sdk/src/compaction.rs` (`CompactionState`: `completed_compactions` and
 * `removed_messages` required, the rest defaulted or `Option`) and `crates/rho-sdk/src/model.rs` (`Message`, externally tagged; `ContentBlock`;
 * `AssistantMessageRepr`, every field defaulted; `AbortedAssistant`: `content`, `reasoning`,
 * `tool_calls`, `usage` required; `ProviderContextBlock`: `identity`, `kind`, `data` required;
 * `ModelIdentity`: three strings, empty allowed; `ModelUsage`: seven `Option<u64>`;
 * `PartialToolCall`: `id`/`name` optional strings, `arguments` a string). Serde ignores
 * unknown fields (no `deny_unknown_fields` there), so they are not problems. On top of serde,
 * what sessionfold's writer promises Rho: the fallback block as `with_portable_fallback`
 * writes it, and never the older `portable_fallback` field.
 */
import { expect } from "vitest";

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value);
const isU64 = (value: unknown): boolean => typeof value === "number" && Number.isInteger(value) && value >= 0;
const FALLBACK_KIND = "rho.sdk.portable_fallback.v1";

/** Problems Rho's `SessionSnapshot::from_json` would have with `bytes`, as `$.path: …` strings (empty: it reads them). */
export function rhoSnapshotProblems(bytes: Uint8Array): string[] {
  const problems: string[] = [];
  const problem = (path: string, what: string) => problems.push(`${path}: ${what}`);
  let doc: unknown;
  try {
    doc = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    return ["$: not UTF-8 JSON"];
  }
  if (!isObject(doc)) return ["$: not an object"];
  const string = (value: unknown, path: string, nonEmpty = false) => {
    if (typeof value !== "string") problem(path, "not a string");
    else if (nonEmpty && value === "") problem(path, "empty (SessionId::from_string refuses it)");
  };
  const u64 = (value: unknown, path: string) => isU64(value) || problem(path, "not a u64");
  const optional = (value: unknown, path: string, check: (v: unknown, p: string) => void) => value === undefined || value === null || check(value, path);
  const identity = (value: unknown, path: string) => {
    if (!isObject(value)) return problem(path, "not a ModelIdentity object");
    for (const key of ["provider", "api", "model"]) string(value[key], `${path}.${key}`);
  };
  const blocks = (value: unknown, path: string) => {
    if (!Array.isArray(value)) return problem(path, "not an array of ContentBlock");
    value.forEach((block, i) => {
      const at = `${path}[${i}]`;
      const tags = isObject(block) ? Object.keys(block) : [];
      if (tags.length !== 1) return problem(at, "not an externally tagged ContentBlock");
      const body = (block as Json)[tags[0]!];
      if (tags[0] === "Text") string(body, `${at}.Text`);
      else if (tags[0] === "Image") {
        if (!isObject(body)) return problem(`${at}.Image`, "not an ImageContent object");
        string(body.data, `${at}.Image.data`);
        string(body.mime_type, `${at}.Image.mime_type`);
      } else if (tags[0] === "ToolCall") {
        if (!isObject(body)) return problem(`${at}.ToolCall`, "not a ToolCall object");
        string(body.id, `${at}.ToolCall.id`);
        string(body.name, `${at}.ToolCall.name`);
        if (!("arguments" in body)) problem(`${at}.ToolCall.arguments`, "missing");
      } else problem(at, `unknown ContentBlock variant ${JSON.stringify(tags[0])}`);
    });
  };
  const context = (value: unknown, path: string) => {
    if (value === undefined) return;
    if (!Array.isArray(value)) return problem(path, "not an array of ProviderContextBlock");
    value.forEach((block, i) => {
      const at = `${path}[${i}]`;
      if (!isObject(block)) return problem(at, "not a ProviderContextBlock object");
      identity(block.identity, `${at}.identity`);
      string(block.kind, `${at}.kind`);
      optional(block.position, `${at}.position`, u64);
      if (!("data" in block)) problem(`${at}.data`, "missing");
    });
    const fallbacks = value.filter((b) => isObject(b) && b.kind === FALLBACK_KIND && b.position === undefined && typeof b.data === "string");
    if (fallbacks.length > 1) problem(path, "more than one portable fallback block (with_portable_fallback keeps one)");
    if (fallbacks.length === 1 && value.at(-1) !== fallbacks[0]) {
      problem(path, "the portable fallback block is not the last (with_portable_fallback appends it)");
    }
  };
  const assistant = (body: unknown, path: string, aborted: boolean) => {
    if (!isObject(body)) return problem(path, "not an object");
    if (aborted || "content" in body) blocks(body.content, `${path}.content`);
    optional(body.provenance, `${path}.provenance`, identity);
    optional(body.reasoning_summary, `${path}.reasoning_summary`, string);
    context(body.provider_context, `${path}.provider_context`);
    if ("portable_fallback" in body) problem(`${path}.portable_fallback`, "the older field; Rho writes the fallback as a provider_context block");
    if (!aborted) return;
    string(body.reasoning, `${path}.reasoning`);
    if (!Array.isArray(body.tool_calls)) problem(`${path}.tool_calls`, "not an array of PartialToolCall");
    else {
      body.tool_calls.forEach((call, i) => {
        const at = `${path}.tool_calls[${i}]`;
        if (!isObject(call)) return problem(at, "not a PartialToolCall object");
        optional(call.id, `${at}.id`, string);
        optional(call.name, `${at}.name`, string);
        string(call.arguments, `${at}.arguments`);
      });
    }
    if (!isObject(body.usage)) problem(`${path}.usage`, "not a ModelUsage object");
    else {for (const key of ["input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "total_tokens", "context_window", "cost_usd_micros"]) {
        optional(body.usage[key], `${path}.usage.${key}`, u64);
      }}
  };

  if (!(doc.schema_version === 1 || doc.schema_version === 2)) problem("$.schema_version", `${String(doc.schema_version)}, not 1 or 2`);
  string(doc.session_id, "$.session_id", true);
  u64(doc.revision, "$.revision");
  identity(doc.provider, "$.provider");
  if (doc.compaction !== undefined) {
    const c = doc.compaction;
    if (!isObject(c)) problem("$.compaction", "not a CompactionState object");
    else {
      u64(c.completed_compactions, "$.compaction.completed_compactions");
      u64(c.removed_messages, "$.compaction.removed_messages");
      for (const key of ["removed_tokens", "removed_cost_usd_micros"]) if (key in c) u64(c[key], `$.compaction.${key}`);
      for (const key of ["last_previous_tokens", "last_current_tokens", "last_revision"]) optional(c[key], `$.compaction.${key}`, u64);
    }
  }
  if (doc.metadata !== undefined) {
    if (!isObject(doc.metadata)) problem("$.metadata", "not a string map");
    else for (const [key, value] of Object.entries(doc.metadata)) string(value, `$.metadata.${key}`);
  }
  optional(doc.prompt_cache_key, "$.prompt_cache_key", string);
  if (!Array.isArray(doc.history)) problem("$.history", "not an array of Message");
  else {
    doc.history.forEach((entry, i) => {
      const at = `$.history[${i}]`;
      const tags = isObject(entry) ? Object.keys(entry) : [];
      if (tags.length !== 1) return problem(at, "not an externally tagged Message");
      const body = (entry as Json)[tags[0]!];
      const path = `${at}.${tags[0]}`;
      switch (tags[0]) {
        case "System":
          return string(body, path);
        case "User":
        case "Assistant":
          return blocks(body, path);
        case "EnrichedAssistant":
          return assistant(body, path, false);
        case "AbortedAssistant":
          return assistant(body, path, true);
        case "ToolResult":
          if (!isObject(body)) return problem(path, "not a ToolResult object");
          string(body.id, `${path}.id`);
          if (typeof body.ok !== "boolean") problem(`${path}.ok`, "not a bool");
          return string(body.content, `${path}.content`);
        default:
          return problem(at, `unknown Message variant ${JSON.stringify(tags[0])}`);
      }
    });
  }
  return problems;
}

/** Asserts that Rho's serde types accept `bytes` as a `SessionSnapshot`, as sessionfold writes it. */
export function expectRhoReads(bytes: Uint8Array): void {
  expect(rhoSnapshotProblems(bytes)).toEqual([]);
}
