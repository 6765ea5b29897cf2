/**
 * The redaction audit's session (see redaction-audit.test.ts): a different planted secret of
 * every kind in every field a writer can emit, the export paths to look into, the leak check,
 * and the control table of which planted fields each writer carries. Shared with the CLI's
 * audit of `export --redact` for every `--to`. Not a test file itself.
 */
import { MemoryStorage, type MessagePart, type MessageRecord, type PortableSession, Sessions } from "../../core/mod.ts";
import * as formats from "../../core/formats/mod.ts";
import { ALNUM, BASE64, BASE64URL, findLeaks, plantAll, SecretFactory } from "./secrets.ts";
import { base64Of, PNG_1X1, readableViews, TS } from "./support.ts";

/** The fields that receive secrets. Each gets its own seed, so every field's secrets differ. */
export const FIELDS = [
  "system",
  "laterSystem",
  "title",
  "modelLabel",
  "summary",
  "segmentSummary",
  "metadata",
  "promptCacheKey",
  "cwd",
  "sourceId",
  "messageId",
  "userText",
  "splitText",
  "assistantText",
  "stoppedText",
  "reasoning",
  "reasoningSummary",
  "toolCallId",
  "toolName",
  "toolInput",
  "toolOutput",
  "toolOutputString",
  "toolError",
  "fileName",
  "fileUrl",
  "fileData",
  "dataUrl",
  "mediaType",
  "providerContext",
  "contextKind",
  "model",
  "extension",
  "partialToolCall",
  "partExtension",
] as const;
export type Field = (typeof FIELDS)[number];

/** Fields that hold one token-like value (an id, a name): planted as a single secret inside a plausible value. */
const TOKEN_FIELDS: ReadonlySet<Field> = new Set(["sourceId", "messageId", "toolCallId", "toolName", "mediaType", "model"]);

interface Plant {
  /** All kinds in one readable block (or, for a token field, the value holding its secret). */
  text: string;
  /** Raw secrets (no context): used as values under secret-named keys and as JSON keys. */
  raw: string[];
  /** Every sensitive string planted in this field, for the leak check. */
  secrets: string[];
}

function plant(field: Field): Plant {
  const seed = 1000 + FIELDS.indexOf(field) * 17;
  const f = new SecretFactory(seed + 1);
  const raw = [f.pick(ALNUM + "!*_", 24), f.pick(BASE64, 40), `ghp_${f.pick(ALNUM, 36)}`];
  if (field === "splitText") {
    // Short and plain: found only with the context the part before it holds (`password=`).
    const password = f.pick("abcdefghijklmnopqrstuvwxyz0123456789", 14);
    return { text: password, raw, secrets: [password] };
  }
  if (TOKEN_FIELDS.has(field)) {
    const token = `sk-proj-${f.pick(BASE64URL, 48)}`;
    return { text: token, raw, secrets: [token] };
  }
  const planted = plantAll(seed);
  return { text: planted.map((p) => `Note about ${p.kind}: ${p.text}`).join("\n"), raw, secrets: [...planted.flatMap((p) => p.secrets), ...raw] };
}

export const PLANTS = Object.fromEntries(FIELDS.map((field) => [field, plant(field)])) as Record<Field, Plant>;
export const token = (field: Field) => PLANTS[field].text;

/** A JSON value with the field's secrets nested: in text, under secret-named keys, as a key. */
function nested(field: Field): Record<string, unknown> {
  const { text, raw } = PLANTS[field];
  return {
    command: text,
    env: { DB_PASSWORD: raw[0], AWS_SECRET_ACCESS_KEY: raw[1], headers: { Authorization: `token ${raw[2]}` } },
    deep: { a: [{ b: { c: [text] } }], count: 3 },
    [raw[2]!]: "a key that is itself a secret",
    credentials: { user: "alice", secret: raw[0] },
  };
}

const provider = { provider: "anthropic", api: "messages", model: `claude-${token("model")}` };

/** The split secret: a password whose name ends one streamed text part and whose value starts the next. */
const SPLIT = PLANTS.splitText.secrets[0]!;

