/**
 * Writer ownership in a browser: Web Locks (`navigator.locks`) that the browser frees when
 * the holding tab or worker dies. A store names its locks after its database
 * ({@linkcode webLockName}), so two databases of one origin never share a lock.
 *
 * The owner's `writer.lock` record is written after its Web Lock is taken and removed before
 * it is given back, so for a moment the two disagree. A second lock, the record lock
 * ({@linkcode webLockRecordName}), covers those moments: a taker holds it from before it asks
 * for the Web Lock until its record is written, and a holder takes it again before its record
 * is removed, until the Web Lock is given back. Whoever holds the record lock shared sees the
 * Web Lock and the record agree (`BrowserSessions.heldBy` reads the owner so).
 *
 * @module
 */
import { indexedDbFailure } from "./indexeddb-errors.ts";

/**
 * The Web Lock that guards the lock path `path` of database `dbName`: tabs and workers of
 * one origin that name the same lock exclude each other.
 *
 * @example
 * ```ts
 * webLockName("sessionfold", "agents/a/workspaces/w/sessions/s/writer.lock");
 * // "sessionfold:sessionfold:agents/a/workspaces/w/sessions/s/writer.lock"
 * ```
 */
export function webLockName(dbName: string, path: string): string {
  return `sessionfold:${dbName}:${path}`;
}

/**
 * The record lock of the lock path `path` of database `dbName` (see the module doc): held
 * exclusively while the Web Lock {@linkcode webLockName} names and its `writer.lock` record
 * disagree, so that a reader holding it shared sees them agree.
 *
 * @example
 * ```ts
 * webLockRecordName("sessionfold", "agents/a/workspaces/w/sessions/s/writer.lock");
 * // "sessionfold:sessionfold:agents/a/workspaces/w/sessions/s/writer.lock:record"
 * ```
 */
export function webLockRecordName(dbName: string, path: string): string {
  return `${webLockName(dbName, path)}:record`;
}

/**
 * This context's Web Locks, `undefined` where there are none (happy-dom, fake-indexeddb
 * under Node). Every browser that gives them to a page gives them to its workers too.
 */
export function webLocks(): LockManager | undefined {
  const locks = (globalThis as { navigator?: { locks?: LockManager | null } }).navigator?.locks;
  return locks && typeof locks.request === "function" ? locks : undefined;
}

/** A Web Lock this context holds: `release` gives it back, `done` settles once it is given back. */
interface HeldLock {
  readonly release: () => void;
  readonly done: Promise<unknown>;
}

/**
 * The Web Locks one store holds, by lock path, each held until released or until this
 * context dies, and the record locks (see the module doc) of those whose record is not
 * yet written or is being removed.
 */
export class HeldWebLocks {
  readonly #locks: LockManager;
  readonly #dbName: string;
  readonly #held = new Map<string, HeldLock>();
  readonly #recording = new Map<string, HeldLock>();

  constructor(locks: LockManager, dbName: string) {
    this.#locks = locks;
    this.#dbName = dbName;
  }

  /**
   * Takes the lock of `name` if it is free, resolving `false` at once otherwise. Its record
   * lock is taken first and kept until {@linkcode HeldWebLocks.recorded}; when another has
   * it, the lock held is `false` at once, and a free one means a reader or another taker has
   * the record lock for a moment: this waits for it.
   */
  async acquire(name: string): Promise<boolean> {
    const lockName = webLockName(this.#dbName, name);
    const recordName = webLockRecordName(this.#dbName, name);
    let recording = await this.#take(recordName, name, true);
    if (!recording) {
      if (((await this.#locks.query()).held ?? []).some((lock) => lock.name === lockName)) return false;
      recording = await this.#take(recordName, name, false);
    }
    const held = await this.#take(lockName, name, true).catch(async (error: unknown) => {
      await give(recording);
      throw error;
    });
    if (!held) {
      await give(recording);
      return false;
    }
    this.#held.set(name, held);
    this.#recording.set(name, recording!);
    return true;
  }

  /** The record of the held lock `name` was written (or its write failed): its record lock is given back. */
  async recorded(name: string): Promise<void> {
    const recording = this.#recording.get(name);
    this.#recording.delete(name);
    await give(recording);
  }

  /** The record of the held lock `name` is about to be removed: its record lock is taken until `release`. */
  async unrecording(name: string): Promise<void> {
    if (!this.#held.has(name) || this.#recording.has(name)) return;
    const recording = await this.#take(webLockRecordName(this.#dbName, name), name, false);
    if (recording) this.#recording.set(name, recording);
  }

  /** Releases the lock of `name`, then its record lock (nothing when it is not held). */
  async release(name: string): Promise<void> {
    const held = this.#held.get(name);
    this.#held.delete(name);
    await give(held);
    await this.recorded(name);
  }

  /** Releases every lock held. */
  async releaseAll(): Promise<void> {
    for (const name of [...this.#held.keys()]) await this.release(name);
  }

  /** Takes the Web Lock `lockName` (with `ifAvailable`, `undefined` at once when it is taken), held until its `release`. */
  #take(lockName: string, name: string, ifAvailable: boolean): Promise<HeldLock | undefined> {
    return new Promise<HeldLock | undefined>((resolve, reject) => {
      // The entry object is shared with the callback, so `done` is set whenever the grant comes.
      const entry = { release: () => {}, done: Promise.resolve() as Promise<unknown> };
      entry.done = this.#locks.request(lockName, { ifAvailable }, (lock) => {
        if (!lock) {
          resolve(undefined);
          return undefined;
        }
        // Held until `release` resolves this promise, or until this context dies.
        return new Promise<void>((release) => {
          entry.release = release;
          resolve(entry);
        });
      });
      entry.done.catch((error: unknown) => reject(indexedDbFailure(error, "acquireLock", name)));
    });
  }
}

/** Gives `held` back (nothing when `undefined`) and waits until it is. */
async function give(held: HeldLock | undefined): Promise<void> {
  if (!held) return;
  held.release();
  await held.done.catch(() => undefined);
}
