import type { MessagePart, ProviderIdentity, TextPart, Usage } from "../../schema/message.ts";
import { unsupportedVersion } from "../errors.ts";
import type { Value } from "../shape.ts";
import { isoTimestamp } from "../timestamps.ts";
import { PI_EXTENSION_FIELD, type PiMessageExtension } from "./types.ts";

/** pi session file versions this reader follows (`CURRENT_SESSION_VERSION` is 3). */
export const PI_SESSION_VERSIONS = [1, 2, 3] as const;

/** A part before its sequence is assigned. */
export type LoosePart = { [K in keyof MessagePart]?: unknown } & { type: MessagePart["type"] } & Record<string, unknown>;

/** The validated `session` header. */
export interface PiHeader {
  readonly version: number;
  readonly id: string;
  readonly timestamp: string;
  readonly cwd: string;
}

/** One entry of the tree, validated at its line and reduced to what the import needs. */
export type PiEntry =
  & { readonly id: string; readonly parentId: string | null; readonly timestamp: string; readonly line: number }
  & (
    | { readonly kind: "user"; readonly parts: LoosePart[]; readonly ext?: PiMessageExtension }
    | {
      readonly kind: "assistant";
      readonly parts: LoosePart[];
      readonly provider: ProviderIdentity;
      readonly usage?: Usage;
      readonly status: "completed" | "stopped" | "failed";
      readonly ext: PiMessageExtension;
    }
    | {
      readonly kind: "tool-result";
      readonly callId: string;
      readonly at: Value;
      readonly isError: boolean;
      readonly output: unknown;
      readonly error: string;
      readonly ext: Record<string, unknown>;
    }
    | { readonly kind: "compaction"; readonly summary: string; readonly firstKeptEntryId: string }
    | { readonly kind: "model"; readonly provider: string; readonly modelId: string }
    | { readonly kind: "name"; readonly name: string }
    | { readonly kind: "other" }
  );

/** The compaction summary wrapper pi's context gives the model (its messages module). */
const PI_BRANCH_SUMMARY_PREFIX = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
/** Closes {@linkcode PI_BRANCH_SUMMARY_PREFIX}. */
const PI_BRANCH_SUMMARY_SUFFIX = "</summary>";

const ENTRY_TYPES = '"message", "thinking_level_change", "model_change", "compaction", "branch_summary", "custom", "custom_message", "label" or "session_info"';

/**
 * Validates the `session` header (first record).
 *
 * @example
 * ```ts
 * declare const record: Parameters<typeof parsePiHeader>[0];
 * const header = parsePiHeader(record); // { version: 3, id, timestamp, cwd }
 * ```
 * @throws {FormatError} when it is not a header; {@linkcode UnsupportedSchemaError} for a version above 3.
 */
export function parsePiHeader(record: Value): PiHeader {
  record.object("the session header object");
  const type = record.field("type");
  if (type.raw !== "session") type.fail('"session" (the first record of a pi session file)');
  const versionField = record.field("version");
  const version = versionField.optional()?.count() ?? 1;
  if (!(PI_SESSION_VERSIONS as readonly number[]).includes(version)) {
    throw unsupportedVersion({ format: "pi", file: record.site.file, line: record.site.lineOf([]), path: "$.version" }, version, PI_SESSION_VERSIONS);
  }
  return {
    version,
    id: record.field("id").string({ nonEmpty: true }),
    timestamp: isoTimestamp(record.field("timestamp")),
    cwd: record.field("cwd").string(),
  };
}

/**
 * Validates one entry line of a pi session. Version 1 entries have no ids: `fallbackId`
 * and `previousId` (the entry before it) stand in, as pi's own migration does.
 *
 * @example
 * ```ts
 * declare const record: Parameters<typeof parsePiEntry>[0];
 * declare const header: PiHeader;
 * const entry = parsePiEntry(record, 4, header.version, "l4", "l3");
 * ```
 * @throws {FormatError} naming the path of the first value that is not what pi writes.
 */
