import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  CorruptSessionError,
  DraftRecord,
  encodeJsonDocument,
  FilePart,
  MessagePart,
  MessageRecord,
  parseDraftJson,
  parseLockJson,
  parseMetaJson,
  ProviderContextPart,
  SessionfoldError,
  SessionMeta,
  SummaryRecord,
  Timestamp,
  ToolPart,
  UnsupportedSchemaError,
  Usage,
  WriterLockRecord,
} from "../../core/mod.ts";
import { extras, message, messages, summary, TS, utf8, viaJson } from "./support.ts";
import { describeIssues, nowTimestamp } from "../../core/internal.ts";

const roundTrip = <T>(schema: { parse(v: unknown): T }, value: unknown): unknown => schema.parse(JSON.parse(JSON.stringify(schema.parse(value))));

const parts = {
  text: { sequence: 1, type: "text", text: "hello" },
  reasoning: { sequence: 2, type: "reasoning", text: "thinking…" },
  "reasoning-summary": { sequence: 3, type: "reasoning-summary", text: "I thought" },
  tool: { sequence: 4, type: "tool", tool_call_id: "c1", tool_name: "read", state: "output-available", input: { path: "a" }, output: "…" },
  "tool (error)": { sequence: 5, type: "tool", tool_call_id: "c2", tool_name: "read", state: "output-error", input: {}, error: "ENOENT" },
  "tool (input only)": { sequence: 6, type: "tool", tool_call_id: "c3", tool_name: "read", state: "input-available", input: null },
  "file (data)": { sequence: 7, type: "file", media_type: "image/png", name: "a.png", data: "iVBORw0KGgo=" },
  "file (url)": { sequence: 8, type: "file", media_type: "image/png", url: "https://example.com/a.png" },
  "provider-context": { sequence: 9, type: "provider-context", provider: "openai", api: "responses", model: "gpt-5", data: { encrypted: "…" } },
} as const;

const meta = {
  schema_version: 1,
  session_id: "s1",
  agent_id: "a1",
  workspace_id: "w1",
  title: "A title",
  model_label: "gpt-5",
  created_at: TS,
  updated_at: TS,
  message_count: 900,
  history_bytes: 123456,
  timezone: "Europe/Berlin",
  revision: 42,
  forked_from: { session_id: "s0", through_sequence: 300 },
  compaction: {
    completed: 2,
    removed_messages: 900,
    removed_tokens_estimate: 180000,
    cost_usd_micros: 1200,
    last_before_tokens: 121600,
    last_after_tokens: 40100,
  },
};

const lock = { pid: 123, hostname: "host", runtime: "node", operation: "append", created_at: TS };

const draft = {
  record_type: "message",
  sequence: 8,
  message_id: "m_8",
  role: "assistant",
  created_at: TS,
  status: "streaming",
  parts: [{ sequence: 1, type: "text", text: "partial" }],
};

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error("expected a throw");
}

