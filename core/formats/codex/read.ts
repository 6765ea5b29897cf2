import type { Diagnostic } from "../../jsonl/diagnostic.ts";
import { jsonDepthOver, MAX_JSON_DEPTH } from "../../schema/json-depth.ts";
import type { MessagePart, ProviderIdentity } from "../../schema/message.ts";
import type { PortableSegment, PortableSession } from "../../model/mod.ts";
import { formatError } from "../errors.ts";
import { type JsonlSource, readJsonlStream } from "../jsonl-lines.ts";
import type { Value } from "../shape.ts";
import { isoTimestamp } from "../timestamps.ts";
import { ToolCallJoiner } from "../tool-joiner.ts";
import type { MutableMessage, MutableToolPart } from "../mutable.ts";
import { contentParts, type LooseCodexPart, parseFunctionOutput } from "./items.ts";

/** The extension field on messages whose Codex role has no sessionfold equivalent (`developer`, `system`). */
export const CODEX_EXTENSION_FIELD = "codex";

/** What {@linkcode readCodex} returns. */
export interface CodexReadResult {
  readonly session: PortableSession;
  /** `truncated_tail` when the final line was an interrupted append. */
  readonly diagnostics: Diagnostic[];
}

const LINE_TYPES = '"session_meta", "response_item", "compacted", "turn_context" or "event_msg"';
const ITEM_TYPES =
  '"message", "reasoning", "function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output", "local_shell_call", "web_search_call", "compaction" or "ghost_snapshot"';

/**
 * Reads an OpenAI Codex CLI rollout (`~/.codex/sessions/YYYY/MM/DD/rollout-…-<uuid>.jsonl`):
 * one `{timestamp, type, payload}` line per `RolloutItem`. Streaming: only the line being
 * read is held.
 *
 * The model history is the `response_item` lines: user messages become user messages, and
 * everything the model produced until the next user message (output text, reasoning,
 * function / custom / shell / web-search calls, each joined to its output) one assistant
 * message. Reasoning summaries and text are kept; encrypted reasoning is kept as a
 * `provider-context` part tagged with the session's provider, the Responses API and the
 * turn's model, so only that provider is given it back. Each `compacted` line closes a
 * segment with its summary. `event_msg` lines (the UI's copy of the same turns) and
 * `ghost_snapshot` items (the harness's undo points) are validated and not imported.
 *
 * @example
 * ```ts
 * import { Sessions } from "sessionfold";
 * declare const bytes: Uint8Array;
 * declare const sessions: Sessions;
 *
 * const { session } = await readCodex(bytes, "rollout-2025-09-10T12-00-00-5f2c.jsonl");
 * await sessions.importPortable("a1/w1/from-codex", session);
 * ```
 * @throws {FormatError} at the file and line of the first invalid record, an output with
 * no earlier call among them, or a record type this reader does not know.
 */
export async function readCodex(source: JsonlSource, file: string): Promise<CodexReadResult> {
  const reader = new CodexAssembler();
  const { diagnostics, lines } = await readJsonlStream(source, "codex", file, (record, line) => reader.apply(record, line));
  if (reader.meta === undefined) {
    const found = diagnostics[0] ? "only an interrupted (unterminated, invalid) first line" : lines === 0 ? "an empty file" : "only blank lines";
    throw formatError({ format: "codex", file, line: diagnostics[0]?.line ?? 1 }, found, "a session_meta line");
  }
  const meta = reader.meta;
  const session: PortableSession = {
    sourceId: meta.id,
    createdAt: meta.timestamp,
    updatedAt: reader.lastTimestamp,
    ...(reader.model !== undefined ? { modelLabel: reader.model } : {}),
    ...(meta.instructions !== undefined ? { system: meta.instructions } : {}),
    cwd: meta.cwd,
    messages: reader.messages,
    ...(reader.segments.length > 0 ? { segments: reader.segments, summary: reader.segments.at(-1)!.summary } : {}),
    ...(reader.compactions > 0
      ? { compaction: { completed: reader.compactions, removed_messages: reader.segments.at(-1)?.through ?? 0, removed_tokens_estimate: 0 } }
      : {}),
    format: "codex-rollout",
  };
  return { session, diagnostics };
}

interface CodexMeta {
  readonly id: string;
  readonly timestamp: string;
  readonly cwd: string;
  readonly provider: string;
  readonly instructions?: string;
}

