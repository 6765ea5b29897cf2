/**
 * Sync from the browser runtime under happy-dom + fake-indexeddb: the sync conformance suite
 * on IndexedDB devices against a real HTTP server on loopback (over memory), and background
 * sync (docs/SYNC.md "Background sync in the browser"): offline then online, a reload in the
 * middle of a push, backoff with a fake clock, status transitions, a fork event, and the
 * window's `online`/`offline` events.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { type CommitNotice, MemoryStorage, type RemovalNotice, type Session, Sessions } from "../../core/mod.ts";
import {
  type BackgroundSync,
  backoffDelay,
  createSyncHandler,
  httpRemote,
  type Mutation,
  startSyncScheduler,
  type SyncFork,
  type SyncRemote,
  type SyncStatus,
  type SyncTimers,
} from "../../core/sync/mod.ts";
import { type BrowserSessions, IndexedDbStorage, openBrowserSessions, startBackgroundSync } from "../../runtime-browser/mod.ts";
import { type FetchServer, serveFetchHandler } from "../../runtime-node/mod.ts";
import { runSyncTests, testPrincipal } from "../../testing/sync-conformance.ts";
import { SyncFaults } from "../../testing/sync-faults.ts";
import { withCors } from "./cors.ts";
import { restartableServer } from "./loopback.ts";
import { recordCase } from "./matrix.ts";

let next = 0;
const databases = () => `sync-dom-${process.pid}-${next++}`;

function authorize(request: Request) {
  const match = /^Bearer (\w+)$/.exec(request.headers.get("authorization") ?? "");
  return match ? testPrincipal(match[1]!) : undefined;
}

runSyncTests(
  "IndexedDB ↔ HTTP server over memory",
  async () => {
    const server = new MemoryStorage();
    const faults = new SyncFaults();
    const loopback = await restartableServer(withCors(faults.wrap(createSyncHandler({ storage: server, authorize, basePath: "/sync" }))));
    const devices: IndexedDbStorage[] = [];
    return {
      server,
      newDevice: () => {
        const device = new IndexedDbStorage({ dbName: databases() });
        devices.push(device);
        return device;
      },
      remote: (user) => httpRemote({ url: `${loopback.url}/sync`, id: "server", headers: user ? { authorization: `Bearer ${user}` } : {} }),
      unauthenticated: true,
      faults,
      restart: () => loopback.restart(),
      teardown: async () => {
        for (const device of devices) await device.close();
        await loopback.close();
      },
    };
  },
  { onCase: recordCase("IndexedDB↔HTTP(memory)") },
);

/** Timers run by hand: `advance` moves the clock and runs what fell due. */
class FakeTimers implements SyncTimers {
  now = 1_000_000;
  readonly #due = new Map<number, { run: () => void; at: number }>();
  #id = 0;
  setTimeout(run: () => void, ms: number): unknown {
    const id = ++this.#id;
    this.#due.set(id, { run, at: this.now + ms });
    return id;
  }
  clearTimeout(handle: unknown): void {
    this.#due.delete(handle as number);
  }
  /** The next timer's delay from now, `undefined` when none is set. */
  get nextDelay(): number | undefined {
    const next = Math.min(...[...this.#due.values()].map((t) => t.at));
    return Number.isFinite(next) ? next - this.now : undefined;
  }
  /** Moves to the next timer and runs it. */
  fireNext(): void {
    const [id, timer] = [...this.#due].sort((a, b) => a[1].at - b[1].at)[0] ?? [];
    if (id === undefined || !timer) throw new Error("no timer is set");
    this.now = Math.max(this.now, timer.at);
    this.#due.delete(id);
    timer.run();
  }
}

/**
 * IndexedDB with `room` bytes left for files, as an origin's quota: a file chunk's `put`
 * past it throws the browser's `QuotaExceededError` (fake-indexeddb has no quota; the real
 * one is test/browser-runtime/sync-pages.ts's); `free()` lifts it.
 */
function quotaWithRoom(room: number): { free(): void } {
  const put = IDBObjectStore.prototype.put;
  let used = 0;
  const spy = vi.spyOn(IDBObjectStore.prototype, "put").mockImplementation(function (this: IDBObjectStore, value: unknown, key?: IDBValidKey) {
    const size = value instanceof Uint8Array ? value.byteLength : 0;
    if (used + size > room) throw new DOMException("simulated: the origin's storage quota is exhausted", "QuotaExceededError");
    used += size;
    return put.call(this, value, key);
  });
  return { free: () => spy.mockRestore() };
}

/** Resolves with the first status (now or later) that satisfies `predicate`. */
function statusWhere(sync: BackgroundSync, predicate: (status: SyncStatus) => boolean): Promise<SyncStatus> {
  if (predicate(sync.status)) return Promise.resolve(sync.status);
  return new Promise((resolve) => {
    const stop = sync.on("status", (status) => {
      if (!predicate(status)) return;
      stop();
      resolve(status);
    });
  });
}

/** A real sync server on loopback over a memory store, recording every pushed mutation number. */
interface Server {
  readonly storage: MemoryStorage;
  readonly pushed: number[][];
  /** The route of every request that reached the server (`pull`, `read`, `push`…), in order. */
  readonly requests: string[];
  /** `fail`: the next pushes are refused by the network before they reach the server (a TypeError, as fetch throws). */
  remote(options?: { fail?: () => boolean; afterPush?: (numbers: number[]) => Promise<void> }): SyncRemote;
}

let loopback: FetchServer | undefined;
const stores: { close(): Promise<void> }[] = [];
const running: BackgroundSync[] = [];

afterEach(async () => {
  vi.restoreAllMocks();
  for (const sync of running.splice(0)) await sync.stop();
  for (const store of stores.splice(0)) await store.close();
  await loopback?.close();
  loopback = undefined;
});

async function startServer(): Promise<Server> {
  const storage = new MemoryStorage();
  loopback = await serveFetchHandler(withCors(createSyncHandler({ storage, authorize, basePath: "/sync" })));
  const url = `${loopback.url}/sync`;
  const pushed: number[][] = [];
  const requests: string[] = [];
  return {
    storage,
    pushed,
    requests,
    remote: (options = {}) =>
      httpRemote({
        url,
        id: "server",
        headers: { authorization: "Bearer alice" },
        fetch: async (input, init) => {
          if (options.fail?.()) throw new TypeError("Failed to fetch");
          const push = input.endsWith("/push");
          const numbers = push ? (JSON.parse(init.body) as { mutations: Mutation[] }).mutations.map((m) => m.number) : [];
          if (push) pushed.push(numbers);
          requests.push(input.slice(input.lastIndexOf("/") + 1));
          const response = await fetch(input, init);
          if (push) await options.afterPush?.(numbers);
          return response;
        },
      }),
  };
}

function device(dbName = databases()): { sessions: Sessions; dbName: string; storage: IndexedDbStorage } {
  const storage = new IndexedDbStorage({ dbName });
  stores.push(storage);
  return { sessions: new Sessions({ storage }), dbName, storage };
}

async function say(session: Session, ...texts: string[]): Promise<void> {
  for (const text of texts) await session.append({ role: "user", parts: [{ type: "text", text }] });
}

async function serverIds(server: Server, ref: string): Promise<string[]> {
  const session = await new Sessions({ storage: server.storage }).open(ref);
  return session.active.map((m) => m.message_id); // nothing compacts in these tests: Active is the whole history
}

function start(local: Sessions, remote: SyncRemote, timers: FakeTimers, online = true): BackgroundSync {
  const sync = startSyncScheduler({ local, remote, timers, clock: () => timers.now, random: () => 0.5, online, intervalMs: 0, debounceMs: 10 });
  running.push(sync);
  return sync;
}

describe("background sync over IndexedDB and a real HTTP server", () => {
  let timers: FakeTimers;
  beforeEach(() => {
    timers = new FakeTimers();
  });

  it("writes while offline, counts what is pending, and pushes when the network comes back", async () => {
    const server = await startServer();
    const { sessions } = device();
    const sync = start(sessions, server.remote(), timers, false);
    const states: string[] = [];
    sync.on("status", (s) => states.push(s.state));
    const session = await sessions.create({ agentId: "a1", workspaceId: "w-alice", sessionId: "s1" });
    await say(session, "one", "two", "three");
    sync.trigger();
    expect(await statusWhere(sync, (s) => s.pending === 3)).toMatchObject({ state: "offline", online: false, lastSuccessAt: null });
    expect(timers.nextDelay).toBeUndefined(); // offline: nothing scheduled
    expect(server.pushed).toEqual([]);

    sync.setOnline(true);
    expect(timers.nextDelay).toBe(0);
    timers.fireNext();
    const synced = await statusWhere(sync, (s) => s.state === "idle" && s.lastSuccessAt !== null);
    expect(synced).toMatchObject({ pending: 0, lastError: null, failures: 0, lastSuccessAt: timers.now });
    expect(states).toEqual(expect.arrayContaining(["syncing", "idle"]));
    expect(await serverIds(server, "a1/w-alice/s1")).toEqual(session.active.map((m) => m.message_id));
  });

  it("a reload in the middle of a push re-sends the same numbers, and nothing is applied twice", async () => {
    const server = await startServer();
    const { sessions, dbName } = device();
    const session = await sessions.create({ agentId: "a1", workspaceId: "w-alice", sessionId: "s1" });
    await say(session, "one", "two");
    // The page dies after the server committed the push and before the answer arrived.
    const died = new Error("the page was reloaded");
    const first = start(sessions, server.remote({ afterPush: () => Promise.reject(died) }), timers);
    timers.fireNext();
    const failed = await statusWhere(first, (s) => s.state === "retrying");
    expect(failed.lastError?.message).toBe("the page was reloaded");
    expect(failed.pending).toBe(2); // the answer was lost: still pending on this device
    await first.stop();
    const sentBefore = server.pushed.flat();
    expect(sentBefore.length).toBeGreaterThan(0);

    // The reload: a new Sessions over the same IndexedDB database, a new scheduler.
    const reloaded = device(dbName);
    const again = start(reloaded.sessions, server.remote(), timers);
    timers.fireNext();
    await statusWhere(again, (s) => s.state === "idle" && s.lastSuccessAt !== null);
    expect(server.pushed.at(-1)!.slice(0, sentBefore.length)).toEqual(sentBefore); // the same numbers again
    expect(again.status.pending).toBe(0);
    const ids = await serverIds(server, "a1/w-alice/s1");
    expect(ids).toEqual(session.active.map((m) => m.message_id));
    expect(new Set(ids).size).toBe(2);
  });

  it("a reload before the push reached the server sends those numbers once it is back", async () => {
    const server = await startServer();
    const { sessions, dbName } = device();
    const session = await sessions.create({ agentId: "a1", workspaceId: "w-alice", sessionId: "s1" });
    await say(session, "one");
    // The request never leaves: the page dies while it waits.
    let reachedPush!: () => void;
    const pushing = new Promise<void>((resolve) => (reachedPush = resolve));
    let pageDies!: (reason: Error) => void;
    const gone = new Promise<never>((_, reject) => (pageDies = reject));
    const hanging: SyncRemote = { ...server.remote(), id: "server", push: () => (reachedPush(), gone) };
    const dead = startSyncScheduler({ local: sessions, remote: hanging, timers, clock: () => timers.now, intervalMs: 0 });
    timers.fireNext();
    await pushing;
    // With the page go its request and its run's lock (a Web Lock in a browser; happy-dom has none, so the run ends here).
    pageDies(new Error("the page is gone"));
    await dead.stop();

    const reloaded = device(dbName);
    await say(await reloaded.sessions.open("a1/w-alice/s1"), "two, after the reload");
    const again = start(reloaded.sessions, server.remote(), timers);
    timers.fireNext();
    await statusWhere(again, (s) => s.state === "idle" && s.lastSuccessAt !== null);
    expect(server.pushed[0]![0]).toBe(1); // the outbox's first number, written before the lost request
    const ids = await serverIds(server, "a1/w-alice/s1");
    expect(ids).toHaveLength(2);
    expect(new Set(ids).size).toBe(2);
  });

  it("a failed push backs off (capped, with jitter) and retries until it succeeds", async () => {
    const server = await startServer();
    const { sessions } = device();
    let failuresLeft = 3;
    const sync = startSyncScheduler({
      local: sessions,
      remote: server.remote({ fail: () => failuresLeft-- > 0 }),
      timers,
      clock: () => timers.now,
      random: () => 0.5,
      intervalMs: 0,
      backoff: { initialMs: 1_000, maxMs: 3_000, jitter: 0.5 },
    });
    running.push(sync);
    await say(await sessions.create({ agentId: "a1", workspaceId: "w-alice", sessionId: "s1" }), "hello");
    const delays: number[] = [];
    timers.fireNext();
    for (let failure = 1; failure <= 3; failure++) {
      const status = await statusWhere(sync, (s) => s.state === "retrying" && s.failures === failure);
      expect(status.lastError).toMatchObject({ message: expect.stringContaining("Failed to fetch"), at: timers.now });
      expect(status.nextAttemptAt).toBe(timers.now + timers.nextDelay!);
      delays.push(timers.nextDelay!);
      timers.fireNext();
    }
    // 1 000, 2 000, then capped at 3 000; each ¾ of it with random() = 0.5 and jitter 0.5.
    expect(delays).toEqual([750, 1_500, 2_250]);
    const done = await statusWhere(sync, (s) => s.state === "idle" && s.lastSuccessAt !== null);
    expect(done).toMatchObject({ failures: 0, lastError: null, pending: 0 });
    expect(await serverIds(server, "a1/w-alice/s1")).toHaveLength(1);
  });

  it("backoffDelay stays within its cap and its jitter", () => {
    for (const failures of [1, 2, 5, 40, 1_000]) {
      for (const r of [0, 0.25, 0.999]) {
        const delay = backoffDelay(failures, { initialMs: 500, maxMs: 10_000, jitter: 0.3 }, () => r);
        const full = Math.min(10_000, 500 * 2 ** (failures - 1));
        expect(delay).toBeGreaterThanOrEqual(Math.round(full * 0.7));
        expect(delay).toBeLessThanOrEqual(full);
      }
    }
  });

  it("a refused client (401) stops retrying until the host asks again", async () => {
    const server = await startServer();
    const { sessions } = device();
    const remote = httpRemote({ url: `${loopback!.url}/sync`, id: "server" }); // no credentials
    const sync = start(sessions, remote, timers);
    timers.fireNext();
    const refused = await statusWhere(sync, (s) => s.state === "refused");
    expect(refused.lastError).toMatchObject({ code: "unauthorized" });
    expect(timers.nextDelay).toBeUndefined();
    expect(server.pushed).toEqual([]);
  });

  it("a pull into a full store stops retrying (storage-full) until syncNow(); a local commit is still pushed; it completes once there is room", async () => {
    const server = await startServer();
    const laptop = device();
    const texts = ["1", "2", "3", "4"].map((digit) => digit.repeat(30_000));
    await say(await laptop.sessions.create({ agentId: "a1", workspaceId: "w-alice", sessionId: "big" }), ...texts);
    await start(laptop.sessions, server.remote(), new FakeTimers()).syncNow();

    const phone = device();
    const quota = quotaWithRoom(40_000);
    const sync = startSyncScheduler({ local: phone.sessions, remote: server.remote(), timers, clock: () => timers.now, random: () => 0.5, debounceMs: 10 });
    running.push(sync);
    timers.fireNext();
    const full = await statusWhere(sync, (s) => s.lastError !== null && s.state !== "syncing");
    expect(full).toMatchObject({ state: "storage-full", nextAttemptAt: null, failures: 1, lastError: { code: "storage-full" } });
    expect(server.requests).toContain("read"); // the pull downloaded the session, and could not write it
    // Nothing scheduled: no retry, no interval (the default 30 s); and a network that comes back does not free space.
    expect(timers.nextDelay).toBeUndefined();
    sync.setOnline(false);
    sync.setOnline(true);
    expect(sync.status).toMatchObject({ state: "storage-full", online: true, nextAttemptAt: null });
    expect(timers.nextDelay).toBeUndefined();

    // A local commit (small: it fits) is pushed: a push comes before the pull, which is refused again.
    const own = await phone.sessions.create({ agentId: "a1", workspaceId: "w-alice", sessionId: "phone" });
    await say(own, "written while full");
    const before = server.requests.length;
    sync.trigger();
    expect(timers.nextDelay).toBe(10);
    timers.fireNext();
    const still = await statusWhere(sync, (s) => s.state === "storage-full" && s.failures === 2);
    expect(still).toMatchObject({ pending: 0, nextAttemptAt: null, lastError: { code: "storage-full" } });
    expect(server.requests.slice(before)).toContain("push");
    expect(await serverIds(server, "a1/w-alice/phone")).toEqual(own.active.map((m) => m.message_id));
    expect(timers.nextDelay).toBeUndefined();

    // The user freed space and the host asks again.
    quota.free();
    const report = await sync.syncNow();
    expect(report?.pulled).toBe(texts.length);
    expect(sync.status).toMatchObject({ state: "idle", failures: 0, lastError: null });
    const pulled = await phone.sessions.open("a1/w-alice/big");
    expect(pulled.active.map((m) => m.parts.map((part) => ("text" in part ? part.text : "")).join(""))).toEqual(texts);
  });

  it("a store closed under it stops it: nothing scheduled, the status says why", async () => {
    const server = await startServer();
    const { sessions } = device();
    await say(await sessions.create({ agentId: "a1", workspaceId: "w-alice", sessionId: "s1" }), "hello");
    const sync = start(sessions, server.remote(), timers);
    await sessions.close();
    timers.fireNext();
    const stopped = await statusWhere(sync, (s) => s.lastError !== null && s.state !== "syncing");
    expect(stopped).toMatchObject({ state: "idle", nextAttemptAt: null, lastError: { code: "closed" } });
    expect(timers.nextDelay).toBeUndefined();
    sync.trigger();
    expect(timers.nextDelay).toBeUndefined();
    expect(server.pushed).toEqual([]);
  });

  it("reports a fork as an event when two devices wrote offline after the same sequence", async () => {
    const server = await startServer();
    const laptop = device();
    const phone = device();
    const laptopSync = start(laptop.sessions, server.remote(), timers);
    const phoneSync = start(phone.sessions, server.remote(), timers, false);
    const shared = await laptop.sessions.create({ agentId: "a1", workspaceId: "w-alice", sessionId: "s1" });
    await say(shared, "shared");
    await laptopSync.syncNow();
    phoneSync.setOnline(true);
    await phoneSync.syncNow();
    phoneSync.setOnline(false);
    await say(shared, "laptop, offline");
    await say(await phone.sessions.open("a1/w-alice/s1"), "phone, offline");
    await laptopSync.syncNow();

    const forks: SyncFork[] = [];
    phoneSync.on("fork", (fork) => forks.push(fork));
    phoneSync.setOnline(true);
    await phoneSync.syncNow();
    expect(forks).toEqual([{ ref: "a1/w-alice/s1", forked_as: expect.stringMatching(/^a1\/w-alice\/s1\.fork-[0-9a-f]{16}$/), at_sequence: 1 }]);
    expect(phoneSync.status.pending).toBe(0);
    const fork = await new Sessions({ storage: server.storage }).open(forks[0]!.forked_as);
    expect(fork.active.map((m) => m.parts)).toMatchObject([[{ type: "text", text: "shared" }], [{ type: "text", text: "phone, offline" }]]);
  });
});

describe("startBackgroundSync (openBrowserSessions, worker: false)", () => {
  const opened: BrowserSessions[] = [];
  afterEach(async () => {
    for (const browser of opened.splice(0)) await browser.close();
  });

  it("follows the window's offline and online events and syncs after this tab's commits", async () => {
    const server = await startServer();
    const browser = await openBrowserSessions({ dbName: databases(), worker: false });
    opened.push(browser);
    const sync = startBackgroundSync({ sessions: browser, remote: server.remote(), intervalMs: 0, debounceMs: 0 });
    running.push(sync);
    await statusWhere(sync, (s) => s.state === "idle" && s.lastSuccessAt !== null);

    globalThis.dispatchEvent(new Event("offline"));
    expect(sync.status).toMatchObject({ state: "offline", online: false });
    const session = await browser.sessions.create({ agentId: "a1", workspaceId: "w-alice", sessionId: "s1" });
    await say(session, "written offline");
    await statusWhere(sync, (s) => s.pending === 1);
    expect(server.pushed.flat()).toEqual([]);

    globalThis.dispatchEvent(new Event("online"));
    await statusWhere(sync, (s) => s.state === "idle" && s.pending === 0 && server.pushed.length > 0);
    expect(await serverIds(server, "a1/w-alice/s1")).toEqual(session.active.map((m) => m.message_id));

    // Online, a commit alone starts a sync (this tab's own commit notice).
    await say(session, "written online");
    await statusWhere(sync, (s) => s.state === "idle" && s.pending === 0 && server.pushed.flat().length >= 2);
    expect(await serverIds(server, "a1/w-alice/s1")).toHaveLength(2);

    await sync.stop();
    globalThis.dispatchEvent(new Event("offline"));
    expect(sync.status.online).toBe(true); // stopped: no longer listening
  });

  it("what a pull writes is announced on this tab's onOwnCommit and on the other tabs' onCommit: a session pulled whole, then messages appended", async () => {
    const server = await startServer();
    const elsewhere = device();
    const elsewhereSync = start(elsewhere.sessions, server.remote(), new FakeTimers());
    const written = await elsewhere.sessions.create({ agentId: "a1", workspaceId: "w-alice", sessionId: "s1" });
    await say(written, "one");
    await elsewhereSync.syncNow();

    const dbName = databases();
    const pulling = await openBrowserSessions({ dbName, worker: false });
    const other = await openBrowserSessions({ dbName, worker: false });
    opened.push(pulling, other);
    const own: CommitNotice[] = [];
    pulling.onOwnCommit((notice) => own.push(notice));
    const heardByOther: CommitNotice[] = [];
    const waiting: (() => void)[] = [];
    other.onCommit((notice) => {
      heardByOther.push(notice);
      for (const wake of waiting.splice(0)) wake();
    });
    /** Resolves once the other tab heard `count` notices. */
    const otherHeard = async (count: number) => {
      while (heardByOther.length < count) await new Promise<void>((resolve) => waiting.push(resolve));
    };
    const sync = startBackgroundSync({ sessions: pulling, remote: server.remote(), intervalMs: 0, debounceMs: 0 });
    running.push(sync);
    await sync.syncNow();
    expect((await pulling.sessions.list()).map((meta) => meta.session_id)).toEqual(["s1"]);
    // Written whole (new to this store), at the revision its copy holds.
    expect(own).toEqual([{ refText: "a1/w-alice/s1", revision: 1 }]);
    await otherHeard(1);

    await say(written, "two");
    await elsewhereSync.syncNow();
    await sync.syncNow();
    expect(own).toEqual([{ refText: "a1/w-alice/s1", revision: 1 }, { refText: "a1/w-alice/s1", revision: 2 }]);
    await otherHeard(2);
    expect(heardByOther).toEqual(own);
  });

  it("this tab's archive and delete start a sync, as a commit does: the server holds them without a syncNow", async () => {
    const server = await startServer();
    const browser = await openBrowserSessions({ dbName: databases(), worker: false });
    opened.push(browser);
    for (const sessionId of ["kept", "gone"]) await say(await browser.sessions.create({ agentId: "a1", workspaceId: "w-alice", sessionId }), "one");
    const sync = startBackgroundSync({ sessions: browser, remote: server.remote(), intervalMs: 0, debounceMs: 0 });
    running.push(sync);
    await statusWhere(sync, (s) => s.state === "idle" && s.lastSuccessAt !== null && s.pending === 0);
    const onServer = new Sessions({ storage: server.storage });
    expect((await onServer.list()).map((meta) => meta.session_id).sort()).toEqual(["gone", "kept"]);

    let removalsPushed = 0;
    const bothPushed = new Promise<void>((resolve) =>
      sync.on("report", (report) => {
        removalsPushed += report.archives.pushed + report.deletes.pushed;
        if (removalsPushed === 2) resolve();
      })
    );
    await browser.sessions.archive("a1/w-alice/kept");
    await browser.sessions.delete("a1/w-alice/gone");
    await bothPushed;
    expect(await onServer.list()).toEqual([]);
    expect((await onServer.list({ archived: true })).map((meta) => meta.session_id)).toEqual(["kept"]);
  });

  it("an archive and a delete a pull applies are announced on this tab's onOwnRemoved and on the other tabs' onRemoved", async () => {
    const server = await startServer();
    const elsewhere = device();
    const elsewhereSync = start(elsewhere.sessions, server.remote(), new FakeTimers());
    for (const sessionId of ["kept", "gone"]) await say(await elsewhere.sessions.create({ agentId: "a1", workspaceId: "w-alice", sessionId }), "one");
    await elsewhereSync.syncNow();

    const dbName = databases();
    const pulling = await openBrowserSessions({ dbName, worker: false });
    const other = await openBrowserSessions({ dbName, worker: false });
    opened.push(pulling, other);
    const own: RemovalNotice[] = [];
    pulling.onOwnRemoved((notice) => own.push(notice));
    const heardByOther: RemovalNotice[] = [];
    const commitsHeardByOther: CommitNotice[] = [];
    other.onCommit((notice) => commitsHeardByOther.push(notice));
    const waiting: (() => void)[] = [];
    other.onRemoved((notice) => {
      heardByOther.push(notice);
      for (const wake of waiting.splice(0)) wake();
    });
    const sync = startBackgroundSync({ sessions: pulling, remote: server.remote(), intervalMs: 0, debounceMs: 0 });
    running.push(sync);
    await sync.syncNow();
    expect((await pulling.sessions.list()).map((meta) => meta.session_id).sort()).toEqual(["gone", "kept"]);

    await elsewhere.sessions.archive("a1/w-alice/kept");
    await elsewhere.sessions.delete("a1/w-alice/gone");
    await elsewhereSync.syncNow();
    const commitsBefore = commitsHeardByOther.length;
    await sync.syncNow();
    expect(await pulling.sessions.list()).toEqual([]);
    const expected = [{ refText: "a1/w-alice/kept", removed: "archived" }, { refText: "a1/w-alice/gone", removed: "deleted" }];
    expect(own).toHaveLength(2);
    expect(own).toEqual(expect.arrayContaining(expected));
    while (heardByOther.length < 2) await new Promise<void>((resolve) => waiting.push(resolve));
    expect(heardByOther).toEqual(own);
    // A removal is not a commit: the other tab's onCommit heard nothing of it.
    expect(commitsHeardByOther).toHaveLength(commitsBefore);
  });
});
