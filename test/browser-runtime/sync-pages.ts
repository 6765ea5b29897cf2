/**
 * Background sync in Debian's Chromium, over any server store (memory in
 * sync-pages.test.ts, PostgreSQL in test/postgres/browser-sync.test.ts): two browser contexts
 * (two profiles: their own IndexedDB, Web Locks and network) are two devices of one user
 * syncing through a real sync server on loopback, one of them offline (Playwright's `setOffline`, which the
 * page sees as `navigator.onLine` and the window's `offline`/`online` events); and two tabs
 * of one profile (one context, two pages over one IndexedDB), whose pushes the server counts:
 * the Web Lock lets one pusher send each mutation once. A Vite dev server serves the fixture
 * page (`sync-fixture/`) with the runtime's real storage worker.
 */
import { randomBytes } from "node:crypto";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { createServer, type ViteDevServer } from "vite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryStorage, Sessions, type StoragePort } from "../../core/mod.ts";
import { createSyncHandler } from "../../core/sync/mod.ts";
import { type FetchServer, serveFetchHandler } from "../../runtime-node/mod.ts";
import { testPrincipal } from "../../testing/sync-conformance.ts";
import { CHROMIUM_ARGS, CHROMIUM_PATH } from "../support/chromium.ts";
import { withCors } from "../sync/cors.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const FIXTURE = "/test/browser-runtime/sync-fixture/index.html";
const REF = "a1/w-alice/s1";
const REF_TABS = "a1/w-alice/tabs";
const REF_FULL = "a1/w-alice/full";
const REF_TWO_REMOTES = "a1/w-alice/two-remotes";

/** What the sync server was pushed: how many times each message id arrived in a push. */
const pushes = {
  seen: new Map<string, number>(),
  messages: 0,
  clear() {
    this.seen.clear();
    this.messages = 0;
  },
  count(id: string): number {
    return this.seen.get(id) ?? 0;
  },
};

/** Every request the sync server was sent (pull, read, push…). */
const served = { requests: 0 };

/** The handler, counting every request, and the messages of every push request, before it runs. */
function countingPushes(handler: (request: Request) => Promise<Response>): (request: Request) => Promise<Response> {
  return async (request) => {
    served.requests++;
    if (request.method === "POST" && new URL(request.url).pathname.endsWith("/push")) {
      const body = (await request.clone().json().catch(() => ({}))) as { mutations?: { messages?: { message_id: string }[] }[] };
      for (const mutation of body.mutations ?? []) {
        for (const message of mutation.messages ?? []) {
          pushes.seen.set(message.message_id, pushes.count(message.message_id) + 1);
          pushes.messages++;
        }
      }
    }
    return handler(request);
  };
}

