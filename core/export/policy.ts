/**
 * What a recipient of an export receives (docs/FORMAT.md "Importing and exporting other
 * systems' sessions", its "Redaction" item):
 * {@linkcode prepareExport} turns a {@linkcode PortableSession} into a new one with secrets
 * redacted and the parts the user chose to withhold removed, plus an
 * {@linkcode ExportReport} that counts what happened without repeating any secret. Every
 * exporter (`core/formats`) takes its output unchanged.
 *
 * @module
 */
import type { PortableSession } from "../model/mod.ts";
import type { MessagePart, MessageRecord } from "../schema/mod.ts";
import { RHO_EXTENSION_FIELD } from "../formats/rho/types.ts";
import { type PlaceholderNamer, redactAcross, type RedactionDetector, type RedactionFinding, redactJson, redactText } from "./redact.ts";

/**
 * What to withhold from an export. Every flag defaults to `false`: without options the
 * export is the complete session, a data export and not a sanitized transcript.
 *
 * @example
 * ```ts
 * const shareable: ExportOptions = { redact: true, dropProviderContext: true, dropMetadata: true };
 * ```
 */
export interface ExportOptions {
  /**
   * Replace secrets (API keys, tokens, private keys, passwords…; see `detectors.ts`) with
   * `[REDACTED:<detector>#<n>]` in every string that can reach an export: message text, raw
   * reasoning and reasoning summaries, tool inputs and outputs (every string and object key,
   * at any depth), tool errors, file names, URLs and media types, the text inside text
   * files' base64 data, provider-context data, unknown extension fields, the system prompt,
   * title, model label, summary and segment summaries, metadata (keys and values),
   * prompt-cache key, working directory, times, usage and compaction fields, and the ids and
   * names: session, message and tool-call ids, tool names, provider / API / model identities.
   * `n` numbers the distinct secrets of one export: the same secret gets the same
   * placeholder wherever it is, so a tool call still pairs with its result when its id held
   * a secret (and a reader can see that two redacted values were equal). The adjacent text
   * parts of a message are redacted as one text, so a secret split between two streamed
   * parts is found. Only the structure is kept as it is: part types and states, roles,
   * statuses, sequences and numbers.
   */
  redact?: boolean;
  /**
   * Leave out system prompts: `system` becomes `null`, and user messages that stand for a
   * later system prompt (a Rho `System` entry after a reset, marked `rho.entry = "System"`)
   * are removed.
   */
  dropSystemPrompt?: boolean;
  /**
   * Leave out what tools returned: a tool part's `output` and `error` become the marker
   * `"[omitted]"`. The part, its call id, name, input and state stay, so every call keeps
   * its result and the tool-call / tool-result pairing of every format stays valid.
   */
  dropToolOutputs?: boolean;
  /**
   * Leave out file contents: a file part's inline base64 `data` and a `data:` URL are
   * removed. A file part that still has a remote `url` stays a file part (`media_type`,
   * `name`, `url`); one that had only inline data becomes a text part
   * `[file omitted: <name> (<media_type>)]`, so every record stays valid and no format
   * receives an empty image.
   */
  dropFileData?: boolean;
  /** Leave out opaque provider-native context: every `provider-context` part is removed. */
  dropProviderContext?: boolean;
  /**
   * Leave out custom metadata: the session's string `metadata` and its `promptCacheKey`.
   * The working directory (`cwd`, which DeepCode v1 requires) and the extension fields of
   * messages and parts (which carry format semantics such as Rho's `rho.entry`) stay, and
   * are redacted with `redact`.
   */
  dropMetadata?: boolean;
  /** Leave out reasoning: every `reasoning` (raw) and `reasoning-summary` part is removed. */
  dropReasoning?: boolean;
}

/**
 * Where in a session a redaction was made (for the report; never the secret itself).
 * `message_extension` / `part_extension` / `session_extension` are fields outside
 * docs/FORMAT.md's records (e.g. Rho's `rho.portable_fallback`).
 *
 * @example
 * ```ts
 * declare const report: ExportReport;
 * const toolFindings = report.byField["tool_output" satisfies ExportField] ?? 0;
 * ```
 */
