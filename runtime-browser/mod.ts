/**
 * The browser runtime of sessionfold: sessions stored in IndexedDB (docs/FORMAT.md's paths as
 * keys), served by a module Web Worker reached through Comlink, with cross-tab writer
 * ownership.
 *
 * - {@linkcode openBrowserSessions}: the one call a web app needs.
 * - {@linkcode IndexedDbStorage}: the storage port over IndexedDB (page or worker).
 * - {@linkcode WorkerIndexedDbStorage}: the page's port onto an `IndexedDbStorage` in a worker.
 * - {@linkcode startBackgroundSync}: syncs those sessions with a sync server in the background
 *   (docs/SYNC.md "Background sync in the browser").
 *
 * Two tabs on one session: writer ownership is a Web Lock held by the tab's storage
 * worker, so a second tab fails at once with `WriterLockedError` (code `writer-locked`)
 * while the first writes, and a tab that dies (closed, crashed, reloaded) frees the
 * session; its stale `writer.lock` record is then replaced by the next writer. Commits
 * are announced on a `BroadcastChannel`, so other tabs can `reload()` their view, and so are
 * sessions archived or deleted, so they can list again.
 *
 * @example
 * ```ts
 * import { openBrowserSessions } from "sessionfold/browser";
 *
 * const browser = await openBrowserSessions({ dbName: "my-app" });
 * const session = await browser.sessions.create({ agentId: "coder", workspaceId: "web", sessionId: "s1" });
 * browser.onCommit(async ({ refText, revision }) => {
 *   if (refText === "coder/web/s1" && revision > session.revision) await session.reload();
 * });
 * await session.append({ role: "user", parts: [{ type: "text", text: "hello" }] });
 * ```
 * @module
 */
import {
  type CommitNotice,
  type KeyProvider,
  type LockOwner,
  type RemovalNotice,
  type Session,
  type SessionOptions,
  Sessions,
  storageForKeys,
  type StoragePort,
  StoreClosedError,
  type WriterIdentity,
} from "../core/mod.ts";
import { IndexedDbStorage } from "./indexeddb-storage.ts";
import { webLockName, webLockRecordName } from "./web-locks.ts";
import { PageStorage } from "./page-storage.ts";
import { WorkerIndexedDbStorage } from "./storage-worker-client.ts";
import { assertFields, assertSessionOptions, type KnownFields, knownOptions, readLockOwner } from "../core/internal.ts";

export { IndexedDbStorage, type IndexedDbStorageOptions } from "./indexeddb-storage.ts";
export { MAX_CHUNK_BYTES } from "./indexeddb-records.ts";
export { webLockName } from "./web-locks.ts";
export { type BackgroundSyncOptions, startBackgroundSync, type SyncedBrowserSessions } from "./background-sync.ts";
export { WorkerIndexedDbStorage, type WorkerIndexedDbStorageOptions } from "./storage-worker-client.ts";
export { PageStorage, type PageStorageOptions } from "./page-storage.ts";
export {
  type BrowserKeyringInfo,
  type BrowserKeyringOptions,
  changeBrowserKeyringPassphrase,
  describeBrowserKeyring,
  openBrowserKeyring,
  type PassphraseChangeOptions,
  PBKDF2_ITERATIONS,
} from "./key-store.ts";
export { type BrowserKeyRotation, type BrowserKeyRotationOptions, rotateBrowserKeyring } from "./key-rotation.ts";

/** Options of {@linkcode openBrowserSessions}. */
export interface BrowserSessionsOptions {
  /** IndexedDB database name. Default `"sessionfold"`. */
  readonly dbName?: string;
  /**
   * Run IndexedDB in a module Web Worker (default `true`):
   * `new Worker(new URL("./storage-worker.ts", import.meta.url), { type: "module" })`.
   * `false` runs it on the page's thread.
   */
  readonly worker?: boolean;
  /** Options for every session opened through the registry. */
  readonly defaults?: SessionOptions;
  /** Announce commits to other tabs on the `BroadcastChannel` `"sessionfold:<dbName>"` (default `true`). */
  readonly channel?: boolean;
  /**
   * The keys of an encrypted store (docs/FORMAT.md "Encrypted stores"), e.g. from
   * `openBrowserKeyring`. Without them an encrypted store is `key-required` before anything
   * is read; given to an empty store, they make it encrypted.
   */
  readonly keys?: KeyProvider;
}

