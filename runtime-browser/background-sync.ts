/**
 * Background sync in the browser (docs/SYNC.md "Background sync in the browser"): the core's
 * scheduler ({@linkcode startSyncScheduler}) wired to this platform. It syncs after every
 * commit, archive and delete of this tab and of the other tabs (their `BroadcastChannel`
 * notices), follows
 * `navigator.onLine` and the window's `online`/`offline` events, and runs each sync inside the
 * Web Lock `sessionfold:<dbName>:sync-pusher:<remote id>`, so one tab of the browser
 * profile pushes to a remote at a time and the others leave their commits to it; and then
 * inside the Web Lock `sessionfold:<dbName>:sync-turn`, waited for, so that the profile's
 * schedulers against other remotes wait for each other's runs (a store syncs with one remote
 * at a time) rather than fail on the store's lock.
 *
 * @module
 */
import { type BackgroundSync, startSyncScheduler, type SyncSchedulerOptions } from "../core/sync/mod.ts";
import type { CommitNotice, RemovalNotice, Sessions } from "../core/mod.ts";
import { type KnownFields, knownOptions, type Ran, SYNC_SCHEDULER_FIELDS } from "../core/internal.ts";
import { webLockName, webLocks } from "./web-locks.ts";

/** What background sync needs of a `BrowserSessions` (what `openBrowserSessions` gives). */
export interface SyncedBrowserSessions {
  readonly sessions: Sessions;
  readonly dbName: string;
  onCommit(listener: (event: CommitNotice) => void): () => void;
  onOwnCommit(listener: (event: CommitNotice) => void): () => void;
  onRemoved(listener: (event: RemovalNotice) => void): () => void;
  onOwnRemoved(listener: (event: RemovalNotice) => void): () => void;
}

/** Options of {@linkcode startBackgroundSync}: the scheduler's, with the browser's sessions for `local`. */
export interface BackgroundSyncOptions extends Omit<SyncSchedulerOptions, "local" | "online" | "exclusive"> {
  /** What `openBrowserSessions` gave. */
  readonly sessions: SyncedBrowserSessions;
}

// The scheduler's fields but those this function sets itself, and its own.
const { local: _local, online: _online, exclusive: _exclusive, ...SCHEDULED_FIELDS } = SYNC_SCHEDULER_FIELDS;
const BACKGROUND_SYNC_FIELDS: KnownFields<BackgroundSyncOptions> = { ...SCHEDULED_FIELDS, sessions: true };

interface NetworkEvents {
  addEventListener(type: "online" | "offline", listener: () => void): void;
  removeEventListener(type: "online" | "offline", listener: () => void): void;
}

/**
 * Syncs the browser's sessions with `remote` in the background until `stop()`.
 *
 * @example
 * ```ts
 * import { openBrowserSessions, startBackgroundSync } from "sessionfold/browser";
 * import { httpRemote } from "sessionfold/sync";
 *
 * const browser = await openBrowserSessions({ dbName: "my-app" });
 * const sync = startBackgroundSync({ sessions: browser, remote: httpRemote({ url: "/sync", id: "server" }) });
 * sync.on("status", ({ state, pending, lastSuccessAt, lastError }) => console.log(state, pending, lastSuccessAt, lastError?.message));
 * sync.on("fork", ({ ref, forked_as }) => alert(`${ref} continued elsewhere: your messages are in ${forked_as}`));
 * ```
 * @throws {InvalidInputError} when `options` is not an object, or has a field it does not know.
 */
export function startBackgroundSync(options: BackgroundSyncOptions): BackgroundSync {
  knownOptions(options, "startBackgroundSync(options)", BACKGROUND_SYNC_FIELDS);
  const { sessions, ...rest } = options;
  const locks = webLocks();
  const pusherLock = webLockName(sessions.dbName, `sync-pusher:${options.remote.id}`);
  const turnLock = webLockName(sessions.dbName, "sync-turn");
  // stop() gives up a turn still waited for: the scheduler's stop() waits for the sync it started.
  const halt = new AbortController();
  const navigatorOnline = (globalThis as { navigator?: { onLine?: boolean } }).navigator?.onLine;
  const scheduler = startSyncScheduler({
    ...rest,
    local: sessions.sessions,
    online: navigatorOnline ?? true,
    ...(locks
      ? {
        exclusive: <T>(sync: () => Promise<T>) =>
          locks.request(
            pusherLock,
            { ifAvailable: true },
            async (lock) => (lock ? await whenWebLockFree(locks, turnLock, halt.signal, sync) : { ran: false as const }),
          ),
      }
      : {}),
  });
  const trigger = () => scheduler.trigger();
  const online = () => scheduler.setOnline(true);
  const offline = () => scheduler.setOnline(false);
  const events = globalThis as Partial<NetworkEvents>;
  const hasEvents = typeof events.addEventListener === "function" && typeof events.removeEventListener === "function";
  if (hasEvents) {
    events.addEventListener!("online", online);
    events.addEventListener!("offline", offline);
  }
  // An archive or a delete is not a commit, but the remote must hear of it as soon as of one.
  const unsubscribe = [sessions.onCommit(trigger), sessions.onOwnCommit(trigger), sessions.onRemoved(trigger), sessions.onOwnRemoved(trigger)];
  return {
    get status() {
      return scheduler.status;
    },
    on: (event, listener) => scheduler.on(event, listener),
    trigger,
    syncNow: () => scheduler.syncNow(),
    setOnline: (value) => scheduler.setOnline(value),
    async stop() {
      halt.abort();
      for (const stop of unsubscribe) stop();
      if (hasEvents) {
        events.removeEventListener!("online", online);
        events.removeEventListener!("offline", offline);
      }
      await scheduler.stop();
    },
  };
}

/** Runs `sync` holding the Web Lock `name` once it is free; `{ ran: false }` when `signal` aborts the wait first. */
async function whenWebLockFree<T>(
  locks: LockManager,
  name: string,
  signal: AbortSignal,
  sync: () => Promise<T>,
): Promise<Ran<T>> {
  let started = false;
  try {
    return await locks.request(name, { signal }, async () => {
      started = true;
      return { ran: true as const, value: await sync() };
    });
  } catch (error) {
    if (!started && signal.aborted) return { ran: false };
    throw error;
  }
}
