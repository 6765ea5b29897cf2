/**
 * The redaction audit (seed 004: "Run the redaction audit procedure against any persistence
 * adapter or export path"). A session carries a DIFFERENT planted secret of every kind in
 * EVERY field — each message's text, raw reasoning, reasoning summary, tool input and output
 * (nested, under secret-named keys and as keys), tool error, file name, file URL, text file
 * data (base64), provider-context data (nested) and kind, extension fields of messages and
 * parts (Rho's portable fallback and partial tool calls, a host's annotations), the system prompt (and a
 * later Rho system message), title, model label, summary, metadata, prompt-cache key and
 * cwd. It is exported with `redact: true` through every path — prepareExport's own JSON,
 * every writer of core/formats, and a real sessionfold session (Sessions + MemoryStorage +
 * importPortable + exportPortable) — and no planted secret, nor any 12-char piece of one,
 * may appear anywhere in the output: raw bytes, JSON strings with escapes undone, JSON
 * nested inside strings, or base64 decoded. A control run without redaction shows the audit
 * can see each field. Then each drop flag is shown to remove its data from every format.
 */
import { describe, expect, it } from "vitest";
import { MemoryStorage, Sessions, type MessagePart, type MessageRecord, type PortableSession } from "../../core/mod.ts";
import * as formats from "../../core/formats/mod.ts";
import { prepareExport, type ExportOptions } from "../../core/export/mod.ts";
import { ALNUM, BASE64, findLeaks, plantAll, SecretFactory } from "./secrets.ts";
import { base64Of, MARKERS, PNG_1X1, readableViews, sessionWith, TS } from "./support.ts";

/** The fields that receive secrets. Each gets its own seed, so every field's secrets differ. */
const FIELDS = [
  "system",
  "laterSystem",
  "title",
  "modelLabel",
  "summary",
  "metadata",
  "promptCacheKey",
  "cwd",
  "userText",
  "assistantText",
  "stoppedText",
  "reasoning",
  "reasoningSummary",
  "toolInput",
  "toolOutput",
  "toolOutputString",
  "toolError",
  "fileName",
  "fileUrl",
  "fileData",
  "dataUrl",
  "providerContext",
  "extension",
  "partialToolCall",
  "partExtension",
  "contextKind",
] as const;
type Field = (typeof FIELDS)[number];

interface Plant {
  /** All kinds in one readable block. */
  text: string;
  /** Raw secrets (no context): used as values under secret-named keys and as JSON keys. */
  raw: string[];
  /** Every sensitive string planted in this field, for the leak check. */
  secrets: string[];
}

function plant(field: Field): Plant {
  const seed = 1000 + FIELDS.indexOf(field) * 17;
  const planted = plantAll(seed);
  const f = new SecretFactory(seed + 1);
  const raw = [f.pick(ALNUM + "!*_", 24), f.pick(BASE64, 40), `ghp_${f.pick(ALNUM, 36)}`];
  return {
    text: planted.map((p) => `Note about ${p.kind}: ${p.text}`).join("\n"),
    raw,
    secrets: [...planted.flatMap((p) => p.secrets), ...raw],
  };
}

const PLANTS = Object.fromEntries(FIELDS.map((field) => [field, plant(field)])) as Record<Field, Plant>;

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

const provider = { provider: "anthropic", api: "messages", model: "claude-x" };

