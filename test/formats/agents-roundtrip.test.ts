/**
 * The round-trip tables: what survives sessionfold → pi → sessionfold, part by part, and
 * what survives carrying a Codex or Claude Code conversation on to pi (Codex → sessionfold
 * → pi → sessionfold). Each row is checked, and core/formats/README.md shows the same table.
 */
import { describe, expect, it } from "vitest";
import type { MessageRecord, NewMessage } from "../../core/mod.ts";
import { type PartOmission, readClaudeCode, readCodex, readPi, writePi } from "../../core/formats/mod.ts";
import { comparable, fixture, memorySessions } from "./support.ts";

const ID = { provider: "anthropic", api: "anthropic-messages", model: "claude-sonnet-4-5" };

/** One row: a conversation, and what it reads back as after sessionfold → pi → sessionfold. */
interface Row {
  readonly what: string;
  readonly messages: NewMessage[];
  /** `exact`, or the parts (role:type list) it comes back as. */
  readonly back: "exact" | string[];
  readonly omitted?: string[];
}

const ROWS: Row[] = [
  { what: "user text", messages: [{ role: "user", parts: [{ type: "text", text: "hi ünï 😀" }] }], back: "exact" },
  {
    what: "user image (inline base64)",
    messages: [{ role: "user", parts: [{ type: "text", text: "see" }, { type: "file", media_type: "image/png", data: "iVBORw0KGgo=" }] }],
    back: "exact",
  },
  {
    what: "user file by URL",
    messages: [{ role: "user", parts: [{ type: "text", text: "see" }, { type: "file", media_type: "application/pdf", url: "https://x/y.pdf" }] }],
    back: ["user:text"],
    omitted: ["0:file"],
  },
  {
    what: "assistant text, provider and usage",
    messages: [{ role: "user", parts: [{ type: "text", text: "q" }] }, {
      role: "assistant",
      provider: ID,
      usage: { input_tokens: 10, output_tokens: 2, total_tokens: 12 },
      parts: [{ type: "text", text: "a" }],
    }],
    back: "exact",
  },
  {
    what: "raw reasoning",
    messages: [{ role: "assistant", provider: ID, parts: [{ type: "reasoning", text: "think" }, { type: "text", text: "a" }] }],
    back: "exact",
  },
  {
    what: "reasoning summary",
    messages: [{ role: "assistant", provider: ID, parts: [{ type: "reasoning-summary", text: "sum" }] }],
    back: ["assistant:reasoning"],
  },
  {
    what: "tool calls: text output, error, JSON output, no result",
    messages: [
      {
        role: "assistant",
        provider: ID,
        parts: [
          { type: "tool", tool_call_id: "c1", tool_name: "read", state: "output-available", input: { p: 1 }, output: "text" },
          { type: "tool", tool_call_id: "c2", tool_name: "run", state: "output-error", input: {}, error: "exit 1" },
          { type: "tool", tool_call_id: "c3", tool_name: "grep", state: "output-available", input: {}, output: { n: 2 } },
          { type: "tool", tool_call_id: "c4", tool_name: "ls", state: "input-available", input: {} },
        ],
      },
    ],
    back: ["assistant:tool,tool,tool,tool"],
  },
  {
    what: "provider context",
    messages: [{ role: "assistant", provider: ID, parts: [{ type: "provider-context", ...ID, data: { x: 1 } }, { type: "text", text: "a" }] }],
    back: ["assistant:text"],
    omitted: ["0:provider-context"],
  },
  {
    what: "stopped and failed assistant messages",
    messages: [{ role: "assistant", provider: ID, status: "stopped", parts: [{ type: "text", text: "par" }] }, {
      role: "assistant",
      provider: ID,
      status: "failed",
      parts: [],
    }],
    back: "exact",
  },
  {
    what: "tool part in a user message",
    messages: [{ role: "user", parts: [{ type: "tool", tool_call_id: "h", tool_name: "n", state: "output-available", input: {}, output: "x" }] }],
    back: ["user:"],
    omitted: ["0:tool"],
  },
];

