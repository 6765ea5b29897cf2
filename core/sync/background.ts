/**
 * Background sync, platform-free (docs/SYNC.md "Background sync in the browser"): a
 * scheduler that runs {@linkcode syncStores} when the host asks (a local commit), on an
 * interval, and again with capped, jittered backoff after a failure; that waits while
 * offline, and while the local store is full (a retry would download the same sessions
 * again); that runs one sync at a time inside an injected exclusive section (one pusher per
 * browser profile: a Web Lock in the browser runtime), after the runs of this store's other
 * schedulers here (`scheduler-turns.ts`); and that keeps a status a host can
 * show. Timers and clocks are injected, so tests drive it without sleeping.
 *
 * Nothing here keeps a pending change: the engine derives what to push from the local
 * store (a commit is its own outbox entry, written in the commit's own transaction) and its
 * ledger `sync/remotes/<remote>.json`, so a scheduler that dies loses nothing.
 *
 * @module
 */
import { StorageFullError, StoreClosedError, SyncRefusedError } from "../errors.ts";
import type { Sessions } from "../session/registry.ts";
import { syncStores } from "./engine.ts";
import { SYNC_STORES_FIELDS, type SyncStoresOptions } from "./sync-run.ts";
import type { SyncFork, SyncReport } from "./report.ts";
import { assertFields, type KnownFields, knownOptions } from "../schema/arguments.ts";
import { pendingMessages } from "./pending.ts";
import type { SyncRemote } from "./remote.ts";
import { inTurn } from "./scheduler-turns.ts";