export type ExportField =
  | "system"
  | "title"
  | "model_label"
  | "summary"
  | "metadata"
  | "prompt_cache_key"
  | "cwd"
  | "session_extension"
  | "message_extension"
  | "text"
  | "reasoning"
  | "reasoning_summary"
  | "tool_input"
  | "tool_output"
  | "tool_error"
  | "file_name"
  | "file_url"
  | "file_data"
  | "provider_context"
  | "part_extension"
  | "source_id"
  | "message_id"
  | "tool_call_id"
  | "tool_name"
  | "provider_identity"
  | "media_type"
  | "segment_summary"
  | "timestamp"
  | "usage"
  | "compaction"
  | "format";

/**
 * What {@linkcode prepareExport} did: counts only, no secret values.
 *
 * @example
 * ```ts
 * import { type PortableSession } from "sessionfold";
 * declare const portable: PortableSession;
 *
 * const { report } = prepareExport(portable, { redact: true });
 * console.log(`${report.redactions} redactions`, report.byDetector, report.byField);
 * if (report.binaryFilesKept > 0) console.warn("binary files were exported as they are");
 * ```
 */
export interface ExportReport {
  /** The options it applied. */
  readonly options: Readonly<Required<ExportOptions>>;
  /** Redactions in total. */
  readonly redactions: number;
  /** Redactions per detector (only detectors that found something). */
  readonly byDetector: Readonly<Partial<Record<RedactionDetector, number>>>;
  /** Redactions per field (only fields where something was found). */
  readonly byField: Readonly<Partial<Record<ExportField, number>>>;
  /** What the drop flags removed. */
  readonly dropped: {
    readonly systemPrompt: boolean;
    /** Messages removed because they stood for a later system prompt (`rho.entry = "System"`). */
    readonly systemMessages: number;
    readonly toolOutputs: number;
    readonly toolErrors: number;
    readonly fileData: number;
    readonly providerContextParts: number;
    readonly reasoningParts: number;
    readonly reasoningSummaryParts: number;
    readonly metadataKeys: number;
    readonly promptCacheKey: boolean;
  };
  /**
   * File parts whose inline data is binary (not UTF-8 text, and not a text media type) and
   * was therefore exported as it is: redaction cannot see inside images or archives. Use
   * `dropFileData` when they must not leave.
   */
  readonly binaryFilesKept: number;
}

/**
 * The marker that replaces a dropped tool output or error.
 *
 * @example
 * ```ts
 * import { type PortableSession } from "sessionfold";
 * declare const portable: PortableSession;
 *
 * const { session } = prepareExport(portable, { dropToolOutputs: true });
 * // every tool part with a result now has output (or error) === OMITTED, i.e. "[omitted]"
 * ```
 */
export const OMITTED = "[omitted]";

/** The fields docs/FORMAT.md defines; anything else is an extension field. */
const MESSAGE_FIELDS = new Set(["record_type", "sequence", "message_id", "role", "created_at", "status", "parts", "usage", "provider"]);
const PART_FIELDS: Record<string, ReadonlySet<string>> = {
  text: new Set(["sequence", "type", "text"]),
  reasoning: new Set(["sequence", "type", "text"]),
  "reasoning-summary": new Set(["sequence", "type", "text"]),
  tool: new Set(["sequence", "type", "tool_call_id", "tool_name", "state", "input", "output", "error"]),
  file: new Set(["sequence", "type", "media_type", "name", "data", "url"]),
  "provider-context": new Set(["sequence", "type", "provider", "api", "model", "data"]),
};
const SESSION_FIELDS = new Set([
  "sourceId",
  "title",
  "createdAt",
  "updatedAt",
  "modelLabel",
  "revision",
  "system",
  "messages",
  "summary",
  "segments",
  "provider",
  "compaction",
  "metadata",
  "promptCacheKey",
  "cwd",
  "format",
]);

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