/** The audit session: every field planted with its own secrets. */
function auditSession(): PortableSession {
  const p = PLANTS;
  const user: MessageRecord = {
    record_type: "message",
    sequence: 1,
    message_id: "m1",
    role: "user",
    created_at: TS,
    parts: [
      { sequence: 1, type: "text", text: p.userText.text },
      { sequence: 2, type: "file", media_type: "text/plain", name: p.fileName.text, data: base64Of(p.fileData.text) },
      { sequence: 3, type: "file", media_type: "text/markdown", url: `data:text/markdown;base64,${base64Of(p.dataUrl.text)}` },
      { sequence: 4, type: "file", media_type: "image/png", name: "pixel.png", data: PNG_1X1 },
    ],
  };
  const step = {
    record_type: "message",
    sequence: 2,
    message_id: "m2",
    role: "assistant",
    created_at: TS,
    status: "completed",
    provider,
    usage: { input_tokens: 10, output_tokens: 5 },
    parts: [
      { sequence: 1, type: "reasoning", text: p.reasoning.text },
      { sequence: 2, type: "reasoning-summary", text: p.reasoningSummary.text },
      { sequence: 3, type: "text", text: p.assistantText.text, annotations: nested("partExtension") },
      { sequence: 4, type: "tool", tool_call_id: "call_a", tool_name: "http", state: "output-available", input: nested("toolInput"), output: nested("toolOutput") },
      { sequence: 5, type: "tool", tool_call_id: "call_b", tool_name: "read", state: "output-available", input: { path: "x" }, output: p.toolOutputString.text },
      { sequence: 6, type: "tool", tool_call_id: "call_c", tool_name: "bash", state: "output-error", input: { command: "env" }, error: p.toolError.text },
      { sequence: 7, type: "file", media_type: "application/pdf", name: "report.pdf", url: `https://files.example.com/report.pdf?access_token=${p.fileUrl.raw[0]}&sig=${encodeURIComponent(p.fileUrl.raw[1]!)}&t=${p.fileUrl.raw[2]}` },
      { sequence: 8, type: "file", media_type: "text/plain", url: p.fileUrl.text },
      { sequence: 9, type: "provider-context", ...provider, kind: p.contextKind.text, data: { ...nested("providerContext"), signature: p.providerContext.raw[1] } },
    ] as MessagePart[],
    rho: { portable_fallback: p.extension.text },
  } as MessageRecord;
  const stopped = {
    record_type: "message",
    sequence: 3,
    message_id: "m3",
    role: "assistant",
    created_at: TS,
    status: "stopped",
    provider,
    parts: [{ sequence: 1, type: "text", text: p.stoppedText.text }],
    rho: { partial_tool_calls: [{ id: "call_d", name: "http", arguments: JSON.stringify(nested("partialToolCall")) }] },
  } as MessageRecord;
  const laterSystem = {
    record_type: "message",
    sequence: 4,
    message_id: "m4",
    role: "user",
    created_at: TS,
    parts: [{ sequence: 1, type: "text", text: p.laterSystem.text }],
    rho: { entry: "System" },
  } as MessageRecord;
  return {
    sourceId: "audit",
    title: p.title.text,
    createdAt: TS,
    updatedAt: TS,
    modelLabel: p.modelLabel.text,
    revision: 3,
    system: p.system.text,
    messages: [user, step, stopped, laterSystem],
    summary: p.summary.text,
    provider,
    metadata: { notes: p.metadata.text, [p.metadata.raw[2]!]: "key", api_key: p.metadata.raw[0]!, owner: p.metadata.raw[1]! },
    promptCacheKey: p.promptCacheKey.text,
    cwd: p.cwd.text,
    format: "sessionfold",
  };
}

type Output = { name: string; bytes: Uint8Array | string };
type Writer = (session: PortableSession) => Uint8Array;

/** Every writer core/formats exports (`write…`), so a writer added later is audited too. */
const WRITERS = Object.entries(formats)
  .filter((entry): entry is [string, Writer] => entry[0].startsWith("write") && typeof entry[1] === "function")
  .sort(([a], [b]) => a.localeCompare(b));

/** Every export path of a prepared session: its own JSON (first), then each writer. */
function outputsOf(session: PortableSession, label: string): Output[] {
  return [{ name: `${label} prepareExport JSON`, bytes: JSON.stringify(session) }, ...WRITERS.map(([name, write]) => ({ name: `${label} ${name}`, bytes: write(session) }))];
}

function secretsOf(fields: readonly Field[] = FIELDS): { label: string; value: string }[] {
  return fields.flatMap((field) => PLANTS[field].secrets.map((value, i) => ({ label: `${field}#${i}`, value })));
}

function leaksIn(output: Output, fields?: readonly Field[], views = readableViews(output.bytes)): string[] {
  return findLeaks(views, secretsOf(fields)).map((leak) => `${leak.label} (${JSON.stringify(leak.window)})`);
}

async function viaRealSession(portable: PortableSession): Promise<PortableSession> {
  const sessions = new Sessions({ storage: new MemoryStorage(), clock: () => Date.parse(TS) });
  const session = await sessions.importPortable("a1/w1/audit", portable);
  return session.exportPortable();
}