/** Timers the scheduler uses; default the global `setTimeout` and `clearTimeout`. */
export interface SyncTimers {
  setTimeout(run: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** Retry after a failure: `min(maxMs, initialMs · 2^(failures − 1))`, then a random part of it (jitter). */
export interface SyncBackoff {
  /** Default 1 000 ms. */
  readonly initialMs?: number;
  /** Default 60 000 ms. */
  readonly maxMs?: number;
  /** The share of the delay that is random, 0..1: `delay · (1 − jitter + jitter · random())`. Default 0.5. */
  readonly jitter?: number;
}

/** What a host shows: is it synced, how much is waiting, when did it last succeed, what failed. */
export interface SyncStatus {
  /**
   * `idle`: nothing running; `syncing`; `offline`: waiting for the network; `retrying`: waiting out a backoff after `lastError`;
   * `refused`: the remote refused the client (401/403), waiting for `syncNow()`; `storage-full`: a write of the sync was refused
   * as the store is full (`lastError.code` `storage-full`), nothing scheduled: a local change (`trigger()`) still syncs (its push
   * comes before the pull), and `syncNow()` once the user freed space (docs/SYNC.md "Background sync in the browser").
   */
  readonly state: "idle" | "syncing" | "offline" | "retrying" | "refused" | "storage-full";
  readonly online: boolean;
  /** Local messages the remote has not acknowledged yet. */
  readonly pending: number;
  /** Milliseconds since the epoch of the last sync that ended without an error. */
  readonly lastSuccessAt: number | null;
  /** The last failure, cleared by the next success. */
  readonly lastError: { readonly message: string; readonly code: string; readonly at: number } | null;
  /** Failures in a row. */
  readonly failures: number;
  /** When the next sync is due (ms since the epoch), `null` when none is scheduled. */
  readonly nextAttemptAt: number | null;
}

/** Events of a {@linkcode BackgroundSync}. */
export interface BackgroundSyncEvents {
  status: SyncStatus;
  /** A local tail became a fork on the server (docs/SYNC.md "Divergence"): show it to the user. */
  fork: SyncFork;
  /** Every sync that ended. */
  report: SyncReport;
}

/** Options of {@linkcode startSyncScheduler}. */
export interface SyncSchedulerOptions extends Omit<SyncStoresOptions, "local" | "remote" | "clock" | "signal"> {
  readonly local: Sessions;
  readonly remote: SyncRemote;
  /** Whether the network is up at the start; default `true`. */
  readonly online?: boolean;
  /** A sync this often while idle and online (pulls the remote's changes); default 30 000 ms, `0` never. */
  readonly intervalMs?: number;
  /** Wait this long after `trigger()` so a burst of commits goes in one sync; default 50 ms. */
  readonly debounceMs?: number;
  readonly backoff?: SyncBackoff;
  readonly timers?: SyncTimers;
  /** Milliseconds since the epoch; default `Date.now`. */
  readonly clock?: () => number;
  /** 0 ≤ x < 1; default `Math.random`. */
  readonly random?: () => number;
  /**
   * Runs `sync` as the one pusher of this store, or not at all: resolves `{ ran: false }` at once
   * when another context holds the section (it pushes this store's commits too). Default: runs it.
   */
  readonly exclusive?: <T>(sync: () => Promise<T>) => Promise<{ ran: true; value: T } | { ran: false }>;
}

const { signal: _runOnly, ...SYNC_RUN_FIELDS } = SYNC_STORES_FIELDS;

/** The fields of {@linkcode SyncSchedulerOptions}: a sync's (but its `signal`: `stop()` ends the scheduler), and the schedule's. */
export const SYNC_SCHEDULER_FIELDS: KnownFields<SyncSchedulerOptions> = {
  ...SYNC_RUN_FIELDS,
  online: true,
  intervalMs: true,
  debounceMs: true,
  backoff: true,
  timers: true,
  random: true,
  exclusive: true,
};

/** A running scheduler. */
export interface BackgroundSync {
  /** The status now. */
  readonly status: SyncStatus;
  /** Listens to an event; returns the unsubscribe function. */
  on<K extends keyof BackgroundSyncEvents>(event: K, listener: (value: BackgroundSyncEvents[K]) => void): () => void;
  /** Something changed locally: sync soon (after `debounceMs`), unless offline or backing off. */
  trigger(): void;
  /** Syncs now, even during a backoff, after a refusal or with the store full; resolves with the report (`undefined` when offline, stopped or another context is the pusher). */
  syncNow(): Promise<SyncReport | undefined>;
  /** The network came up or went down (`online`/`offline` events). Coming up syncs at once, but with the store full (`storage-full`). */
  setOnline(online: boolean): void;
  /** Stops the timers and waits for a running sync to end. */
  stop(): Promise<void>;
}

/** What comes after a sync: a state, and for `idle` and `retrying` when the next sync is due. */
type Next = { state: "idle" | "retrying" | "refused" | "storage-full"; ms: number };

const globalTimers: SyncTimers = {
  setTimeout: (run, ms) => setTimeout(run, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/**
 * The delay before retry number `failures` (1 for the first): capped, with jitter.
 *
 * @example
 * ```ts
 * backoffDelay(1, { initialMs: 1_000, jitter: 0 }); // 1000
 * backoffDelay(3, { initialMs: 1_000, jitter: 0 }); // 4000
 * backoffDelay(30, { initialMs: 1_000, maxMs: 60_000, jitter: 0.5 }, () => 0); // 30000: half of the cap
 * ```
 */
export function backoffDelay(failures: number, backoff: SyncBackoff = {}, random: () => number = Math.random): number {
  const initial = backoff.initialMs ?? 1_000;
  const max = backoff.maxMs ?? 60_000;
  const jitter = Math.min(1, Math.max(0, backoff.jitter ?? 0.5));
  const delay = Math.min(max, initial * 2 ** Math.min(failures - 1, 30));
  return Math.round(delay * (1 - jitter + jitter * random()));
}

/**
 * Starts syncing `local` with `remote` in the background.
 *
 * @example
 * ```ts
 * import { MemoryStorage, Sessions } from "sessionfold";
 * import { directRemote } from "sessionfold/sync";
 *
 * const local = new Sessions({ storage: new MemoryStorage() });
 * const sync = startSyncScheduler({ local, remote: directRemote(new MemoryStorage(), { id: "server" }), intervalMs: 0 });
 * sync.on("status", (status) => console.log(status.state, status.pending));
 * sync.on("fork", (fork) => console.log(`${fork.ref} forked as ${fork.forked_as}`));
 * await sync.syncNow();
 * await sync.stop();
 * ```
 * @throws {InvalidInputError} when `options` is not an object with `local` and `remote`, or has a field it does not know.
 */
export function startSyncScheduler(options: SyncSchedulerOptions): BackgroundSync {
  knownOptions(options, "startSyncScheduler(options)", SYNC_SCHEDULER_FIELDS);
  assertFields(options, "startSyncScheduler(options)", { local: "object!", remote: "object!" });
  return new Scheduler(options);
}

class Scheduler implements BackgroundSync {
  readonly #options: SyncSchedulerOptions;
  readonly #timers: SyncTimers;
  readonly #clock: () => number;
  readonly #listeners = new Map<keyof BackgroundSyncEvents, Set<(value: never) => void>>();
  #status: SyncStatus;
  #timer: { handle: unknown; due: number } | undefined;
  #running: Promise<SyncReport | undefined> | undefined;
  /** A trigger arrived while a sync ran: run again after it. */
  #again = false;
  #stopped = false;
  /** Aborted by `stop()`: a sync still waiting for its turn gives it up. */
  readonly #halt = new AbortController();

  constructor(options: SyncSchedulerOptions) {
    this.#options = options;
    this.#timers = options.timers ?? globalTimers;
    this.#clock = options.clock ?? Date.now;
    const online = options.online ?? true;
    this.#status = { state: online ? "idle" : "offline", online, pending: 0, lastSuccessAt: null, lastError: null, failures: 0, nextAttemptAt: null };
    void this.#refreshPending();
    if (online) this.#schedule(0);
  }

  get status(): SyncStatus {
    return this.#status;
  }

  on<K extends keyof BackgroundSyncEvents>(event: K, listener: (value: BackgroundSyncEvents[K]) => void): () => void {
    let set = this.#listeners.get(event);
    if (!set) this.#listeners.set(event, set = new Set());
    set.add(listener as (value: never) => void);
    return () => void set.delete(listener as (value: never) => void);
  }

  trigger(): void {
    if (this.#stopped) return;
    void this.#refreshPending();
    if (this.#running) {
      this.#again = true;
      return;
    }
    // A backoff or a refusal is not cut short by more commits: the retry (or syncNow) takes them.
    if (!this.#status.online || this.#status.state === "retrying" || this.#status.state === "refused") return;
    this.#schedule(this.#options.debounceMs ?? 50);
  }

  setOnline(online: boolean): void {
    if (this.#stopped || online === this.#status.online) return;
    if (!online) {
      this.#cancel();
      this.#update({ online, state: this.#running ? "syncing" : "offline", nextAttemptAt: null });
      return;
    }
    // A full store is not the network's doing: coming back frees no space, and a sync would download the same sessions again.
    if (this.#status.lastError?.code === "storage-full") return this.#update({ online, state: this.#running ? "syncing" : "storage-full" });
    // Back online: whatever failed was probably the network, so try at once.
    this.#update({ online, state: this.#running ? "syncing" : "idle", failures: 0 });
    if (!this.#running) this.#schedule(0);
  }

  syncNow(): Promise<SyncReport | undefined> {
    if (this.#stopped || !this.#status.online) return Promise.resolve(undefined);
    // A sync that is running may have read the store before the caller's last commit: one more after it.
    if (this.#running) return this.#running.then(() => this.#running ?? this.#run());
    return this.#run();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#halt.abort();
    this.#cancel();
    await this.#running;
  }

  #emit<K extends keyof BackgroundSyncEvents>(event: K, value: BackgroundSyncEvents[K]): void {
    for (const listener of [...(this.#listeners.get(event) ?? [])]) {
      try {
        (listener as (value: BackgroundSyncEvents[K]) => void)(value);
      } catch (error) {
        // A host's listener that throws must not stop syncing; the error still surfaces.
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }

  #update(change: Partial<SyncStatus>): void {
    this.#status = { ...this.#status, ...change };
    this.#emit("status", this.#status);
  }

  async #refreshPending(): Promise<void> {
    try {
      const pending = await pendingMessages(this.#options.local, this.#options.remote.id, this.#options.refs);
      if (pending !== this.#status.pending) this.#update({ pending });
    } catch {
      // The count is for display; the next sync reports a store that fails.
    }
  }

  #cancel(): void {
    if (this.#timer) this.#timers.clearTimeout(this.#timer.handle);
    this.#timer = undefined;
  }

  /** Runs a sync in `ms`, unless one is due sooner already; `change` goes into the same status update. */
  #schedule(ms: number, change: Partial<SyncStatus> = {}): void {
    const due = this.#clock() + ms;
    if (this.#timer && this.#timer.due <= due) return void (Object.keys(change).length > 0 && this.#update(change));
    this.#cancel();
    const timer = {
      due,
      handle: this.#timers.setTimeout(() => {
        if (this.#timer !== timer) return;
        this.#timer = undefined;
        void this.#run();
      }, ms),
    };
    this.#timer = timer;
    this.#update({ ...change, nextAttemptAt: due });
  }

  #run(): Promise<SyncReport | undefined> {
    this.#cancel();
    const running = this.#attempt().then(({ report, next }) => {
      // Not running any more before the status says so, so a listener sees a consistent scheduler.
      this.#running = undefined;
      this.#afterwards(next);
      return report;
    });
    this.#running = running;
    return running;
  }

  /** One sync; what comes next: `idle` (then the interval), `retrying` after `ms`, `refused` or `storage-full`. */
  async #attempt(): Promise<{ report: SyncReport | undefined; next: Next }> {
    const { local, remote, online: _online, intervalMs, debounceMs: _debounce, backoff, timers: _timers, clock: _clock, random, exclusive, ...engine } =
      this.#options;
    const interval = intervalMs ?? 30_000;
    this.#again = false;
    this.#update({ state: "syncing", nextAttemptAt: null });
    try {
      const sync = () => syncStores({ ...engine, local, remote, clock: this.#clock });
      // Another scheduler of this store syncing with another remote holds its lock: wait for that run, do not fail on it.
      const outcome = await inTurn(
        local.storage,
        this.#halt.signal,
        async () => exclusive ? await exclusive(sync) : { ran: true as const, value: await sync() },
      );
      await this.#refreshPending();
      // Another context is the pusher (it takes this store's commits), or stop() came first: look again on the interval.
      if (!outcome.ran) return { report: undefined, next: { state: "idle", ms: interval } };
      const report = outcome.value;
      for (const fork of report.forks) this.#emit("fork", fork);
      this.#emit("report", report);
      // A session another writer held on the server is a retry, not a success.
      const busy = report.conflicts.find((c) => c.reason === "session-busy");
      if (busy) throw new SyncRefusedError(busy.message, { status: 409, reason: "session-busy", ref: busy.ref });
      this.#status = { ...this.#status, lastSuccessAt: this.#clock(), lastError: null, failures: 0 };
      return { report, next: { state: "idle", ms: interval } };
    } catch (error) {
      const failures = this.#status.failures + 1;
      const code = (error as { code?: unknown } | null)?.code;
      const lastError = { message: error instanceof Error ? error.message : String(error), code: typeof code === "string" ? code : "error", at: this.#clock() };
      this.#status = { ...this.#status, lastError, failures };
      await this.#refreshPending();
      // A refused client (wrong token, another user's client id) stays refused however often it asks.
      if (error instanceof SyncRefusedError && (error.status === 401 || error.status === 403)) return { report: undefined, next: { state: "refused", ms: 0 } };
      // A full store stays full until the user frees space: each retry would download the same sessions to be refused again.
      if (error instanceof StorageFullError) return { report: undefined, next: { state: "storage-full", ms: 0 } };
      // A store closed under the scheduler never opens again: retrying would only keep timers alive for nothing.
      if (error instanceof StoreClosedError) this.#stopped = true;
      return { report: undefined, next: { state: "retrying", ms: backoffDelay(failures, backoff, random) } };
    }
  }

  /** After a sync: the next state, and the next sync (none while offline, stopped, refused or full; none for a `0` interval while idle and nothing new). */
  #afterwards(next: Next): void {
    if (this.#stopped) return this.#update({ state: "idle", nextAttemptAt: null });
    if (!this.#status.online) return this.#update({ state: "offline", nextAttemptAt: null });
    if (next.state === "refused" || next.state === "storage-full") return this.#update({ state: next.state, nextAttemptAt: null });
    if (next.state === "retrying") return this.#schedule(next.ms, { state: "retrying" });
    // Commits arrived during the sync: another one at once.
    if (this.#again) {
      this.#again = false;
      return this.#schedule(0, { state: "idle" });
    }
    if (next.ms > 0) return this.#schedule(next.ms, { state: "idle" });
    this.#update({ state: "idle", nextAttemptAt: null });
  }
}