class ExportTally {
  readonly byDetector: Partial<Record<RedactionDetector, number>> = {};
  readonly byField: Partial<Record<ExportField, number>> = {};
  redactions = 0;
  binaryFilesKept = 0;
  readonly dropped = {
    systemPrompt: false,
    systemMessages: 0,
    toolOutputs: 0,
    toolErrors: 0,
    fileData: 0,
    providerContextParts: 0,
    reasoningParts: 0,
    reasoningSummaryParts: 0,
    metadataKeys: 0,
    promptCacheKey: false,
  };

  readonly options: Required<ExportOptions>;
  readonly #placeholders = new Map<string, string>();

  constructor(options: Required<ExportOptions>) {
    this.options = options;
  }

  /** The placeholder of a secret in this export: numbered by first appearance, the same for the same secret. */
  readonly name: PlaceholderNamer = (detector, secret) => {
    let placeholder = this.#placeholders.get(secret);
    if (placeholder === undefined) {
      placeholder = `[REDACTED:${detector}#${this.#placeholders.size + 1}]`;
      this.#placeholders.set(secret, placeholder);
    }
    return placeholder;
  };

  record(field: ExportField, findings: readonly RedactionFinding[]): void {
    if (findings.length === 0) return;
    this.redactions += findings.length;
    this.byField[field] = (this.byField[field] ?? 0) + findings.length;
    for (const { detector } of findings) this.byDetector[detector] = (this.byDetector[detector] ?? 0) + 1;
  }

  text(field: ExportField, value: string): string {
    if (!this.options.redact) return value;
    const result = redactText(value, this.name);
    this.record(field, result.findings);
    return result.text;
  }

  /**
   * A summary's text (a session's or a segment's), after every message: summarizers join a
   * message's parts with a space and cut lines short (the extractive one at 160 and 60
   * characters), so a secret of the session can stand in a summary split by whitespace or
   * cut off, where no detector knows it. Besides the detectors' findings, every piece of a
   * secret found elsewhere in this export is replaced by that secret's placeholder: the
   * secret with whitespace inside it, a prefix of at least {@linkcode MIN_SECRET_PIECE}
   * characters (never emitted: a cut prefix is a secret's first half), and such a suffix at
   * the start of a line (a summary trimmed at its front).
   */
  summary(field: ExportField, value: string): string {
    if (!this.options.redact) return value;
    // The detectors first: what they know whole keeps its own placeholder.
    let text = this.text(field, value);
    const findings: RedactionFinding[] = [];
    for (const [secret, placeholder] of this.#placeholders) {
      if (secret.length < MIN_SECRET_PIECE) continue;
      const detector = /^\[REDACTED:([a-z-]+)/.exec(placeholder)?.[1] as RedactionDetector;
      text = replaceSecretPieces(text, secret, placeholder, () => findings.push({ detector }));
    }
    this.record(field, findings);
    return text;
  }

  /** Texts read as one (adjacent text parts): a secret split between them is found. */
  across(field: ExportField, values: readonly string[]): string[] {
    if (!this.options.redact) return [...values];
    const result = redactAcross(values, this.name);
    this.record(field, result.findings);
    return result.texts;
  }

  json<T>(field: ExportField, value: T): T {
    if (!this.options.redact) return copyJson(value);
    const result = redactJson(value, this.name);
    this.record(field, result.findings);
    return result.value;
  }

  /** A provider / API / model identity, each name redacted. */
  identity<T extends { provider: string; api: string; model: string }>(value: T): T {
    return { ...this.json("provider_identity", value) };
  }
}

/** The shortest piece of a known secret that {@linkcode ExportTally.summary} replaces (shorter pieces are kept: too little of a secret to use, and too likely to be ordinary text). */
const MIN_SECRET_PIECE = 8;

/**
 * `text` with every piece of `secret` replaced by `placeholder`: the secret whole or a prefix
 * of at least {@linkcode MIN_SECRET_PIECE} characters, whitespace allowed between its
 * characters, anywhere; and a suffix of that length at the start of a line. `found` is
 * called once per replacement. Linear in `text` times the secret's length at worst.
 */
function replaceSecretPieces(text: string, secret: string, placeholder: string, found: () => void): string {
  let out = "";
  let i = 0;
  while (i < text.length) {
    const lineStart = i === 0 || text[i - 1] === "\n";
    const end = text[i] === secret[0] ? prefixEnd(text, i, secret) : lineStart ? suffixEnd(text, i, secret) : -1;
    if (end === -1) {
      out += text[i];
      i += 1;
      continue;
    }
    found();
    out += placeholder;
    i = end;
  }
  return out;
}

/** Where a prefix of `secret` (whitespace allowed inside) that starts at `at` ends, or -1 when it is shorter than the minimum. */
function prefixEnd(text: string, at: number, secret: string): number {
  let j = at;
  let k = 0;
  let end = at;
  while (j < text.length && k < secret.length) {
    if (text[j] === secret[k]) {
      j += 1;
      k += 1;
      end = j;
    } else if (k > 0 && /\s/.test(text[j]!)) j += 1;
    else break;
  }
  return k === secret.length || k >= MIN_SECRET_PIECE ? end : -1;
}

/** Where the longest suffix of `secret` (at least the minimum, shorter than the secret) that `text` has at `at` ends, or -1. */
function suffixEnd(text: string, at: number, secret: string): number {
  for (let length = secret.length - 1; length >= MIN_SECRET_PIECE; length -= 1) {
    if (text.startsWith(secret.slice(secret.length - length), at)) return at + length;
  }
  return -1;
}

/** A deep copy of a JSON-like value (plain objects and arrays rebuilt, other values kept). */
function copyJson<T>(value: T): T {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map(copyJson) as T;
  if (Object.getPrototypeOf(value) !== Object.prototype && Object.getPrototypeOf(value) !== null) return structuredClone(value);
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, copyJson(v)])) as T;
}

