import type { MessagePart, MessageRecord } from "../../schema/message.ts";
import type { PortableSession } from "../../model/mod.ts";
import { decodeUtf8Strict } from "../json-text.ts";
import { readJsonlRecords } from "../jsonl-lines.ts";
import { formatError } from "../errors.ts";
import type { Value } from "../shape.ts";
import { flexibleTimestamp, isoTimestamp } from "../timestamps.ts";
import { ToolCallJoiner } from "../tool-joiner.ts";
import type { MutableToolPart } from "../mutable.ts";
import { type DeepCodeBlock, parseDeepCodeContent } from "./blocks.ts";
import { checkSchemaVersion, type DeepCodeMeta, parseCoreMeta, parseDesktopHeader, parseV1Header } from "./meta.ts";
import type { DeepCodeInput, DeepCodeLayout, DeepCodeReadResult } from "./types.ts";

type Role = "user" | "assistant" | "tool";

/**
 * Reads a DeepCode session — the canonical v1 stream or a legacy `core-v0` / `desktop-v0`
 * one — into the format-neutral shape `Sessions.importPortable` takes.
 *
 * Reading rules (seed 003): an invalid final line without a newline is an interrupted
 * append, ignored and reported as a `truncated_tail` diagnostic; an invalid line anywhere
 * else refuses the import with its line number. `text` blocks become text parts, `thinking`
 * reasoning parts, `tool_use` tool parts; a later `tool_result` (in a user or `tool` message)
 * is joined to its `tool_use` (output-available, or output-error with `is_error`), and a
 * message that only carried tool results is absorbed. The bytes are never changed.
 *
 * @example
 * ```ts
 * import { Sessions } from "sessionfold";
 * declare const sessions: Sessions;
 *
 * declare const bytes: Uint8Array;
 * const { session, diagnostics } = readDeepCode({ file: "abc.v1.jsonl", bytes });
 * await sessions.importPortable("a1/w1/abc", session);
 * ```
 * @throws {FormatError} naming the file and 1-based line of the first invalid record (a
 * `tool_result` without an earlier `tool_use` among them), or of the header when it is missing.
 * @throws {UnsupportedSchemaError} when a v1 record's `schema_version` is not 1.
 */
export function readDeepCode(input: DeepCodeInput): DeepCodeReadResult {
  const { file, bytes } = input;
  const layout = input.layout ?? (file.endsWith(".v1.jsonl") ? "v1" : (classifyDeepCodeStream(bytes, input.metaBytes !== undefined) ?? "v1"));
  let meta: DeepCodeMeta | undefined;
  if (layout === "core-v0") {
    if (input.metaBytes === undefined) {
      throw formatError({ format: "deepcode", file: input.metaFile ?? metaFileFor(file), line: null }, "no meta.json", "the core-v0 <id>.meta.json beside the stream");
    }
    meta = parseCoreMeta(input.metaBytes, input.metaFile ?? metaFileFor(file));
  }
  const reader = new MessageAssembler(layout);
  if (meta !== undefined) reader.lastTimestamp = meta.createdAt;
  const { diagnostics, lines } = readJsonlRecords(bytes, "deepcode", file, (record, line) => {
    if (meta === undefined) {
      meta = layout === "v1" ? parseV1Header(record) : parseDesktopHeader(record);
      reader.lastTimestamp = meta.createdAt;
      return;
    }
    reader.apply(record, line);
  });
  if (meta === undefined) {
    const torn = diagnostics[0];
    const found = torn ? "only an interrupted (unterminated, invalid) first line" : lines === 0 ? "an empty file" : "only blank lines";
    throw formatError({ format: "deepcode", file, line: torn?.line ?? 1 }, found, "a session_meta header");
  }
  const session: PortableSession = {
    sourceId: meta.id,
    ...(meta.title !== undefined ? { title: meta.title } : {}),
    createdAt: meta.createdAt,
    updatedAt: meta.updatedAt,
    ...(meta.model !== undefined ? { modelLabel: meta.model } : {}),
    cwd: meta.cwd,
    messages: reader.messages,
    format: `deepcode-${layout}`,
  };
  return { session, diagnostics, layout };
}

/**
 * The layout of a DeepCode stream from its first non-blank line: a `session_meta` header
 * with `schema_version` is `v1`, one without is `desktop-v0`; anything else is `core-v0`
 * when a `meta.json` exists, else unknown (`undefined`).
 *
 * @example
 * ```ts
 * declare const bytes: Uint8Array;
 *
 * classifyDeepCodeStream(bytes, false); // "v1" | "desktop-v0" | "core-v0" | undefined
 * ```
 */
export function classifyDeepCodeStream(bytes: Uint8Array, hasMeta: boolean): DeepCodeLayout | undefined {
  const first = firstRecord(bytes);
  if (first !== null && typeof first === "object" && !Array.isArray(first) && (first as { type?: unknown }).type === "session_meta") {
    return Object.hasOwn(first, "schema_version") ? "v1" : "desktop-v0";
  }
  return hasMeta ? "core-v0" : undefined;
}