/** The audit session: every field planted with its own secrets. */
export function auditSession(): PortableSession {
  const p = PLANTS;
  const user: MessageRecord = {
    record_type: "message",
    sequence: 1,
    message_id: `msg_${token("messageId")}`,
    role: "user",
    created_at: TS,
    parts: [
      { sequence: 1, type: "text", text: p.userText.text },
      { sequence: 2, type: "file", media_type: "text/plain", name: p.fileName.text, data: base64Of(p.fileData.text) },
      { sequence: 3, type: "file", media_type: "text/markdown", url: `data:text/markdown;base64,${base64Of(p.dataUrl.text)}` },
      { sequence: 4, type: "file", media_type: `image/png;name=${token("mediaType")}`, name: "pixel.png", data: PNG_1X1 },
    ],
  };
  const answer: MessageRecord = {
    record_type: "message",
    sequence: 2,
    message_id: "m2",
    role: "assistant",
    created_at: TS,
    status: "completed",
    provider,
    parts: [
      { sequence: 1, type: "text", text: "connect with the database password=" },
      { sequence: 2, type: "text", text: `${SPLIT} and nothing else` },
    ],
  };
  const step = {
    record_type: "message",
    sequence: 3,
    message_id: "m3",
    role: "assistant",
    created_at: TS,
    status: "completed",
    provider,
    usage: { input_tokens: 10, output_tokens: 5 },
    parts: [
      { sequence: 1, type: "reasoning", text: p.reasoning.text },
      { sequence: 2, type: "reasoning-summary", text: p.reasoningSummary.text },
      { sequence: 3, type: "text", text: p.assistantText.text, annotations: nested("partExtension") },
      {
        sequence: 4,
        type: "tool",
        tool_call_id: `call_${token("toolCallId")}`,
        tool_name: `lookup_${token("toolName")}`,
        state: "output-available",
        input: nested("toolInput"),
        output: nested("toolOutput"),
      },
      {
        sequence: 5,
        type: "tool",
        tool_call_id: "call_b",
        tool_name: "read",
        state: "output-available",
        input: { path: "x" },
        output: p.toolOutputString.text,
      },
      { sequence: 6, type: "tool", tool_call_id: "call_c", tool_name: "bash", state: "output-error", input: { command: "env" }, error: p.toolError.text },
      {
        sequence: 7,
        type: "file",
        media_type: "application/pdf",
        name: "report.pdf",
        url: `https://files.example.com/report.pdf?access_token=${p.fileUrl.raw[0]}&sig=${encodeURIComponent(p.fileUrl.raw[1]!)}&t=${p.fileUrl.raw[2]}`,
      },
      { sequence: 8, type: "file", media_type: "text/plain", url: p.fileUrl.text },
      {
        sequence: 9,
        type: "provider-context",
        ...provider,
        kind: p.contextKind.text,
        data: { ...nested("providerContext"), signature: p.providerContext.raw[1] },
      },
    ] as MessagePart[],
    rho: { portable_fallback: p.extension.text },
  } as MessageRecord;
  const stopped = {
    record_type: "message",
    sequence: 4,
    message_id: "m4",
    role: "assistant",
    created_at: TS,
    status: "stopped",
    provider,
    parts: [{ sequence: 1, type: "text", text: p.stoppedText.text }],
    rho: { partial_tool_calls: [{ id: "call_d", name: "http", arguments: JSON.stringify(nested("partialToolCall")) }] },
  } as MessageRecord;
  const laterSystem = {
    record_type: "message",
    sequence: 5,
    message_id: "m5",
    role: "user",
    created_at: TS,
    parts: [{ sequence: 1, type: "text", text: p.laterSystem.text }],
    rho: { entry: "System" },
  } as MessageRecord;
  return {
    sourceId: `session-${token("sourceId")}`,
    title: p.title.text,
    createdAt: TS,
    updatedAt: TS,
    modelLabel: p.modelLabel.text,
    revision: 3,
    system: p.system.text,
    messages: [user, answer, step, stopped, laterSystem],
    summary: p.summary.text,
    segments: [{ through: 2, summary: p.segmentSummary.text, createdAt: TS }],
    provider,
    metadata: { notes: p.metadata.text, [p.metadata.raw[2]!]: "key", api_key: p.metadata.raw[0]!, owner: p.metadata.raw[1]! },
    promptCacheKey: p.promptCacheKey.text,
    cwd: p.cwd.text,
    format: "sessionfold",
  };
}

export type Output = { name: string; bytes: Uint8Array | string };
type Writer = (session: PortableSession) => Uint8Array;

/** Every writer core/formats exports (`write…`), so a writer added later is audited too. */
export const WRITERS = Object.entries(formats)
  .filter((entry): entry is [string, Writer] => entry[0].startsWith("write") && typeof entry[1] === "function")
  .sort(([a], [b]) => a.localeCompare(b));