const encoder = new TextEncoder();

/** Media types whose bytes are text even when they are not valid UTF-8 (then read as Latin-1). */
function isTextMediaType(mediaType: string): boolean {
  const type = mediaType.toLowerCase().split(";")[0]!.trim();
  return (
    type.startsWith("text/") ||
    /\+(?:json|xml|yaml)$/.test(type) ||
    /^application\/(?:json|xml|yaml|x-yaml|toml|javascript|x-javascript|ecmascript|x-sh|x-shellscript|sql|graphql|x-www-form-urlencoded|x-ndjson|jsonl|x-pem-file|x-httpd-php)$/
      .test(type)
  );
}

function decodeBase64(data: string): Uint8Array | undefined {
  let binary: string;
  try {
    binary = atob(data);
  } catch {
    try {
      binary = atob(data.replace(/-/g, "+").replace(/_/g, "/"));
    } catch {
      return undefined;
    }
  }
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** Bytes as a string of the code points 0–255 (Latin-1), built in chunks to bound argument counts. */
function binaryString(bytes: Uint8Array): string {
  const parts: string[] = [];
  const chunk = 0x2000;
  for (let i = 0; i < bytes.length; i += chunk) parts.push(String.fromCharCode(...bytes.subarray(i, i + chunk)));
  return parts.join("");
}

function encodeBase64(bytes: Uint8Array): string {
  return btoa(binaryString(bytes));
}

function latin1(text: string): Uint8Array {
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i) & 0xff;
  return bytes;
}

/**
 * Redacts the text inside base64 file data: UTF-8 text of any media type, or Latin-1 text
 * of a text media type. Binary data comes back unchanged (`binary: true`).
 */
function redactBase64(tally: ExportTally, field: ExportField, data: string, mediaType: string): { data: string; binary: boolean } {
  const bytes = decodeBase64(data);
  if (bytes === undefined) {
    // Not base64 at all: treat the string itself as text.
    return { data: tally.text(field, data), binary: false };
  }
  let text: string;
  let utf8 = true;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    if (!isTextMediaType(mediaType)) return { data, binary: true };
    text = binaryString(bytes);
    utf8 = false;
  }
  const redacted = tally.text(field, text);
  if (redacted === text) return { data, binary: false };
  return { data: encodeBase64(utf8 ? encoder.encode(redacted) : latin1(redacted)), binary: false };
}

