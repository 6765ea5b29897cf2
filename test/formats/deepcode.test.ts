import { describe, expect, it } from "vitest";
import { InvalidInputError, MessageRecord } from "../../core/mod.ts";
import { detectDeepCodeLayout, FormatError, readDeepCode } from "../../core/formats/mod.ts";
import { expectFormatError, expectUnsupported, fixture, memorySessions, thrown, utf8 } from "./support.ts";

const V1 = "deepcode/v1/7f3a.v1.jsonl";
const CORE = "deepcode/core-v0/c0de.jsonl";
const CORE_META = "deepcode/core-v0/c0de.meta.json";
const DESKTOP = "deepcode/desktop-v0/b91c.jsonl";

const HEADER =
  '{"type":"session_meta","schema_version":1,"id":"s","cwd":"/r","created_at":"2026-03-01T09:00:00.000Z","updated_at":"2026-03-01T09:00:00.000Z"}\n';
const line = (record: unknown): string => `${JSON.stringify(record)}\n`;
const msg = (role: string, content: unknown, extra: Record<string, unknown> = {}): string =>
  line({ type: "message", schema_version: 1, role, content, ...extra });

describe("DeepCode v1 (hand-written fixture)", () => {
  it("reads metadata, messages, thinking, and joins tool results to their tool_use parts", () => {
    const bytes = fixture(V1);
    const { session, diagnostics, layout } = readDeepCode({ file: "7f3a.v1.jsonl", bytes });
    expect(layout).toBe("v1");
    expect(diagnostics).toEqual([]);
    expect(session).toMatchObject({
      sourceId: "7f3a",
      title: "Fix the parser",
      cwd: "/repo",
      modelLabel: "deepseek-chat",
      createdAt: "2026-03-01T09:00:00.000Z",
      updatedAt: "2026-03-01T09:05:00.000Z",
      format: "deepcode-v1",
    });
    expect(session.system).toBeUndefined();
    // The user message that only carried tool results is absorbed: 5 records, 4 messages.
    expect(session.messages.map((m) => m.role)).toEqual(["user", "assistant", "assistant", "user"]);
    const [, assistant] = session.messages;
    expect(assistant!.status).toBe("completed");
    expect(assistant!.parts).toEqual([
      { sequence: 1, type: "reasoning", text: "Check the tokenizer first." },
      { sequence: 2, type: "text", text: "Let me look at the code." },
      {
        sequence: 3,
        type: "tool",
        tool_call_id: "call_1",
        tool_name: "read_file",
        state: "output-available",
        input: { path: "src/parse.ts" },
        output: "export function parse(s) { return s[0]; }",
        deepcode: { result_timestamp: "2026-03-01T09:00:09.000Z" },
      },
      {
        sequence: 4,
        type: "tool",
        tool_call_id: "call_2",
        tool_name: "run",
        state: "output-error",
        input: { cmd: "npm test" },
        error: "1 failing",
        deepcode: { result_timestamp: "2026-03-01T09:00:09.000Z" },
      },
    ]);
    // A message without a timestamp takes the newest time seen before it.
    expect(session.messages[3]!.created_at).toBe("2026-03-01T09:00:12.000Z");
    for (const m of session.messages) expect(MessageRecord.safeParse(m).success).toBe(true);
  });

  it("imports through Sessions.importPortable without changing the source bytes", async () => {
    const bytes = fixture(V1);
    const copy = bytes.slice();
    const { session } = readDeepCode({ file: "7f3a.v1.jsonl", bytes });
    const imported = await memorySessions().importPortable("a1/w1/dc", session);
    const back = await imported.exportPortable();
    expect(back.messages).toHaveLength(4);
    expect(back.title).toBe("Fix the parser");
    expect(back.cwd).toBe("/repo");
    expect(bytes).toEqual(copy);
  });

  it("ignores a torn final line (no newline, invalid) and reports it as truncated_tail", () => {
    const bytes = fixture("deepcode/v1/torn.v1.jsonl");
    const copy = bytes.slice();
    const { session, diagnostics } = readDeepCode({ file: "torn.v1.jsonl", bytes });
    expect(session.messages.map((m) => m.parts)).toEqual([[{ sequence: 1, type: "text", text: "first" }]]);
    expect(diagnostics).toHaveLength(1);
    expect(diagnostics[0]).toMatchObject({ file: "torn.v1.jsonl", line: 3, code: "truncated_tail", fatal: false });
    expect(diagnostics[0]!.message.startsWith("torn.v1.jsonl:3: ")).toBe(true);
    expect(bytes).toEqual(copy);
  });

  it("keeps a valid final line that has no newline", () => {
    const bytes = utf8(HEADER + msg("user", [{ type: "text", text: "a" }]).trimEnd());
    const { session, diagnostics } = readDeepCode({ file: "s.v1.jsonl", bytes });
    expect(diagnostics).toEqual([]);
    expect(session.messages).toHaveLength(1);
  });

  it("skips blank lines and accepts string content as one text block", () => {
    const bytes = utf8(`${HEADER}\n   \n${msg("assistant", "plain text")}`);
    const { session } = readDeepCode({ file: "s.v1.jsonl", bytes });
    expect(session.messages[0]!.parts).toEqual([{ sequence: 1, type: "text", text: "plain text" }]);
  });

  it("joins a result to the latest earlier open call with that id, across messages", () => {
    const bytes = utf8(
      HEADER +
        msg("assistant", [{ type: "tool_use", id: "x", name: "a", input: 1 }]) +
        msg("assistant", [{ type: "tool_use", id: "x", name: "b", input: 2 }]) +
        msg("tool", [{ type: "tool_result", tool_use_id: "x", content: "second" }]) +
        msg("user", [{ type: "tool_result", tool_use_id: "x", content: "first" }, { type: "text", text: "and a remark" }]),
    );
    const { session } = readDeepCode({ file: "s.v1.jsonl", bytes });
    expect(session.messages.map((m) => (m.parts[0] as { output?: unknown }).output ?? (m.parts[0] as { text?: string }).text)).toEqual([
      "first",
      "second",
      "and a remark",
    ]);
  });
});