describe("message parts", () => {
  it.each(Object.entries(parts))("part %s parses, alone and in a message", (_, part) => {
    expect(MessagePart.parse(part)).toEqual(part);
    const record = message(1, { role: "assistant", status: "completed", parts: [part] });
    expect(MessageRecord.parse(record)).toEqual(record);
  });

  it("a message with every part type, usage and provider parses", () => {
    const record = message(7, {
      role: "assistant",
      status: "completed",
      parts: Object.values(parts),
      usage: { input_tokens: 900, output_tokens: 120, total_tokens: 1020 },
      provider: { provider: "openai", api: "responses", model: "gpt-5" },
    });
    expect(MessageRecord.parse(record)).toEqual(record);
  });

  it("an unknown part type is rejected", () => {
    expect(MessagePart.safeParse({ sequence: 1, type: "video", url: "x" }).success).toBe(false);
    expect(MessagePart.safeParse({ sequence: 1, text: "no type" }).success).toBe(false);
  });

  it("a file part needs data or url", () => {
    const result = FilePart.safeParse({ sequence: 1, type: "file", media_type: "image/png" });
    expect(result.success).toBe(false);
    expect(MessagePart.safeParse({ sequence: 1, type: "file", media_type: "image/png" }).success).toBe(false);
    expect(FilePart.safeParse({ sequence: 1, type: "file", media_type: "", data: "AA==" }).success).toBe(false);
  });

  it("a tool part needs a known state, non-empty ids and an input (null is an input)", () => {
    const ok = parts.tool;
    expect(ToolPart.safeParse({ ...ok, state: "running" }).success).toBe(false);
    expect(ToolPart.safeParse({ ...ok, tool_call_id: "" }).success).toBe(false);
    expect(ToolPart.safeParse({ ...ok, tool_name: "" }).success).toBe(false);
    const { input: _, ...noInput } = ok;
    expect(ToolPart.safeParse(noInput).success).toBe(false);
    expect(ToolPart.safeParse({ ...ok, input: null }).success).toBe(true);
    expect(ToolPart.safeParse({ ...ok, error: 5 }).success).toBe(false);
  });

  it("a provider-context part needs its full identity and data", () => {
    const ok = parts["provider-context"];
    for (const key of ["provider", "api", "model", "data"] as const) {
      const { [key]: _, ...without } = ok;
      expect(ProviderContextPart.safeParse(without).success, key).toBe(false);
    }
    expect(ProviderContextPart.safeParse({ ...ok, model: "" }).success).toBe(false);
  });

  it("part sequences are integers >= 1", () => {
    for (const sequence of [0, -1, 1.5, "1", null, Number.MAX_SAFE_INTEGER + 2]) {
      expect(MessagePart.safeParse({ ...parts.text, sequence }).success, String(sequence)).toBe(false);
    }
  });
});

describe("MessageRecord", () => {
  it("rejects a bad sequence, role, id, timestamp, status or record_type", () => {
    const bad: Record<string, unknown>[] = [
      { sequence: 0 },
      { sequence: 2.5 },
      { sequence: "3" },
      { role: "system" },
      { role: "tool" },
      { message_id: "" },
      { created_at: "yesterday" },
      { status: "streaming" },
      { status: "done" },
      { record_type: "summary" },
      { parts: "hello" },
      { parts: [{ ...parts.text }, { ...parts.reasoning, sequence: 1 }] },
    ];
    for (const change of bad) expect(MessageRecord.safeParse(message(1, change)).success, JSON.stringify(change)).toBe(false);
  });

  it("accepts every committed status and no status (user messages)", () => {
    for (const status of ["completed", "stopped", "failed"]) {
      expect(MessageRecord.safeParse(message(1, { role: "assistant", status })).success).toBe(true);
    }
    expect(MessageRecord.safeParse(message(1)).success).toBe(true);
  });

  it("part sequences must be unique, but need not be in ascending file order", () => {
    const record = message(1, { parts: [{ ...parts.text, sequence: 2 }, { ...parts.reasoning, sequence: 1 }] });
    expect(MessageRecord.parse(record)).toEqual(record);
  });

  it("usage: input/output tokens required, total optional, non-negative integers", () => {
    expect(Usage.safeParse({ input_tokens: 1, output_tokens: 2 }).success).toBe(true);
    expect(Usage.safeParse({ input_tokens: 1 }).success).toBe(false);
    expect(Usage.safeParse({ input_tokens: -1, output_tokens: 2 }).success).toBe(false);
    expect(Usage.safeParse({ input_tokens: 1.5, output_tokens: 2 }).success).toBe(false);
    expect(MessageRecord.safeParse(message(1, { usage: { input_tokens: 1, output_tokens: 2, total_tokens: -3 } })).success).toBe(false);
  });
});