const DATA_URL = /^data:([^,;]*)((?:;[^,;]*)*?)(;base64)?,/i;

/** A file URL: a `data:` URL has its payload redacted like inline data; any other URL as text. */
function redactUrl(tally: ExportTally, url: string): string {
  const match = DATA_URL.exec(url);
  if (!match) return tally.text("file_url", url);
  const head = match[0];
  const payload = url.slice(head.length);
  if (!match[3]) return tally.text("file_url", url);
  const result = redactBase64(tally, "file_url", payload, match[1] || "text/plain");
  if (result.binary) tally.binaryFilesKept += 1;
  return head + result.data;
}

/**
 * The extension fields of a record, as deep-redacted copies: redacted together, so a value
 * under a secret-named field (`"api_key": …`) is replaced whole and field names stay apart.
 */
function extensions(tally: ExportTally, record: Record<string, unknown>, known: ReadonlySet<string>, field: ExportField): Record<string, unknown> {
  const extra = Object.fromEntries(Object.entries(record).filter(([key]) => !known.has(key)));
  if (Object.keys(extra).length === 0) return {};
  return tally.json(field, extra);
}

/** The text parts of a message and the field each reports to. */
const TEXT_FIELDS: Readonly<Record<string, ExportField>> = { text: "text", reasoning: "reasoning", "reasoning-summary": "reasoning_summary" };

/**
 * The redacted text of every text-like part of a message, by index: each run of adjacent
 * parts of one type is redacted as one text (a streamed reply splits anywhere, a secret too).
 */
function textsOf(tally: ExportTally, parts: readonly MessagePart[]): Map<number, string> {
  const out = new Map<number, string>();
  for (let i = 0; i < parts.length;) {
    const type = parts[i]!.type;
    const field = TEXT_FIELDS[type];
    let j = i + 1;
    while (j < parts.length && parts[j]!.type === type) j += 1;
    if (field && !(tally.options.dropReasoning && type !== "text")) {
      const texts = tally.across(field, parts.slice(i, j).map((p) => (p as { text: string }).text));
      texts.forEach((text, k) => out.set(i + k, text));
    }
    i = j;
  }
  return out;
}

