/**
 * The sync run's lock (docs/SYNC.md "The engine"): a lock a dead run of this host left is
 * taken over only with a process probe; one whose holder lives (or cannot be judged) refuses
 * the run before it reads or writes anything, whatever remote either run is against; an aborted
 * or failed run gives it back. Two runs at once on every backend: the sync conformance suite;
 * against two remotes, test/sync/two-remotes.test.ts.
 */
import { describe, expect, it } from "vitest";
import { MemoryStorage, type WriterIdentity } from "../../core/mod.ts";
import { directRemote, type SyncRemote, syncStores } from "../../core/sync/mod.ts";
import { SYNC_LOCK_PATH } from "../../core/sync/sync-state.ts";
import { deviceWithOneMessage } from "./one-message.ts";

const encoder = new TextEncoder();
const ME: WriterIdentity = { pid: 20, hostname: "laptop", runtime: "node", bootId: "boot-1", pidNamespace: "pid:[1]" };
/** Pid 10 has exited; every other pid runs. */
const probe = { processStartTime: (pid: number) => (pid === 10 ? null : 0) };
const lockOf = (pid: number) =>
  encoder.encode(JSON.stringify({
    pid,
    hostname: "laptop",
    boot_id: "boot-1",
    pid_namespace: "pid:[1]",
    runtime: "node",
    operation: "sync with server",
    lock_id: `lock_${pid}`,
    created_at: "2026-12-07T10:00:00.000Z",
  }));

describe("the sync run's lock", () => {
  it("a lock a dead run of this host left is taken over with the store's probe; the run syncs and gives it back", async () => {
    const { storage, sessions } = await deviceWithOneMessage({}, { identity: ME, probe });
    const remote = directRemote(new MemoryStorage(), { id: "backup" });
    await storage.replace(SYNC_LOCK_PATH, lockOf(10));
    expect((await syncStores({ local: sessions, remote })).pushed).toBe(1);
    expect(await storage.read(SYNC_LOCK_PATH)).toBeUndefined();
  });

  it("a live holder's lock, or a dead one's without a probe, refuses the run naming the lock and its holder; nothing is written", async () => {
    for (const [pid, withProbe] of [[30, true], [10, false]] as const) {
      const { storage, sessions } = await deviceWithOneMessage({}, withProbe ? { identity: ME, probe } : { identity: ME });
      const server = new MemoryStorage();
      const path = SYNC_LOCK_PATH;
      await storage.replace(path, lockOf(pid));
      const before = await storage.list("sync");
      const refused = await syncStores({ local: sessions, remote: directRemote(server, { id: "backup" }) }).catch((e: unknown) => e);
      expect(refused).toMatchObject({ code: "writer-locked", details: { path, owner: { pid } } });
      // The holder ran against another remote: one run of a store at a time, whatever its remote.
      expect((refused as Error).message).toContain(`${path}: another sync of this store is running, by pid ${pid} on laptop (node) for "sync with server"`);
      expect(await storage.list("sync")).toEqual(before);
      expect(await server.list("")).toEqual([]);
    }
  });

  it("the lock is stamped with the store's identity while the run holds it", async () => {
    const { storage, sessions } = await deviceWithOneMessage({}, { identity: ME });
    let seen: unknown;
    const server = directRemote(new MemoryStorage(), { id: "backup" });
    const watching: SyncRemote = {
      ...server,
      id: "backup",
      push: async (request) => {
        seen = JSON.parse(new TextDecoder().decode(await storage.read(SYNC_LOCK_PATH)));
        return server.push(request);
      },
    };
    await syncStores({ local: sessions, remote: watching });
    expect(seen).toMatchObject({ pid: 20, hostname: "laptop", boot_id: "boot-1", operation: "sync with backup" });
  });

  it("a run aborted before it starts, or failed on its way, leaves no lock: the next run syncs", async () => {
    const { storage, sessions } = await deviceWithOneMessage({}, { identity: ME });
    const server = directRemote(new MemoryStorage(), { id: "backup" });
    const aborted = AbortSignal.abort(new Error("stopped"));
    await expect(syncStores({ local: sessions, remote: server, signal: aborted })).rejects.toThrow("stopped");
    expect(await storage.list("sync")).toEqual([]);
    const failing: SyncRemote = { ...server, id: "backup", push: () => Promise.reject(new Error("the network is down")) };
    await expect(syncStores({ local: sessions, remote: failing })).rejects.toThrow("the network is down");
    expect(await storage.read(SYNC_LOCK_PATH)).toBeUndefined();
    expect((await syncStores({ local: sessions, remote: server })).pushed).toBe(1);
  });
});
