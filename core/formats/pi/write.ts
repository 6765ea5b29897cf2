import { InvalidInputError } from "../../errors.ts";
import type { MessagePart, MessageRecord, ToolPart } from "../../schema/message.ts";
import type { PortableSession } from "../../model/mod.ts";
import type { FormatWriteOptions } from "../omission.ts";
import { PI_EXTENSION_FIELD, type PiMessageExtension } from "./types.ts";

/** Options of {@linkcode writePi}. */
export interface PiWriteOptions extends FormatWriteOptions {
  /** The header's `cwd`; default: the session's own (`PortableSession.cwd`). */
  readonly cwd?: string;
}

/** The pi session version written (pi's `CURRENT_SESSION_VERSION`). */
export const PI_WRITE_VERSION = 3;

const encoder = new TextEncoder();
const UNKNOWN = "unknown";

/**
 * Writes a session as a pi-coding-agent session file (version 3): a `session` header,
 * then one linear branch of entries. User messages become `user` messages, assistant
 * messages `assistant` messages (text, `thinking` for reasoning and reasoning summaries,
 * `toolCall` for tool parts) each followed by one `toolResult` per answered call; each
 * compaction boundary becomes a `compaction` entry whose summary pi's context shows in
 * place of the messages before it; the title a `session_info` entry. Messages imported
 * from pi are written back as the entry they came from (branch summaries, custom
 * messages, shell runs). Provider context, files in assistant messages and tool or
 * reasoning parts of user messages have no place in pi and are reported to `onOmitted`;
 * the system prompt is not written (pi takes its own).
 *
 * @example
 * ```ts
 * import { Session } from "sessionfold";
 * declare const session: Session;
 *
 * const bytes = writePi(await session.exportPortable(), { cwd: "/repo" });
 * ```
 * @throws {InvalidInputError} when there is no cwd (given or kept) or no time to stamp the header.
 */
export function writePi(session: PortableSession, options: PiWriteOptions = {}): Uint8Array {
  const cwd = options.cwd ?? session.cwd;
  if (cwd === undefined) throw new InvalidInputError("a pi session needs a cwd: pass { cwd } (the session has none of its own)");
  const createdAt = session.createdAt ?? session.messages[0]?.created_at ?? session.updatedAt;
  if (createdAt === undefined) throw new InvalidInputError("a pi session needs a timestamp: the session has no createdAt and no messages");
  const writer = new EntryWriter(createdAt);
  const lines: unknown[] = [{
    type: "session",
    version: PI_WRITE_VERSION,
    id: session.sourceId ?? `sessionfold-${Date.parse(createdAt)}`,
    timestamp: createdAt,
    cwd,
  }];
  const boundaries = new Map((session.segments ?? []).map((segment) => [segment.through, segment]));
  if (session.title !== undefined) lines.push(writer.entry("session_info", createdAt, { name: session.title }));
  session.messages.forEach((message, index) => {
    for (const entry of messageEntries(message, index, session, writer, options)) lines.push(entry);
    const boundary = boundaries.get(index + 1);
    if (boundary) {
      // firstKeptEntryId names the entry after the compaction: pi's context is then the
      // summary and what follows, the messages before stay in the file.
      const at = boundary.createdAt ?? message.created_at;
      lines.push(writer.entry("compaction", at, { summary: boundary.summary, firstKeptEntryId: writer.peekNextId(1), tokensBefore: 0 }));
    }
  });
  return encoder.encode(lines.map((line) => `${JSON.stringify(line)}\n`).join(""));
}

/** Hands out pi-style 8-hex entry ids, each entry the child of the one before. */
class EntryWriter {
  #count = 0;
  #parent: string | null = null;
  readonly #fallbackTime: string;

  constructor(fallbackTime: string) {
    this.#fallbackTime = fallbackTime;
  }

