import { describe, expect, it } from "vitest";
import { MessageRecord } from "../../core/mod.ts";
import { readRhoJsonl, readRhoSnapshot, writeRhoSnapshot } from "../../core/formats/mod.ts";
import { expectFormatError, expectUnsupported, fixture, memorySessions, text, thrown, utf8 } from "./support.ts";

const T = "2026-12-02T13:00:00.000Z";
const OPENAI = { provider: "openai", api: "responses", model: "gpt-5" };

describe("Rho snapshot schema 2 (hand-written fixture)", () => {
  it("reads history, provider, compaction, metadata, prompt-cache key and revision", () => {
    const bytes = fixture("rho/snapshot-v2.json");
    const copy = bytes.slice();
    const s = readRhoSnapshot(bytes, "snapshot-v2.json", { timestamp: T });
    expect(bytes).toEqual(copy);
    expect(s).toMatchObject({
      sourceId: "22222222-2222-4222-8222-222222222222",
      revision: 9,
      system: "You are a careful coding agent.",
      provider: OPENAI,
      compaction: {
        completed: 2,
        removed_messages: 7,
        removed_tokens_estimate: 5100,
        cost_usd_micros: 350,
        last_before_tokens: 9000,
        last_after_tokens: 3900,
        last_revision: 6,
      },
      metadata: { title: "Fix the add test", host: "rho-cli" },
      promptCacheKey: "rho:cache-7",
      format: "rho-snapshot-v2",
    });
    // 8 entries: System (system prompt) and two ToolResults (joined) are not messages.
    expect(s.messages.map((m) => `${m.role}/${m.status ?? "-"}`)).toEqual([
      "user/-",
      "assistant/completed",
      "assistant/completed",
      "user/-",
      "assistant/stopped",
    ]);
    expect(s.messages[0]!.parts).toEqual([
      { sequence: 1, type: "text", text: "What is in this screenshot?" },
      { sequence: 2, type: "file", media_type: "image/png", data: "iVBORw0KGgo=" },
    ]);
    const enriched = s.messages[1]!;
    expect(enriched.provider).toEqual(OPENAI);
    expect(enriched.parts.map((p) => p.type)).toEqual(["reasoning-summary", "provider-context", "text", "tool", "tool"]);
    expect(enriched.parts[1]).toEqual({
      sequence: 2,
      type: "provider-context",
      ...OPENAI,
      data: { encrypted_content: "gAAAAB-opaque" },
      kind: "reasoning",
      position: 0,
    });
    expect(enriched.parts[3]).toMatchObject({ tool_call_id: "call_a", state: "output-available", output: "it('adds', () => expect(add(1, 1)).toBe(3));" });
    expect(enriched.parts[4]).toMatchObject({ tool_call_id: "call_b", state: "output-error", error: "exit code 1" });
    const aborted = s.messages[4]!;
    expect(aborted.usage).toEqual({ input_tokens: 1200, output_tokens: 14, cache_read_tokens: 1024, total_tokens: 1214, context_window: 400000 });
    expect((aborted as Record<string, unknown>).rho).toEqual({ partial_tool_calls: [{ id: "call_c", name: "edit_file", arguments: '{"path": "test/a.te' }] });
    for (const m of s.messages) expect(MessageRecord.safeParse(m).success).toBe(true);
  });

  it("re-exports as the same document (schema 2, same history and fields)", () => {
    const bytes = fixture("rho/snapshot-v2.json");
    const again = JSON.parse(text(writeRhoSnapshot(readRhoSnapshot(bytes, "snapshot-v2.json"))));
    expect(again).toEqual(JSON.parse(text(bytes)));
  });

  it("takes the title from metadata.title, where Rho's own snapshots keep it, and writes it back there", () => {
    const read = readRhoSnapshot(fixture("rho/snapshot-v2.json"), "snapshot-v2.json");
    expect(read.title).toBe("Fix the add test");
    const untitled = readRhoSnapshot(utf8(JSON.stringify({ schema_version: 2, session_id: "x", revision: 0, history: [], provider: OPENAI })), "s.json");
    expect(untitled.title).toBeUndefined();
    // The session's title wins over a metadata.title it was imported with (a rename since).
    const renamed = JSON.parse(text(writeRhoSnapshot({ ...read, title: "Renamed" })));
    expect(renamed.metadata).toEqual({ title: "Renamed", host: "rho-cli" });
    const fresh = JSON.parse(text(writeRhoSnapshot({ sourceId: "s1", title: "First try", messages: [] })));
    expect(fresh.metadata).toEqual({ title: "First try" });
    expect(JSON.parse(text(writeRhoSnapshot({ sourceId: "s1", messages: [] })))).not.toHaveProperty("metadata");
  });

  it("imports through Sessions.importPortable keeping the revision", async () => {
    const session = await memorySessions().importPortable("a1/w1/rho", readRhoSnapshot(fixture("rho/snapshot-v2.json"), "snapshot-v2.json"));
    expect(session.meta.revision).toBe(9);
    const back = await session.exportPortable();
    expect(back.revision).toBe(9);
    expect(back.system).toBe("You are a careful coding agent.");
    expect(back.messages).toHaveLength(5);
  });

  it("clears raw reasoning of an AbortedAssistant on import", () => {
    const doc = JSON.parse(text(fixture("rho/snapshot-v2.json")));
    doc.history[7].AbortedAssistant.reasoning = "SECRET-RAW-REASONING";
    const s = readRhoSnapshot(utf8(JSON.stringify(doc)), "s.json");
    expect(JSON.stringify(s)).not.toContain("SECRET-RAW-REASONING");
  });

  it("keeps a mid-history System entry as a marked user message and writes it back", () => {
    const doc = { schema_version: 2, session_id: "x", revision: 1, history: [{ User: [{ Text: "a" }] }, { System: "new rules" }], provider: OPENAI };
    const s = readRhoSnapshot(utf8(JSON.stringify(doc)), "s.json");
    expect(s.system).toBeUndefined();
    expect(s.messages[1]).toMatchObject({ role: "user", parts: [{ type: "text", text: "new rules" }], rho: { entry: "System" } });
    expect(JSON.parse(text(writeRhoSnapshot(s))).history).toEqual(doc.history);
  });
});

