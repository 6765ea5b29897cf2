/**
 * `SessionsOptions.onCommit`: the core tells the host about every write that gives a
 * session a new revision, and every session written whole (the browser runtime posts these to other tabs). Told only after
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
    await session.append([text("one"), text("two")]);
    await session.append(text("three"));
    await session.compact();
    await session.reset();
    expect(notices).toEqual([0, 1, 2, 3, 4].map((revision) => ({ refText: "a1/w1/s1", revision })));
  });

  it("is told each session written whole: created, forked and imported, at its revision", async () => {
    const notices: CommitNotice[] = [];
    const sessions = new Sessions({ storage: new MemoryStorage(), onCommit: (n) => notices.push(n) });
    const session = await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
    await session.append([text("one"), text("two")]);
    const fork = await sessions.fork(session.ref, "s2");
    const imported = await sessions.importPortable({ agentId: "a1", workspaceId: "w1", sessionId: "s3" }, await session.exportPortable());
    expect(notices).toEqual([
      { refText: "a1/w1/s1", revision: 0 },
      { refText: "a1/w1/s1", revision: 1 },
      { refText: "a1/w1/s2", revision: fork.revision },
      { refText: "a1/w1/s3", revision: imported.revision },
    ]);
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
    expect(notices).toEqual([{ refText: "a1/w1/s1", revision: 0 }]); // the create's only
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