describe("DeepCode legacy layouts (hand-written fixtures)", () => {
  it("core-v0: bare {role, content} lines with a camelCase meta.json; results in user messages absorbed", () => {
    const bytes = fixture(CORE);
    const metaBytes = fixture(CORE_META);
    const { session, layout, diagnostics } = readDeepCode({ file: "c0de.jsonl", bytes, metaBytes });
    expect(layout).toBe("core-v0");
    expect(diagnostics).toEqual([]);
    expect(session).toMatchObject({
      sourceId: "c0de",
      cwd: "/home/dev/project",
      title: "Files",
      modelLabel: "deepseek-coder",
      createdAt: "2025-11-20T10:00:00.000Z",
      format: "deepcode-core-v0",
    });
    expect(session.messages.map((m) => m.role)).toEqual(["user", "assistant", "assistant"]);
    expect(session.messages[1]!.parts[0]).toMatchObject({ type: "tool", tool_call_id: "t1", state: "output-available", output: "a.ts\nb.ts" });
    expect(session.messages[2]!.parts).toEqual([{ sequence: 1, type: "text", text: "There are two files: a.ts and b.ts." }]);
  });

  it("desktop-v0: session_meta without schema_version, Unix-seconds times converted to ISO", () => {
    const { session, layout } = readDeepCode({ file: "b91c.jsonl", bytes: fixture(DESKTOP) });
    expect(layout).toBe("desktop-v0");
    expect(session.createdAt).toBe("2025-12-02T13:00:00.000Z");
    expect(session.updatedAt).toBe("2025-12-02T13:01:00.000Z");
    expect(session.cwd).toBe("C:\\Users\\dev\\app");
    expect(session.messages.map((m) => m.created_at)).toEqual(["2025-12-02T13:00:01.000Z", "2025-12-02T13:00:03.000Z"]);
    expect(session.messages[1]!.parts.map((p) => p.type)).toEqual(["reasoning", "text"]);
  });

  it("detectDeepCodeLayout prefers v1, else tells core-v0 from desktop-v0", () => {
    const v1 = detectDeepCodeLayout([
      { name: "dir/7f3a.jsonl", bytes: fixture(CORE) },
      { name: "dir/7f3a.meta.json", bytes: fixture(CORE_META) },
      { name: "dir/7f3a.v1.jsonl", bytes: fixture(V1) },
    ]);
    expect(v1).toMatchObject({ layout: "v1", id: "7f3a", file: "dir/7f3a.v1.jsonl" });
    const core = detectDeepCodeLayout([{ name: "c0de.jsonl", bytes: fixture(CORE) }, { name: "c0de.meta.json", bytes: fixture(CORE_META) }, {
      name: "notes.txt",
      bytes: utf8("x"),
    }]);
    expect(core).toMatchObject({ layout: "core-v0", id: "c0de", metaFile: "c0de.meta.json" });
    expect(readDeepCode(core).session.messages).toHaveLength(3);
    const desktop = detectDeepCodeLayout([{ name: "b91c.jsonl", bytes: fixture(DESKTOP) }]);
    expect(desktop).toMatchObject({ layout: "desktop-v0", id: "b91c" });
    expect(readDeepCode(desktop).session.sourceId).toBe("b91c");
  });

  it("detectDeepCodeLayout refuses ambiguity and a legacy stream it cannot place", () => {
    expect(thrown(() => detectDeepCodeLayout([]))).toBeInstanceOf(InvalidInputError);
    expect(thrown(() => detectDeepCodeLayout([{ name: "a.v1.jsonl", bytes: fixture(V1) }, { name: "b.jsonl", bytes: fixture(DESKTOP) }]))).toBeInstanceOf(
      InvalidInputError,
    );
    expect(detectDeepCodeLayout([{ name: "a.v1.jsonl", bytes: fixture(V1) }, { name: "b.jsonl", bytes: fixture(DESKTOP) }], "b").layout).toBe("desktop-v0");
    expectFormatError(thrown(() => detectDeepCodeLayout([{ name: "c0de.jsonl", bytes: fixture(CORE) }])), {
      file: "c0de.jsonl",
      line: 1,
      message: /meta\.json/,
    });
  });
});

