import type { Diagnostic } from "../../jsonl/diagnostic.ts";
import type { MessagePart, MessageRecord, Usage } from "../../schema/message.ts";
import type { PortableSegment, PortableSession } from "../../model/mod.ts";
import { formatError } from "../errors.ts";
import { type JsonlSource, readJsonlStream } from "../jsonl-lines.ts";
import type { Value } from "../shape.ts";
import { isoTimestamp } from "../timestamps.ts";
import { ToolCallJoiner } from "../tool-joiner.ts";
import type { MutableMessage, MutableToolPart } from "../mutable.ts";
import { assistantBlocks, type ClaudeToolResult, type LooseClaudePart, userBlocks } from "./blocks.ts";

/** The extension field for Claude Code facts with no sessionfold place (`isMeta` user messages). */
export const CLAUDE_CODE_EXTENSION_FIELD = "claude_code";

/** What {@linkcode readClaudeCode} returns. */
export interface ClaudeCodeReadResult {
  readonly session: PortableSession;
  /** `truncated_tail` when the final line was an interrupted append. */
  readonly diagnostics: Diagnostic[];
  /** Records not on the main chain (sidechains, abandoned branches), not imported. */
  readonly offChainRecords: number;
}

/** Record types that carry no conversation (file snapshots for undo, the input queue). */
const SKIPPED_TYPES = new Set(["file-history-snapshot", "queue-operation"]);
const RECORD_TYPES = '"user", "assistant", "system", "summary", "file-history-snapshot" or "queue-operation"';

/** One validated chain record, kept until the main chain is known. */
type ChainRecord =
  & { readonly uuid: string; readonly parent: string | null; readonly line: number; readonly timestamp: string; readonly sidechain: boolean }
  & (
    | {
      readonly kind: "user";
      readonly parts: LooseClaudePart[];
      readonly results: ClaudeToolResult[];
      readonly meta: boolean;
      readonly compactSummary: boolean;
    }
    | { readonly kind: "assistant"; readonly messageId: string | undefined; readonly parts: LooseClaudePart[]; readonly model: string; readonly usage?: Usage }
    | { readonly kind: "boundary" }
    | { readonly kind: "system" }
  );

/**
 * Reads a Claude Code transcript (`~/.claude/projects/<project>/<session>.jsonl`): records
 * linked by `uuid` / `parentUuid`. Streaming: only the line being read is held, plus the
 * validated records.
 *
 * The main chain — from the last record that is not a sidechain back to the root, across
 * `compact_boundary` records by their `logicalParentUuid` — is imported. Consecutive
 * assistant records of one API message (`message.id`) are one assistant message; a
 * `tool_result` is joined to its `tool_use`; a compaction (`compact_boundary` and the
 * `isCompactSummary` user message after it) closes a segment with that summary. `summary`
 * records give the title. Sidechains (subagent runs) are not imported.
 *
 * @example
 * ```ts
 * import { Sessions } from "sessionfold";
 * declare const bytes: Uint8Array;
 * declare const sessions: Sessions;
 *
 * const { session } = await readClaudeCode(bytes, "4f9a….jsonl");
 * await sessions.importPortable("a1/w1/from-claude", session);
 * ```
 * @throws {FormatError} at the file and line of the first invalid record, a `parentUuid`
 * that names no earlier record, or a `tool_result` whose `tool_use` is not on the chain.
 */