const shape = (messages: readonly MessageRecord[]) => messages.map((m) => `${m.role}:${m.parts.map((p) => p.type).join(",")}`);
/** What a round trip must keep of a message: everything but ids, and the `pi` extension it gains. */
const kept = (m: MessageRecord) => {
  const c = comparable(m, ["pi"]);
  c.parts = (c.parts as Record<string, unknown>[]).map(({ pi: _pi, ...part }) => part);
  return c;
};

describe("round trip sessionfold → pi → sessionfold", () => {
  for (const row of ROWS) {
    it(`${row.what}: ${row.back === "exact" ? "exact" : row.back.join(" ")}`, async () => {
      const sessions = memorySessions();
      const session = await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "src" });
      await session.append(row.messages);
      const portable = await session.exportPortable();
      const omitted: PartOmission[] = [];
      const bytes = writePi(portable, { cwd: "/r", onOmitted: (o) => omitted.push(o) });
      const { session: read } = await readPi(bytes, "rt.jsonl");
      const back = (await (await sessions.importPortable("a1/w1/back", read)).exportPortable()).messages;
      expect(omitted.map((o) => `${o.message}:${o.type}`)).toEqual(row.omitted ?? []);
      if (row.back === "exact") expect(back.map(kept)).toEqual(portable.messages.map((m) => comparable(m)));
      else expect(shape(back)).toEqual(row.back);
      // Times and tool pairing survive every row.
      expect(back.map((m) => m.created_at)).toEqual(portable.messages.map((m) => m.created_at));
      const pairs = (ms: readonly MessageRecord[]) =>
        ms.flatMap((m) => m.parts.flatMap((p) => (p.type === "tool" && m.role === "assistant" ? [`${p.tool_call_id}:${p.state}`] : [])));
      expect(pairs(back)).toEqual(pairs(portable.messages));
    });
  }

  it("compaction boundaries and the title survive; the system prompt does not (pi takes its own)", async () => {
    const sessions = memorySessions();
    const { session: read } = await readCodex(fixture("codex/rollout-2025-09-10T12-00-00-5f2c9a1e.jsonl"), "r.jsonl");
    const imported = await sessions.importPortable("a1/w1/c", { ...read, title: "From Codex" });
    const portable = await imported.exportPortable();
    const { session: back } = await readPi(writePi(portable), "rt.jsonl");
    expect(back.segments?.map((s) => [s.through, s.summary])).toEqual(portable.segments?.map((s) => [s.through, s.summary]));
    expect(back.title).toBe("From Codex");
    expect(back.system).toBeUndefined();
  });
});

describe("carrying Codex and Claude Code conversations to pi", () => {
  for (
    const [name, read] of [
      ["Codex", async () => (await readCodex(fixture("codex/rollout-2025-09-10T12-00-00-5f2c9a1e.jsonl"), "r.jsonl")).session],
      ["Claude Code", async () => (await readClaudeCode(fixture("claude-code/6a1f0c2e-session.jsonl"), "c.jsonl")).session],
    ] as const
  ) {
    it(`${name} → sessionfold → pi → sessionfold keeps every message, text, time and tool pairing; provider context is reported`, async () => {
      const sessions = memorySessions();
      const portable = await (await sessions.importPortable("a1/w1/src", await read())).exportPortable();
      const omitted: string[] = [];
      const { session: back } = await readPi(writePi(portable, { onOmitted: (o) => omitted.push(o.type) }), "rt.jsonl");
      const texts = (ms: readonly MessageRecord[]) => ms.map((m) => m.parts.flatMap((p) => (p.type === "text" ? [p.text] : [])));
      expect(back.messages.length).toBe(portable.messages.length);
      expect(texts(back.messages)).toEqual(texts(portable.messages));
      expect(back.messages.map((m) => m.created_at)).toEqual(portable.messages.map((m) => m.created_at));
      const pairs = (ms: readonly MessageRecord[]) => ms.flatMap((m) => m.parts.flatMap((p) => (p.type === "tool" ? [`${p.tool_call_id}:${p.state}`] : [])));
      expect(pairs(back.messages)).toEqual(pairs(portable.messages));
      expect(new Set(omitted)).toEqual(new Set(["provider-context"]));
    });
  }
});
