import { InvalidInputError } from "../errors.ts";
import type { MessagePart, MessageRecord } from "../schema/mod.ts";
import type { ModelInput, ToolDefinition } from "../model/mod.ts";

/** Framing tokens counted once per message (role, separators). */
export const MESSAGE_OVERHEAD_TOKENS = 4;
/** Framing tokens counted once per tool definition. */
export const TOOL_OVERHEAD_TOKENS = 4;
/** Flat cost of a non-text file with inline data: providers bill images and documents by their own rules, never by base64 length. */
export const FILE_DATA_TOKENS = 1_024;
/** UTF-8 bytes per estimated token. */
export const BYTES_PER_TOKEN = 4;

/**
 * The provider-neutral token estimate used by the `at-context-tokens` policy and by
 * the compaction accounting ("estimated removed tokens"). Deterministic, O(size), no
 * tokenizer. The rule:
 *
 * - each message: {@linkcode MESSAGE_OVERHEAD_TOKENS} + for each part
 *   `ceil(UTF-8 bytes of the part's JSON / 4)`;
 * - a `file` part's base64 `data` is left out of that JSON and counted apart: a
 *   `text/*` file by its decoded size (`ceil(bytes / 4)`), any other file as
 *   {@linkcode FILE_DATA_TOKENS};
 * - each tool: {@linkcode TOOL_OVERHEAD_TOKENS} + `ceil(UTF-8 bytes of the JSON of
 *   {name, description, inputSchema} / 4)`.
 *
 * @example
 * ```ts
 * estimateTokens([{ record_type: "message", sequence: 1, message_id: "m1", role: "user",
 *   created_at: "2026-12-02T13:00:00.000Z", parts: [{ sequence: 1, type: "text", text: "hi" }] }]);
 * // 4 + ceil(40 / 4) = 14
 * ```
 * @throws {InvalidInputError} when a part or tool cannot be serialized as JSON (a cycle, a BigInt).
 */
export function estimateTokens(messages: readonly MessageRecord[], tools: readonly ToolDefinition[] = []): number {
  let total = 0;
  for (const message of messages) {
    total += MESSAGE_OVERHEAD_TOKENS;
    for (const part of message.parts) total += estimatePartTokens(part, message.sequence);
  }
  for (const tool of tools) {
    const json = jsonOf({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema }, `tool ${tool.name}`);
    total += TOOL_OVERHEAD_TOKENS + bytesToTokens(utf8Length(json));
  }
  return total;
}

/**
 * The estimate of plain text (a system prompt, a summary): `ceil(UTF-8 bytes / 4)`.
 *
 * @example
 * ```ts
 * estimateTextTokens("hello world"); // 3
 * estimateTextTokens(null); // 0
 * ```
 */
export function estimateTextTokens(text: string | null | undefined): number {
  return text ? bytesToTokens(utf8Length(text)) : 0;
}

/**
 * The estimate of a whole model input: system + summary + messages (+ tools). Used for
 * the before/after figures of a compaction.
 *
 * @example
 * ```ts
 * estimateModelInputTokens({ system: "Be brief.", summary: null, messages: [] }); // 3
 * ```
 * @throws {InvalidInputError} as {@linkcode estimateTokens}.
 */
export function estimateModelInputTokens(input: ModelInput, tools: readonly ToolDefinition[] = []): number {
  return estimateTextTokens(input.system) + estimateTextTokens(input.summary) + estimateTokens(input.messages, tools);
}

function estimatePartTokens(part: MessagePart, sequence: number): number {
  if (part.type !== "file" || typeof part.data !== "string") {
    // The part's name is built only for a part measured on its JSON (a template string per text part is a tenth of its estimate).
    return bytesToTokens(textPartJsonLength(part) ?? utf8Length(jsonOf(part, `message ${sequence} part ${part.sequence}`)));
  }
  const where = `message ${sequence} part ${part.sequence}`;
  const { data, ...rest } = part;
  const metadata = bytesToTokens(utf8Length(jsonOf(rest, where)));
  const content = part.media_type.toLowerCase().startsWith("text/") ? bytesToTokens(base64DecodedLength(data)) : FILE_DATA_TOKENS;
  return metadata + content;
}

/**
 * UTF-8 bytes of `JSON.stringify(part)` for a plain text part (`sequence`, `type`, `text` and
 * nothing else) without building the JSON: the estimate of a long Active is mostly text, and
 * serializing it all again would cost more than the compaction's own writes. `undefined` for
 * any other part, which is measured on its JSON.
 */