/** Runs the Chromium case against a sync server over the store `setupStore` gives (a fresh one). */
export function runBrowserSyncPages(
  name: string,
  setupStore: () => Promise<{ storage: StoragePort; teardown?: () => Promise<void> }>,
): void {
  let vite: ViteDevServer | undefined;
  let syncServer: FetchServer | undefined;
  let browser: Browser | undefined;
  let baseUrl = "";
  let serverStore!: StoragePort;
  let teardownStore: (() => Promise<void>) | undefined;
  const problems: string[] = [];

  beforeAll(async () => {
    ({ storage: serverStore, teardown: teardownStore } = await setupStore());
    vite = await createServer({
      configFile: false,
      root: ROOT,
      cacheDir: fileURLToPath(new URL(`../../node_modules/.vite/sync-pages-${name.toLowerCase()}`, import.meta.url)),
      logLevel: "error",
      clearScreen: false,
      server: { host: "127.0.0.1", port: 0, hmr: false, watch: null },
      optimizeDeps: { entries: [FIXTURE.slice(1)], include: ["comlink", "idb-keyval", "zod", "jsonc-parser"] },
    });
    await vite.listen();
    baseUrl = `http://127.0.0.1:${(vite.httpServer!.address() as AddressInfo).port}`;
    syncServer = await serveFetchHandler(withCors(countingPushes(createSyncHandler({ storage: serverStore, authorize, basePath: "/sync" }))));
    browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: [...CHROMIUM_ARGS], headless: true });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await syncServer?.close();
    await vite?.close();
    await teardownStore?.();
  });

  /** The principal of a request's bearer token (the fixture's `user`). */
  const authorize = (request: Request) => {
    const match = /^Bearer (\w+)$/.exec(request.headers.get("authorization") ?? "");
    return match ? testPrincipal(match[1]!) : undefined;
  };

  interface Device {
    readonly context: BrowserContext;
    readonly page: Page;
  }

  /** A device: a browser context (a profile) with one page of the app. */
  async function openDevice(label: string): Promise<Device> {
    const context = await browser!.newContext();
    return { context, page: await openTab(context, label, `sync-${label}`) };
  }

  /** A page of the fixture in `context` over the IndexedDB database `db`, background sync running (with the server, or `remote`). */
  async function openTab(context: BrowserContext, label: string, db: string, remote?: { url: string; id: string }): Promise<Page> {
    const page = await context.newPage();
    page.on("pageerror", (error) => problems.push(`[${label}] uncaught: ${error.message}`));
    page.on("console", (message) => {
      if (message.type() === "error" && !/Failed to fetch|ERR_INTERNET_DISCONNECTED/.test(message.text())) problems.push(`[${label}] ${message.text()}`);
    });
    const query = new URLSearchParams({ db, server: remote?.url ?? `${syncServer!.url}/sync`, remote: remote?.id ?? "server", user: "alice" });
    await page.goto(`${baseUrl}${FIXTURE}?${query}`);
    await page.waitForFunction(() => (window as unknown as { sync?: { ready?: boolean } }).sync?.ready === true, null, { timeout: 30_000 });
    return page;
  }

  type Fixture = {
    say(ref: string, text: string): Promise<string>;
    texts(ref: string): Promise<string[]>;
    refs(): Promise<string[]>;
    syncNow(): Promise<void>;
    forks: { ref: string; forked_as: string; at_sequence: number }[];
    states: string[];
    status(): {
      state: string;
      online: boolean;
      pending: number;
      lastSuccessAt: number | null;
      lastError: { message: string; code: string } | null;
      nextAttemptAt: number | null;
    };
  };

  const say = (device: Device, text: string) => device.page.evaluate(([ref, t]) => (window as unknown as { sync: Fixture }).sync.say(ref!, t!), [REF, text]);

  /** Waits in the page until the device is online, idle and has nothing pending. */
  const synced = (device: { readonly page: Page }) =>
    device.page.waitForFunction(
      () => {
        const s = (window as unknown as { sync: Fixture }).sync.status();
        return s.online && s.state === "idle" && s.pending === 0 && s.lastSuccessAt !== null;
      },
      null,
      { timeout: 20_000 },
    );

  /** The texts of `ref` on the device, `[]` while it does not have the session. */
  const textsOn = (device: Device, ref: string) =>
    device.page.evaluate((r) => (window as unknown as { sync: Fixture }).sync.texts(r).catch(() => [] as string[]), ref);

  async function serverTexts(ref: string): Promise<string[]> {
    const session = await new Sessions({ storage: serverStore }).open(ref);
    return session.active.map((m) => m.parts.map((p) => ("text" in p ? p.text : "")).join(""));
  }

  describe(`background sync between two browser profiles through a real server over ${name}`, () => {
    it("one device writes offline, the other online: the first tail continues, the offline one becomes a fork, reported as an event", async () => {
      const laptop = await openDevice("laptop");
      const phone = await openDevice("phone");
      try {
        await say(laptop, "shared");
        await synced(laptop);
        // The phone pulls the session on its interval.
        await expect.poll(() => textsOn(phone, REF), { timeout: 20_000, interval: 100 }).toEqual(["shared"]);
        await synced(phone);

        await phone.context.setOffline(true);
        await phone.page.waitForFunction(() => (window as unknown as { sync: Fixture }).sync.status().state === "offline", null, { timeout: 10_000 });
        await say(phone, "phone, offline");
        await phone.page.waitForFunction(() => (window as unknown as { sync: Fixture }).sync.status().pending === 1, null, { timeout: 10_000 });
        await say(laptop, "laptop, online");
        await synced(laptop);
        expect(await serverTexts(REF)).toEqual(["shared", "laptop, online"]);

        await phone.context.setOffline(false);
        await synced(phone);
        const forks = await phone.page.evaluate(() => (window as unknown as { sync: Fixture }).sync.forks);
        expect(forks).toEqual([{ ref: REF, forked_as: expect.stringMatching(/^a1\/w-alice\/s1\.fork-[0-9a-f]{16}$/), at_sequence: 1 }]);
        expect(await serverTexts(forks[0]!.forked_as)).toEqual(["shared", "phone, offline"]);
        // The phone re-read the session from the server and holds the fork.
        expect(await textsOn(phone, REF)).toEqual(["shared", "laptop, online"]);
        expect(await textsOn(phone, forks[0]!.forked_as)).toEqual(["shared", "phone, offline"]);
        const states = await phone.page.evaluate(() => (window as unknown as { sync: Fixture }).sync.states);
        expect(states).toEqual(expect.arrayContaining(["syncing", "idle", "offline"]));
        expect(problems).toEqual([]);
      } finally {
        await laptop.context.close();
        await phone.context.close();
      }
    }, 90_000);

    it("a full quota (DevTools protocol): a pull is a StorageFullError, nothing half-written; no retry until syncNow(), then it completes", async () => {
      const laptop = await openDevice("laptop-full");
      const context = await browser!.newContext();
      try {
        // The quota is set before the page first uses IndexedDB: the browser reads it then, and keeps it for a while.
        const cdp = await context.newCDPSession(await context.newPage());
        await cdp.send("Storage.overrideQuotaForOrigin", { origin: baseUrl, quotaSize: 300_000 });
        const phone = { context, page: await openTab(context, "phone-full", "sync-phone-full") };
        await synced(phone);
        // Text that does not compress (the browser may compress what IndexedDB stores).
        const texts = [1, 2, 3, 4].map(() => randomBytes(75_000).toString("base64"));
        for (const text of texts) await laptop.page.evaluate(([r, t]) => (window as unknown as { sync: Fixture }).sync.say(r!, t!), [REF_FULL, text]);
        await synced(laptop);
        // From here the phone alone talks to the server.
        await laptop.context.close();

        const status = () => phone.page.evaluate(() => (window as unknown as { sync: Fixture }).sync.status());
        const lastError = async () => (await status()).lastError;
        await phone.page.waitForFunction(() => (window as unknown as { sync: Fixture }).sync.status().state === "storage-full", null, { timeout: 20_000 });
        const requestsWhenFull = served.requests;
        // Nothing scheduled: no retry (the fixture's backoff is 100 ms), no interval (500 ms).
        expect(await status()).toMatchObject({ state: "storage-full", nextAttemptAt: null, lastError: { code: "storage-full" } });
        // (Which write is refused depends on the parts the pull got to; the message names the store's file.)
        expect((await lastError())!.message).toMatch(/IndexedDB \w+ of ".*" failed: the origin's storage quota is exhausted; nothing was written$/);
        // Of this session the store holds nothing, or the messages of the parts that fitted, in order.
        const held = await textsOn(phone, REF_FULL);
        expect([held.length < texts.length, held]).toEqual([true, texts.slice(0, held.length)]);

        await cdp.send("Storage.overrideQuotaForOrigin", { origin: baseUrl });
        expect([served.requests, (await status()).state]).toEqual([requestsWhenFull, "storage-full"]);
        // The user freed space; the host's syncNow() completes the pull.
        await phone.page.evaluate(() => (window as unknown as { sync: Fixture }).sync.syncNow());
        expect(await textsOn(phone, REF_FULL)).toEqual(texts);
        await synced(phone);
        expect(problems).toEqual([]);
      } finally {
        await laptop.context.close();
        await context.close();
      }
    }, 90_000);

    it("two tabs of one profile syncing with two remotes: one waits for the other's run (its turn's Web Lock), no writer-locked error, no retry", async () => {
      // A second server, a backup, whose pushes wait at a gate once it is closed.
      const backupStore = new MemoryStorage();
      let holding = false;
      let pushHeld!: () => void;
      const held = new Promise<void>((resolve) => (pushHeld = resolve));
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      const backupHandler = createSyncHandler({ storage: backupStore, authorize, basePath: "/sync" });
      const backup = await serveFetchHandler(withCors(async (request) => {
        if (holding && request.method === "POST" && new URL(request.url).pathname.endsWith("/push")) {
          pushHeld();
          await released;
        }
        return backupHandler(request);
      }));
      const context = await browser!.newContext();
      try {
        const toServer = { page: await openTab(context, "tab-server", "sync-two-remotes") };
        const toBackup = { page: await openTab(context, "tab-backup", "sync-two-remotes", { url: `${backup.url}/sync`, id: "backup" }) };
        for (const tab of [toServer, toBackup]) await synced(tab);
        const fixture = (page: Page) =>
          page.evaluate(() => {
            const sync = (window as unknown as { sync: Fixture }).sync;
            return { status: sync.status(), states: sync.states };
          });
        const retriesBefore = (await fixture(toServer.page)).states.filter((state) => state === "retrying").length;

        holding = true;
        await toBackup.page.evaluate(([r, t]) => (window as unknown as { sync: Fixture }).sync.say(r!, t!), [REF_TWO_REMOTES, "to both remotes"]);
        // The backup's run holds the store's turn, its push held at the gate.
        await held;
        await toServer.page.evaluate(() => void (window as unknown as { sync: Fixture }).sync.syncNow());
        // The server's tab waits for the turn (what the profile's Web Locks show), rather than fail on the store's lock.
        const turnWaited = () =>
          toServer.page.evaluate(async () =>
            (await navigator.locks.query()).pending?.some((lock) => lock.name === "sessionfold:sync-two-remotes:sync-turn") ?? false
          );
        await expect.poll(turnWaited, { timeout: 20_000, interval: 20 }).toBe(true);
        expect((await fixture(toServer.page)).status.lastError).toBeNull();
        release();

        for (const tab of [toServer, toBackup]) await synced(tab);
        const after = await fixture(toServer.page);
        expect(after.status).toMatchObject({ lastError: null, state: "idle" });
        expect(after.states.filter((state) => state === "retrying").length).toBe(retriesBefore);
        expect(await serverTexts(REF_TWO_REMOTES)).toEqual(["to both remotes"]);
        const onBackup = await new Sessions({ storage: backupStore }).open(REF_TWO_REMOTES);
        expect(onBackup.active.map((m) => m.parts.map((p) => ("text" in p ? p.text : "")).join(""))).toEqual(["to both remotes"]);
        expect(problems).toEqual([]);
      } finally {
        release();
        await context.close();
        await backup.close();
      }
    }, 90_000);

    it("two tabs of one profile both commit; one pusher (the Web Lock) sends each mutation once", async () => {
      const context = await browser!.newContext();
      try {
        const tabs = [{ page: await openTab(context, "tab-1", "sync-tabs") }, { page: await openTab(context, "tab-2", "sync-tabs") }];
        pushes.clear();
        const sayIn = (page: Page, ref: string, text: string) =>
          page.evaluate(([r, t]) => (window as unknown as { sync: Fixture }).sync.say(r!, t!), [ref, text]);
        // Both tabs commit at once, three times (each to its own session: a session has one writer at a time),
        // so both schedulers wake together; one holds the lock and pushes.
        const ids: string[] = [];
        for (let round = 0; round < 3; round++) {
          ids.push(...(await Promise.all(tabs.map((tab, i) => sayIn(tab.page, `${REF_TABS}-${i + 1}`, `tab ${i + 1}, round ${round}`)))));
        }
        await expect.poll(() => ids.every((id) => pushes.count(id) > 0), { timeout: 20_000, interval: 50 }).toBe(true);
        for (const tab of tabs) await synced(tab);
        for (const i of [1, 2]) expect(await serverTexts(`${REF_TABS}-${i}`)).toEqual([0, 1, 2].map((r) => `tab ${i}, round ${r}`));
        // Each message went in exactly one push, whichever tab held the lock.
        expect(ids.map((id) => pushes.count(id))).toEqual([1, 1, 1, 1, 1, 1]);
        expect(pushes.messages).toBe(6);
        expect(problems).toEqual([]);
      } finally {
        await context.close();
      }
    }, 90_000);
  });
}