export async function readClaudeCode(source: JsonlSource, file: string): Promise<ClaudeCodeReadResult> {
  const byUuid = new Map<string, ChainRecord>();
  let leaf: ChainRecord | undefined;
  let first: { sessionId: string; cwd?: string; timestamp: string } | undefined;
  let lastTimestamp: string | undefined;
  const titles: { leaf: string; summary: string }[] = [];
  // tool_use ids seen anywhere: a result naming none is refused at its own line (the
  // chain-exact join comes once the main chain is known).
  const callIds = new Set<string>();
  const { diagnostics, lines } = await readJsonlStream(source, "claude-code", file, (record, line) => {
    record.object("a transcript record object");
    const type = record.field("type");
    if (type.raw === "summary") {
      titles.push({ summary: record.field("summary").string(), leaf: record.field("leafUuid").optional()?.string() ?? "" });
      return;
    }
    if (typeof type.raw === "string" && SKIPPED_TYPES.has(type.raw)) return;
    if (type.raw !== "user" && type.raw !== "assistant" && type.raw !== "system") return type.fail(RECORD_TYPES);
    const parsed = parseChainRecord(record, type.raw, line);
    if (byUuid.has(parsed.uuid)) {
      record.field("uuid").fail(
        "a uuid no earlier record has",
        `${JSON.stringify(parsed.uuid)}, the uuid of the record on line ${byUuid.get(parsed.uuid)!.line}`,
      );
    }
    if (parsed.parent !== null && !byUuid.has(parsed.parent)) {
      (record.field("parentUuid").absent ? record.field("logicalParentUuid") : record.field("parentUuid")).fail("the uuid of an earlier record, or null");
    }
    if (parsed.kind === "user") {
      for (const r of parsed.results) {
        if (!callIds.has(r.id)) r.at.fail("the id of an earlier tool_use", `${JSON.stringify(r.id)}, but no earlier tool_use has that id`);
      }
    }
    const sessionId = record.field("sessionId").string({ nonEmpty: true });
    const cwd = record.field("cwd").optional()?.string();
    byUuid.set(parsed.uuid, parsed);
    if (parsed.kind === "assistant") { for (const part of parsed.parts) if (part.type === "tool") callIds.add(part.tool_call_id as string); }
    first ??= { sessionId, ...(cwd !== undefined ? { cwd } : {}), timestamp: parsed.timestamp };
    lastTimestamp = parsed.timestamp;
    if (!parsed.sidechain) leaf = parsed;
  });
  if (first === undefined) {
    const found = diagnostics[0] ? "only an interrupted (unterminated, invalid) line" : lines === 0 ? "an empty file" : "no user, assistant or system record";
    throw formatError({ format: "claude-code", file, line: diagnostics[0]?.line ?? Math.max(1, lines) }, found, "a Claude Code transcript");
  }
  const chain: ChainRecord[] = [];
  for (let at = leaf; at !== undefined; at = at.parent === null ? undefined : byUuid.get(at.parent)) chain.push(at);
  chain.reverse();
  const onChain = new Set(chain.map((r) => r.uuid));
  const title = [...titles].reverse().find((t) => onChain.has(t.leaf)) ?? titles.at(-1);
  const { messages, segments } = assemble(chain);
  const session: PortableSession = {
    sourceId: first.sessionId,
    ...(title !== undefined ? { title: title.summary } : {}),
    createdAt: first.timestamp,
    updatedAt: lastTimestamp ?? first.timestamp,
    ...(messages.findLast((m) => m.provider)?.provider ? { modelLabel: messages.findLast((m) => m.provider)!.provider!.model } : {}),
    ...(first.cwd !== undefined ? { cwd: first.cwd } : {}),
    messages,
    ...(segments.length > 0
      ? {
        segments,
        summary: segments.at(-1)!.summary,
        compaction: { completed: segments.length, removed_messages: segments.at(-1)!.through, removed_tokens_estimate: 0 },
      }
      : {}),
    format: "claude-code",
  };
  return { session, diagnostics, offChainRecords: byUuid.size - chain.length };
}

function parseChainRecord(record: Value, type: "user" | "assistant" | "system", line: number): ChainRecord {
  const uuid = record.field("uuid").string({ nonEmpty: true });
  const parentField = record.field("parentUuid");
  const logical = record.field("logicalParentUuid").optional()?.string({ nonEmpty: true });
  const parentRaw = parentField.absent ? null : parentField.string({ nonEmpty: true });
  const subtype = record.field("subtype").raw;
  const boundary = type === "system" && subtype === "compact_boundary";
  // A compact boundary starts a new chain (parentUuid null) but names the one it continues.
  const parent = parentRaw ?? (boundary ? (logical ?? null) : null);
  const base = {
    uuid,
    parent,
    line,
    timestamp: isoTimestamp(record.field("timestamp")),
    sidechain: record.field("isSidechain").optional()?.boolean() ?? false,
  };
  if (type === "system") return { ...base, kind: boundary ? "boundary" : "system" };
  const message = record.field("message").object("the message object");
  const role = message.field("role");
  if (role.raw !== type) role.fail(JSON.stringify(type));
  if (type === "user") {
    const { parts, results } = userBlocks(message.field("content"));
    return {
      ...base,
      kind: "user",
      parts,
      results,
      meta: record.field("isMeta").optional()?.boolean() ?? false,
      compactSummary: record.field("isCompactSummary").optional()?.boolean() ?? false,
    };
  }
  const model = message.field("model").string({ nonEmpty: true });
  const parts = assistantBlocks(message.field("content"), { provider: "anthropic", api: "messages", model });
  const usage = parseUsage(message.field("usage"));
  return { ...base, kind: "assistant", messageId: message.field("id").optional()?.string(), parts, model, ...(usage ? { usage } : {}) };
}

