/**
 * Schedulers of one store against two remotes (docs/SYNC.md "Background sync in the browser"):
 * the store syncs with one remote at a time (`sync/run.lock`), so a scheduler whose store is
 * syncing with the other remote waits for that run, and then syncs: no `writer-locked`, no
 * backoff. A scheduler stopped while it waits gives its turn up at once. Across a browser's
 * tabs: test/browser-runtime/sync-pages.ts.
 */
import { describe, expect, it } from "vitest";
import { MemoryStorage, Sessions, type StoragePort } from "../../core/mod.ts";
import { type BackgroundSync, directRemote, startSyncScheduler, type SyncRemote, type SyncStatus, type SyncTimers } from "../../core/sync/mod.ts";
import { SYNC_LOCK_PATH } from "../../core/sync/sync-state.ts";
import { deviceWithOneMessage } from "./one-message.ts";

/** Timers that never fire: each sync here is asked for with `syncNow()`. */
const noTimers: SyncTimers = { setTimeout: () => 0, clearTimeout: () => {} };

/** `storage`, with every call on the sync lock's path logged by its method's name. */
function loggingLockCalls(storage: StoragePort, log: string[]): StoragePort {
  return new Proxy(storage, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        if (args[0] === SYNC_LOCK_PATH) log.push(String(key));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

/** A remote whose push waits at a gate until `release()`; `met` settles when the first push reaches it. */
function gatedRemote(server: MemoryStorage, id: string) {
  const remote = directRemote(server, { id });
  let met!: () => void;
  let release!: () => void;
  const reached = new Promise<void>((resolve) => (met = resolve));
  const released = new Promise<void>((resolve) => (release = resolve));
  const gated: SyncRemote = {
    ...remote,
    id,
    push: async (request) => {
      met();
      await released;
      return remote.push(request);
    },
  };
  return { remote: gated, met: reached, release };
}

/** The states a scheduler went through, and a promise for the first time it reaches `state`. */
function watching(sync: BackgroundSync) {
  const states: SyncStatus["state"][] = [];
  const waiters: { state: SyncStatus["state"]; resolve: () => void }[] = [];
  sync.on("status", ({ state }) => {
    if (states.at(-1) !== state) states.push(state);
    for (const waiter of waiters.filter((w) => w.state === state)) waiter.resolve();
  });
  return { states, reaches: (state: SyncStatus["state"]) => new Promise<void>((resolve) => waiters.push({ state, resolve })) };
}

describe("schedulers of one store against two remotes", () => {
  it("the second waits for the first's run, then syncs: no writer-locked error, no backoff, the lock never asked for while held", async () => {
    const log: string[] = [];
    const { sessions, session } = await deviceWithOneMessage({ storage: loggingLockCalls(new MemoryStorage(), log) });
    const serverStore = new MemoryStorage();
    const backupStore = new MemoryStorage();
    const server = gatedRemote(serverStore, "server");
    const toServer = startSyncScheduler({ local: sessions, remote: server.remote, timers: noTimers, intervalMs: 0 });
    const toBackup = startSyncScheduler({ local: sessions, remote: directRemote(backupStore, { id: "backup" }), timers: noTimers, intervalMs: 0 });
    const backupStates = watching(toBackup);

    const first = toServer.syncNow();
    await server.met;
    const locksWhileHeld = [...log];
    // The backup's scheduler starts its sync while the server's run holds the store's lock.
    const startsSyncing = backupStates.reaches("syncing");
    const second = toBackup.syncNow();
    await startsSyncing;
    server.release();

    expect((await first)?.pushed).toBe(1);
    expect((await second)?.pushed).toBe(1);
    expect(toBackup.status).toMatchObject({ state: "idle", lastError: null, failures: 0 });
    expect(backupStates.states).not.toContain("retrying");
    // Taken and given back by the server's run, then by the backup's: never asked for in between.
    const [take] = locksWhileHeld;
    expect(locksWhileHeld).toHaveLength(1);
    expect(log.filter((call) => call === take)).toHaveLength(2);
    expect(log.lastIndexOf(take!)).toBeGreaterThan(log.indexOf("remove"));
    const onBackup = await new Sessions({ storage: backupStore }).open("a1/w1/s1");
    expect(onBackup.active.map((m) => m.message_id)).toEqual(session.active.map((m) => m.message_id));
    await toServer.stop();
    await toBackup.stop();
  });

  it("a scheduler stopped while it waits for its turn stops at once, without syncing", async () => {
    const log: string[] = [];
    const { sessions } = await deviceWithOneMessage({ storage: loggingLockCalls(new MemoryStorage(), log) });
    const backupStore = new MemoryStorage();
    const server = gatedRemote(new MemoryStorage(), "server");
    const toServer = startSyncScheduler({ local: sessions, remote: server.remote, timers: noTimers, intervalMs: 0 });
    const toBackup = startSyncScheduler({ local: sessions, remote: directRemote(backupStore, { id: "backup" }), timers: noTimers, intervalMs: 0 });
    const backupStates = watching(toBackup);

    const first = toServer.syncNow();
    await server.met;
    const [take] = log;
    const startsSyncing = backupStates.reaches("syncing");
    const second = toBackup.syncNow();
    await startsSyncing;
    // The server's run still waits at its gate: stop() does not wait for it.
    await toBackup.stop();
    expect(await second).toBeUndefined();
    expect(toBackup.status).toMatchObject({ state: "idle", lastError: null, failures: 0 });
    server.release();
    expect((await first)?.pushed).toBe(1);
    // Only the server's run took the lock; nothing reached the backup.
    expect(log.filter((call) => call === take)).toHaveLength(1);
    expect(await backupStore.list("")).toEqual([]);
    await toServer.stop();
  });
});
