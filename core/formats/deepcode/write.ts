import { InvalidInputError } from "../../errors.ts";
import type { MessageRecord } from "../../schema/message.ts";
import type { PortableSession } from "../../model/mod.ts";
import type { FormatWriteOptions } from "../omission.ts";
import { DEEPCODE_SCHEMA_VERSION } from "./meta.ts";
import { DEEPCODE_TOOL_EXTENSION } from "./read.ts";

/** Options of {@linkcode writeDeepCodeV1}. */
export interface DeepCodeWriteOptions extends FormatWriteOptions {
  /** The `cwd` to write; default: the session's own (`PortableSession.cwd`, kept from a DeepCode import). */
  readonly cwd?: string;
}

type Block = Record<string, unknown>;

const encoder = new TextEncoder();

/**
 * Writes a session as a DeepCode Session Format v1 stream (`<id>.v1.jsonl`): a
 * `session_meta` header, then one `message` record per message. Text parts become `text`
 * blocks; raw reasoning and reasoning summaries become `thinking` blocks (DeepCode has one
 * kind); tool parts become `tool_use` blocks in the assistant message and, when they have a
 * result, `tool_result` blocks (`is_error` for output-error) in a `user` message right after
 * it, as DeepCode stores them. Files, provider-context parts and tool parts of user messages
 * have no place in v1: they are left out and reported to `onOmitted`. The system prompt,
 * the compaction summary (the full history is written), message status and usage are not
 * part of v1 and are not written.
 *
 * @example
 * ```ts
 * import { Session } from "sessionfold";
 * declare const session: Session;
 *
 * const bytes = writeDeepCodeV1(await session.exportPortable(), { cwd: "/repo" });
 * ```
 * @throws {InvalidInputError} when the session has no id (`sourceId`), no `cwd` (given or
 * kept) or no time at all to write as `created_at`.
 */
export function writeDeepCodeV1(session: PortableSession, options: DeepCodeWriteOptions = {}): Uint8Array {
  const id = session.sourceId;
  if (id === undefined || id === "") throw new InvalidInputError("a DeepCode v1 stream needs the session id (PortableSession.sourceId)");
  const cwd = options.cwd ?? session.cwd;
  if (cwd === undefined) throw new InvalidInputError("a DeepCode v1 stream needs a cwd: pass { cwd } (the session has none of its own)");
  const first = session.messages[0]?.created_at;
  const last = session.messages.at(-1)?.created_at;
  const createdAt = session.createdAt ?? first ?? session.updatedAt;
  if (createdAt === undefined) throw new InvalidInputError("a DeepCode v1 stream needs a created_at: the session has no createdAt and no messages");
  const updatedAt = session.updatedAt ?? last ?? createdAt;
  const model = session.modelLabel ?? session.provider?.model;
  const lines: unknown[] = [
    {
      type: "session_meta",
      schema_version: DEEPCODE_SCHEMA_VERSION,
      id,
      cwd,
      created_at: createdAt,
      updated_at: updatedAt,
      ...(model !== undefined ? { model } : {}),
      ...(session.title !== undefined ? { title: session.title } : {}),
    },
  ];
  session.messages.forEach((message, index) => {
    const { content, results } = blocksOf(message, index, options);
    lines.push(envelope(message.role, content, message.created_at));
    if (results.length > 0) lines.push(envelope("user", results, resultTime(message)));
  });
  return encoder.encode(lines.map((line) => `${JSON.stringify(line)}\n`).join(""));
}

function envelope(role: "user" | "assistant", content: Block[], timestamp: string | undefined): Block {
  return { type: "message", schema_version: DEEPCODE_SCHEMA_VERSION, role, content, ...(timestamp !== undefined ? { timestamp } : {}) };
}

/**
 * The time of the `user` record holding a message's tool results: the one its results
 * were read with (kept on the tool parts by `readDeepCode`), else none (`timestamp` is
 * optional in v1, and the assistant's time would be invented).
 */
function resultTime(message: MessageRecord): string | undefined {
  for (const part of message.parts) {
    const kept = part.type === "tool" ? (part as Record<string, unknown>)[DEEPCODE_TOOL_EXTENSION] : undefined;
    const time = typeof kept === "object" && kept !== null ? (kept as { result_timestamp?: unknown }).result_timestamp : undefined;
    if (typeof time === "string") return time;
  }
  return undefined;
}

/** A tool output as DeepCode types `tool_result.content`: a string (JSON text for structured output). */
function resultText(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value ?? null);
}

function blocksOf(message: MessageRecord, index: number, options: DeepCodeWriteOptions): { content: Block[]; results: Block[] } {
  const content: Block[] = [];
  const results: Block[] = [];
  const omit = (sequence: number, type: string, reason: string): void => options.onOmitted?.({ message: index, part: sequence, type, reason });
  for (const part of message.parts) {
    switch (part.type) {
      case "text":
        content.push({ type: "text", text: part.text });
        break;
      case "reasoning":
      case "reasoning-summary":
        content.push({ type: "thinking", text: part.text });
        break;
      case "tool":
        if (message.role !== "assistant") {
          omit(part.sequence, part.type, "DeepCode v1 has tool_use blocks only in assistant messages");
          break;
        }
        content.push({ type: "tool_use", id: part.tool_call_id, name: part.tool_name, input: part.input ?? null });
        if (part.state === "output-available") results.push({ type: "tool_result", tool_use_id: part.tool_call_id, content: resultText(part.output) });
        if (part.state === "output-error") {
          results.push({ type: "tool_result", tool_use_id: part.tool_call_id, content: resultText(part.error ?? ""), is_error: true });
        }
        break;
      case "file":
        omit(part.sequence, part.type, "DeepCode v1 has no file or image blocks");
        break;
      case "provider-context":
        omit(part.sequence, part.type, "DeepCode v1 has no provider-context blocks");
        break;
    }
  }
  return { content, results };
}