/** The JSON value of the first non-blank line, or `undefined` when it is not JSON. */
function firstRecord(bytes: Uint8Array): unknown {
  let start = 0;
  while (start < bytes.length) {
    const end = bytes.indexOf(0x0a, start);
    const piece = bytes.subarray(start, end === -1 ? bytes.length : end);
    start = end === -1 ? bytes.length : end + 1;
    const decoded = decodeUtf8Strict(piece);
    if (!decoded.ok) return undefined;
    if (decoded.text.trim() === "") continue;
    try {
      return JSON.parse(decoded.text);
    } catch {
      return undefined;
    }
  }
  return undefined;
}

function metaFileFor(file: string): string {
  return file.endsWith(".jsonl") ? `${file.slice(0, -".jsonl".length)}.meta.json` : `${file}.meta.json`;
}

/** Turns DeepCode message records into sessionfold messages, joining tool results. */
class MessageAssembler {
  readonly messages: MessageRecord[] = [];
  /** The newest time seen: a message without `timestamp` gets it (the header's `created_at` at first). */
  lastTimestamp = "";
  readonly #layout: DeepCodeLayout;
  readonly #joiner = new ToolCallJoiner<MutableToolPart>("tool_use");

  constructor(layout: DeepCodeLayout) {
    this.#layout = layout;
  }

  /** Validates one message record completely, then adds it (atomic). */
  apply(record: Value, line: number): void {
    record.object("a message record object");
    if (this.#layout !== "core-v0") {
      const type = record.field("type");
      if (type.raw !== "message") type.fail('"message" (every record after the header is a message)');
      if (this.#layout === "v1") checkSchemaVersion(record);
      else if (record.field("schema_version").raw !== undefined) record.field("schema_version").fail("no schema_version in a desktop-v0 file");
    }
    const role = roleOf(record.field("role"));
    const blocks = parseDeepCodeContent(record.field("content"));
    const stamp = record.field("timestamp").optional();
    const timestamp = stamp === undefined ? undefined : this.#layout === "desktop-v0" ? flexibleTimestamp(stamp) : isoTimestamp(stamp);
    checkRoleBlocks(role, blocks);

    const results = blocks.filter((b) => b.type === "tool_result");
    const slots = this.#joiner.take(results.map((r) => ({ id: r.toolUseId, at: r.at.field("tool_use_id") })));
    // Nothing below can fail: the record is valid and every result has its call.
    results.forEach((result, i) => settle(slots[i]!, result));
    const createdAt = timestamp ?? this.lastTimestamp;
    this.lastTimestamp = createdAt;
    const kept = blocks.filter((b) => b.type !== "tool_result");
    if (role === "tool" || (results.length > 0 && kept.length === 0)) return;
    const parts = kept.map((block, i) => this.#part(block, i + 1));
    this.messages.push({
      record_type: "message",
      sequence: this.messages.length + 1,
      message_id: `m_deepcode_${line}`,
      role,
      created_at: createdAt,
      ...(role === "assistant" ? { status: "completed" as const } : {}),
      parts,
    });
  }

  #part(block: Exclude<DeepCodeBlock, { type: "tool_result" }>, sequence: number): MessagePart {
    switch (block.type) {
      case "text":
        return { sequence, type: "text", text: block.text };
      case "thinking":
        return { sequence, type: "reasoning", text: block.text };
      case "tool_use": {
        const part: MutableToolPart = { sequence, type: "tool", tool_call_id: block.id, tool_name: block.name, state: "input-available", input: block.input };
        this.#joiner.call(block.id, part);
        return part;
      }
    }
  }
}

function roleOf(value: Value): Role {
  const role = value.raw;
  return role === "user" || role === "assistant" || role === "tool" ? role : value.fail('"user", "assistant" or "tool"');
}

function checkRoleBlocks(role: Role, blocks: readonly DeepCodeBlock[]): void {
  for (const block of blocks) {
    if (block.type === "tool_result" && role === "assistant") block.at.fail("tool_result blocks only in a user or tool message", "a tool_result in an assistant message");
    if (block.type === "tool_use" && role !== "assistant") block.at.fail("tool_use blocks only in an assistant message", `a tool_use in a ${role} message`);
    if (role === "tool" && block.type !== "tool_result") block.at.fail("only tool_result blocks in a tool message", `a ${block.type} block in a tool message`);
  }
}

function settle(part: MutableToolPart, result: Extract<DeepCodeBlock, { type: "tool_result" }>): void {
  if (result.isError) {
    part.state = "output-error";
    part.error = typeof result.content === "string" ? result.content : JSON.stringify(result.content);
  } else {
    part.state = "output-available";
    part.output = result.content;
  }
}