describe("DeepCode refusals: typed errors naming file and line, nothing created", () => {
  it("an invalid line in the middle", async () => {
    const bytes = fixture("deepcode/refusals/corrupt-middle.v1.jsonl");
    const copy = bytes.slice();
    expectFormatError(thrown(() => readDeepCode({ file: "corrupt-middle.v1.jsonl", bytes })), {
      file: "corrupt-middle.v1.jsonl",
      line: 3,
      message: /invalid JSON/,
    });
    expect(bytes).toEqual(copy);
  });

  it("a tool_result with no earlier tool_use", () => {
    expectFormatError(thrown(() => readDeepCode({ file: "orphan-result.v1.jsonl", bytes: fixture("deepcode/refusals/orphan-result.v1.jsonl") })), {
      file: "orphan-result.v1.jsonl",
      line: 3,
      path: "$.content[0].tool_use_id",
      message: /"call_9"/,
    });
  });

  it("a second result for a call that already has one", () => {
    const bytes = utf8(
      HEADER +
        msg("assistant", [{ type: "tool_use", id: "x", name: "a", input: {} }]) +
        msg("user", [{ type: "tool_result", tool_use_id: "x", content: "1" }]) +
        msg("user", [{ type: "tool_result", tool_use_id: "x", content: "2" }]),
    );
    expectFormatError(thrown(() => readDeepCode({ file: "s.v1.jsonl", bytes })), { file: "s.v1.jsonl", line: 4 });
  });

  it("an unknown content block type", () => {
    expectFormatError(thrown(() => readDeepCode({ file: "u.v1.jsonl", bytes: fixture("deepcode/refusals/unknown-block.v1.jsonl") })), {
      file: "u.v1.jsonl",
      line: 2,
      path: "$.content[1].type",
    });
  });

  it("an unknown schema_version is unsupported-schema, on the header or a message", () => {
    expectUnsupported(thrown(() => readDeepCode({ file: "future.v1.jsonl", bytes: fixture("deepcode/refusals/future.v1.jsonl") })), {
      file: "future.v1.jsonl",
      line: 1,
      found: 2,
    });
    expectUnsupported(
      thrown(() => readDeepCode({ file: "s.v1.jsonl", bytes: utf8(HEADER + line({ type: "message", schema_version: 3, role: "user", content: [] })) })),
      { file: "s.v1.jsonl", line: 2, found: 3 },
    );
  });

  it("wrong roles and block placements", () => {
    const cases: [string, string][] = [
      [msg("system", []), "$.role"],
      [msg("assistant", [{ type: "tool_result", tool_use_id: "x", content: "" }]), "$.content[0]"],
      [msg("user", [{ type: "tool_use", id: "x", name: "n", input: {} }]), "$.content[0]"],
      [msg("tool", [{ type: "text", text: "t" }]), "$.content[0]"],
      [msg("user", [{ type: "text" }]), "$.content[0].text"],
      [msg("user", [{ type: "tool_use", id: "", name: "n", input: {} }]), "$.content[0]"],
      [line({ type: "message", role: "user", content: [] }), "$.schema_version"],
      [line({ type: "message", schema_version: 1, role: "user", content: [], timestamp: "yesterday" }), "$.timestamp"],
      [line([1, 2]), "$"],
    ];
    for (const [record, path] of cases) {
      const error = expectFormatError(thrown(() => readDeepCode({ file: "s.v1.jsonl", bytes: utf8(HEADER + record) })), { file: "s.v1.jsonl", line: 2 });
      expect(error.details.path === path || (error.details.path ?? "").startsWith(path)).toBe(true);
    }
  });

  it("a missing or torn header; an empty file", () => {
    expectFormatError(thrown(() => readDeepCode({ file: "e.v1.jsonl", bytes: new Uint8Array(0) })), { file: "e.v1.jsonl", line: 1, message: /empty file/ });
    expectFormatError(thrown(() => readDeepCode({ file: "t.v1.jsonl", bytes: utf8('{"type":"session_me') })), {
      file: "t.v1.jsonl",
      line: 1,
      message: /interrupted/,
    });
    expectFormatError(thrown(() => readDeepCode({ file: "m.v1.jsonl", bytes: utf8(msg("user", [])) })), { file: "m.v1.jsonl", line: 1, path: "$.type" });
  });

  it("invalid UTF-8 in the middle names its line", () => {
    const bytes = new Uint8Array([...utf8(HEADER), 0xff, 0xfe, 0x0a, ...utf8(msg("user", []))]);
    expectFormatError(thrown(() => readDeepCode({ file: "s.v1.jsonl", bytes })), { file: "s.v1.jsonl", line: 2, message: /not UTF-8/ });
  });

  it("core-v0 without its meta.json, and a malformed meta.json (named with its line)", () => {
    const error = thrown(() => readDeepCode({ file: "c0de.jsonl", bytes: fixture(CORE), layout: "core-v0" }));
    expect(error).toBeInstanceOf(FormatError);
    expect((error as FormatError).details.file).toBe("c0de.meta.json");
    const meta = utf8('{\n  "id": "c0de",\n  "cwd": "/x",\n  "createdAt": 5,\n  "updatedAt": "2025-11-20T10:00:04.000Z"\n}\n');
    expectFormatError(thrown(() => readDeepCode({ file: "c0de.jsonl", bytes: fixture(CORE), metaBytes: meta })), {
      file: "c0de.meta.json",
      line: 4,
      path: "$.createdAt",
    });
    expectFormatError(thrown(() => readDeepCode({ file: "c0de.jsonl", bytes: fixture(CORE), metaBytes: utf8('{\n  "id": "c0de",\n  oops\n}') })), {
      file: "c0de.meta.json",
      line: 3,
    });
  });

  it("desktop-v0 refuses schema_version on a message and a non-numeric created_at", () => {
    const header = line({ type: "session_meta", id: "d", cwd: "/", created_at: 1764680400 });
    expectFormatError(
      thrown(() => readDeepCode({ file: "d.jsonl", bytes: utf8(header + line({ type: "message", schema_version: 1, role: "user", content: [] })) })),
      { file: "d.jsonl", line: 2, path: "$.schema_version" },
    );
    expectFormatError(thrown(() => readDeepCode({ file: "d.jsonl", bytes: utf8(line({ type: "session_meta", id: "d", cwd: "/", created_at: "soon" })) })), {
      file: "d.jsonl",
      line: 1,
      path: "$.created_at",
    });
  });

  it("a v1 file name holding a desktop header is refused, not read as another layout", () => {
    const bytes = fixture(DESKTOP);
    expectFormatError(thrown(() => readDeepCode({ file: "b91c.v1.jsonl", bytes })), { file: "b91c.v1.jsonl", line: 1, path: "$.schema_version" });
  });
});
