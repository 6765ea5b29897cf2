/**
 * prepareExport: a new session every time (the input is never touched), each drop flag on
 * its own, redaction of every field including text inside base64 file data, and a report
 * that counts without repeating any secret.
 */
import { describe, expect, it } from "vitest";
import { MessageRecord, type PortableSession } from "../../core/mod.ts";
import { type ExportOptions, OMITTED, prepareExport } from "../../core/export/mod.ts";
import { ALNUM, plantedText, SecretFactory } from "./secrets.ts";
import { base64Of, deepFreeze, MARKERS, PNG_1X1, sessionWith, textOfBase64 } from "./support.ts";

const f = new SecretFactory(777);

function partsOf(session: PortableSession): Record<string, unknown>[] {
  return session.messages.flatMap((m) => m.parts as unknown as Record<string, unknown>[]);
}

function collectObjects(value: unknown, out = new Set<object>()): Set<object> {
  if (value !== null && typeof value === "object") {
    out.add(value);
    for (const item of Object.values(value)) collectObjects(item, out);
  }
  return out;
}

describe("prepareExport without options", () => {
  it("returns an equal session made of new objects", () => {
    const input = sessionWith();
    const { session, report } = prepareExport(input, {});
    expect(session).toEqual(input);
    const inputObjects = collectObjects(input);
    for (const object of collectObjects(session)) expect(inputObjects.has(object)).toBe(false);
    expect(report.redactions).toBe(0);
    expect(report.dropped).toEqual({
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
    });
  });

  it("treats a missing options argument as no options", () => {
    expect(prepareExport(sessionWith()).session).toEqual(sessionWith());
  });
});

describe("prepareExport never mutates its input", () => {
  const all: ExportOptions = {
    redact: true,
    dropSystemPrompt: true,
    dropToolOutputs: true,
    dropFileData: true,
    dropProviderContext: true,
    dropMetadata: true,
    dropReasoning: true,
  };
  const combos: [string, ExportOptions][] = [
    ["none", {}],
    ["redact", { redact: true }],
    ...Object.keys(all).map((key): [string, ExportOptions] => [key, { [key]: true }]),
    ["all", all],
  ];

  it.each(combos)("%s", (_name, options) => {
    const planted = plantedText(31);
    const input = sessionWith({
      userText: planted.text,
      toolOutput: planted.text,
      fileText: planted.text,
      providerContext: planted.text,
      metadataValue: planted.text,
    });
    const before = JSON.stringify(input);
    deepFreeze(input);
    prepareExport(input, options);
    expect(JSON.stringify(input)).toBe(before);
  });
});

