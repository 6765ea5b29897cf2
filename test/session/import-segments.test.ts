import { describe, expect, it } from "vitest";
import { InvalidInputError, MemoryStorage, type MessageRecord, Sessions } from "../../core/mod.ts";

const TS = "2026-12-02T13:00:00.000Z";
const message = (i: number, role: "user" | "assistant"): MessageRecord => ({
  record_type: "message",
  sequence: i,
  message_id: `m${i}`,
  role,
  created_at: TS,
  ...(role === "assistant" ? { status: "completed" as const } : {}),
  parts: [{ sequence: 1, type: "text", text: `t${i}` }],
});
const messages = [message(1, "user"), message(2, "assistant"), message(3, "user"), message(4, "assistant"), message(5, "user")];

function registry(storage = new MemoryStorage()): Sessions {
  return new Sessions({ storage, identity: { pid: 1, hostname: "t", runtime: "node" } });
}

describe("importPortable with compaction boundaries", () => {
  it("installs each boundary as a closed segment with its summary; the model context is the latest summary and what follows", async () => {
    const storage = new MemoryStorage();
    const sessions = registry(storage);
    const session = await sessions.importPortable("a1/w1/s", {
      messages,
      segments: [{ through: 2, summary: "first" }, { through: 4, summary: "first and second", createdAt: TS }],
    });
    expect((await session.segments()).map((r) => [r.start, r.end])).toEqual([[1, 2], [3, 4]]);
    expect(session.summary?.text).toBe("first and second");
    expect(session.active.map((m) => m.message_id)).toEqual(["m5"]);
    expect(session.meta.message_count).toBe(5);
    const back = await session.exportPortable();
    expect(back.messages.map((m) => m.message_id)).toEqual(["m1", "m2", "m3", "m4", "m5"]);
    expect(back.segments).toEqual([{ through: 2, summary: "first", createdAt: expect.any(String) }, {
      through: 4,
      summary: "first and second",
      createdAt: TS,
    }]);
    // Opened afresh from storage, the segments load without findings.
    const reopened = await registry(storage).open("a1/w1/s");
    expect(reopened.diagnostics).toEqual([]);
    expect((await reopened.readSegment({ start: 3, end: 4 })).footer?.text).toBe("first and second");
  });

  it("refuses boundaries out of order or an empty summary, creating nothing", async () => {
    const storage = new MemoryStorage();
    const sessions = registry(storage);
    for (const segments of [[{ through: 3, summary: "a" }, { through: 2, summary: "b" }], [{ through: 6, summary: "a" }], [{ through: 2, summary: "" }]]) {
      await expect(sessions.importPortable("a1/w1/bad", { messages, segments })).rejects.toBeInstanceOf(InvalidInputError);
      await expect(sessions.open("a1/w1/bad")).rejects.toThrow();
    }
  });
});