const BROWSER_SESSIONS_FIELDS: KnownFields<BrowserSessionsOptions> = { dbName: true, worker: true, defaults: true, channel: true, keys: true };

/** What {@linkcode openBrowserSessions} gives a web app. */
export interface BrowserSessions {
  /** The sessions of this database. */
  readonly sessions: Sessions;
  /** The IndexedDB database's name. */
  readonly dbName: string;
  /** The storage under `sessions`: the page-side wrapper, or an `EncryptedStorage` over it for an encrypted store. */
  readonly storage: StoragePort;
  /** Who this tab is in `writer.lock`: `{ pid: 0, hostname: "tab-…", runtime: "browser" }`. */
  readonly identity: WriterIdentity;
  /**
   * Calls `listener` for every commit another tab (or another `BrowserSessions` of this
   * page) makes on this database; a host then calls `session.reload()`. Returns the
   * unsubscribe function.
   */
  onCommit(listener: (event: CommitNotice) => void): () => void;
  /** Calls `listener` for every commit made through `sessions` (this object's own). Returns the unsubscribe function. */
  onOwnCommit(listener: (event: CommitNotice) => void): () => void;
  /**
   * Calls `listener` for every session another tab (or another `BrowserSessions` of this page) archived or deleted,
   * itself or by a sync that applied the server's; a host then lists again. Returns the unsubscribe function.
   */
  onRemoved(listener: (event: RemovalNotice) => void): () => void;
  /** Calls `listener` for every session archived or deleted through `sessions` (its own calls and its syncs). Returns the unsubscribe function. */
  onOwnRemoved(listener: (event: RemovalNotice) => void): () => void;
  /**
   * Who holds `session`'s writer ownership right now (another tab, or this one while it
   * writes), or `undefined` when nobody does: the Web Lock where the browser has Web
   * Locks, else the `writer.lock` record. For showing "another tab owns this session".
   * After `close()` began it rejects with `StoreClosedError`, as every call of a closed store.
   */
  heldBy(session: Session): Promise<LockOwner | undefined>;
  /**
   * Closes the store (README "Closing a store"): what is under way settles first with its own outcome, the sessions its
   * handles hold are given back, then the worker (its Web Locks with it) and the channel end. Every operation started
   * after `close()` began rejects with `StoreClosedError` (code `closed`).
   */
  close(): Promise<void>;
}