describe("drop flags", () => {
  it("dropSystemPrompt: system becomes null and later system messages are removed", () => {
    const { session, report } = prepareExport(sessionWith(), { dropSystemPrompt: true });
    expect(session.system).toBeNull();
    expect(session.messages.map((m) => m.message_id)).toEqual(["m_user", "m_step", "m_answer"]);
    expect(JSON.stringify(session)).not.toContain("SYSTEM-MARKER");
    expect(report.dropped.systemPrompt).toBe(true);
    expect(report.dropped.systemMessages).toBe(1);
  });

  it("dropToolOutputs: outputs and errors become the marker, calls and states stay", () => {
    const { session, report } = prepareExport(sessionWith(), { dropToolOutputs: true });
    const tools = partsOf(session).filter((p) => p.type === "tool");
    expect(tools).toEqual([
      expect.objectContaining({
        tool_call_id: "call_1",
        state: "output-available",
        output: OMITTED,
        input: partsOf(sessionWith()).find((p) => p.tool_call_id === "call_1")!.input,
      }),
      expect.objectContaining({ tool_call_id: "call_2", state: "output-error", error: OMITTED }),
    ]);
    const text = JSON.stringify(session);
    expect(text).not.toContain("TOOL-OUTPUT-MARKER");
    expect(text).not.toContain("TOOL-ERROR-MARKER");
    expect(text).toContain("TOOL-INPUT-MARKER");
    expect(report.dropped).toMatchObject({ toolOutputs: 1, toolErrors: 1 });
  });

  it("dropFileData: inline data and data: URLs go, remote URLs stay, data-only files become a note", () => {
    const input = sessionWith();
    const withDataUrl: PortableSession = {
      ...input,
      messages: [
        ...input.messages,
        {
          record_type: "message",
          sequence: 5,
          message_id: "m_dataurl",
          role: "user",
          created_at: input.messages[0]!.created_at,
          parts: [{ sequence: 1, type: "file", media_type: "text/plain", url: `data:text/plain;base64,${base64Of("DATA-URL-MARKER")}` }],
        },
      ],
    };
    const { session, report } = prepareExport(withDataUrl, { dropFileData: true });
    const parts = partsOf(session);
    expect(parts.filter((p) => p.type === "file")).toEqual([{
      sequence: 5,
      type: "file",
      media_type: "text/plain",
      name: MARKERS.fileName,
      url: MARKERS.fileUrl,
    }]);
    expect(parts.filter((p) => typeof p.text === "string" && String(p.text).startsWith("[file omitted"))).toEqual([
      { sequence: 2, type: "text", text: `[file omitted: ${MARKERS.fileName} (text/plain)]` },
      { sequence: 3, type: "text", text: "[file omitted: pixel.png (image/png)]" },
      { sequence: 2, type: "text", text: "[file omitted: chart.png (image/png)]" },
      { sequence: 1, type: "text", text: "[file omitted: (text/plain)]" },
    ]);
    const text = JSON.stringify(session);
    expect(text).not.toContain(base64Of(MARKERS.fileText));
    expect(text).not.toContain(PNG_1X1);
    expect(text).not.toContain("data:");
    expect(report.dropped.fileData).toBe(4);
  });

  it("dropProviderContext: provider-context parts are removed", () => {
    const { session, report } = prepareExport(sessionWith(), { dropProviderContext: true });
    expect(partsOf(session).some((p) => p.type === "provider-context")).toBe(false);
    expect(JSON.stringify(session)).not.toContain("PROVIDER-CONTEXT-MARKER");
    expect(report.dropped.providerContextParts).toBe(1);
  });

  it("dropMetadata: metadata and the prompt-cache key are removed, cwd stays", () => {
    const { session, report } = prepareExport(sessionWith(), { dropMetadata: true });
    expect(session.metadata).toBeUndefined();
    expect(session.promptCacheKey).toBeUndefined();
    expect(session.cwd).toBe(MARKERS.cwd);
    expect(report.dropped).toMatchObject({ metadataKeys: 2, promptCacheKey: true });
  });

  it("dropReasoning: raw reasoning and reasoning summaries are removed", () => {
    const { session, report } = prepareExport(sessionWith(), { dropReasoning: true });
    expect(partsOf(session).some((p) => p.type === "reasoning" || p.type === "reasoning-summary")).toBe(false);
    const text = JSON.stringify(session);
    expect(text).not.toContain("REASONING-MARKER");
    expect(text).not.toContain("REASONING-SUMMARY-MARKER");
    expect(report.dropped).toMatchObject({ reasoningParts: 1, reasoningSummaryParts: 1 });
  });

  it("every flag at once still gives valid message records", () => {
    const { session } = prepareExport(sessionWith(), {
      redact: true,
      dropSystemPrompt: true,
      dropToolOutputs: true,
      dropFileData: true,
      dropProviderContext: true,
      dropMetadata: true,
      dropReasoning: true,
    });
    for (const message of session.messages) expect(MessageRecord.safeParse(message).success).toBe(true);
  });
});