describe("Rho snapshot schema 1 (hand-written fixture) is migrated", () => {
  it("reads as schema 2 with no prompt-cache key, and exports as schema 2", () => {
    const doc = JSON.parse(text(fixture("rho/snapshot-v1.json")));
    doc.prompt_cache_key = "not in schema 1";
    for (const bytes of [fixture("rho/snapshot-v1.json"), utf8(JSON.stringify(doc))]) {
      const s = readRhoSnapshot(bytes, "snapshot-v1.json");
      expect(s).toMatchObject({
        revision: 3,
        format: "rho-snapshot-v1",
        metadata: { title: "snapshot v1" },
        compaction: { completed: 1, removed_messages: 4, removed_tokens_estimate: 0, last_revision: 2 },
      });
      expect(s.promptCacheKey).toBeUndefined();
      expect(s.messages.map((m) => m.parts[0])).toEqual([
        { sequence: 1, type: "text", text: "historical prompt" },
        { sequence: 1, type: "text", text: "historical answer" },
      ]);
      const out = JSON.parse(text(writeRhoSnapshot(s)));
      expect(out.schema_version).toBe(2);
      expect(out).not.toHaveProperty("prompt_cache_key");
    }
  });
});

describe("Rho snapshot refusals: typed errors naming file, line and JSON path", () => {
  it("an unknown schema version (older or newer) is unsupported-schema, whatever the shape", () => {
    expectUnsupported(thrown(() => readRhoSnapshot(fixture("rho/snapshot-v3.json"), "snapshot-v3.json")), { file: "snapshot-v3.json", line: 2, found: 3 });
    expectUnsupported(thrown(() => readRhoSnapshot(utf8('{"schema_version":0}'), "s.json")), { file: "s.json", line: 1, found: 0 });
  });

  it("a malformed history entry names its path and line", () => {
    expectFormatError(thrown(() => readRhoSnapshot(fixture("rho/snapshot-malformed.json"), "snapshot-malformed.json")), {
      file: "snapshot-malformed.json",
      line: 7,
      path: "$.history[1].Assistant[1]",
      message: /"Video"/,
    });
  });

  it("a ToolResult without its ToolCall", () => {
    expectFormatError(thrown(() => readRhoSnapshot(fixture("rho/snapshot-orphan-result.json"), "o.json")), {
      file: "o.json",
      line: 7,
      path: "$.history[1].ToolResult.id",
    });
  });

  it("truncated or invalid JSON, invalid UTF-8, an empty file", () => {
    expectFormatError(thrown(() => readRhoSnapshot(fixture("rho/snapshot-truncated.json"), "t.json")), { file: "t.json", line: 1, message: /invalid JSON/ });
    expectFormatError(thrown(() => readRhoSnapshot(utf8('{\n  "a": 1,\n  @\n}'), "t.json")), { file: "t.json", line: 3 });
    expectFormatError(thrown(() => readRhoSnapshot(new Uint8Array([0x7b, 0x0a, 0xc3, 0x28, 0x0a, 0x7d]), "u.json")), {
      file: "u.json",
      line: 2,
      message: /UTF-8/,
    });
    expectFormatError(thrown(() => readRhoSnapshot(new Uint8Array(0), "e.json")), { file: "e.json", line: 1, message: /empty/ });
  });

  it("missing and mistyped top-level fields, located at their object or value", () => {
    const base = { schema_version: 2, session_id: "s", revision: 1, history: [], provider: OPENAI };
    const cases: [Record<string, unknown>, string][] = [
      [{ ...base, schema_version: "2" }, "$.schema_version"],
      [{ ...base, session_id: "" }, "$.session_id"],
      [{ ...base, revision: -1 }, "$.revision"],
      [{ ...base, revision: 2 ** 53 }, "$.revision"],
      [{ ...base, history: {} }, "$.history"],
      [{ ...base, provider: { provider: "p", api: "a" } }, "$.provider.model"],
      [{ ...base, compaction: { completed_compactions: 1 } }, "$.compaction.removed_messages"],
      [{ ...base, metadata: { a: 1 } }, "$.metadata.a"],
      [{ ...base, prompt_cache_key: 7 }, "$.prompt_cache_key"],
      [{ ...base, history: [{ User: [{ Image: { data: "x", mime_type: "" } }] }] }, "$.history[0].User[0].Image.mime_type"],
      [{ ...base, history: [{ User: [], Assistant: [] }] }, "$.history[0]"],
      [{ ...base, history: ["System"] }, "$.history[0]"],
      [
        { ...base, history: [{ EnrichedAssistant: { content: [], provider_context: [{ identity: OPENAI, kind: "k" }] } }] },
        "$.history[0].EnrichedAssistant.provider_context[0].data",
      ],
    ];
    for (const [doc, path] of cases) {
      const bytes = utf8(JSON.stringify(doc, null, 2));
      const error = thrown(() => readRhoSnapshot(bytes, "s.json"));
      const e = expectFormatError(error, { file: "s.json", line: (error as { line: number }).line });
      expect(e.details.path).toBe(path);
      expect(e.line).toBeGreaterThan(0);
    }
  });

  it("reports the line of a deep value in a pretty-printed document", () => {
    const doc = { schema_version: 2, session_id: "s", revision: 1, history: [{ User: [{ Text: "a" }] }, { User: [{ Text: 5 }] }], provider: OPENAI };
    const pretty = JSON.stringify(doc, null, 2);
    const line = pretty.split("\n").findIndex((l) => l.includes('"Text": 5')) + 1;
    expectFormatError(thrown(() => readRhoSnapshot(utf8(pretty), "s.json")), { file: "s.json", line, path: "$.history[1].User[0].Text" });
  });
});

