import { describe, expect, it } from "vitest";
import type { MessageRecord, NewMessage, Session } from "../../core/mod.ts";
import { type PartOmission, readDeepCode, readRhoSnapshot, writeDeepCodeV1, writeRhoSnapshot } from "../../core/formats/mod.ts";
import { comparable, memorySessions, text } from "./support.ts";
import { expectDeepCodeReads } from "./deepcode-reader.ts";
import { expectRhoReads } from "./rho-reader.ts";

const OPENAI = { provider: "openai", api: "responses", model: "gpt-5" };
const ANTHROPIC = { provider: "anthropic", api: "messages", model: "claude-sonnet-4-5" };

/** A conversation with every part DeepCode v1 holds: text, reasoning, tool calls with and without results. */
const deepCodeConversation: NewMessage[] = [
  { role: "user", parts: [{ type: "text", text: "Why does the build fail?" }] },
  {
    role: "assistant",
    parts: [
      { type: "reasoning", text: "Look at the log first." },
      { type: "text", text: "Reading the log." },
      { type: "tool", tool_call_id: "c1", tool_name: "read", state: "output-available", input: { path: "build.log" }, output: "error TS2322" },
      { type: "tool", tool_call_id: "c2", tool_name: "run", state: "output-error", input: { cmd: "tsc" }, error: "exit 2" },
      { type: "text", text: "Two findings." },
      { type: "tool", tool_call_id: "c3", tool_name: "grep", state: "output-available", input: { q: "x" }, output: { matches: [1, 2], note: null } },
    ],
  },
  { role: "assistant", parts: [{ type: "tool", tool_call_id: "c4", tool_name: "ls", state: "input-available", input: {} }] },
  { role: "user", parts: [{ type: "text", text: "Go on." }, { type: "text", text: "Please." }] },
  { role: "assistant", parts: [{ type: "text", text: "Done: 1 + 1 = 2 ✓ — ünïcödé 😀" }] },
];

/** A conversation with every part a Rho snapshot holds, in the order Rho keeps them. */
const rhoConversation: NewMessage[] = [
  { role: "user", parts: [{ type: "text", text: "What is on screen?" }, { type: "file", media_type: "image/png", data: "iVBORw0KGgo=" }] },
  {
    role: "assistant",
    provider: OPENAI,
    parts: [
      { type: "reasoning-summary", text: "A stack trace." },
      { type: "provider-context", ...OPENAI, data: { encrypted_content: "opaque-1" }, kind: "reasoning", position: 0 },
      { type: "provider-context", ...OPENAI, data: ["second", 2] },
      { type: "text", text: "A stack trace; reading the file." },
      { type: "tool", tool_call_id: "c1", tool_name: "read", state: "output-available", input: { path: "a.ts" }, output: "line 1" },
      { type: "tool", tool_call_id: "c2", tool_name: "run", state: "output-error", input: { cmd: "npm test" }, error: "exit 1" },
    ],
  },
  { role: "assistant", parts: [{ type: "text", text: "Plain answer without provenance." }] },
  { role: "user", parts: [{ type: "tool", tool_call_id: "h1", tool_name: "host_note", state: "output-available", input: { k: 1 }, output: "noted" }] },
  {
    role: "assistant",
    provider: ANTHROPIC,
    status: "stopped",
    usage: { input_tokens: 900, output_tokens: 12, total_tokens: 912 },
    parts: [
      { type: "provider-context", ...ANTHROPIC, data: { signature: "sig" }, kind: "thinking" },
      { type: "text", text: "Partial answ" },
      { type: "tool", tool_call_id: "c3", tool_name: "edit", state: "input-available", input: { path: "a.ts" } },
    ],
  },
  { role: "user", parts: [{ type: "text", text: "Continue." }] },
];

async function sessionWith(
  messages: NewMessage[],
  input: { instruction?: string } = {},
): Promise<{ session: Session; sessions: ReturnType<typeof memorySessions> }> {
  const sessions = memorySessions();
  const session = await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "src", title: "Round trip", ...input });
  await session.append(messages);
  return { session, sessions };
}