function textPartJsonLength(part: MessagePart): number | undefined {
  if (part.type !== "text" && part.type !== "reasoning" && part.type !== "reasoning-summary") return undefined;
  const { text, sequence } = part as { text?: unknown; sequence?: unknown };
  if (typeof text !== "string" || !Number.isSafeInteger(sequence) || Object.keys(part).length !== 3) return undefined;
  // {"sequence":N,"type":"T","text":"…"}: 33 bytes of framing besides the number, the type and the text.
  return 33 + String(sequence).length + part.type.length + jsonStringLength(text);
}

/**
 * Runs of characters that `JSON.stringify` does not copy as one byte each: anything but
 * printable ASCII, `"` and `\`. Text is mostly plain ASCII, so the regular expression
 * (native code) skips it and only the runs are walked character by character.
 */
const JSON_SPECIAL_RUNS = /[^\x20\x21\x23-\x5b\x5d-\x7e]+/g;
/** Runs of characters that UTF-8 stores in more than one byte. */
// The range is every one-byte code point, control characters included: they are the point.
// deno-lint-ignore no-control-regex
const NON_ASCII_RUNS = /[^\x00-\x7f]+/g;

/**
 * Text that `JSON.stringify` copies as one byte per character: printable ASCII but `"` and `\`. Tested as a whole
 * first (most text is plain): one non-global match costs about a third of walking the runs of
 * {@linkcode JSON_SPECIAL_RUNS} with a global one, even when there are none.
 */
const PLAIN_JSON_TEXT = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;
/** Text that UTF-8 stores in one byte per character (ASCII), tested as a whole first, as {@linkcode PLAIN_JSON_TEXT}. */
// deno-lint-ignore no-control-regex
const ASCII_TEXT = /^[\x00-\x7f]*$/;

/** UTF-8 bytes of `text` inside a JSON string, as `JSON.stringify` escapes it (quotes not counted). */
function jsonStringLength(text: string): number {
  let bytes = text.length;
  if (PLAIN_JSON_TEXT.test(text)) return bytes;
  JSON_SPECIAL_RUNS.lastIndex = 0;
  for (let run = JSON_SPECIAL_RUNS.exec(text); run !== null; run = JSON_SPECIAL_RUNS.exec(text)) {
    const end = run.index + run[0].length;
    for (let i = run.index; i < end; i++) {
      const code = text.charCodeAt(i);
      if (code === 0x22 || code === 0x5c) bytes += 1; // \" and \\
      else if (code < 0x20) bytes += code === 0x08 || code === 0x09 || code === 0x0a || code === 0x0c || code === 0x0d ? 1 : 5; // \n or \u00XX
      else if (code < 0x80) continue; // DEL is copied as is
      else if (code < 0x800) bytes += 1;
      else if (isPairAt(text, i)) {
        bytes += 2; // two code units, four bytes
        i++;
      } else bytes += code >= 0xd800 && code <= 0xdfff ? 5 : 2; // a lone surrogate becomes \uXXXX
    }
  }
  return bytes;
}

function jsonOf(value: unknown, where: string): string {
  try {
    return JSON.stringify(value) ?? "";
  } catch (error) {
    throw new InvalidInputError(`cannot estimate ${where}: not JSON-serializable (${(error as Error).message})`, { where });
  }
}

function bytesToTokens(bytes: number): number {
  return Math.ceil(bytes / BYTES_PER_TOKEN);
}

/** UTF-8 length without allocating an encoded copy. A lone surrogate counts as U+FFFD (3 bytes), like TextEncoder. */
function utf8Length(text: string): number {
  let bytes = text.length;
  if (ASCII_TEXT.test(text)) return bytes;
  NON_ASCII_RUNS.lastIndex = 0;
  for (let run = NON_ASCII_RUNS.exec(text); run !== null; run = NON_ASCII_RUNS.exec(text)) {
    const end = run.index + run[0].length;
    for (let i = run.index; i < end; i++) {
      if (text.charCodeAt(i) < 0x800) bytes += 1;
      else if (isPairAt(text, i)) {
        bytes += 2;
        i++;
      } else bytes += 2;
    }
  }
  return bytes;
}

/** True when a high surrogate at `i` is followed by a low one (one code point, four UTF-8 bytes). */
function isPairAt(text: string, i: number): boolean {
  const code = text.charCodeAt(i);
  if (code < 0xd800 || code > 0xdbff) return false;
  const next = text.charCodeAt(i + 1);
  return next >= 0xdc00 && next <= 0xdfff;
}

function base64DecodedLength(data: string): number {
  const trimmed = data.replace(/\s+/g, "");
  const padding = trimmed.endsWith("==") ? 2 : trimmed.endsWith("=") ? 1 : 0;
  return Math.max(0, Math.floor((trimmed.length * 3) / 4) - padding);
}
