/**
 * Two sync runs of one store against two remotes (docs/SYNC.md "The engine", "One run at a
 * time"): a re-read swaps a local session's copy in two moves (SYNC.md "Re-reads"), and a run
 * against another remote in the middle of it would settle the swap as cut (the new copy
 * dropped, then the old one moved aside by the first run and removed) or find the session
 * missing and push its delete. So a run holds the store's one sync lock whatever its remote:
 * the second run is refused at once, before it reads or writes anything. Forced with a store
 * that stops the first run right after its swap's record was written, never by timing.
 */
import { describe, expect, it } from "vitest";
import { MemoryStorage, Sessions, WriterLockedError } from "../../core/mod.ts";
import { directRemote, type SyncRemote, syncStores } from "../../core/sync/mod.ts";
import { testPrincipal } from "../../testing/sync-conformance.ts";
import { fullHistory } from "../node/process-support.ts";

const REF = "a1/shared/s1";
const text = (t: string) => ({ role: "user" as const, parts: [{ type: "text" as const, text: t }] });

/** A memory store that stops a call to `replace` a re-read's record until released. */
class StoppingStorage extends MemoryStorage {
  #stop: { reached: () => void; go: Promise<void> } | undefined;

  /** Resolves once a write of a re-read record is held; `release` lets it go on. */
  stopAtRereadRecord(): { reached: Promise<void>; release: () => void } {
    let reached!: () => void;
    let release!: () => void;
    const reachedPromise = new Promise<void>((resolve) => (reached = resolve));
    this.#stop = { reached, go: new Promise<void>((resolve) => (release = resolve)) };
    return { reached: reachedPromise, release };
  }

  override async replace(path: string, bytes: Uint8Array): Promise<void> {
    await super.replace(path, bytes);
    const stop = this.#stop;
    if (stop && path.startsWith("sync/rereads/")) {
      this.#stop = undefined;
      stop.reached();
      await stop.go;
    }
  }
}

function remoteOf(server: MemoryStorage, id: string, cutPull = false): SyncRemote {
  const remote = directRemote(server, { id, principal: testPrincipal("alice") });
  return cutPull ? { ...remote, pull: () => Promise.reject(new TypeError("connection cut")) } : remote;
}

async function idsOf(sessions: Sessions): Promise<string[]> {
  return (await fullHistory(await sessions.open(REF))).map((m) => m.message_id);
}

/** Every message's text in every session of `storage`, each session's own messages only (a fork's after its point). */
async function textsIn(storage: MemoryStorage): Promise<string[]> {
  const sessions = new Sessions({ storage });
  const texts: string[] = [];
  for (const meta of await sessions.list()) {
    const history = await fullHistory(await sessions.open(`${meta.agent_id}/${meta.workspace_id}/${meta.session_id}`));
    for (const m of history.filter((m) => m.sequence > (meta.forked_from?.through_sequence ?? 0))) {
      texts.push(...m.parts.map((part) => (part.type === "text" ? part.text : "")));
    }
  }
  return texts.sort();
}

describe("two sync runs of one store against two remotes", () => {
  it("a run against a backup while a run against the server swaps a session's copy is refused; nothing is lost", async () => {
    const server = new MemoryStorage();
    const backup = new MemoryStorage();
    const device = new StoppingStorage();
    const a = new Sessions({ storage: new MemoryStorage() });
    const b = new Sessions({ storage: device });
    const s = await a.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1" });
    await s.append([text("one"), text("two")]);
    await syncStores({ local: a, remote: remoteOf(server, "server") });
    await syncStores({ local: b, remote: remoteOf(server, "server") });
    await syncStores({ local: b, remote: remoteOf(backup, "backup") });
    // A's A3 reaches the server first; B's B3 is forked there, the pull after that push cut: B re-reads s1 on its next run.
    await s.append(text("A3"));
    await syncStores({ local: a, remote: remoteOf(server, "server") });
    await (await b.open(REF)).append(text("B3"));
    await expect(syncStores({ local: b, remote: remoteOf(server, "server", true) })).rejects.toThrow("connection cut");
    await (await b.open(REF)).append(text("B4, after the forked tail"));

    const stop = device.stopAtRereadRecord();
    const run = syncStores({ local: b, remote: remoteOf(server, "server") });
    await stop.reached;
    const refused = await syncStores({ local: b, remote: remoteOf(backup, "backup") }).catch((error: unknown) => error);
    stop.release();
    const report = await run;
    expect(report.reread).toEqual([REF]);
    expect(refused).toBeInstanceOf(WriterLockedError);
    expect((refused as WriterLockedError).message).toContain("sync/run.lock: another sync of this store is running, by pid");
    expect((refused as WriterLockedError).message).toContain('for "sync with server"');

    // The swap went through: s1 is the server's copy, B4 carried over to the fork, and both remotes get it all.
    expect(await idsOf(b)).toEqual(await idsOf(new Sessions({ storage: server })));
    await syncStores({ local: b, remote: remoteOf(backup, "backup") });
    await syncStores({ local: b, remote: remoteOf(server, "server") });
    const forks = (await new Sessions({ storage: server }).list()).filter((m) => m.forked_from);
    expect(forks).toHaveLength(1);
    const backupRefs = (await new Sessions({ storage: backup }).list()).map((m) => `${m.agent_id}/${m.workspace_id}/${m.session_id}`).sort();
    const serverRefs = (await new Sessions({ storage: server }).list()).map((m) => `${m.agent_id}/${m.workspace_id}/${m.session_id}`).sort();
    expect(backupRefs).toEqual(serverRefs);
    const written = ["A3", "B3", "B4, after the forked tail", "one", "two"];
    expect(await textsIn(server), "every message once on the server, B4 in the fork").toEqual(written);
    expect(await textsIn(backup), "and on the backup").toEqual(written);
  });
});