export function parsePiEntry(record: Value, line: number, version: number, fallbackId: string, previousId: string | null): PiEntry {
  record.object("a session entry object");
  const type = record.field("type");
  const id = version === 1 ? fallbackId : record.field("id").string({ nonEmpty: true });
  const parentField = record.field("parentId");
  const parentId = version === 1 ? previousId : parentField.raw === null ? null : parentField.string({ nonEmpty: true });
  const timestamp = isoTimestamp(record.field("timestamp"));
  const base = { id, parentId, timestamp, line };
  switch (type.raw) {
    case "message":
      return { ...base, ...parseMessage(record.field("message").object("an agent message object"), version) };
    case "model_change":
      return {
        ...base,
        kind: "model",
        provider: record.field("provider").string({ nonEmpty: true }),
        modelId: record.field("modelId").string({ nonEmpty: true }),
      };
    case "thinking_level_change":
      record.field("thinkingLevel").string();
      return { ...base, kind: "other" };
    case "compaction": {
      const summary = record.field("summary").string();
      const firstKept = version === 1 ? record.field("firstKeptEntryId").optional()?.string() ?? "" : record.field("firstKeptEntryId").string();
      record.field("tokensBefore").optional()?.count();
      return { ...base, kind: "compaction", summary, firstKeptEntryId: firstKept };
    }
    case "branch_summary": {
      const summary = record.field("summary").string();
      const fromId = record.field("fromId").string();
      const ext: PiMessageExtension = { entry: "branch_summary", summary, fromId, ...optionalField(record, "details"), ...optionalField(record, "fromHook") };
      return { ...base, kind: "user", parts: [{ type: "text", text: `${PI_BRANCH_SUMMARY_PREFIX}${summary}${PI_BRANCH_SUMMARY_SUFFIX}` }], ext };
    }
    case "custom_message": {
      const customType = record.field("customType").string();
      const display = record.field("display").boolean();
      const content = record.field("content");
      const parts = parseUserContent(content);
      const ext = {
        entry: "custom_message",
        customType,
        display,
        ...optionalField(record, "details"),
        ...(typeof content.raw === "string" ? { stringContent: true } : {}),
      };
      return { ...base, kind: "user", parts, ext };
    }
    case "custom":
      record.field("customType").string();
      return { ...base, kind: "other" };
    case "label":
      record.field("targetId").string();
      return { ...base, kind: "other" };
    case "session_info": {
      const name = record.field("name").optional()?.string();
      return name === undefined ? { ...base, kind: "other" } : { ...base, kind: "name", name };
    }
    default:
      return type.fail(ENTRY_TYPES);
  }
}

function optionalField(record: Value, key: string): Record<string, unknown> {
  const value = record.field(key).raw;
  return value === undefined ? {} : { [key]: value };
}

type MessageShape = Extract<PiEntry, { kind: "user" | "assistant" | "tool-result" }> extends infer E
  ? (E extends unknown ? Omit<E, "id" | "parentId" | "timestamp" | "line"> : never)
  : never;

function parseMessage(message: Value, version: number): MessageShape {
  const role = message.field("role");
  switch (role.raw) {
    case "user": {
      const content = message.field("content");
      const parts = parseUserContent(content);
      // A plain-string content is kept as a string on export (pi's context shows it so).
      return typeof content.raw === "string" ? { kind: "user", parts, ext: { entry: "user", stringContent: true } } : { kind: "user", parts };
    }
    case "assistant":
      return parseAssistant(message);
    case "toolResult":
      return parseToolResult(message);
    case "bashExecution": {
      const command = message.field("command").string();
      const output = message.field("output").string();
      const exitCode = message.field("exitCode").optional();
      if (exitCode !== undefined && (typeof exitCode.raw !== "number" || !Number.isInteger(exitCode.raw))) exitCode.fail("an integer exit code, or nothing");
      const cancelled = message.field("cancelled").boolean();
      const truncated = message.field("truncated").boolean();
      const fullOutputPath = message.field("fullOutputPath").optional()?.string();
      const text = bashExecutionText(command, output, exitCode?.raw as number | undefined, cancelled, truncated, fullOutputPath);
      return { kind: "user", parts: [{ type: "text", text }], ext: { entry: "bashExecution", message: message.raw } };
    }
    case "hookMessage":
    case "custom": {
      if (role.raw === "hookMessage" && version >= 3) role.fail('"user", "assistant", "toolResult", "bashExecution" or "custom"');
      const customType = message.field("customType").string();
      const parts = parseUserContent(message.field("content"));
      return { kind: "user", parts, ext: { entry: "custom", customType, message: { ...(message.raw as object), role: "custom" } } };
    }
    default:
      return role.fail('"user", "assistant", "toolResult", "bashExecution" or "custom"');
  }
}

