/**
 * Writer ownership in a browser: Web Locks (`navigator.locks`) that the browser frees when
 * the holding tab or worker dies. A store names its locks after its database
 * ({@linkcode webLockName}), so two databases of one origin never share a lock.
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
 * This context's Web Locks, `undefined` where there are none (happy-dom, fake-indexeddb
 * under Node). Every browser that gives them to a page gives them to its workers too.
 */
export function webLocks(): LockManager | undefined {
  const locks = (globalThis as { navigator?: { locks?: LockManager | null } }).navigator?.locks;
  return locks && typeof locks.request === "function" ? locks : undefined;
}

/** The Web Locks one store holds, by lock path, each held until released or until this context dies. */
export class HeldWebLocks {
  readonly #locks: LockManager;
  readonly #dbName: string;
  readonly #held = new Map<string, { release: () => void; done: Promise<unknown> }>();

  constructor(locks: LockManager, dbName: string) {
    this.#locks = locks;
    this.#dbName = dbName;
  }

  /** Takes the lock of `name` if it is free, resolving `false` at once otherwise. */
  acquire(name: string): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      // The entry object is shared with the callback, so `done` is set whenever the grant comes.
      const entry = { release: () => {}, done: Promise.resolve() as Promise<unknown> };
      entry.done = this.#locks.request(webLockName(this.#dbName, name), { ifAvailable: true }, (lock) => {
        if (!lock) {
          resolve(false);
          return undefined;
        }
        // Held until `release` resolves this promise, or until this context dies.
        return new Promise<void>((release) => {
          entry.release = release;
          this.#held.set(name, entry);
          resolve(true);
        });
      });
      entry.done.catch((error: unknown) => reject(indexedDbFailure(error, "acquireLock", name)));
    });
  }

  /** Releases the lock of `name` (nothing when it is not held). */
  async release(name: string): Promise<void> {
    const held = this.#held.get(name);
    if (!held) return;
    this.#held.delete(name);
    held.release();
    await held.done.catch(() => undefined);
  }

  /** Releases every lock held. */
  async releaseAll(): Promise<void> {
    for (const name of [...this.#held.keys()]) await this.release(name);
  }
}
