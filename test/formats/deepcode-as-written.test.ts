/**
 * DeepCode files as DeepCode's own code writes them (test/formats/fixtures/deepcode/as-written/,
 * see its README for the writer of each), both directions: read, export, and the export
 * read back by the port of DeepCode's reader (deepcode-reader.ts).
 */
import { describe, expect, it } from "vitest";
import { detectDeepCodeLayout, readDeepCode, writeDeepCodeV1 } from "../../core/formats/mod.ts";
import { deepCodeReaderProblems, expectDeepCodeReads } from "./deepcode-reader.ts";
import { fixture, memorySessions, text, utf8 } from "./support.ts";

const DIR = "deepcode/as-written/";
const read = (name: string, extra: { metaName?: string } = {}) =>
  readDeepCode(
    detectDeepCodeLayout([{ name, bytes: fixture(DIR + name) }, ...(extra.metaName ? [{ name: extra.metaName, bytes: fixture(DIR + extra.metaName) }] : [])]),
  );
const lines = (bytes: Uint8Array) => text(bytes).trimEnd().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);

async function exported(name: string, extra: { metaName?: string } = {}) {
  const { session } = read(name, extra);
  const sessions = memorySessions();
  const imported = await sessions.importPortable("a1/w1/s", session);
  const bytes = writeDeepCodeV1(await imported.exportPortable(), { cwd: session.cwd ?? "/fallback" });
  expectDeepCodeReads(bytes);
  return { bytes, lines: lines(bytes), session };
}