/** prepareExport's own JSON, then each writer's output. */
export const PORTABLE_JSON = "prepareExport JSON";

/** Every export path of a prepared session: its own JSON (first), then each writer. */
export function outputsOf(session: PortableSession): Output[] {
  return [{ name: PORTABLE_JSON, bytes: JSON.stringify(session) }, ...WRITERS.map(([name, write]) => ({ name, bytes: write(session) }))];
}

export function secretsOf(fields: readonly Field[] = FIELDS): { label: string; value: string }[] {
  return fields.flatMap((field) => PLANTS[field].secrets.map((value, i) => ({ label: `${field}#${i}`, value })));
}

export function leaksIn(output: Output, fields?: readonly Field[]): string[] {
  return findLeaks(readableViews(output.bytes), secretsOf(fields)).map((leak) => `${leak.label} (${JSON.stringify(leak.window)})`);
}

/** The planted fields whose secrets an output holds. */
export function carried(output: Output): Field[] {
  const leaked = new Set(leaksIn(output).map((leak) => leak.slice(0, leak.indexOf("#"))));
  return FIELDS.filter((field) => leaked.has(field));
}

/**
 * The control table: which planted fields each output carries when nothing is redacted.
 * A field missing from a writer's row has no place in that format (the reason is given),
 * so the writer cannot leak it; a writer without a row fails the audit until it gets one.
 */
export const NOT_CARRIED: Record<string, Partial<Record<Field, string>>> = {
  [PORTABLE_JSON]: {},
  writeDeepCodeV1: {
    system: "DeepCode v1 has no system prompt",
    summary: "DeepCode v1 has no summary (the full history is written)",
    segmentSummary: "DeepCode v1 has no compaction record",
    metadata: "DeepCode v1 has no metadata",
    promptCacheKey: "DeepCode v1 has no prompt-cache key",
    messageId: "DeepCode v1 messages have no id",
    fileName: "DeepCode v1 has no file blocks",
    fileUrl: "DeepCode v1 has no file blocks",
    fileData: "DeepCode v1 has no file blocks",
    dataUrl: "DeepCode v1 has no file blocks",
    mediaType: "DeepCode v1 has no file blocks",
    providerContext: "DeepCode v1 has no provider-context blocks",
    contextKind: "DeepCode v1 has no provider-context blocks",
    model: "DeepCode v1 writes one model, the model label when there is one",
    extension: "DeepCode v1 has no portable fallback",
    partialToolCall: "DeepCode v1 has no partial tool calls",
    partExtension: "DeepCode v1 blocks carry no extension fields",
  },
  writePi: {
    system: "pi takes its own system prompt",
    modelLabel: "pi records the model of each assistant message, not a label",
    summary: "pi has the segment summaries as compaction entries, not a separate latest summary",
    metadata: "pi has no metadata",
    promptCacheKey: "pi has no prompt-cache key",
    messageId: "pi entries get pi's own ids",
    fileName: "pi images have no name",
    fileUrl: "pi holds only inline images",
    fileData: "pi holds only inline images",
    dataUrl: "pi holds only inline images",
    providerContext: "pi has no provider-context blocks",
    contextKind: "pi has no provider-context blocks",
    extension: "pi has no portable fallback",
    partialToolCall: "pi has no partial tool calls",
    partExtension: "pi blocks carry no extension fields",
  },
  writeRhoSnapshot: {
    modelLabel: "a Rho snapshot has no model label",
    summary: "a Rho snapshot writes the full history, not a summary",
    segmentSummary: "a Rho snapshot has no compaction record in its history (a summary entry would enter the model context)",
    cwd: "a Rho snapshot has no working directory",
    messageId: "Rho entries have no id",
    reasoning: "raw reasoning is never written to a Rho snapshot",
    fileName: "Rho images have no name",
    fileUrl: "Rho holds only inline images",
    fileData: "Rho holds only inline images",
    dataUrl: "Rho holds only inline images",
    partExtension: "Rho blocks carry no extension fields",
  },
};

export function expectedCarried(output: string): Field[] {
  const missing = NOT_CARRIED[output];
  if (!missing) throw new Error(`${output} has no row in the audit's control table: add which planted fields it has no place for`);
  return FIELDS.filter((field) => !(field in missing));
}

export async function viaRealSession(portable: PortableSession): Promise<PortableSession> {
  const sessions = new Sessions({ storage: new MemoryStorage(), clock: () => Date.parse(TS) });
  const session = await sessions.importPortable("a1/w1/audit", portable);
  return session.exportPortable();
}
