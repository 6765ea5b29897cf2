/**
 * The page's side of the browser storage worker: {@linkcode WorkerIndexedDbStorage} starts
 * `storage-worker.ts` as a module Web Worker and forwards every storage call to it.
 *
 * @module
 */
import * as Comlink from "comlink";
import { StorageError } from "../core/mod.ts";
import { WorkerStorageClient } from "../core/internal.ts";
import type { IndexedDbStorageOptions } from "./indexeddb-storage.ts";
import { webLocks } from "./web-locks.ts";

/** Options of {@linkcode WorkerIndexedDbStorage}: those of the {@linkcode IndexedDbStorage} it runs, and how to start the worker. */
export interface WorkerIndexedDbStorageOptions extends IndexedDbStorageOptions {
  /**
   * Starts the module Web Worker running `storage-worker.ts`. Default:
   * `new Worker(new URL("./storage-worker.ts", import.meta.url), { type: "module" })`,
   * which Vite serves and bundles as is. Pass your own when another bundler names the
   * worker file differently.
   */
  readonly worker?: () => Worker;
}

function defaultWorker(): Worker {
  return new Worker(new URL("./storage-worker.ts", import.meta.url), { type: "module" });
}

/**
 * The page's {@linkcode StoragePort}: forwards every call, `acquireLock` / `releaseLock`
 * and whole commit plans included, to an {@linkcode IndexedDbStorage} in a module Web
 * Worker, so IndexedDB work never runs on the page's thread and a commit is one round trip.
 * The Web Locks are then held by the worker, which the browser ends with its tab: a tab
 * that dies frees its locks. Typed errors cross the hop with their class, `code` and
 * `details`. A worker that failed to load rejects every pending and later call with a
 * `StorageError`; {@linkcode WorkerIndexedDbStorage.close} ends the worker once it answered
 * every call made before, and refuses later calls with `StoreClosedError`.
 *
 * `acquireLock` / `releaseLock` are own properties only where the page has
 * `navigator.locks`, like on {@linkcode IndexedDbStorage}.
 *
 * @example
 * ```ts
 * const storage = new WorkerIndexedDbStorage({ dbName: "my-app" });
 * await storage.append("log.jsonl", new TextEncoder().encode('{"a":1}\n'));
 * await storage.close();
 * ```
 */
export class WorkerIndexedDbStorage extends WorkerStorageClient<IndexedDbStorageOptions> {
  /** The worker serving this store. */
  readonly worker: Worker;

  constructor(options: WorkerIndexedDbStorageOptions = {}) {
    const { worker: start, ...storeOptions } = options;
    const db = storeOptions.dbName ?? "sessionfold";
    const worker = (start ?? defaultWorker)();
    super({
      comlink: Comlink,
      endpoint: worker,
      options: storeOptions,
      // Where the page has Web Locks its worker has them too: the lock calls go through.
      locks: webLocks() !== undefined,
      details: { db },
      terminate: () => worker.terminate(),
    });
    this.worker = worker;
    worker.addEventListener("error", (event) => {
      event.preventDefault();
      this.fail(new StorageError(`storage worker failed: ${event.message || "it could not be loaded"}`, { db }));
      worker.terminate();
    });
    worker.addEventListener("messageerror", () => {
      this.fail(new StorageError("storage worker sent a message that could not be read", { db }));
    });
  }
}