describe("DeepCode v1 headers as DeepCode writes them", () => {
  it("a desktop-v0 header normalized to v1: created_at in Unix seconds, no updated_at (taken from the last message, with a diagnostic)", async () => {
    const { session, diagnostics, layout } = read("2025-12-02-1a2b3c4d.v1.jsonl");
    expect(layout).toBe("v1");
    expect(session.createdAt).toBe("2025-12-02T13:00:00.000Z");
    expect(session.updatedAt).toBe("2025-12-02T13:00:05.000Z");
    expect(session.cwd).toBe("/Users/dev/app");
    expect(diagnostics).toEqual([
      expect.objectContaining({ code: "time_from_messages", fatal: false, line: 1, message: expect.stringMatching(/no updated_at/) }),
    ]);
    expect(session.messages.map((m) => m.role)).toEqual(["user", "assistant", "assistant"]);
    expect(session.messages[1]!.parts[0]).toMatchObject({ type: "tool", state: "output-available", output: "a.ts\nb.ts" });
    const out = await exported("2025-12-02-1a2b3c4d.v1.jsonl");
    expect(out.lines[0]).toMatchObject({ created_at: "2025-12-02T13:00:00.000Z", updated_at: "2025-12-02T13:00:05.000Z" });
    // The result keeps the time of the record it came in, not the assistant's.
    expect(out.lines.map((l) => l.timestamp)).toEqual([
      undefined,
      "2025-12-02T13:00:01.000Z",
      "2025-12-02T13:00:01.000Z",
      "2025-12-02T13:00:05.000Z",
      "2025-12-02T13:00:05.000Z",
    ]);
  });

  it('the header DeepCode writes for a session that had none: only cwd "", id, schema_version, type', async () => {
    const { session, diagnostics } = read("20251120100000-k3j9x1.v1.jsonl");
    expect(session).toMatchObject({ sourceId: "20251120100000-k3j9x1", cwd: "", createdAt: "2025-11-20T10:00:00.000Z", updatedAt: "2025-11-20T10:00:09.000Z" });
    expect(diagnostics.map((d) => d.message)).toEqual([expect.stringMatching(/no created_at and updated_at; taken from the first \/ last message/)]);
    const out = await exported("20251120100000-k3j9x1.v1.jsonl");
    expect(out.lines[0]).toMatchObject({
      id: "20251120100000-k3j9x1",
      cwd: "",
      created_at: "2025-11-20T10:00:00.000Z",
      updated_at: "2025-11-20T10:00:09.000Z",
    });
  });

  it("a renamed core-v0 session normalized to v1: no cwd, no times", () => {
    const { session, diagnostics } = read("5e1f.v1.jsonl");
    expect(session.cwd).toBeUndefined();
    expect(session).toMatchObject({ title: "Renamed by hand", createdAt: "2025-11-21T08:00:00.000Z", updatedAt: "2025-11-21T08:00:02.000Z" });
    expect(diagnostics).toHaveLength(1);
  });

  it("a core-v0 stream with the header the desktop app prepended on rename ({id, title, type})", async () => {
    const found = detectDeepCodeLayout([{ name: "c0de.jsonl", bytes: fixture(DIR + "c0de.jsonl") }, {
      name: "c0de.meta.json",
      bytes: fixture(DIR + "c0de.meta.json"),
    }]);
    expect(found.layout).toBe("core-v0");
    const { session, diagnostics } = readDeepCode(found);
    expect(diagnostics).toEqual([]);
    // The header's title wins over the sidecar's, as DeepCode's title lookup does.
    expect(session).toMatchObject({
      sourceId: "c0de",
      title: "Renamed by hand",
      cwd: "/home/dev/project",
      modelLabel: "deepseek-chat",
      createdAt: "2025-11-20T10:00:00.000Z",
    });
    expect(session.messages).toHaveLength(3);
    // Without the sidecar the header alone names the session (DeepCode normalizes it the same way).
    const alone = readDeepCode({ file: "c0de.jsonl", bytes: fixture(DIR + "c0de.jsonl") });
    expect(alone.session).toMatchObject({
      sourceId: "c0de",
      title: "Renamed by hand",
      createdAt: "2025-11-20T10:00:00.000Z",
      updatedAt: "2025-11-20T10:00:04.000Z",
    });
    const out = await exported("c0de.jsonl", { metaName: "c0de.meta.json" });
    expect(out.lines[0]).toMatchObject({ title: "Renamed by hand", model: "deepseek-chat", updated_at: "2025-11-20T10:00:04.000Z" });
  });

  it("a record type other than session_meta/message is skipped with a non-fatal diagnostic, as DeepCode's reader does", async () => {
    const { session, diagnostics } = read("9a0b.v1.jsonl");
    expect(session.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(diagnostics).toEqual([{ file: "9a0b.v1.jsonl", line: 3, code: "unknown_record", fatal: false, message: expect.stringMatching(/"turn_completed"/) }]);
    // A second header is skipped too (DeepCode keeps the first).
    const twice = readDeepCode({
      file: "x.v1.jsonl",
      bytes: utf8(text(fixture(DIR + "9a0b.v1.jsonl")) + '{"type":"session_meta","schema_version":1,"id":"other"}\n'),
    });
    expect(twice.session.sourceId).toBe("9a0b");
    expect(twice.diagnostics.map((d) => d.line)).toEqual([3, 5]);
    const out = await exported("9a0b.v1.jsonl");
    expect(out.lines[0]).toMatchObject({ created_at: "2026-03-01T09:00:00.000Z", updated_at: "2026-03-01T09:05:00.000Z", model: "deepseek-v4-pro" });
  });

  it("the ported reader check fails on what DeepCode refuses (it is not a check that always passes)", () => {
    const bad = utf8(
      '{"type":"session_meta","schema_version":1,"id":"x","cwd":"/","created_at":1,"updated_at":"2026-01-01T00:00:00.000Z"}\n{"type":"message","schema_version":1,"role":"tool","content":[{"type":"tool_result","tool_use_id":"t","content":["a"]}]}\n',
    );
    expect(deepCodeReaderProblems(bad)).toEqual([
      "line 1: header created_at is not a string (DeepCode would use the file's mtime)",
      'line 2: role "tool" (isStoredMessage accepts only "user" and "assistant")',
      "line 2: content[0]: tool_result outside a user message",
      "line 2: content[0].content is not a string (ToolResultBlock.content: string)",
    ]);
  });
});