describe("redaction through prepareExport", () => {
  it("redacts every text field and keeps structure", () => {
    const { text, secrets } = plantedText(41);
    const input = sessionWith(Object.fromEntries(Object.keys(MARKERS).map((k) => [k, text])) as Partial<typeof MARKERS>);
    const { session, report } = prepareExport(input, { redact: true });
    const json = JSON.stringify(session);
    for (const secret of secrets) expect(json).not.toContain(secret.slice(0, 12));
    for (const message of session.messages) expect(MessageRecord.safeParse(message).success).toBe(true);
    expect(session.messages.map((m) => m.message_id)).toEqual(input.messages.map((m) => m.message_id));
    expect(partsOf(session).map((p) => p.type)).toEqual(partsOf(input).map((p) => p.type));
    expect(session.provider).toEqual(input.provider);
    expect(report.redactions).toBeGreaterThan(100);
    expect(Object.keys(report.byField).sort()).toEqual(
      [
        "cwd",
        "file_data",
        "file_name",
        "file_url",
        "message_extension",
        "metadata",
        "model_label",
        "prompt_cache_key",
        "provider_context",
        "reasoning",
        "reasoning_summary",
        "summary",
        "system",
        "text",
        "title",
        "tool_error",
        "tool_input",
        "tool_output",
      ].sort(),
    );
  });

  it("decodes text file data, redacts it and re-encodes it; binary data is kept and counted", () => {
    const key = `sk-proj-${f.pick(ALNUM, 40)}`;
    const { session, report } = prepareExport(sessionWith({ fileText: `config\nOPENAI_API_KEY=${key}\nünïcödé ✓\n` }), { redact: true });
    const [textFile, image] = partsOf(session).filter((p) => p.type === "file" && typeof p.data === "string");
    expect(textOfBase64(textFile!.data as string)).toBe("config\nOPENAI_API_KEY=[REDACTED:openai-api-key#1]\nünïcödé ✓\n");
    expect(image!.data).toBe(PNG_1X1);
    expect(report.binaryFilesKept).toBe(2);
    expect(report.byField.file_data).toBe(1);
  });

  it("leaves file data byte-identical when there is nothing to redact", () => {
    const input = sessionWith({ fileText: "just a note" });
    const { session } = prepareExport(input, { redact: true });
    expect(partsOf(session)[1]!.data).toBe(partsOf(input)[1]!.data);
  });

  it("reads Latin-1 text of a text media type, and data: URLs, and non-base64 data as text", () => {
    const key = `ghp_${f.pick(ALNUM, 36)}`;
    const latin1 = btoa(`caf\xe9 token ${key}`);
    const input: PortableSession = {
      messages: [
        {
          record_type: "message",
          sequence: 1,
          message_id: "m1",
          role: "user",
          created_at: "2026-12-02T13:00:00.000Z",
          parts: [
            { sequence: 1, type: "file", media_type: "text/csv; charset=latin1", data: latin1 },
            { sequence: 2, type: "file", media_type: "text/plain", url: `data:text/plain;base64,${base64Of(`key ${key}`)}` },
            { sequence: 3, type: "file", media_type: "text/plain", data: `not base64! ${key}` },
            { sequence: 4, type: "file", media_type: "application/octet-stream", data: base64Of(`utf-8 text in a binary type ${key}`) },
          ],
        },
      ],
    };
    const { session } = prepareExport(input, { redact: true });
    const parts = partsOf(session);
    // One key, one placeholder, wherever it is in the export.
    expect(atob(parts[0]!.data as string)).toBe("caf\xe9 token [REDACTED:github-token#1]");
    expect(parts[1]!.url).toBe(`data:text/plain;base64,${base64Of("key [REDACTED:github-token#1]")}`);
    expect(parts[2]!.data).toBe("not base64! [REDACTED:github-token#1]");
    expect(textOfBase64(parts[3]!.data as string)).toBe("utf-8 text in a binary type [REDACTED:github-token#1]");
  });

  it("redacts metadata by key name and value, and unknown extension fields", () => {
    const input: PortableSession = {
      messages: [
        {
          record_type: "message",
          sequence: 1,
          message_id: "m1",
          role: "user",
          created_at: "2026-12-02T13:00:00.000Z",
          parts: [{ sequence: 1, type: "text", text: "hi", ui: { hint: "password=hunter2" } } as never],
          host: { apiKey: "hunter2" },
          session_token: "hunter3",
        } as MessageRecord,
      ],
      metadata: { api_key: "hunter2", note: "plain" },
    };
    const { session } = prepareExport(input, { redact: true });
    // "hunter2" is one secret (#1) in three places; "hunter3" another (#2).
    expect(session.metadata).toEqual({ api_key: "[REDACTED:secret-assignment#1]", note: "plain" });
    expect(JSON.stringify(session)).not.toContain("hunter2");
    expect(session.messages[0]).toMatchObject({ host: { apiKey: "[REDACTED:secret-assignment#1]" }, session_token: "[REDACTED:secret-assignment#2]" });
    expect(session.messages[0]!.parts[0]).toMatchObject({ ui: { hint: "password=[REDACTED:secret-assignment#1]" } });
    expect(JSON.stringify(session)).not.toContain("hunter3");
  });

  it("is idempotent: preparing an already redacted session finds nothing more", () => {
    const { text } = plantedText(43);
    const input = sessionWith({ userText: text, toolOutput: text, toolInput: text, providerContext: text, fileText: text, title: text });
    const once = prepareExport(input, { redact: true });
    const twice = prepareExport(once.session, { redact: true });
    expect(twice.session).toEqual(once.session);
    expect(twice.report.redactions).toBe(0);
  });

  it("reports counts only, never a secret", () => {
    const { text, secrets } = plantedText(47);
    const { report } = prepareExport(sessionWith({ userText: text, metadataValue: text }), { redact: true });
    const json = JSON.stringify(report);
    for (const secret of secrets) expect(json).not.toContain(secret.slice(0, 8));
    expect(report.byDetector["openai-api-key"]).toBeGreaterThanOrEqual(2);
    expect(Object.values(report.byDetector).reduce((a, b) => a + (b ?? 0), 0)).toBe(report.redactions);
    expect(Object.values(report.byField).reduce((a, b) => a + (b ?? 0), 0)).toBe(report.redactions);
  });

  it("keeps identifiers and identities as they are", () => {
    const input = sessionWith();
    const { session } = prepareExport(input, { redact: true });
    expect(session.sourceId).toBe(input.sourceId);
    expect(session.messages.map((m) => [m.message_id, m.created_at, m.provider])).toEqual(input.messages.map((m) => [m.message_id, m.created_at, m.provider]));
    expect(partsOf(session).filter((p) => p.type === "tool").map((p) => [p.tool_call_id, p.tool_name, p.state])).toEqual([
      ["call_1", "read", "output-available"],
      ["call_2", "bash", "output-error"],
    ]);
  });
});