/** Folds rollout lines into messages; every line is validated completely before it changes anything. */
class CodexAssembler {
  meta: CodexMeta | undefined;
  model: string | undefined;
  lastTimestamp = "";
  compactions = 0;
  readonly messages: MutableMessage[] = [];
  readonly segments: PortableSegment[] = [];
  readonly #joiner = new ToolCallJoiner<MutableToolPart>("call");
  /** The assistant message the current turn adds to, if any. */
  #open: MutableMessage | undefined;

  apply(record: Value, line: number): void {
    record.object("a rollout line object");
    const timestamp = isoTimestamp(record.field("timestamp"));
    const type = record.field("type");
    const payload = record.field("payload");
    if (this.meta === undefined && type.raw !== "session_meta") type.fail('"session_meta" (the first line of a rollout)');
    switch (type.raw) {
      case "session_meta": {
        const meta = parseMeta(payload.object("the session meta object"));
        this.meta ??= meta;
        break;
      }
      case "turn_context": {
        const model = payload.object("the turn context object").field("model").optional()?.string({ nonEmpty: true });
        if (model !== undefined) this.model = model;
        break;
      }
      case "event_msg":
        payload.object("an event object").field("type").string({ nonEmpty: true });
        break;
      case "compacted": {
        payload.object("the compacted item object");
        const summary = payload.field("message").string();
        const replacement = payload.field("replacement_history").optional();
        replacement?.array("an array of response items");
        this.compactions += 1;
        this.#open = undefined;
        if (summary.length > 0 && this.messages.length > (this.segments.at(-1)?.through ?? 0)) {
          this.segments.push({ through: this.messages.length, summary, createdAt: timestamp });
        }
        break;
      }
      case "response_item":
        this.#item(payload.object("a response item object"), line, timestamp);
        break;
      default:
        type.fail(LINE_TYPES);
    }
    this.lastTimestamp = timestamp;
  }