describe("redaction audit: no planted secret leaves, through any export path", () => {
  it("audits every writer of core/formats", () => {
    expect(WRITERS.map(([name]) => name)).toEqual(expect.arrayContaining(["writeDeepCodeV1", "writeRhoSnapshot"]));
  });

  it("plants different secrets in every field (the audit's own sanity)", () => {
    const all = secretsOf();
    expect(new Set(all.map((s) => s.value)).size).toBe(all.length);
    expect(FIELDS.length).toBeGreaterThanOrEqual(20);
  });

  it.each(outputsOf(prepareExport(auditSession(), { redact: true }).session, "portable"))("$name", (output) => {
    expect(leaksIn(output)).toEqual([]);
  });

  it("a real session (importPortable → exportPortable → prepareExport) leaks nothing through any writer", async () => {
    const exported = await viaRealSession(auditSession());
    // The round trip keeps what a sessionfold session stores (the audit would be empty otherwise).
    expect(exported.title).toBe(PLANTS.title.text);
    expect(exported.system).toBe(PLANTS.system.text);
    expect(exported.cwd).toBe(PLANTS.cwd.text);
    expect(exported.promptCacheKey).toBe(PLANTS.promptCacheKey.text);
    const { session } = prepareExport(exported, { redact: true });
    for (const output of outputsOf(session, "real session")) expect(leaksIn(output), output.name).toEqual([]);
  });

  it("also with every drop flag on top of redaction", () => {
    const options: ExportOptions = { redact: true, dropSystemPrompt: true, dropToolOutputs: true, dropFileData: true, dropProviderContext: true, dropMetadata: true, dropReasoning: true };
    for (const output of outputsOf(prepareExport(auditSession(), options).session, "all flags")) expect(leaksIn(output), output.name).toEqual([]);
  });

  describe("control: without redaction the audit sees the secrets of each field a format writes", () => {
    const unredacted = outputsOf(prepareExport(auditSession(), {}).session, "unredacted");
    const carried = (output: Output): Field[] => {
      const leaked = new Set(leaksIn(output).map((leak) => leak.slice(0, leak.indexOf("#"))));
      return FIELDS.filter((field) => leaked.has(field));
    };

    it("prepareExport's JSON carries every field", () => {
      expect(carried(unredacted[0]!)).toEqual([...FIELDS]);
    });

    it("DeepCode v1 carries messages, reasoning, tools, title, model and cwd", () => {
      expect(carried(unredacted.find((o) => o.name.endsWith("writeDeepCodeV1"))!)).toEqual(
        expect.arrayContaining(["title", "modelLabel", "cwd", "userText", "assistantText", "stoppedText", "reasoning", "reasoningSummary", "toolInput", "toolOutput", "toolOutputString", "toolError", "laterSystem"]),
      );
    });

    it("a Rho snapshot carries system prompts, messages, summaries, tools, provider context, extensions and metadata", () => {
      expect(carried(unredacted.find((o) => o.name.endsWith("writeRhoSnapshot"))!)).toEqual(
        expect.arrayContaining(["system", "laterSystem", "metadata", "promptCacheKey", "userText", "assistantText", "stoppedText", "reasoningSummary", "toolInput", "toolOutput", "toolOutputString", "toolError", "providerContext", "contextKind", "extension", "partialToolCall"]),
      );
    });
  });
});

describe("redaction audit: each drop flag removes its data from every format", () => {
  const cases: [keyof ExportOptions, string[]][] = [
    ["dropSystemPrompt", ["SYSTEM-MARKER"]],
    ["dropToolOutputs", ["TOOL-OUTPUT-MARKER", "TOOL-ERROR-MARKER"]],
    ["dropFileData", ["FILE-DATA-MARKER", PNG_1X1, base64Of(MARKERS.fileText)]],
    ["dropProviderContext", ["PROVIDER-CONTEXT-MARKER"]],
    ["dropMetadata", ["METADATA-MARKER", "CACHE-KEY-MARKER"]],
    ["dropReasoning", ["REASONING-MARKER", "REASONING-SUMMARY-MARKER"]],
  ];
  const seen = (output: Output, marker: string): boolean => readableViews(output.bytes).some((view) => view.includes(marker));

  it.each(cases)("%s", (flag, markers) => {
    const without = outputsOf(prepareExport(sessionWith(), {}).session, "kept");
    const withFlag = outputsOf(prepareExport(sessionWith(), { [flag]: true }).session, flag);
    for (const marker of markers) {
      // The portable JSON always carries the data when the flag is off (the marker is real) …
      expect(seen(without[0]!, marker), `${marker} without ${flag}`).toBe(true);
      // … and no output has it with the flag on.
      for (const output of withFlag) expect(seen(output, marker), `${marker} in ${output.name}`).toBe(false);
    }
  });

  it("every format still carries the data the flag does not cover", () => {
    const outputs = outputsOf(prepareExport(sessionWith(), { dropFileData: true, dropProviderContext: true }).session, "other");
    for (const output of outputs) {
      expect(seen(output, "USER-TEXT-MARKER"), output.name).toBe(true);
      expect(seen(output, "TOOL-OUTPUT-MARKER"), output.name).toBe(true);
    }
  });
});