/** A short random label for this tab, e.g. `tab-3f9c`. */
function tabLabel(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(2));
  return `tab-${[...bytes].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/** Asks once for persistent storage (so the browser does not evict sessions under pressure); any answer is fine. */
function requestPersistence(): void {
  const storage = (globalThis as { navigator?: { storage?: { persist?: () => Promise<boolean> } } }).navigator?.storage;
  if (typeof storage?.persist !== "function") return;
  try {
    void storage.persist().catch(() => undefined);
  } catch {
    // A browser that refuses outright is no different from one that answers false.
  }
}

function isCommitNotice(data: unknown): data is CommitNotice {
  const event = data as CommitNotice | null;
  return !!event && typeof event.refText === "string" && typeof event.revision === "number";
}

function isRemovalNotice(data: unknown): data is RemovalNotice {
  const event = data as RemovalNotice | null;
  return !!event && typeof event.refText === "string" && (event.removed === "archived" || event.removed === "deleted");
}

/**
 * Opens the sessions stored in this origin's IndexedDB database `dbName`.
 *
 * @example
 * ```ts
 * import { ExtractiveSummarizer } from "sessionfold";
 * const summarizer = new ExtractiveSummarizer();
 * const { sessions, onCommit, close } = await openBrowserSessions({ defaults: { contextWindow: 128_000, summarizer } });
 * const session = await sessions.open("coder/web/s1");
 * const stop = onCommit(({ refText }) => refText === "coder/web/s1" && session.reload());
 * ```
 * @throws {InvalidInputError} when `options` is not an object, has a field it does not know (nor its `defaults` one
 * session options lack) or one of the wrong kind (a `dbName` that is not a string); nothing is opened.
 * @throws {StorageError} when the database cannot be opened (or the worker cannot start).
 * @throws {KeyRequiredError} when the store is encrypted and no `keys` are given (or they lack its key).
 * @throws {WrongKeyError} when the `keys` do not open the encrypted store.
 */
export async function openBrowserSessions(options: BrowserSessionsOptions = {}): Promise<BrowserSessions> {
  knownOptions(options, "openBrowserSessions(options)", BROWSER_SESSIONS_FIELDS);
  // A number would name another database than the one asked for (IndexedDB turns it into text).
  assertFields(options, "openBrowserSessions(options)", { dbName: "string", worker: "boolean", channel: "boolean", defaults: "object" });
  assertSessionOptions(options.defaults, "openBrowserSessions(options).defaults");
  const dbName = options.dbName ?? "sessionfold";
  const inner: StoragePort = options.worker === false ? new IndexedDbStorage({ dbName }) : new WorkerIndexedDbStorage({ dbName });
  const channel = options.channel !== false && typeof BroadcastChannel === "function" ? new BroadcastChannel(`sessionfold:${dbName}`) : undefined;
  const listeners = new Set<(event: CommitNotice) => void>();
  const ownListeners = new Set<(event: CommitNotice) => void>();
  const removalListeners = new Set<(event: RemovalNotice) => void>();
  const ownRemovalListeners = new Set<(event: RemovalNotice) => void>();
  const notify = <T>(set: Set<(event: T) => void>, event: T) => {
    for (const listener of [...set]) {
      try {
        listener(event);
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  };
  if (channel) {
    channel.onmessage = (message: MessageEvent) => {
      // A removal has no revision, so a tab of an older version, which checks for one, ignores it.
      if (isRemovalNotice(message.data)) notify(removalListeners, { refText: message.data.refText, removed: message.data.removed });
      else if (isCommitNotice(message.data)) notify(listeners, { refText: message.data.refText, revision: message.data.revision });
    };
  }
  const page = new PageStorage(inner, { onFirstWrite: requestPersistence });
  let storage: StoragePort;
  try {
    await page.list(""); // opens the database now, so a failure surfaces here
    storage = await storageForKeys(page, options.keys);
  } catch (error) {
    channel?.close();
    await inner.close?.().catch(() => undefined);
    throw error;
  }
  const identity: WriterIdentity = { pid: 0, hostname: tabLabel(), runtime: "browser" };
  const sessions = new Sessions({
    storage,
    identity,
    ...(options.defaults ? { defaults: options.defaults } : {}),
    onCommit: (event: CommitNotice) => {
      channel?.postMessage(event);
      notify(ownListeners, event);
    },
    onRemoved: (event: RemovalNotice) => {
      channel?.postMessage(event);
      notify(ownRemovalListeners, event);
    },
  });
  let closed = false;
  return {
    sessions,
    dbName,
    storage,
    identity,
    onCommit(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    onOwnCommit(listener) {
      ownListeners.add(listener);
      return () => void ownListeners.delete(listener);
    },
    onRemoved(listener) {
      removalListeners.add(listener);
      return () => void removalListeners.delete(listener);
    },
    onOwnRemoved(listener) {
      ownRemovalListeners.add(listener);
      return () => void ownRemovalListeners.delete(listener);
    },
    async heldBy(session) {
      // A closed store answers nothing, as every other call after close() (README "Closing a store").
      if (closed) throw new StoreClosedError(`the store is closed (openBrowserSessions "${dbName}"); open it again to go on`, { db: dbName });
      const locks = typeof navigator !== "undefined" ? navigator.locks : undefined;
      if (!locks) return readLockOwner(storage, session.paths.lock);
      const name = webLockName(dbName, session.paths.lock);
      const held = async () => ((await locks.query()).held ?? []).some((lock) => lock.name === name);
      if (!(await held())) return undefined;
      // Under the record lock, shared, the Web Lock and its writer.lock record agree: a holder that has
      // just taken the lock (or is giving it back) holds the record lock until its record is written
      // (or the lock is given back), so this waits exactly that long (runtime-browser/web-locks.ts).
      return await locks.request(webLockRecordName(dbName, session.paths.lock), { mode: "shared" }, async () => {
        if (!(await held())) return undefined;
        // A lock with no record: a holder that is not this runtime's IndexedDbStorage.
        return (await readLockOwner(storage, session.paths.lock)) ??
          { pid: 0, hostname: "unknown", runtime: "browser", operation: "write", created_at: new Date().toISOString() };
      });
    },
    async close() {
      if (closed) return;
      closed = true;
      // The registry first: what is under way settles and held sessions are given back while the worker still runs.
      await sessions.close();
      listeners.clear();
      ownListeners.clear();
      removalListeners.clear();
      ownRemovalListeners.clear();
      channel?.close();
      await page.close();
    },
  };
}