describe("unknown fields survive parse → JSON.stringify → parse (read-modify-write)", () => {
  it("at message, part, usage and provider level", () => {
    const record = message(1, {
      role: "assistant",
      status: "completed",
      x_message: { deep: [1, { a: null }] },
      parts: Object.values(parts).map((part, i) => ({ ...part, x_part: `p${i}` })),
      usage: { input_tokens: 1, output_tokens: 2, cache_read_tokens: 7, x_usage: true },
      provider: { provider: "openai", api: "responses", model: "gpt-5", region: "eu" },
    });
    expect(roundTrip(MessageRecord, record)).toEqual(record);
    expect(JSON.parse(JSON.stringify(MessageRecord.parse(record)))).toEqual(record);
  });

  it("at meta level, in forked_from and in compaction", () => {
    const value = {
      ...meta,
      x_meta: "kept",
      forked_from: { ...meta.forked_from, x_fork: 1 },
      compaction: { ...meta.compaction, x_comp: [1, 2] },
    };
    expect(roundTrip(SessionMeta, value)).toEqual(value);
    expect(parseMetaJson(JSON.stringify(value))).toEqual(value);
  });

  it("at summary, draft and lock level", () => {
    const s = summary(450, { x_summary: { v: 2 } });
    expect(roundTrip(SummaryRecord, s)).toEqual(s);
    const d = { ...draft, x_draft: 1, parts: [{ ...draft.parts[0], x_part: 2 }] };
    expect(roundTrip(DraftRecord, d)).toEqual(d);
    const l = { ...lock, x_lock: "k" };
    expect(parseLockJson(JSON.stringify(l))).toEqual(l);
  });

  it("property: generated messages with random extra fields at every level round-trip exactly", () => {
    fc.assert(
      fc.property(messages({ maxLength: 3 }), extras, extras, (records, extraUsage, extraProvider) => {
        for (const base of records) {
          const record = viaJson({
            ...base,
            usage: { input_tokens: 1, output_tokens: 1, ...extraUsage },
            provider: { provider: "p", api: "a", model: "m", ...extraProvider },
          });
          expect(roundTrip(MessageRecord, record)).toEqual(record);
        }
      }),
      { numRuns: 200 },
    );
  });

  it("a __proto__ key never pollutes the parsed object's prototype", () => {
    const value = JSON.parse(
      `{"record_type":"summary","session_id":"s","summary_id":"x","through_sequence":1,"text":"t","created_at":"${TS}","__proto__":{"polluted":1}}`,
    );
    const parsed = SummaryRecord.parse(value) as Record<string, unknown>;
    expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype);
    expect(parsed.polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe("parseMetaJson", () => {
  it("parses a valid meta.json from bytes or string", () => {
    expect(parseMetaJson(utf8(JSON.stringify(meta)))).toEqual(meta);
    expect(parseMetaJson(JSON.stringify(meta, null, 2))).toEqual(meta);
    const { title: _t, model_label: _m, timezone: _z, forked_from: _f, compaction: _c, ...minimal } = meta;
    expect(parseMetaJson(JSON.stringify(minimal))).toEqual(minimal);
  });

  it("rejects schema_version 2 with UnsupportedSchemaError (code unsupported-schema)", () => {
    const error = thrown(() => parseMetaJson(JSON.stringify({ ...meta, schema_version: 2 }), "agents/a/x/meta.json"));
    expect(error).toBeInstanceOf(UnsupportedSchemaError);
    expect(error).toBeInstanceOf(SessionfoldError);
    const e = error as UnsupportedSchemaError;
    expect(e.code).toBe("unsupported-schema");
    expect(e.message).toContain("agents/a/x/meta.json");
    expect(e.message).toContain("2");
    expect(e.details).toMatchObject({ file: "agents/a/x/meta.json", schema_version: 2 });
  });

  it("a missing schema_version is refused as unsupported-schema too (never guessed to be 1)", () => {
    const { schema_version: _, ...noVersion } = meta;
    const error = thrown(() => parseMetaJson(JSON.stringify(noVersion)));
    expect(error).toBeInstanceOf(UnsupportedSchemaError);
    expect((error as UnsupportedSchemaError).code).toBe("unsupported-schema");
    expect((error as UnsupportedSchemaError).message).toContain("missing");
    expect((error as UnsupportedSchemaError).details).toMatchObject({ file: "meta.json", schema_version: null });
  });

  it.each([0, "1", 1.5, null, [1], true])("schema_version %j is unsupported-schema", (version) => {
    expect(() => parseMetaJson(JSON.stringify({ ...meta, schema_version: version }))).toThrow(UnsupportedSchemaError);
  });

  it("version is checked before the rest: a v2 document with other fields is unsupported, not corrupt", () => {
    expect(() => parseMetaJson(JSON.stringify({ schema_version: 2, whatever: true }))).toThrow(UnsupportedSchemaError);
  });

  it("invalid JSON gives CorruptSessionError naming the file", () => {
    const error = thrown(() => parseMetaJson('{"schema_version":1,', "agents/a1/meta.json"));
    expect(error).toBeInstanceOf(CorruptSessionError);
    const e = error as CorruptSessionError;
    expect(e.code).toBe("corrupt");
    expect(e.message).toContain("agents/a1/meta.json");
    expect(e.details).toMatchObject({ file: "agents/a1/meta.json", code: "invalid_json" });
  });

  it("invalid UTF-8 gives CorruptSessionError naming the file", () => {
    const error = thrown(() => parseMetaJson(new Uint8Array([0x7b, 0xff, 0x7d])));
    expect(error).toBeInstanceOf(CorruptSessionError);
    expect((error as CorruptSessionError).message).toContain("meta.json");
  });

  it("a version-1 document failing the schema gives CorruptSessionError (invalid_record) naming the file", () => {
    const error = thrown(() => parseMetaJson(JSON.stringify({ ...meta, message_count: -1 }), "x/meta.json"));
    expect(error).toBeInstanceOf(CorruptSessionError);
    expect((error as CorruptSessionError).message).toContain("x/meta.json");
    expect((error as CorruptSessionError).message).toContain("message_count");
    expect((error as CorruptSessionError).details).toMatchObject({ file: "x/meta.json", code: "invalid_record" });
  });

  it.each(["[]", "null", "42", '"meta"', '[{"schema_version":1}]'])("a JSON non-object (%s) is corrupt, not an unknown schema", (text) => {
    expect(() => parseMetaJson(text)).toThrow(CorruptSessionError);
  });
});

describe("parseDraftJson / DraftRecord", () => {
  it("parses a pretty-printed draft", () => {
    expect(parseDraftJson(JSON.stringify(draft, null, 2))).toEqual(draft);
    expect(parseDraftJson(encodeJsonDocument(draft))).toEqual(draft);
  });

  it("requires status streaming and role assistant", () => {
    for (const change of [{ status: "completed" }, { status: undefined }, { role: "user" }]) {
      const error = thrown(() => parseDraftJson(JSON.stringify({ ...draft, ...change })));
      expect(error, JSON.stringify(change)).toBeInstanceOf(CorruptSessionError);
      expect((error as CorruptSessionError).message).toContain("messages/assistant_message.json");
    }
  });

  it("requires unique part sequences", () => {
    const parts2 = [draft.parts[0], { ...draft.parts[0] }];
    expect(DraftRecord.safeParse({ ...draft, parts: parts2 }).success).toBe(false);
  });

  it("a draft is not a committed message and vice versa", () => {
    expect(MessageRecord.safeParse(draft).success).toBe(false);
    expect(DraftRecord.safeParse({ ...draft, status: "completed" }).success).toBe(false);
  });
});

describe("parseLockJson / WriterLockRecord", () => {
  it("parses the lock content of docs/FORMAT.md", () => {
    expect(parseLockJson(JSON.stringify(lock))).toEqual(lock);
    expect(parseLockJson(utf8(JSON.stringify({ ...lock, runtime: "browser" })))).toMatchObject({ runtime: "browser" });
  });

  it("a lock without pid or with a bad timestamp is corrupt, naming the file", () => {
    const { pid: _, ...noPid } = lock;
    for (const value of [noPid, { ...lock, created_at: "now" }, { ...lock, pid: "123" }]) {
      const error = thrown(() => parseLockJson(JSON.stringify(value), "a/writer.lock"));
      expect(error).toBeInstanceOf(CorruptSessionError);
      expect((error as CorruptSessionError).message).toContain("a/writer.lock");
    }
    expect(WriterLockRecord.safeParse(lock).success).toBe(true);
  });
});

describe("SummaryRecord", () => {
  it("parses the footer of docs/FORMAT.md", () => {
    expect(SummaryRecord.parse(summary(450))).toEqual(summary(450));
  });

  it("text must be non-empty; through_sequence >= 1; ids non-empty", () => {
    expect(SummaryRecord.safeParse(summary(450, { text: "" })).success).toBe(false);
    expect(SummaryRecord.safeParse(summary(450, { text: undefined })).success).toBe(false);
    expect(SummaryRecord.safeParse(summary(0)).success).toBe(false);
    expect(SummaryRecord.safeParse(summary(1, { session_id: "" })).success).toBe(false);
    expect(SummaryRecord.safeParse(summary(1, { summary_id: "" })).success).toBe(false);
  });
});

describe("timestamps", () => {
  it.each([
    "2026-12-02T13:00:00.000Z",
    "2026-12-02T13:00:00Z",
    "2026-12-02T13:00:00.5Z",
    "2026-12-02T13:00:00.123456Z",
    "2026-12-02T15:00:00+02:00",
    "2026-12-02T07:30:00.000-05:30",
    "2024-02-29T00:00:00.000Z",
  ])("accepts %s", (value) => {
    expect(Timestamp.safeParse(value).success).toBe(true);
  });

  it.each([
    "",
    "garbage",
    "2026-12-02",
    "2026-12-02T13:00:00",
    "2026-12-02 13:00:00Z",
    "2026-13-02T13:00:00Z",
    "2026-02-30T13:00:00Z",
    "2026-12-02T25:00:00Z",
    "2026-12-02T13:00:00.000Z ",
    "1764680400000",
  ])("rejects %j", (value) => {
    expect(Timestamp.safeParse(value).success).toBe(false);
  });

  it("rejects non-strings", () => {
    for (const value of [0, null, new Date(0), undefined]) expect(Timestamp.safeParse(value).success).toBe(false);
  });

  it("nowTimestamp writes UTC with milliseconds", () => {
    expect(nowTimestamp(() => Date.UTC(2026, 11, 2, 13, 0, 0))).toBe("2026-12-02T13:00:00.000Z");
    expect(nowTimestamp()).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(Timestamp.safeParse(nowTimestamp()).success).toBe(true);
  });
});

describe("describeIssues / encodeJsonDocument", () => {
  it("names paths and caps the number of issues", () => {
    const result = MessageRecord.safeParse({});
    expect(result.success).toBe(false);
    const text = describeIssues(result.error!, 2);
    expect(text).toMatch(/^record_type: /);
    expect(text).toMatch(/; and \d+ more$/);
    const nested = MessageRecord.safeParse(message(1, { parts: [{ sequence: 1, type: "text", text: 5 }] }));
    expect(describeIssues(nested.error!)).toContain("parts.0.text");
  });

  it("encodeJsonDocument is pretty JSON ending with a newline", () => {
    const text = new TextDecoder().decode(encodeJsonDocument(meta));
    expect(text.endsWith("}\n")).toBe(true);
    expect(text).toContain('\n  "schema_version": 1');
    expect(JSON.parse(text)).toEqual(meta);
  });
});