function withJsonTextOutputs(message: MessageRecord): MessageRecord {
  return {
    ...message,
    parts: message.parts.map((
      p,
    ) => (p.type === "tool" && p.output !== undefined && typeof p.output !== "string" ? { ...p, output: JSON.stringify(p.output) } : p)),
  };
}

function toolPairs(messages: readonly MessageRecord[]): string[] {
  return messages.flatMap((m, i) =>
    m.parts.filter((p) => p.type === "tool").map((p) => `${i}:${(p as { tool_call_id: string }).tool_call_id}:${(p as { state: string }).state}`)
  );
}

describe("round trip sessionfold → DeepCode v1 → sessionfold", () => {
  it("keeps every message, its time, part order and tool pairing", async () => {
    const { session, sessions } = await sessionWith(deepCodeConversation);
    const portable = await session.exportPortable();
    const omitted: PartOmission[] = [];
    const bytes = writeDeepCodeV1(portable, { cwd: "/repo", onOmitted: (o) => omitted.push(o) });
    expect(omitted).toEqual([]);
    const copy = bytes.slice();
    const { session: read, diagnostics } = readDeepCode({ file: "src.v1.jsonl", bytes });
    expect(diagnostics).toEqual([]);
    expect(bytes).toEqual(copy);
    expectDeepCodeReads(bytes);
    const back = await (await sessions.importPortable("a1/w1/back", read)).exportPortable();
    // DeepCode types a tool result as a string: a structured output comes back as its JSON text.
    expect(back.messages.map((m) => comparable(m))).toEqual(portable.messages.map((m) => comparable(withJsonTextOutputs(m))));
    expect(toolPairs(back.messages)).toEqual(toolPairs(portable.messages));
    expect(back.title).toBe("Round trip");
    expect(back.cwd).toBe("/repo");
    expect(back.createdAt).toBe(portable.createdAt);
  });

  it("writes tool results in a user message right after the assistant message, as DeepCode does", async () => {
    const { session } = await sessionWith(deepCodeConversation);
    const lines = text(writeDeepCodeV1(await session.exportPortable(), { cwd: "/repo" })).trimEnd().split("\n").map((l) => JSON.parse(l));
    expect(lines[0]).toMatchObject({ type: "session_meta", schema_version: 1, id: "src", cwd: "/repo", title: "Round trip" });
    expect(lines.slice(1).map((l) => l.role)).toEqual(["user", "assistant", "user", "assistant", "user", "assistant"]);
    expect(lines[3].content).toEqual([
      { type: "tool_result", tool_use_id: "c1", content: "error TS2322" },
      { type: "tool_result", tool_use_id: "c2", content: "exit 2", is_error: true },
      { type: "tool_result", tool_use_id: "c3", content: '{"matches":[1,2],"note":null}' },
    ]);
    for (const l of lines.slice(1)) expect(l).toMatchObject({ type: "message", schema_version: 1 });
    // Sessionfold's own session has no separate result times: the result records carry none (timestamp is optional in v1).
    expect(lines[3].timestamp).toBeUndefined();
  });

  it("reports what v1 cannot hold and refuses to guess a cwd", async () => {
    const { session } = await sessionWith(rhoConversation);
    const portable = await session.exportPortable();
    expect(() => writeDeepCodeV1(portable)).toThrow(/cwd/);
    const omitted: PartOmission[] = [];
    writeDeepCodeV1(portable, { cwd: "/", onOmitted: (o) => omitted.push(o) });
    expect(omitted.map((o) => `${o.message}:${o.part}:${o.type}`)).toEqual([
      "0:2:file",
      "1:2:provider-context",
      "1:3:provider-context",
      "3:1:tool",
      "4:1:provider-context",
    ]);
  });
});

