import { describe, expect, it } from "vitest";
import { MemoryStorage, Sessions } from "../../core/mod.ts";
import { ScriptedSummarizer } from "../../testing/mod.ts";

const ACTIVE = "agents/a/workspaces/w/sessions/s1/messages/active.jsonl";
const text = (bytes: Uint8Array | undefined) => new TextDecoder().decode(bytes);
const futureLines = (content: string) => content.split("\n").filter((line) => line.includes('"record_type":"future"'));

async function sessionWithFutureRecords() {
  const storage = new MemoryStorage();
  const sessions = new Sessions({ storage, defaults: { summarizer: new ScriptedSummarizer() } });
  const session = await sessions.create({ agentId: "a", workspaceId: "w", sessionId: "s1" });
  for (let i = 0; i < 4; i++) {
    await session.append({ role: "user", parts: [{ type: "text", text: `q${i}` }] });
    await storage.append(ACTIVE, new TextEncoder().encode(`{"record_type":"future","n":${i}}\n`));
  }
  return { storage, sessions, reopened: await sessions.open("a/w/s1") };
}

describe("lines of unknown record types in active.jsonl", () => {
  it("are skipped and reported, not fatal", async () => {
    const { reopened } = await sessionWithFutureRecords();
    expect(reopened.diagnostics.map((d) => [d.code, d.line, d.fatal])).toEqual([
      ["unknown_record", 2, false],
      ["unknown_record", 4, false],
      ["unknown_record", 6, false],
      ["unknown_record", 8, false],
    ]);
    expect(reopened.active.map((m) => m.sequence)).toEqual([1, 2, 3, 4]);
  });

  it("survive a compaction, each staying before the message it preceded", async () => {
    const { storage, reopened } = await sessionWithFutureRecords();
    await reopened.compact();
    const segment = text(await storage.read("agents/a/workspaces/w/sessions/s1/messages/segments/000000000001-000000000002.jsonl"));
    const active = text(await storage.read(ACTIVE));
    expect(futureLines(segment)).toEqual(['{"record_type":"future","n":0}']);
    expect(futureLines(active)).toEqual(['{"record_type":"future","n":1}', '{"record_type":"future","n":2}', '{"record_type":"future","n":3}']);
    expect(segment.trimEnd().split("\n").at(-1)).toContain('"record_type":"summary"');
    expect(active.split("\n")[0]).toBe('{"record_type":"future","n":1}');
  });

  it("survive a reset, moving into the closed segment before its footer", async () => {
    const { storage, reopened } = await sessionWithFutureRecords();
    await reopened.reset();
    const segment = text(await storage.read("agents/a/workspaces/w/sessions/s1/messages/segments/000000000001-000000000004.jsonl"));
    expect(futureLines(segment)).toHaveLength(4);
    expect(segment.trimEnd().split("\n").at(-1)).toContain('"reset":true');
    expect(text(await storage.read(ACTIVE))).toBe("");
  });
});