function preparePart(tally: ExportTally, part: MessagePart, text: string | undefined): MessagePart | undefined {
  const { options } = tally;
  const raw = part as Record<string, unknown>;
  switch (part.type) {
    case "text":
      return {
        ...extensions(tally, raw, PART_FIELDS.text!, "part_extension"),
        sequence: part.sequence,
        type: "text",
        text: text ?? tally.text("text", part.text),
      };
    case "reasoning":
      if (options.dropReasoning) {
        tally.dropped.reasoningParts += 1;
        return undefined;
      }
      return {
        ...extensions(tally, raw, PART_FIELDS.reasoning!, "part_extension"),
        sequence: part.sequence,
        type: "reasoning",
        text: text ?? tally.text("reasoning", part.text),
      };
    case "reasoning-summary":
      if (options.dropReasoning) {
        tally.dropped.reasoningSummaryParts += 1;
        return undefined;
      }
      return {
        ...extensions(tally, raw, PART_FIELDS["reasoning-summary"]!, "part_extension"),
        sequence: part.sequence,
        type: "reasoning-summary",
        text: text ?? tally.text("reasoning_summary", part.text),
      };
    case "tool": {
      const out: Mutable<Extract<MessagePart, { type: "tool" }>> = {
        ...extensions(tally, raw, PART_FIELDS.tool!, "part_extension"),
        sequence: part.sequence,
        type: "tool",
        tool_call_id: tally.text("tool_call_id", part.tool_call_id),
        tool_name: tally.text("tool_name", part.tool_name),
        state: part.state,
        input: tally.json("tool_input", part.input),
      };
      if (Object.hasOwn(part, "output")) {
        if (options.dropToolOutputs) {
          out.output = OMITTED;
          tally.dropped.toolOutputs += 1;
        } else {
          out.output = tally.json("tool_output", part.output);
        }
      }
      if (part.error !== undefined) {
        if (options.dropToolOutputs) {
          out.error = OMITTED;
          tally.dropped.toolErrors += 1;
        } else {
          out.error = tally.text("tool_error", part.error);
        }
      }
      return out;
    }
    case "file": {
      const out: Mutable<Extract<MessagePart, { type: "file" }>> = {
        ...extensions(tally, raw, PART_FIELDS.file!, "part_extension"),
        sequence: part.sequence,
        type: "file",
        media_type: tally.text("media_type", part.media_type),
      };
      if (part.name !== undefined) out.name = tally.text("file_name", part.name);
      const dataUrl = part.url !== undefined && /^data:/i.test(part.url);
      if (part.url !== undefined) {
        if (options.dropFileData && dataUrl) tally.dropped.fileData += 1;
        else out.url = options.redact ? redactUrl(tally, part.url) : part.url;
      }
      if (part.data !== undefined) {
        if (options.dropFileData) {
          tally.dropped.fileData += 1;
        } else if (options.redact) {
          const result = redactBase64(tally, "file_data", part.data, part.media_type);
          if (result.binary) tally.binaryFilesKept += 1;
          out.data = result.data;
        } else {
          out.data = part.data;
        }
      }
      if (out.data === undefined && out.url === undefined) {
        // Only inline data, dropped: a readable note instead of an empty file.
        const name = out.name !== undefined ? `${out.name} ` : "";
        return { sequence: part.sequence, type: "text", text: `[file omitted: ${name}(${out.media_type})]` };
      }
      return out;
    }
    case "provider-context":
      if (options.dropProviderContext) {
        tally.dropped.providerContextParts += 1;
        return undefined;
      }
      return {
        ...extensions(tally, raw, PART_FIELDS["provider-context"]!, "part_extension"),
        sequence: part.sequence,
        type: "provider-context",
        ...tally.identity({ provider: part.provider, api: part.api, model: part.model }),
        data: tally.json("provider_context", part.data),
      };
    default: {
      // Not a part type of docs/FORMAT.md (an invalid record): every field but the structure is content.
      const { sequence, type, ...rest } = raw;
      return { ...tally.json("part_extension", rest), sequence, type } as MessagePart;
    }
  }
}

/** A user message that stands for a later system prompt (Rho `System` entry after a reset). */
function isSystemMessage(message: MessageRecord): boolean {
  const extension = (message as Record<string, unknown>)[RHO_EXTENSION_FIELD];
  return message.role === "user" && typeof extension === "object" && extension !== null && (extension as { entry?: unknown }).entry === "System";
}

function prepareMessage(tally: ExportTally, message: MessageRecord): MessageRecord {
  const parts: MessagePart[] = [];
  const texts = textsOf(tally, message.parts);
  message.parts.forEach((part, i) => {
    const prepared = preparePart(tally, part, texts.get(i));
    if (prepared) parts.push(prepared);
  });
  const out: Mutable<MessageRecord> = {
    ...extensions(tally, message as Record<string, unknown>, MESSAGE_FIELDS, "message_extension"),
    record_type: message.record_type,
    sequence: message.sequence,
    message_id: tally.text("message_id", message.message_id),
    role: message.role,
    created_at: tally.text("timestamp", message.created_at),
    parts,
  };
  if (message.status !== undefined) out.status = message.status;
  if (message.usage !== undefined) out.usage = tally.json("usage", message.usage);
  if (message.provider !== undefined) out.provider = tally.identity(message.provider);
  return out;
}

function normalize(options: ExportOptions): Required<ExportOptions> {
  return {
    redact: options.redact === true,
    dropSystemPrompt: options.dropSystemPrompt === true,
    dropToolOutputs: options.dropToolOutputs === true,
    dropFileData: options.dropFileData === true,
    dropProviderContext: options.dropProviderContext === true,
    dropMetadata: options.dropMetadata === true,
    dropReasoning: options.dropReasoning === true,
  };
}

