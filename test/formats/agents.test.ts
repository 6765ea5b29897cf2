/**
 * Codex rollouts and Claude Code transcripts: fixtures built from the record shapes in
 * each project's own code (see core/formats/README.md for where each shape comes from),
 * imported whole; corruption and torn tails as the JSONL rules say; format detection.
 */
import { describe, expect, it } from "vitest";
import { detectSessionFormat, FormatError, readClaudeCode, readCodex } from "../../core/formats/mod.ts";
import type { MessageRecord } from "../../core/mod.ts";
import { fixture, memorySessions, text, utf8 } from "./support.ts";

const CODEX = "codex/rollout-2025-09-10T12-00-00-5f2c9a1e.jsonl";
const CLAUDE = "claude-code/6a1f0c2e-session.jsonl";

const shape = (messages: readonly MessageRecord[]) =>
  messages.map((m) => `${m.role}:${m.parts.map((p) => (p.type === "tool" ? `tool(${(p as { state: string }).state})` : p.type)).join(",")}`);

describe("readCodex", () => {
  it("imports messages, reasoning, calls with their outputs and a compaction boundary", async () => {
    const bytes = fixture(CODEX);
    const copy = bytes.slice();
    const { session, diagnostics } = await readCodex(bytes, "rollout.jsonl");
    expect(bytes).toEqual(copy);
    expect(diagnostics).toEqual([]);
    expect(session).toMatchObject({
      sourceId: "5f2c9a1e-0000-4000-8000-000000000001",
      cwd: "/home/dev/app",
      system: "You are Codex.",
      modelLabel: "gpt-5-codex",
      format: "codex-rollout",
    });
    expect(shape(session.messages)).toEqual([
      "user:text",
      "user:text,file",
      "assistant:reasoning-summary,provider-context,tool(output-available),tool(output-available),tool(output-error),text",
      "user:text",
      "assistant:tool(output-available),text",
    ]);
    const turn = session.messages[2]!;
    expect(turn.parts[1]).toMatchObject({
      type: "provider-context",
      provider: "openai",
      api: "responses",
      model: "gpt-5-codex",
      data: { encrypted_content: "gAAAAB-opaque" },
    });
    expect(turn.parts[2]).toMatchObject({
      tool_name: "shell",
      input: { command: ["npm", "test"] },
      output: '{"output":"1 failing","metadata":{"exit_code":1}}',
    });
    expect(turn.parts[4]).toMatchObject({ tool_name: "local_shell", error: "permission denied" });
    expect(session.messages[0]).toMatchObject({ codex: { role: "developer" } });
    expect(session.messages[1]!.parts[1]).toMatchObject({ type: "file", media_type: "image/png", data: "iVBORw0KGgo=" });
    expect(session.segments).toEqual([{
      through: 3,
      summary: "The user asked why tests failed; the expectation was fixed.",
      createdAt: "2025-09-10T12:10:00.000Z",
    }]);
    const imported = await memorySessions().importPortable("a1/w1/codex", session);
    expect(imported.summary?.text).toBe("The user asked why tests failed; the expectation was fixed.");
    expect(imported.active.length).toBe(2);
  });

  it("refuses an output without its call, an unknown item type and mid-file corruption, at their lines", async () => {
    const lines = text(fixture(CODEX)).trimEnd().split("\n");
    const orphan = [...lines.slice(0, 3), lines[7]!];
    await expect(readCodex(utf8(orphan.join("\n") + "\n"), "r.jsonl")).rejects.toThrow(/^r\.jsonl:4: \$\.payload\.call_id: found "call_1"/);
    const unknown = [...lines.slice(0, 3), JSON.stringify({ timestamp: "2025-09-10T12:00:00.000Z", type: "response_item", payload: { type: "hologram" } })];
    await expect(readCodex(utf8(unknown.join("\n") + "\n"), "r.jsonl")).rejects.toThrow(/^r\.jsonl:4: \$\.payload\.type: found "hologram"; expected "message"/);
    const broken = [...lines];
    broken[6] = broken[6]!.slice(0, 30);
    await expect(readCodex(utf8(broken.join("\n") + "\n"), "r.jsonl")).rejects.toMatchObject({ constructor: FormatError, line: 7 });
    const torn = `${lines.join("\n")}\n${lines[3]!.slice(0, 40)}`;
    const read = await readCodex(utf8(torn), "r.jsonl");
    expect(read.diagnostics.map((d) => [d.code, d.line])).toEqual([["truncated_tail", lines.length + 1]]);
    await expect(readCodex(utf8(lines.slice(1).join("\n")), "r.jsonl")).rejects.toThrow(
      /^r\.jsonl:1: \$\.type: found "response_item"; expected "session_meta"/,
    );
  });
});

