/**
 * This page's background sync with the sync server beside the playground (`/sync` on the
 * page's own origin, mounted by demo/sync-server.ts): `startBackgroundSync` over the page's
 * store, an "offline" switch that cuts the device off the server, the forks the server made
 * of this device's tails, and the app kept in step with what a sync wrote (docs/SYNC.md
 * "The playground's sync server").
 *
 * The switch is the device's network cable: while it is off no request leaves (a send fails
 * before `fetch`, a request in flight is aborted), the scheduler waits (`setOnline(false)`,
 * also across the window's own `online` events), and it stays off across reloads. Turning it
 * on syncs at once: the commits written meanwhile are pushed.
 */
import type { SyncFork, SyncReport, SyncStatus } from "../core/sync/mod.ts";
import { httpRemote } from "../core/sync/mod.ts";
import type { BrowserSessions } from "../runtime-browser/mod.ts";
import { startBackgroundSync } from "../runtime-browser/mod.ts";
import type { App } from "./app.ts";

/** The remote's id in the local sync state (`sync/remotes/local-sync-server.json`). */
const REMOTE_ID = "local-sync-server";
/** The demo pulls other devices' changes this often (a loopback server; the library's default is 30 s). */
const PULL_EVERY_MS = 5_000;

/** A fork the server made of one of this device's tails, as the page shows it. */
export interface ShownFork extends SyncFork {
  /** When this device learned of it (ms since the epoch). */
  readonly at: number;
}

/** The device's sync: its status, its switch, its forks; `onChange` hears every change of them. */
export class DeviceSync {
  readonly #app: App;
  readonly #offlineKey: string;
  readonly #tokenKey: string;
  readonly #listeners = new Set<() => void>();
  readonly #inFlight = new Set<AbortController>();
  readonly #sync: ReturnType<typeof startBackgroundSync>;
  #offline: boolean;
  forks: ShownFork[] = [];

  constructor(app: App, browser: BrowserSessions) {
    this.#app = app;
    this.#offlineKey = `sessionfold-demo:${browser.dbName}:offline`;
    this.#tokenKey = `sessionfold-demo:${browser.dbName}:sync-token`;
    this.#offline = localStorage.getItem(this.#offlineKey) === "1";
    this.#sync = startBackgroundSync({
      sessions: browser,
      remote: httpRemote({
        url: new URL("sync", new URL("/", location.href)).href,
        id: REMOTE_ID,
        headers: (): Record<string, string> => {
          const token = sessionStorage.getItem(this.#tokenKey);
          return token ? { authorization: `Bearer ${token}` } : {};
        },
        fetch: (input, init) => this.#fetch(input, init),
      }),
      intervalMs: PULL_EVERY_MS,
    });
    // Before the scheduler's first sync (a timer at 0 ms): a device left offline stays offline.
    if (this.#offline) this.#sync.setOnline(false);
    // The window's `online` event puts the scheduler online; the switch outranks it (this listener runs after the runtime's).
    globalThis.addEventListener("online", () => this.#offline && this.#sync.setOnline(false));
    this.#sync.on("status", () => this.#changed());
    this.#sync.on("fork", (fork) => this.#forked(fork));
    this.#sync.on("report", (report) => void this.#follow(report));
  }

  /** The scheduler's status now. */
  get status(): SyncStatus {
    return this.#sync.status;
  }

  /** Whether the switch is off. */
  get offline(): boolean {
    return this.#offline;
  }

  /** Whether a token is kept for the server (a playground served beyond loopback asks for one). */
  get hasToken(): boolean {
    return sessionStorage.getItem(this.#tokenKey) !== null;
  }

  /** Listens to changes of the status, the switch and the forks; returns the unsubscribe function. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  /** Turns the switch: off stops every request at once; on syncs at once. */
  setOffline(offline: boolean): void {
    if (offline === this.#offline) return;
    this.#offline = offline;
    if (offline) localStorage.setItem(this.#offlineKey, "1");
    else localStorage.removeItem(this.#offlineKey);
    if (offline) { for (const request of this.#inFlight) request.abort(); }
    this.#sync.setOnline(!offline && navigator.onLine);
    this.#changed();
  }

  /** Syncs now (also after a refusal or during a backoff). */
  async syncNow(): Promise<void> {
    await this.#sync.syncNow();
  }

  /** Keeps `token` for this tab's requests (the server's `SESSIONFOLD_DEMO_SYNC_TOKEN`) and syncs with it. */
  async useToken(token: string): Promise<void> {
    if (token === "") sessionStorage.removeItem(this.#tokenKey);
    else sessionStorage.setItem(this.#tokenKey, token);
    await this.syncNow();
  }

  async #fetch(input: string, init: { method: string; headers: Record<string, string>; body: string }): Promise<Response> {
    if (this.#offline) throw new TypeError("this device is offline (its switch is off): nothing was sent");
    const request = new AbortController();
    this.#inFlight.add(request);
    try {
      return await fetch(input, { ...init, signal: request.signal });
    } finally {
      this.#inFlight.delete(request);
    }
  }

  #forked(fork: SyncFork): void {
    this.forks = [{ ...fork, at: Date.now() }, ...this.forks.filter((f) => f.forked_as !== fork.forked_as)];
    this.#changed();
  }

  /** A sync wrote into this store: show it (the lists, and the open session unless this tab is busy with it). */
  async #follow(report: SyncReport): Promise<void> {
    if (report.pulled === 0 && report.reread.length === 0 && report.forks.length === 0) return;
    await this.#app.followSync().catch(() => undefined);
  }

  #changed(): void {
    for (const listener of [...this.#listeners]) listener();
  }
}
