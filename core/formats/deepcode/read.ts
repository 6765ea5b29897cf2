import type { Diagnostic } from "../../jsonl/diagnostic.ts";
import type { MessagePart } from "../../schema/message.ts";
import type { PortableSession } from "../../model/mod.ts";
import { decodeUtf8Strict } from "../json-text.ts";
import { readJsonlRecords } from "../jsonl-lines.ts";
import { formatError } from "../errors.ts";
import type { Value } from "../shape.ts";
import { flexibleTimestamp, isoTimestamp } from "../timestamps.ts";
import { ToolCallJoiner } from "../tool-joiner.ts";
import type { MutableMessage, MutableToolPart } from "../mutable.ts";
import { type DeepCodeBlock, parseDeepCodeContent } from "./blocks.ts";
import { checkSchemaVersion, type DeepCodeMeta, isRenameHeader, parseCoreMeta, parseDesktopHeader, parseRenameHeader, parseV1Header } from "./meta.ts";
import type { DeepCodeInput, DeepCodeLayout, DeepCodeReadResult } from "./types.ts";

type Role = "user" | "assistant" | "tool";

/**
 * Reads a DeepCode session — the canonical v1 stream or a legacy `core-v0` / `desktop-v0`
 * one — into the format-neutral shape `Sessions.importPortable` takes.
 *
 * Reading rules (docs/decisions.md "Interop with what DeepCode and Rho really write"): an invalid final line without a newline is an interrupted
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
  const metaFile = input.metaFile ?? metaFileFor(file);
  let meta: DeepCodeMeta | undefined = layout === "core-v0" && input.metaBytes !== undefined ? parseCoreMeta(input.metaBytes, metaFile) : undefined;
  let header = layout === "core-v0" ? "optional" : "required";
  const reader = new MessageAssembler(layout);
  const skipped: Diagnostic[] = [];
  const { diagnostics, lines } = readJsonlRecords(bytes, "deepcode", file, (record, line) => {
    if (header !== "read") {
      const wasOptional = header === "optional";
      header = "read";
      if (wasOptional) {
        // core-v0: only a rename header can come first; a bare message is read as one.
        if (!isRenameHeader(record.object("a message record object").raw as Record<string, unknown>)) return reader.apply(record, line);
        const renamed = parseRenameHeader(record);
        meta = { ...(meta ?? {}), id: meta?.id ?? renamed.id, ...(renamed.title !== undefined ? { title: renamed.title } : {}) };
        return;
      }
      meta = layout === "v1" ? parseV1Header(record) : parseDesktopHeader(record);
      return;
    }
    const type = record.object("a message record object").field("type").raw;
    // DeepCode reserves other typed records for lifecycle items and its reader skips them.
    if (layout !== "core-v0" && typeof type === "string" && type !== "message") {
      skipped.push({
        file,
        line,
        code: "unknown_record",
        fatal: false,
        message: `${file}:${line}: skipped a record of type ${JSON.stringify(type)} (not a message; DeepCode's reader skips it too)`,
      });
      return;
    }
    reader.apply(record, line);
  });
  if (meta === undefined) {
    if (layout === "core-v0") {
      throw formatError(
        { format: "deepcode", file: metaFile, line: null },
        "no meta.json and no session_meta header",
        "the core-v0 <id>.meta.json beside the stream (or the header DeepCode adds on rename)",
      );
    }
    const torn = diagnostics[0];
    const found = torn ? "only an interrupted (unterminated, invalid) first line" : lines === 0 ? "an empty file" : "only blank lines";
    throw formatError({ format: "deepcode", file, line: torn?.line ?? 1 }, found, "a session_meta header");
  }
  const found: DeepCodeMeta = meta;
  const filled = reader.finish(found.createdAt);
  const createdAt = found.createdAt ?? filled.first;
  const updatedAt = found.updatedAt ?? filled.last ?? createdAt;
  const notes: Diagnostic[] = [];
  if (found.createdAt === undefined || found.updatedAt === undefined) {
    const missing = [found.createdAt === undefined ? "created_at" : undefined, found.updatedAt === undefined ? "updated_at" : undefined].filter((x) =>
      x !== undefined
    ).join(" and ");
    const how = createdAt === undefined ? "no message has a time either, so the import time stands in" : "taken from the first / last message";
    notes.push({ file, line: 1, code: "time_from_messages", fatal: false, message: `${file}:1: the header has no ${missing}; ${how}` });
  }
  const session: PortableSession = {
    sourceId: found.id,
    ...(found.title !== undefined ? { title: found.title } : {}),
    ...(createdAt !== undefined ? { createdAt } : {}),
    ...(updatedAt !== undefined ? { updatedAt } : {}),
    ...(found.model !== undefined ? { modelLabel: found.model } : {}),
    ...(found.cwd !== undefined ? { cwd: found.cwd } : {}),
    messages: reader.messages,
    format: `deepcode-${layout}`,
  };
  return { session, diagnostics: [...diagnostics, ...skipped, ...notes], layout };
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
    if (Object.hasOwn(first, "schema_version")) return "v1";
    return isRenameHeader(first as Record<string, unknown>) ? "core-v0" : "desktop-v0";
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
  readonly messages: MutableMessage[] = [];
  /** Each message's own `timestamp`, `undefined` when it had none (filled by {@linkcode finish}). */
  readonly #times: (string | undefined)[] = [];
  /** For each message, the newest `timestamp` of any record before it (absorbed results included). */
  readonly #before: (string | undefined)[] = [];
  /** The first and last `timestamp` of any record, absorbed tool results included. */
  #first: string | undefined;
  #last: string | undefined;
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
    results.forEach((result, i) => settle(slots[i]!, result, timestamp));
    const before = this.#last;
    if (timestamp !== undefined) {
      this.#first ??= timestamp;
      this.#last = timestamp;
    }
    const kept = blocks.filter((b) => b.type !== "tool_result");
    if (role === "tool" || (results.length > 0 && kept.length === 0)) return;
    const parts = kept.map((block, i) => this.#part(block, i + 1));
    this.messages.push({
      record_type: "message",
      sequence: this.messages.length + 1,
      message_id: `m_deepcode_${line}`,
      role,
      created_at: timestamp ?? "",
      ...(role === "assistant" ? { status: "completed" as const } : {}),
      parts,
    });
    this.#times.push(timestamp);
    this.#before.push(before);
  }

  /**
   * Gives every message without a `timestamp` the time of the message before it (at first
   * `headerTime`, else the first later one, else now) and gives the first and last
   * `timestamp` the records held.
   */
  finish(headerTime: string | undefined): { first?: string; last?: string } {
    this.#times.forEach((time, i) => {
      if (time === undefined) {
        this.messages[i]!.created_at = this.#before[i] ?? headerTime ?? this.#times.slice(i + 1).find((t) => t !== undefined) ?? new Date().toISOString();
      }
    });
    return { ...(this.#first !== undefined ? { first: this.#first } : {}), ...(this.#last !== undefined ? { last: this.#last } : {}) };
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
    if (block.type === "tool_result" && role === "assistant") {
      block.at.fail("tool_result blocks only in a user or tool message", "a tool_result in an assistant message");
    }
    if (block.type === "tool_use" && role !== "assistant") block.at.fail("tool_use blocks only in an assistant message", `a tool_use in a ${role} message`);
    if (role === "tool" && block.type !== "tool_result") block.at.fail("only tool_result blocks in a tool message", `a ${block.type} block in a tool message`);
  }
}

/** The field of a tool part that keeps the time of the DeepCode record holding its result. */
export const DEEPCODE_TOOL_EXTENSION = "deepcode";

function settle(part: MutableToolPart, result: Extract<DeepCodeBlock, { type: "tool_result" }>, timestamp: string | undefined): void {
  if (timestamp !== undefined) (part as Record<string, unknown>)[DEEPCODE_TOOL_EXTENSION] = { result_timestamp: timestamp };
  if (result.isError) {
    part.state = "output-error";
    part.error = typeof result.content === "string" ? result.content : JSON.stringify(result.content);
  } else {
    part.state = "output-available";
    part.output = result.content;
  }
}