describe("Rho app JSONL (hand-written fixtures)", () => {
  it("v3: a snapshot base and deltas on the right base revisions", () => {
    const bytes = fixture("rho/session-v3.jsonl");
    const copy = bytes.slice();
    const { session, diagnostics } = readRhoJsonl(bytes, "session-v3.jsonl");
    expect(bytes).toEqual(copy);
    expect(diagnostics).toEqual([]);
    expect(session).toMatchObject({
      sourceId: "33333333-3333-4333-8333-333333333333",
      cwd: "/work/app",
      revision: 3,
      system: "Be brief.",
      createdAt: "2025-12-02T13:00:00.000Z",
      updatedAt: "2025-12-02T13:00:09.000Z",
      provider: { provider: "anthropic", api: "messages", model: "claude-sonnet-4-5" },
      title: "files",
      metadata: { title: "files" },
      promptCacheKey: "rho:delta-fixture",
      format: "rho-jsonl-v3",
    });
    expect(session.messages.map((m) => m.created_at)).toEqual(["2025-12-02T13:00:01.000Z", "2025-12-02T13:00:05.000Z", "2025-12-02T13:00:09.000Z"]);
    expect(session.messages[1]!.parts).toEqual([
      {
        sequence: 1,
        type: "provider-context",
        provider: "anthropic",
        api: "messages",
        model: "claude-sonnet-4-5",
        data: { signature: "sig-1", thinking: "opaque" },
        kind: "thinking",
      },
      { sequence: 2, type: "tool", tool_call_id: "toolu_1", tool_name: "ls", state: "output-available", input: {}, output: "a.ts\nb.ts" },
    ]);
  });

  it("v1: message records and replace_history (a compaction)", () => {
    const { session } = readRhoJsonl(fixture("rho/session-v1.jsonl"), "session-v1.jsonl");
    expect(session.revision).toBe(4);
    expect(session.messages.map((m) => (m.parts[0] as { text: string }).text)).toEqual(["compacted legacy summary", "answer after compaction"]);
    expect(session.compaction).toEqual({ completed: 1, removed_messages: 1, removed_tokens_estimate: 0, last_revision: 3 });
    expect(session.format).toBe("rho-jsonl-v1");
  });

  it("a torn final line is ignored and reported; a valid unterminated one is kept", () => {
    const { session, diagnostics } = readRhoJsonl(fixture("rho/session-torn.jsonl"), "session-torn.jsonl");
    expect(session.messages).toHaveLength(1);
    expect(diagnostics).toEqual([expect.objectContaining({ file: "session-torn.jsonl", line: 3, code: "truncated_tail", fatal: false })]);
    const whole = readRhoJsonl(utf8(text(fixture("rho/session-v1.jsonl")).trimEnd()), "v1.jsonl");
    expect(whole.diagnostics).toEqual([]);
    expect(whole.session.messages).toHaveLength(2);
  });

  it("imports through Sessions.importPortable", async () => {
    const { session } = readRhoJsonl(fixture("rho/session-v3.jsonl"), "session-v3.jsonl");
    const imported = await memorySessions().importPortable("a1/w1/j", session);
    expect((await imported.exportPortable()).messages.map((m) => m.created_at)).toEqual(session.messages.map((m) => m.created_at));
  });
});