describe("round trip sessionfold → Rho snapshot → sessionfold", () => {
  it("keeps every message, part order, tool pairing, provider context identity, revision and system", async () => {
    const { session, sessions } = await sessionWith(rhoConversation, { instruction: "You are terse." });
    const portable = await session.exportPortable();
    const bytes = writeRhoSnapshot(portable);
    expectRhoReads(bytes);
    const copy = bytes.slice();
    const read = readRhoSnapshot(bytes, "src.json", { timestamp: "2026-12-02T14:00:00.000Z" });
    expect(bytes).toEqual(copy);
    expect(read.revision).toBe(portable.revision);
    expect(read.system).toBe("You are terse.");
    const imported = await sessions.importPortable("a1/w1/back", read);
    const back = await imported.exportPortable();
    expect(back.revision).toBe(portable.revision);
    expect(back.system).toBe("You are terse.");
    // Message times are not part of a snapshot; completed messages carry no usage in Rho.
    const original = portable.messages.map((m) => comparable(m, m.status === "completed" ? ["created_at", "usage"] : ["created_at"]));
    const after = back.messages.map((m) => comparable(m, ["created_at", "rho"]));
    // Rho's provider context has a required `kind`: a part without one is written as "opaque".
    (original[1]!.parts as Record<string, unknown>[])[2]!.kind = "opaque";
    expect(after).toEqual(original);
    expect(toolPairs(back.messages)).toEqual(toolPairs(portable.messages));
    // Exporting the re-imported session gives the same snapshot, byte for byte, except the
    // session id: exportPortable names the sessionfold session ("back"), not the source's.
    expect(text(writeRhoSnapshot({ ...back, sourceId: "src" }))).toBe(text(bytes));
  });

  it("writes provider = the newest assistant message's, else unknown in all three fields", async () => {
    const { session } = await sessionWith(rhoConversation);
    const doc = JSON.parse(text(writeRhoSnapshot(await session.exportPortable())));
    expect(doc.schema_version).toBe(2);
    expect(doc.provider).toEqual(ANTHROPIC);
    const plain = await sessionWith([{ role: "user", parts: [{ type: "text", text: "hi" }] }, { role: "assistant", parts: [{ type: "text", text: "yo" }] }]);
    const doc2 = JSON.parse(text(writeRhoSnapshot(await plain.session.exportPortable())));
    expect(doc2.provider).toEqual({ provider: "unknown", api: "unknown", model: "unknown" });
    // No instruction: no System entry; a completed message without extras is a plain Assistant.
    expect(doc2.history).toEqual([{ User: [{ Text: "hi" }] }, { Assistant: [{ Text: "yo" }] }]);
  });

  it("never writes raw reasoning, from completed or stopped messages; summaries are kept", async () => {
    const MARKER = "RAW-REASONING-MARKER-7c1e9";
    const { session } = await sessionWith([
      { role: "user", parts: [{ type: "text", text: "think" }] },
      {
        role: "assistant",
        provider: OPENAI,
        parts: [{ type: "reasoning", text: `${MARKER} completed` }, { type: "reasoning-summary", text: "summary kept" }, { type: "text", text: "ok" }],
      },
      { role: "assistant", status: "stopped", parts: [{ type: "reasoning", text: `${MARKER} stopped` }, { type: "text", text: "part" }] },
      { role: "user", parts: [{ type: "reasoning", text: `${MARKER} user` }] },
    ]);
    const omitted: PartOmission[] = [];
    const out = text(writeRhoSnapshot(await session.exportPortable(), { onOmitted: (o) => omitted.push(o) }));
    expect(out).not.toContain(MARKER);
    expect(out).toContain("summary kept");
    expect(omitted.filter((o) => o.type === "reasoning")).toHaveLength(3);
    const doc = JSON.parse(out);
    const aborted = doc.history.find((entry: Record<string, unknown>) => "AbortedAssistant" in entry);
    expect(aborted.AbortedAssistant.reasoning).toBe("");
  });

  it("keeps the imported revision: an export never shows a lower one", async () => {
    const { session, sessions } = await sessionWith(rhoConversation);
    const portable = await session.exportPortable();
    const high = { ...portable, revision: 41 };
    const imported = await sessions.importPortable("a1/w1/high", readRhoSnapshot(writeRhoSnapshot(high), "h.json"));
    expect((await imported.exportPortable()).revision).toBe(41);
    expect(JSON.parse(text(writeRhoSnapshot(await imported.exportPortable()))).revision).toBe(41);
  });
});
