/**
 * A sync's whole-session writes are announced on the local store's `onCommit`, as its
 * commits are (docs/SYNC.md "Background sync in the browser"): a session new to the store,
 * and after two devices wrote after the same message, the re-read of the one that reached
 * the server second and the fork that keeps its messages, each at its revision. A session
 * that leaves the live ones (archived, deleted), by a pull or by the registry's own call, is
 * announced on `onRemoved`.
 */
import { describe, expect, it } from "vitest";
import { type CommitNotice, MemoryStorage, type RemovalNotice, Sessions } from "../../core/mod.ts";
import { directRemote, syncStores } from "../../core/sync/mod.ts";

const text = (t: string) => ({ role: "user" as const, parts: [{ type: "text" as const, text: t }] });

/** A device: its sessions, and what its `onCommit` and `onRemoved` heard. */
function device() {
  const heard: CommitNotice[] = [];
  const removed: RemovalNotice[] = [];
  return { sessions: new Sessions({ storage: new MemoryStorage(), onCommit: (n) => heard.push(n), onRemoved: (n) => removed.push(n) }), heard, removed };
}

/** A remote and two devices that both hold a1/w1/s1 with one message, `first` being a's handle. */
async function bothHoldOne() {
  const remote = directRemote(new MemoryStorage(), { id: "server" });
  const a = device();
  const b = device();
  const first = await a.sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
  await first.append(text("one"));
  await syncStores({ local: a.sessions, remote });
  await syncStores({ local: b.sessions, remote });
  return { remote, a, b, first };
}

describe("a sync's whole-session writes are announced", () => {
  it("a pulled new session, a re-read and a fork, each at the revision now in the store", async () => {
    const { remote, a, b, first } = await bothHoldOne();
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

  it("an archive and a delete a pull applies, each once, and no commit notice for them", async () => {
    const remote = directRemote(new MemoryStorage(), { id: "server" });
    const a = device();
    const b = device();
    for (const sessionId of ["kept", "gone"]) await (await a.sessions.create({ agentId: "a1", workspaceId: "w1", sessionId })).append(text("one"));
    await syncStores({ local: a.sessions, remote });
    await syncStores({ local: b.sessions, remote });
    await a.sessions.archive("a1/w1/kept");
    await a.sessions.delete("a1/w1/gone");
    await syncStores({ local: a.sessions, remote });
    b.heard.length = 0;

    const report = await syncStores({ local: b.sessions, remote });
    expect(report).toMatchObject({ archives: { pulled: 1 }, deletes: { pulled: 1 } });
    expect(b.removed).toEqual(
      expect.arrayContaining([{ refText: "a1/w1/kept", removed: "archived" }, { refText: "a1/w1/gone", removed: "deleted" }]),
    );
    expect(b.removed).toHaveLength(2);
    expect(b.heard).toEqual([]);
  });

  it("a re-read into the remote's archived copy (this device wrote after the archive's last message): archived, and the fork announced", async () => {
    const { remote, a, b, first } = await bothHoldOne();
    await first.append(text("a wrote this"));
    await (await b.sessions.open("a1/w1/s1")).append(text("b wrote this"));
    await syncStores({ local: a.sessions, remote });
    await a.sessions.archive("a1/w1/s1");
    await syncStores({ local: a.sessions, remote });
    b.heard.length = 0;

    const report = await syncStores({ local: b.sessions, remote });
    expect(report).toMatchObject({ reread: ["a1/w1/s1"], archives: { pulled: 1 } });
    expect(b.removed).toEqual([{ refText: "a1/w1/s1", removed: "archived" }]);
    const forked = await b.sessions.open(report.forks[0]!.forked_as);
    expect(b.heard).toEqual([{ refText: report.forks[0]!.forked_as, revision: forked.revision }]);
  });

  it("the registry's own archive and delete (and a delete of an archived copy)", async () => {
    const a = device();
    for (const sessionId of ["s1", "s2"]) await a.sessions.create({ agentId: "a1", workspaceId: "w1", sessionId });
    a.heard.length = 0;
    await a.sessions.archive("a1/w1/s1");
    await a.sessions.delete("a1/w1/s2");
    await a.sessions.delete("a1/w1/s1", { archived: true });
    expect(a.removed).toEqual([
      { refText: "a1/w1/s1", removed: "archived" },
      { refText: "a1/w1/s2", removed: "deleted" },
      { refText: "a1/w1/s1", removed: "deleted" },
    ]);
    expect(a.heard).toEqual([]);
  });
});