describe("Rho app JSONL refusals", () => {
  const header = '{"type":"session","version":3,"id":"s","timestamp":"1","cwd":"/"}\n';
  const snap = (revision: number, history: unknown[] = []): string =>
    `${
      JSON.stringify({
        type: "snapshot",
        timestamp: "2",
        snapshot: { schema_version: 2, session_id: "s", revision, history, provider: OPENAI },
        display_messages: [],
      })
    }\n`;
  const delta = (base: number, revision: number, extra: Record<string, unknown> = {}): string =>
    `${
      JSON.stringify({
        type: "snapshot_delta",
        timestamp: "3",
        delta: {
          base_revision: base,
          session_id: "s",
          revision,
          appended_history: [],
          provider: OPENAI,
          compaction: { completed_compactions: 0, removed_messages: 0 },
          metadata: {},
          ...extra,
        },
        display_messages: [],
      })
    }\n`;

  it("a delta whose base_revision is not the previous revision names its line", () => {
    expectFormatError(thrown(() => readRhoJsonl(fixture("rho/session-bad-base.jsonl"), "bad.jsonl")), {
      file: "bad.jsonl",
      line: 3,
      path: "$.delta.base_revision",
      message: /expected 4/,
    });
    expectFormatError(thrown(() => readRhoJsonl(utf8(header + snap(1) + delta(1, 2) + delta(1, 3)), "b.jsonl")), {
      file: "b.jsonl",
      line: 4,
      path: "$.delta.base_revision",
    });
  });

  it("even as the final unterminated line, a refused delta is an interrupted append only when it has no newline", () => {
    const { session, diagnostics } = readRhoJsonl(utf8(header + snap(1) + delta(5, 6).trimEnd()), "b.jsonl");
    expect(session.revision).toBe(1);
    expect(diagnostics[0]).toMatchObject({ line: 3, code: "truncated_tail" });
  });

  it("other refusals", () => {
    const cases: [string, number, string | undefined][] = [
      [delta(0, 1), 2, "$.type"], // delta before any snapshot
      [snap(1) + delta(1, 0), 3, "$.delta.revision"],
      [snap(1) + delta(1, 2, { session_id: "other" }), 3, "$.delta.session_id"],
      [snap(1) + delta(1, 2, { metadata: undefined }), 3, "$.delta.metadata"],
      [snap(1, [{ ToolResult: { id: "c", ok: true, content: "" } }]), 2, "$.snapshot.history[0].ToolResult.id"],
      ['{"type":"message","timestamp":"5","message":{"ToolResult":{"id":"c","ok":true,"content":""}}}\n', 2, "$.message.ToolResult.id"],
      ['{"type":"message","timestamp":"soon","message":{"User":[]}}\n', 2, "$.timestamp"],
      ['{"type":"node","id":"n1"}\n', 2, "$.type"],
      [header, 2, "$.type"],
      [
        '{"type":"snapshot","timestamp":"2","snapshot":{"schema_version":2,"session_id":"s","revision":1,"history":[],"provider":{"provider":"p","api":"a","model":"m"}}}\n',
        2,
        "$.display_messages",
      ],
    ];
    for (const [records, line, path] of cases) {
      expectFormatError(thrown(() => readRhoJsonl(utf8(header + records), "r.jsonl")), { file: "r.jsonl", line, ...(path ? { path } : {}) });
    }
  });

  it("unknown versions: the header's and an embedded snapshot's", () => {
    expectUnsupported(thrown(() => readRhoJsonl(utf8('{"type":"session","version":5,"id":"s-new","timestamp":"400","cwd":"/w"}\n'), "v5.jsonl")), {
      file: "v5.jsonl",
      line: 1,
      found: 5,
    });
    const embedded = `${JSON.stringify({ type: "snapshot", timestamp: "2", snapshot: { schema_version: 9 }, display_messages: [] })}\n`;
    expectUnsupported(thrown(() => readRhoJsonl(utf8(header + embedded), "e.jsonl")), { file: "e.jsonl", line: 2, found: 9 });
  });

  it("a missing, torn or wrong header; an empty file", () => {
    expectFormatError(thrown(() => readRhoJsonl(new Uint8Array(0), "e.jsonl")), { file: "e.jsonl", line: 1, message: /empty/ });
    expectFormatError(thrown(() => readRhoJsonl(utf8('{"type":"sess'), "t.jsonl")), { file: "t.jsonl", line: 1, message: /interrupted/ });
    expectFormatError(thrown(() => readRhoJsonl(utf8('{"type":"message"}\n'), "m.jsonl")), { file: "m.jsonl", line: 1, path: "$.type" });
  });
});