function parseUsage(value: Value): Usage | undefined {
  const usage = value.optional()?.object("the usage object");
  if (usage === undefined) return undefined;
  const input = usage.field("input_tokens").count();
  const output = usage.field("output_tokens").count();
  const cacheRead = usage.field("cache_read_input_tokens").optional()?.count();
  const cacheWrite = usage.field("cache_creation_input_tokens").optional()?.count();
  return {
    input_tokens: input,
    output_tokens: output,
    ...(cacheRead !== undefined ? { cache_read_tokens: cacheRead } : {}),
    ...(cacheWrite !== undefined ? { cache_write_tokens: cacheWrite } : {}),
  };
}

/** The main chain as messages: one assistant message per API message, results joined, compactions as boundaries. */
function assemble(chain: readonly ChainRecord[]): { messages: MessageRecord[]; segments: PortableSegment[] } {
  const messages: MutableMessage[] = [];
  const segments: PortableSegment[] = [];
  const joiner = new ToolCallJoiner<MutableToolPart>("tool_use");
  let open: { message: MutableMessage; id: string | undefined } | undefined;
  let boundaryAt: number | undefined;
  const push = (message: MutableMessage, loose: readonly LooseClaudePart[]) => {
    for (const part of loose) {
      const numbered = { ...part, sequence: message.parts.length + 1 } as MessagePart;
      message.parts.push(numbered);
      if (numbered.type === "tool") joiner.call(numbered.tool_call_id, numbered as MutableToolPart);
    }
  };
  for (const record of chain) {
    if (record.kind === "boundary") {
      boundaryAt = messages.length;
      open = undefined;
      continue;
    }
    if (record.kind === "system") continue;
    if (record.kind === "assistant") {
      if (open === undefined || record.messageId === undefined || open.id !== record.messageId) {
        const message: MutableMessage = {
          record_type: "message",
          sequence: messages.length + 1,
          message_id: `m_claude_${record.line}`,
          role: "assistant",
          created_at: record.timestamp,
          status: "completed",
          provider: { provider: "anthropic", api: "messages", model: record.model },
          parts: [],
        };
        messages.push(message);
        open = { message, id: record.messageId };
      }
      push(open.message, record.parts);
      if (record.usage) open.message.usage = record.usage;
      continue;
    }
    const slots = joiner.take(record.results.map((r) => ({ id: r.id, at: r.at })));
    record.results.forEach((result, i) => settle(slots[i]!, result));
    if (record.compactSummary && boundaryAt !== undefined) {
      const summary = record.parts.map((p) => (p.type === "text" ? String(p.text) : "")).join("\n");
      if (boundaryAt > (segments.at(-1)?.through ?? 0) && summary.length > 0) segments.push({ through: boundaryAt, summary, createdAt: record.timestamp });
      boundaryAt = undefined;
      continue;
    }
    if (record.parts.length === 0) continue;
    open = undefined;
    const message: MutableMessage = {
      record_type: "message",
      sequence: messages.length + 1,
      message_id: `m_claude_${record.line}`,
      role: "user",
      created_at: record.timestamp,
      parts: [],
    };
    if (record.meta) (message as Record<string, unknown>)[CLAUDE_CODE_EXTENSION_FIELD] = { isMeta: true };
    push(message, record.parts);
    messages.push(message);
  }
  return { messages, segments };
}

function settle(part: MutableToolPart, result: ClaudeToolResult): void {
  if (result.isError) {
    part.state = "output-error";
    part.error = typeof result.content === "string" ? result.content : textOfBlocks(result.content);
  } else {
    part.state = "output-available";
    part.output = result.content;
  }
}

function textOfBlocks(content: unknown): string {
  if (!Array.isArray(content)) return JSON.stringify(content);
  return content.map((
    b,
  ) => (b && typeof b === "object" && (b as { type?: unknown }).type === "text" ? String((b as { text: unknown }).text) : JSON.stringify(b))).join("\n");
}