/** pi's own text for a `!` shell run, as its context gives it to the model. */
function bashExecutionText(
  command: string,
  output: string,
  exitCode: number | undefined,
  cancelled: boolean,
  truncated: boolean,
  fullOutputPath: string | undefined,
): string {
  let text = `Ran \`${command}\`\n${output ? `\`\`\`\n${output}\n\`\`\`` : "(no output)"}`;
  if (cancelled) text += "\n\n(command cancelled)";
  else if (exitCode !== undefined && exitCode !== 0) text += `\n\nCommand exited with code ${exitCode}`;
  if (truncated && fullOutputPath) text += `\n\n[Output truncated. Full output: ${fullOutputPath}]`;
  return text;
}

function parseUserContent(content: Value): LoosePart[] {
  if (typeof content.raw === "string") return [{ type: "text", text: content.raw }];
  return content.array("a string or an array of text and image blocks").map((block) => {
    block.object('a content block whose type is "text" or "image"');
    const type = block.field("type");
    if (type.raw === "text") return textPart(block);
    if (type.raw === "image") return imagePart(block);
    return type.fail('"text" or "image"');
  });
}

function textPart(block: Value): LoosePart {
  const part: TextPart | LoosePart = { type: "text", text: block.field("text").string() };
  const signature = block.field("textSignature").optional()?.string();
  return signature === undefined ? part : { ...part, [PI_EXTENSION_FIELD]: { textSignature: signature } };
}

function imagePart(block: Value): LoosePart {
  return { type: "file", media_type: block.field("mimeType").string({ nonEmpty: true }), data: block.field("data").string() };
}

function parseAssistant(message: Value): MessageShape {
  const parts = message.field("content").array("an array of text, thinking and toolCall blocks").map((block): LoosePart => {
    block.object('a content block whose type is "text", "thinking" or "toolCall"');
    const type = block.field("type");
    switch (type.raw) {
      case "text":
        return textPart(block);
      case "thinking": {
        const signature = block.field("thinkingSignature").optional()?.string();
        const redacted = block.field("redacted").optional()?.boolean();
        const ext = { ...(signature !== undefined ? { thinkingSignature: signature } : {}), ...(redacted !== undefined ? { redacted } : {}) };
        return { type: "reasoning", text: block.field("thinking").string(), ...(Object.keys(ext).length > 0 ? { [PI_EXTENSION_FIELD]: ext } : {}) };
      }
      case "toolCall": {
        const args = block.field("arguments");
        if (args.raw === undefined) args.fail("the call's arguments (a JSON object)");
        const signature = block.field("thoughtSignature").optional()?.string();
        return {
          type: "tool",
          tool_call_id: block.field("id").string({ nonEmpty: true }),
          tool_name: block.field("name").string({ nonEmpty: true }),
          state: "input-available",
          input: args.raw,
          ...(signature !== undefined ? { [PI_EXTENSION_FIELD]: { thoughtSignature: signature } } : {}),
        };
      }
      default:
        return type.fail('"text", "thinking" or "toolCall"');
    }
  });
  const provider: ProviderIdentity = {
    provider: message.field("provider").string({ nonEmpty: true }),
    api: message.field("api").string({ nonEmpty: true }),
    model: message.field("model").string({ nonEmpty: true }),
  };
  const stop = message.field("stopReason");
  if (!["stop", "length", "toolUse", "error", "aborted"].includes(stop.raw as string)) stop.fail('"stop", "length", "toolUse", "error" or "aborted"');
  const usage = parseUsage(message.field("usage"));
  const { role: _role, content: _content, provider: _p, api: _a, model: _m, timestamp: _t, ...rest } = message.raw as Record<string, unknown>;
  const status = stop.raw === "error" ? "failed" : stop.raw === "aborted" ? "stopped" : "completed";
  return { kind: "assistant", parts, provider, ...(usage ? { usage } : {}), status, ext: { entry: "assistant", message: rest } };
}

function parseUsage(value: Value): Usage | undefined {
  const usage = value.optional()?.object("pi's usage object");
  if (usage === undefined) return undefined;
  const count = (key: string) => {
    const field = usage.field(key);
    if (typeof field.raw !== "number" || !Number.isFinite(field.raw) || field.raw < 0) field.fail("a non-negative number");
    return Math.round(field.raw as number);
  };
  const total = usage.field("totalTokens").optional() ? count("totalTokens") : undefined;
  const cost = usage.field("cost").optional()?.object("the cost object");
  const costTotal = cost?.field("total").optional();
  if (costTotal !== undefined && (typeof costTotal.raw !== "number" || !Number.isFinite(costTotal.raw) || costTotal.raw < 0)) {
    costTotal.fail("a non-negative number of dollars");
  }
  const input = count("input");
  const output = count("output");
  const micros = costTotal !== undefined ? Math.round((costTotal.raw as number) * 1e6) : 0;
  // pi requires a usage on every assistant message, so all zeros is how "unknown" is written.
  if (input === 0 && output === 0 && (total ?? 0) === 0 && micros === 0) return undefined;
  return {
    input_tokens: input,
    output_tokens: output,
    ...(total !== undefined ? { total_tokens: total } : {}),
    ...(micros > 0 ? { cost_usd_micros: micros } : {}),
  };
}

function parseToolResult(message: Value): MessageShape {
  const callIdField = message.field("toolCallId");
  const callId = callIdField.string({ nonEmpty: true });
  const toolName = message.field("toolName").string();
  const content = message.field("content").array("an array of text and image blocks");
  const parts = content.map((block) => {
    block.object('a content block whose type is "text" or "image"');
    const type = block.field("type");
    if (type.raw === "text") return block.field("text").string();
    if (type.raw === "image") return imagePart(block);
    return type.fail('"text" or "image"');
  });
  const isError = message.field("isError").boolean();
  const texts = parts.filter((p): p is string => typeof p === "string");
  const single = parts.length === 1 && typeof parts[0] === "string";
  const output = single ? parts[0] : content.map((c) => c.raw);
  const details = message.field("details").raw;
  const ext = { toolName, ...(details !== undefined ? { details } : {}), ...(!single && isError ? { content: content.map((c) => c.raw) } : {}) };
  return { kind: "tool-result", callId, at: callIdField, isError, output, error: texts.join("\n"), ext };
}