  /** The id the entry `ahead` places after the next one will get. */
  peekNextId(ahead: number): string {
    return (this.#count + 1 + ahead).toString(16).padStart(8, "0");
  }

  entry(type: string, timestamp: string | undefined, fields: Record<string, unknown>): Record<string, unknown> {
    this.#count += 1;
    const id = this.#count.toString(16).padStart(8, "0");
    const entry = { type, id, parentId: this.#parent, timestamp: timestamp ?? this.#fallbackTime, ...fields };
    this.#parent = id;
    return entry;
  }
}

function extensionOf(value: object): PiMessageExtension | undefined {
  const ext = (value as Record<string, unknown>)[PI_EXTENSION_FIELD];
  return ext !== null && typeof ext === "object" && typeof (ext as { entry?: unknown }).entry === "string" ? (ext as PiMessageExtension) : undefined;
}

function partExtension(part: MessagePart): Record<string, unknown> {
  const ext = (part as Record<string, unknown>)[PI_EXTENSION_FIELD];
  return ext !== null && typeof ext === "object" ? (ext as Record<string, unknown>) : {};
}

function messageEntries(
  message: MessageRecord,
  index: number,
  session: PortableSession,
  writer: EntryWriter,
  options: PiWriteOptions,
): Record<string, unknown>[] {
  const time = message.created_at;
  const ms = Date.parse(time);
  const omit = (part: MessagePart, reason: string) => options.onOmitted?.({ message: index, part: part.sequence, type: part.type, reason });
  const ext = extensionOf(message);
  if (message.role === "user") {
    if (ext?.entry === "branch_summary" && typeof ext.summary === "string") {
      const { entry: _e, ...fields } = ext;
      return [writer.entry("branch_summary", time, fields)];
    }
    if ((ext?.entry === "bashExecution" || ext?.entry === "custom") && ext.message !== null && typeof ext.message === "object") {
      return [writer.entry("message", time, { message: ext.message })];
    }
    const blocks = userContent(message.parts, omit);
    const single = blocks.length === 1 && blocks[0]!.type === "text" && blocks[0]!.textSignature === undefined;
    const content = ext?.stringContent === true && single ? blocks[0]!.text : blocks;
    if (ext?.entry === "custom_message") {
      const { entry: _e, ...fields } = ext;
      return [writer.entry("custom_message", time, { ...fields, content })];
    }
    return [writer.entry("message", time, { message: { role: "user", content, timestamp: ms } })];
  }
  const provider = message.provider ?? session.provider ?? { provider: UNKNOWN, api: UNKNOWN, model: UNKNOWN };
  const content: Record<string, unknown>[] = [];
  const answered: ToolPart[] = [];
  for (const part of message.parts) {
    const partExt = partExtension(part);
    switch (part.type) {
      case "text":
        content.push({ type: "text", text: part.text, ...(typeof partExt.textSignature === "string" ? { textSignature: partExt.textSignature } : {}) });
        break;
      case "reasoning":
      case "reasoning-summary":
        content.push({
          type: "thinking",
          thinking: part.text,
          ...(typeof partExt.thinkingSignature === "string" ? { thinkingSignature: partExt.thinkingSignature } : {}),
          ...(typeof partExt.redacted === "boolean" ? { redacted: partExt.redacted } : {}),
        });
        break;
      case "tool":
        content.push({
          type: "toolCall",
          id: part.tool_call_id,
          name: part.tool_name,
          arguments: part.input ?? {},
          ...(typeof partExt.thoughtSignature === "string" ? { thoughtSignature: partExt.thoughtSignature } : {}),
        });
        if (part.state !== "input-available") answered.push(part);
        break;
      case "file":
        omit(part, "pi assistant messages hold no files");
        break;
      case "provider-context":
        omit(part, "pi has no place for provider-native context");
        break;
    }
  }
  const kept = ext?.entry === "assistant" && ext.message !== null && typeof ext.message === "object" ? (ext.message as Record<string, unknown>) : {};
  const stopReason = kept.stopReason ??
    (message.status === "failed"
      ? "error"
      : message.status === "stopped"
      ? "aborted"
      : answered.length > 0 || message.parts.some((p) => p.type === "tool")
      ? "toolUse"
      : "stop");
  const usage = kept.usage ?? piUsage(message);
  const entries = [
    writer.entry("message", time, {
      message: { ...kept, role: "assistant", content, api: provider.api, provider: provider.provider, model: provider.model, usage, stopReason, timestamp: ms },
    }),
  ];
  for (const part of answered) entries.push(writer.entry("message", resultTime(part) ?? time, { message: toolResult(part, resultTime(part) ?? time) }));
  return entries;
}

function userContent(parts: readonly MessagePart[], omit: (part: MessagePart, reason: string) => void): Record<string, unknown>[] {
  const content: Record<string, unknown>[] = [];
  for (const part of parts) {
    if (part.type === "text") {
      content.push({
        type: "text",
        text: part.text,
        ...(typeof partExtension(part).textSignature === "string" ? { textSignature: partExtension(part).textSignature } : {}),
      });
    } else if (part.type === "file" && part.data !== undefined && part.media_type.startsWith("image/")) {
      content.push({ type: "image", data: part.data, mimeType: part.media_type });
    } else omit(part, part.type === "file" ? "pi user messages hold only inline images" : `pi user messages hold no ${part.type} parts`);
  }
  return content;
}

function piUsage(message: MessageRecord): Record<string, unknown> {
  const usage = message.usage;
  const cost = usage?.cost_usd_micros !== undefined ? usage.cost_usd_micros / 1e6 : 0;
  return {
    input: usage?.input_tokens ?? 0,
    output: usage?.output_tokens ?? 0,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: usage?.total_tokens ?? (usage ? usage.input_tokens + usage.output_tokens : 0),
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: cost },
  };
}

function resultExtension(part: ToolPart): Record<string, unknown> {
  const result = partExtension(part).result;
  return result !== null && typeof result === "object" ? (result as Record<string, unknown>) : {};
}

function resultTime(part: ToolPart): string | undefined {
  const time = resultExtension(part).timestamp;
  return typeof time === "string" ? time : undefined;
}

function toolResult(part: ToolPart, time: string): Record<string, unknown> {
  const ext = resultExtension(part);
  const isError = part.state === "output-error";
  const value = isError ? part.error : part.output;
  const content = isError && Array.isArray(ext.content) ? ext.content : resultContent(value);
  return {
    role: "toolResult",
    toolCallId: part.tool_call_id,
    toolName: typeof ext.toolName === "string" ? ext.toolName : part.tool_name,
    content,
    ...(ext.details !== undefined ? { details: ext.details } : {}),
    isError,
    timestamp: Date.parse(time),
  };
}

/** A tool's output as pi content blocks: text as one text block, pi's own blocks as they were, anything else as JSON text. */
function resultContent(value: unknown): unknown[] {
  if (typeof value === "string") return [{ type: "text", text: value }];
  if (Array.isArray(value) && value.every(isPiBlock)) return value;
  return [{ type: "text", text: value === undefined ? "" : JSON.stringify(value) }];
}

function isPiBlock(value: unknown): boolean {
  if (value === null || typeof value !== "object") return false;
  const block = value as Record<string, unknown>;
  return (block.type === "text" && typeof block.text === "string") ||
    (block.type === "image" && typeof block.data === "string" && typeof block.mimeType === "string");
}
