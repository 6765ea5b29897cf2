/**
 * A sync's whole-session writes are announced on the local store's `onCommit`, as its
 * commits are (docs/SYNC.md "Background sync in the browser"): a session new to the store,
 * and after two devices wrote after the same message, the re-read of the one that reached
 * the server second and the fork that keeps its messages, each at its revision.
 */
import { describe, expect, it } from "vitest";
import { type CommitNotice, MemoryStorage, Sessions } from "../../core/mod.ts";
import { directRemote, syncStores } from "../../core/sync/mod.ts";

const text = (t: string) => ({ role: "user" as const, parts: [{ type: "text" as const, text: t }] });

/** A device: its sessions, and what its `onCommit` heard. */
function device() {
  const heard: CommitNotice[] = [];
  return { sessions: new Sessions({ storage: new MemoryStorage(), onCommit: (n) => heard.push(n) }), heard };
}

describe("a sync's whole-session writes are announced", () => {
  it("a pulled new session, a re-read and a fork, each at the revision now in the store", async () => {
    const remote = directRemote(new MemoryStorage(), { id: "server" });
    const a = device();
    const b = device();
    const first = await a.sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
    await first.append(text("one"));
    await syncStores({ local: a.sessions, remote });

    await syncStores({ local: b.sessions, remote });
    const pulled = await b.sessions.open("a1/w1/s1");
    expect(b.heard).toEqual([{ refText: "a1/w1/s1", revision: pulled.revision }]);

    await first.append(text("a wrote this"));
    await pulled.append(text("b wrote this"));
    await syncStores({ local: a.sessions, remote });
    b.heard.length = 0;
    const report = await syncStores({ local: b.sessions, remote });
    const fork = report.forks[0]!;
    expect(fork.ref).toBe("a1/w1/s1");
    const reread = await b.sessions.open("a1/w1/s1");
    const forked = await b.sessions.open(fork.forked_as);
    expect(reread.active.map((m) => m.parts[0])).toMatchObject([{ text: "one" }, { text: "a wrote this" }]);
    expect(forked.active.map((m) => m.parts[0])).toMatchObject([{ text: "one" }, { text: "b wrote this" }]);
    expect(b.heard).toEqual(
      expect.arrayContaining([{ refText: "a1/w1/s1", revision: reread.revision }, { refText: fork.forked_as, revision: forked.revision }]),
    );
  });
});