/**
 * Applies export options to a session and returns a new {@linkcode PortableSession} (the
 * input and everything inside it are left untouched) with a report of what was redacted
 * and dropped. Hand the result to any writer of `core/formats`.
 *
 * @example
 * ```ts
 * import { Session, writeDeepCodeV1 } from "sessionfold";
 * declare const session: Session;
 *
 * const portable = await session.exportPortable();
 * const { session: safe, report } = prepareExport(portable, { redact: true, dropToolOutputs: true });
 * const jsonl = writeDeepCodeV1(safe);
 * console.log(`${report.redactions} secrets redacted`, report.byDetector);
 * ```
 * @throws {LimitExceededError} when a JSON value inside the session is nested more than `MAX_JSON_DEPTH` (512) levels deep.
 */
export function prepareExport(session: PortableSession, options: ExportOptions = {}): { session: PortableSession; report: ExportReport } {
  const tally = new ExportTally(normalize(options));
  const { options: o } = tally;
  const out: Mutable<PortableSession> & Record<string, unknown> = {
    ...extensions(tally, session as unknown as Record<string, unknown>, SESSION_FIELDS, "session_extension"),
    messages: [],
  };
  if (session.sourceId !== undefined) out.sourceId = tally.text("source_id", session.sourceId);
  if (session.title !== undefined) out.title = tally.text("title", session.title);
  if (session.createdAt !== undefined) out.createdAt = tally.text("timestamp", session.createdAt);
  if (session.updatedAt !== undefined) out.updatedAt = tally.text("timestamp", session.updatedAt);
  if (session.modelLabel !== undefined) out.modelLabel = tally.text("model_label", session.modelLabel);
  if (session.revision !== undefined) out.revision = session.revision;
  if (session.system !== undefined) {
    if (o.dropSystemPrompt) {
      out.system = null;
      tally.dropped.systemPrompt = session.system !== null && session.system !== "";
    } else {
      out.system = session.system === null ? null : tally.text("system", session.system);
    }
  }
  const messages: MessageRecord[] = [];
  /** How many messages are kept up to each 1-based index: a segment boundary moves with the messages removed before it. */
  const keptThrough: number[] = [0];
  for (const message of session.messages) {
    if (o.dropSystemPrompt && isSystemMessage(message)) {
      tally.dropped.systemMessages += 1;
    } else {
      messages.push(prepareMessage(tally, message));
    }
    keptThrough.push(messages.length);
  }
  out.messages = messages;
  // Summaries after the messages: ExportTally.summary replaces the pieces of the secrets found in them.
  if (session.summary !== undefined) out.summary = tally.summary("summary", session.summary);
  if (session.segments !== undefined) {
    out.segments = session.segments.map((segment) => ({
      through: keptThrough[segment.through] ?? segment.through,
      summary: tally.summary("segment_summary", segment.summary),
      ...(segment.createdAt !== undefined ? { createdAt: tally.text("timestamp", segment.createdAt) } : {}),
    }));
  }
  if (session.provider !== undefined) out.provider = tally.identity(session.provider);
  if (session.compaction !== undefined) out.compaction = tally.json("compaction", session.compaction);
  if (session.metadata !== undefined) {
    if (o.dropMetadata) tally.dropped.metadataKeys = Object.keys(session.metadata).length;
    else out.metadata = tally.json("metadata", session.metadata);
  }
  if (session.promptCacheKey !== undefined) {
    if (o.dropMetadata) tally.dropped.promptCacheKey = true;
    else out.promptCacheKey = tally.text("prompt_cache_key", session.promptCacheKey);
  }
  if (session.cwd !== undefined) out.cwd = tally.text("cwd", session.cwd);
  if (session.format !== undefined) out.format = tally.text("format", session.format);
  const report: ExportReport = {
    options: o,
    redactions: tally.redactions,
    byDetector: tally.byDetector,
    byField: tally.byField,
    dropped: tally.dropped,
    binaryFilesKept: tally.binaryFilesKept,
  };
  return { session: out, report };
}