  #identity(): ProviderIdentity {
    return { provider: this.meta!.provider, api: "responses", model: this.model ?? "unknown" };
  }

  #item(item: Value, line: number, timestamp: string): void {
    const type = item.field("type");
    switch (type.raw) {
      case "message": {
        const role = item.field("role");
        if (role.raw === "assistant") return this.#assistant(line, timestamp, contentParts(item.field("content")));
        if (role.raw !== "user" && role.raw !== "developer" && role.raw !== "system") return role.fail('"user", "assistant", "developer" or "system"');
        const parts = contentParts(item.field("content"));
        this.#open = undefined;
        this.messages.push({
          record_type: "message",
          sequence: this.messages.length + 1,
          message_id: `m_codex_${line}`,
          role: "user",
          created_at: timestamp,
          parts: numbered(parts, 1),
          ...(role.raw !== "user" ? { [CODEX_EXTENSION_FIELD]: { role: role.raw } } : {}),
        });
        return;
      }
      case "reasoning": {
        const parts: LooseCodexPart[] = [];
        for (const s of item.field("summary").array("an array of summary_text items")) {
          parts.push({ type: "reasoning-summary", text: textOf(s, ["summary_text"]) });
        }
        for (const c of item.field("content").optional()?.array("an array of reasoning_text items") ?? []) {
          parts.push({ type: "reasoning", text: textOf(c, ["reasoning_text", "text"]) });
        }
        const encrypted = item.field("encrypted_content").optional()?.string();
        if (encrypted !== undefined) parts.push({ type: "provider-context", ...this.#identity(), kind: "reasoning", data: { encrypted_content: encrypted } });
        return this.#assistant(line, timestamp, parts);
      }
      case "function_call": {
        const argsField = item.field("arguments");
        const args = parseArguments(argsField.string());
        // JSON text inside the line: its depth is measured here, where the line is known.
        if (jsonDepthOver(args) !== undefined) {
          argsField.fail(`arguments nested at most ${MAX_JSON_DEPTH} levels (MAX_JSON_DEPTH)`, `arguments nested deeper than ${MAX_JSON_DEPTH} levels`);
        }
        return this.#call(line, timestamp, item.field("call_id").string({ nonEmpty: true }), item.field("name").string({ nonEmpty: true }), args);
      }
      case "custom_tool_call":
        return this.#call(
          line,
          timestamp,
          item.field("call_id").string({ nonEmpty: true }),
          item.field("name").string({ nonEmpty: true }),
          item.field("input").string(),
        );
      case "local_shell_call": {
        const action = item.field("action").object("the shell action object");
        const id = item.field("call_id").optional()?.string({ nonEmpty: true }) ?? item.field("id").optional()?.string({ nonEmpty: true }) ??
          `local_shell_${line}`;
        return this.#call(line, timestamp, id, "local_shell", action.raw);
      }
      case "web_search_call": {
        const action = item.field("action").object("the web search action object");
        const status = item.field("status").optional()?.string() ?? null;
        const part: LooseCodexPart = {
          type: "tool",
          tool_call_id: `web_search_${line}`,
          tool_name: "web_search",
          state: "output-available",
          input: action.raw,
          output: { status },
        };
        return this.#assistant(line, timestamp, [part]);
      }
      case "function_call_output":
      case "custom_tool_call_output": {
        const idField = item.field("call_id");
        const id = idField.string({ nonEmpty: true });
        const result = type.raw === "function_call_output" ? parseFunctionOutput(item.field("output")) : { ok: true, value: item.field("output").string() };
        const [slot] = this.#joiner.take([{ id, at: idField }]);
        if (result.ok) {
          slot!.state = "output-available";
          slot!.output = result.value;
        } else {
          slot!.state = "output-error";
          slot!.error = typeof result.value === "string" ? result.value : JSON.stringify(result.value);
        }
        return;
      }
      case "compaction":
      case "compaction_summary": {
        const encrypted = item.field("encrypted_content").string();
        return this.#assistant(line, timestamp, [{
          type: "provider-context",
          ...this.#identity(),
          kind: "compaction",
          data: { encrypted_content: encrypted },
        }]);
      }
      case "ghost_snapshot":
        item.field("ghost_commit").object("the ghost commit object");
        return;
      default:
        return type.fail(ITEM_TYPES);
    }
  }

  #call(line: number, timestamp: string, id: string, name: string, input: unknown): void {
    const part: LooseCodexPart = { type: "tool", tool_call_id: id, tool_name: name, state: "input-available", input };
    this.#assistant(line, timestamp, [part]);
  }

  /** Adds parts to the turn's assistant message (opened by the first model output after a user message). */
  #assistant(line: number, timestamp: string, loose: LooseCodexPart[]): void {
    let message = this.#open;
    if (message === undefined) {
      message = {
        record_type: "message",
        sequence: this.messages.length + 1,
        message_id: `m_codex_${line}`,
        role: "assistant",
        created_at: timestamp,
        status: "completed",
        parts: [],
      };
      if (this.model !== undefined) message.provider = this.#identity();
      this.messages.push(message);
      this.#open = message;
    }
    const parts = numbered(loose, message.parts.length + 1);
    for (const part of parts) {
      message.parts.push(part);
      if (part.type === "tool" && part.state === "input-available") this.#joiner.call(part.tool_call_id, part as MutableToolPart);
    }
  }
}

function numbered(parts: readonly LooseCodexPart[], first: number): MessagePart[] {
  return parts.map((part, i) => ({ ...part, sequence: first + i }) as MessagePart);
}

function parseMeta(payload: Value): CodexMeta {
  const base = payload.field("base_instructions").optional();
  const instructions = base !== undefined
    ? base.object("the base instructions object").field("text").string()
    : payload.field("instructions").optional()?.string();
  return {
    id: payload.field("id").string({ nonEmpty: true }),
    timestamp: isoTimestamp(payload.field("timestamp")),
    cwd: payload.field("cwd").string(),
    provider: payload.field("model_provider").optional()?.string({ nonEmpty: true }) ?? "openai",
    ...(instructions !== undefined ? { instructions } : {}),
  };
}

function textOf(value: Value, types: readonly string[]): string {
  value.object(`an object whose type is ${types.map((t) => JSON.stringify(t)).join(" or ")}`);
  const type = value.field("type");
  if (!types.includes(type.raw as string)) type.fail(types.map((t) => JSON.stringify(t)).join(" or "));
  return value.field("text").string();
}

/** Function arguments are JSON text (as the Responses API returns them): parsed when they parse, else kept as the text. */
function parseArguments(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
