/**
 * `SessionsOptions.onCommit`: the core tells the host about every write that gives a
 * session a new revision (the browser runtime posts these to other tabs). Told only after
 * the write succeeded, never for a refused one, and a throwing listener fails nothing.
 */
import { describe, expect, it } from "vitest";
import { type CommitNotice, MemoryStorage, Sessions, WriterLockedError } from "../../core/mod.ts";
import { ExtractiveSummarizer } from "../../core/mod.ts";

const text = (t: string) => ({ role: "user" as const, parts: [{ type: "text" as const, text: t }] });

describe("onCommit", () => {
  it("is told each commit, compaction and reset with the revision now on disk", async () => {
    const notices: CommitNotice[] = [];
    const sessions = new Sessions({ storage: new MemoryStorage(), onCommit: (n) => notices.push(n), defaults: { summarizer: new ExtractiveSummarizer() } });
    const session = await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
    expect(notices).toEqual([]); // creating writes meta.json exclusively: a new session, no commit yet
    await session.append([text("one"), text("two")]);
    await session.append(text("three"));
    await session.compact();
    await session.reset();
    expect(notices).toEqual([1, 2, 3, 4].map((revision) => ({ refText: "a1/w1/s1", revision })));
  });

  it("is not told a refused write, and a throwing listener does not fail the commit", async () => {
    const storage = new MemoryStorage();
    const notices: CommitNotice[] = [];
    const sessions = new Sessions({ storage, onCommit: (n) => notices.push(n) });
    const session = await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
    await storage.createExclusive(
      session.paths.lock,
      new TextEncoder().encode('{"pid":1,"hostname":"h","runtime":"node","operation":"x","created_at":"2026-01-01T00:00:00.000Z","lock_id":"lock_x"}'),
    );
    await expect(session.append(text("refused"))).rejects.toBeInstanceOf(WriterLockedError);
    expect(notices).toEqual([]);
    await storage.remove(session.paths.lock);
    const throwing = new Sessions({
      storage,
      onCommit: () => {
        throw new Error("listener bug");
      },
    });
    const again = await throwing.open("a1/w1/s1");
    await expect(again.append(text("kept"))).resolves.toMatchObject({ revision: 1 });
    expect((await throwing.open("a1/w1/s1")).active.map((m) => m.parts[0])).toEqual([{ type: "text", text: "kept", sequence: 1 }]);
  });
});