describe("readClaudeCode", () => {
  it("imports the main chain: one message per API message, results joined, sidechain left, compaction as a segment", async () => {
    const bytes = fixture(CLAUDE);
    const { session, diagnostics, offChainRecords } = await readClaudeCode(bytes, "s.jsonl");
    expect(diagnostics).toEqual([]);
    expect(offChainRecords).toBe(1);
    expect(session).toMatchObject({
      sourceId: "6a1f0c2e-0000-4000-8000-000000000000",
      cwd: "/Users/dev/site",
      title: "Fix the flaky date test",
      format: "claude-code",
    });
    expect(shape(session.messages)).toEqual([
      "user:text",
      "assistant:reasoning,provider-context,tool(output-available)",
      "assistant:text,tool(output-error)",
      "user:text,file",
      "assistant:provider-context,text",
    ]);
    expect(session.messages[1]!.parts[1]).toMatchObject({
      provider: "anthropic",
      api: "messages",
      model: "claude-sonnet-4-5-20250929",
      data: { type: "thinking", signature: "EqoBsig==" },
    });
    expect(session.messages[1]!.usage).toMatchObject({ input_tokens: 10, output_tokens: 40 });
    expect(session.messages[2]!.parts[1]).toMatchObject({ error: "exit 1" });
    expect(session.segments).toEqual([{
      through: 3,
      summary: "This session is being continued from a previous conversation. Summary: the date test used local time.",
      createdAt: "2025-10-01T09:30:00.100Z",
    }]);
    const imported = await memorySessions().importPortable("a1/w1/claude", session);
    expect(imported.active.length).toBe(2);
  });

  it("refuses a result without its tool_use and a parent that is not earlier, at their lines; tolerates a torn tail", async () => {
    const lines = text(fixture(CLAUDE)).trimEnd().split("\n");
    const orphan = [lines[1]!, JSON.stringify({ ...JSON.parse(lines[4]!), parentUuid: "a0000000-0000-4000-8000-000000000001" })];
    await expect(readClaudeCode(utf8(orphan.join("\n") + "\n"), "s.jsonl")).rejects.toThrow(
      /^s\.jsonl:2: \$\.message\.content\[0\]\.tool_use_id: found "toolu_01"/,
    );
    const wrongParent = [lines[1]!, JSON.stringify({ ...JSON.parse(lines[2]!), parentUuid: "nope" })];
    await expect(readClaudeCode(utf8(wrongParent.join("\n") + "\n"), "s.jsonl")).rejects.toThrow(/^s\.jsonl:2: \$\.parentUuid: found "nope"/);
    const torn = `${lines.join("\n")}\n${lines[2]!.slice(0, 50)}`;
    const read = await readClaudeCode(utf8(torn), "s.jsonl");
    expect(read.diagnostics.map((d) => d.line)).toEqual([lines.length + 1]);
    expect(read.session.messages.length).toBe(5);
  });
});

describe("detectSessionFormat", () => {
  it("tells the formats apart from the first line", () => {
    expect(detectSessionFormat(fixture(CODEX))?.format).toBe("codex");
    expect(detectSessionFormat(fixture(CLAUDE))?.format).toBe("claude-code");
    expect(detectSessionFormat(utf8('{"type":"session","version":3,"id":"x","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}\n'))?.format).toBe("pi");
    expect(detectSessionFormat(utf8('{"type":"session","version":3,"id":"x","timestamp":"1764680400","cwd":"/"}\n'))?.format).toBe("rho-jsonl");
    expect(detectSessionFormat(utf8('{"type":"session_meta","schema_version":1,"id":"x"}\n'))?.format).toBe("deepcode");
    expect(detectSessionFormat(utf8('{\n  "schema_version": 2,\n  "history": []\n}\n'))?.format).toBe("rho-snapshot");
    expect(detectSessionFormat(utf8("hello\n"))).toBeUndefined();
    // A head cut inside a UTF-8 character after the first line is still read.
    const head = utf8('{"uuid":"u","sessionId":"s"}\n{"message":"ü"}');
    expect(detectSessionFormat(head.subarray(0, head.length - 3))?.format).toBe("claude-code");
  });
});
