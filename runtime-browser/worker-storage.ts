import * as Comlink from "comlink";
import { StorageError, type FileTail, type StorageCapabilities, type StoragePort, type WriteOptions } from "../core/mod.ts";
import type { IndexedDbStorageOptions } from "./indexeddb-storage.ts";
import type { StorageWorkerApi } from "./storage-worker.ts";
import { registerErrorTransfer } from "../core/internal.ts";

/** Options of {@linkcode WorkerStorage}: those of the {@linkcode IndexedDbStorage} it runs, and how to start the worker. */
export interface WorkerStorageOptions extends IndexedDbStorageOptions {
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

/** `true` where the page has Web Locks; every browser that has them gives them to workers too. */
function pageHasWebLocks(): boolean {
  const locks = (globalThis as { navigator?: { locks?: LockManager | null } }).navigator?.locks;
  return !!locks && typeof locks.request === "function";
}

/**
 * The page's {@linkcode StoragePort}: forwards every call, `acquireLock` / `releaseLock`
 * included, to an {@linkcode IndexedDbStorage} in a module Web Worker, so IndexedDB work
 * never runs on the page's thread. The Web Locks are then held by the worker, which the
 * browser ends with its tab: a tab that dies frees its locks. Typed errors cross the hop
 * with their class, `code` and `details`. After {@linkcode WorkerStorage.close} (or a
 * worker that failed to load) every pending and later call rejects with a `StorageError`.
 *
 * `acquireLock` / `releaseLock` are own properties only where the page has
 * `navigator.locks`, like on {@linkcode IndexedDbStorage}.
 *
 * @example
 * ```ts
 * const storage = new WorkerStorage({ dbName: "my-app" });
 * await storage.append("log.jsonl", new TextEncoder().encode('{"a":1}\n'));
 * await storage.close();
 * ```
 */
export class WorkerStorage implements StoragePort {
  readonly capabilities: StorageCapabilities = { durable: true, backend: "indexeddb" };
  /** The worker serving this store. */
  readonly worker: Worker;
  /** Takes a Web Lock in the worker (see {@linkcode IndexedDbStorage}); own property only where Web Locks exist. */
  declare readonly acquireLock?: (name: string) => Promise<boolean>;
  /** Releases a Web Lock taken with `acquireLock`. */
  declare readonly releaseLock?: (name: string) => Promise<void>;
  readonly #remote: Comlink.Remote<StorageWorkerApi>;
  readonly #pending = new Set<(error: StorageError) => void>();
  readonly #dbName: string;
  #dead: StorageError | undefined;

  constructor(options: WorkerStorageOptions = {}) {
    registerErrorTransfer(Comlink);
    const { worker, ...storeOptions } = options;
    this.#dbName = storeOptions.dbName ?? "sessionfold";
    this.worker = (worker ?? defaultWorker)();
    this.worker.addEventListener("error", (event) => {
      event.preventDefault();
      this.#fail(new StorageError(`storage worker failed: ${event.message || "it could not be loaded"}`, { db: this.#dbName }));
      this.worker.terminate();
    });
    this.worker.addEventListener("messageerror", () => {
      this.#fail(new StorageError("storage worker sent a message that could not be read", { db: this.#dbName }));
    });
    this.#remote = Comlink.wrap<StorageWorkerApi>(this.worker);
    // Sent first, so the worker opens the store before any other call reaches it.
    void this.#call(() => this.#remote.open(storeOptions)).catch(() => undefined);
    if (pageHasWebLocks()) {
      Object.defineProperty(this, "acquireLock", { value: (name: string) => this.#call(() => this.#remote.acquireLock(name)) });
      Object.defineProperty(this, "releaseLock", { value: (name: string) => this.#call(() => this.#remote.releaseLock(name)) });
    }
  }

  read(path: string): Promise<Uint8Array | undefined> {
    return this.#call(() => this.#remote.read(path));
  }

  readTail(path: string, maxBytes: number): Promise<FileTail | undefined> {
    return this.#call(() => this.#remote.readTail(path, maxBytes));
  }

  list(dir: string): Promise<string[]> {
    return this.#call(() => this.#remote.list(dir));
  }

  replace(path: string, bytes: Uint8Array, options?: WriteOptions): Promise<void> {
    return this.#call(() => this.#remote.replace(path, outgoing(bytes), options));
  }

  append(path: string, bytes: Uint8Array): Promise<void> {
    return this.#call(() => this.#remote.append(path, outgoing(bytes)));
  }

  createExclusive(path: string, bytes: Uint8Array, options?: WriteOptions): Promise<boolean> {
    return this.#call(() => this.#remote.createExclusive(path, outgoing(bytes), options));
  }

  truncate(path: string, length: number): Promise<void> {
    return this.#call(() => this.#remote.truncate(path, length));
  }

  remove(path: string, options?: WriteOptions): Promise<void> {
    return this.#call(() => this.#remote.remove(path, options));
  }

  move(from: string, to: string): Promise<boolean> {
    return this.#call(() => this.#remote.move(from, to));
  }

  /**
   * Ends the worker at once (its Web Locks go with it). Pending calls reject with a
   * `StorageError`; later calls too. Idempotent.
   */
  async close(): Promise<void> {
    if (this.#dead) return;
    this.#fail(new StorageError("storage worker was closed", { db: this.#dbName }));
    this.worker.terminate();
  }

  /** Forwards one call; it settles with the worker's answer, or rejects when the worker is gone. */
  #call<T>(send: () => Promise<T>): Promise<T> {
    if (this.#dead) return Promise.reject(this.#dead);
    return new Promise<T>((resolve, reject) => {
      this.#pending.add(reject);
      const done = () => this.#pending.delete(reject);
      let sent: Promise<T>;
      try {
        sent = send();
      } catch (error) {
        done();
        reject(new StorageError(`storage call could not be sent: ${error instanceof Error ? error.message : String(error)}`, {}, { cause: error }));
        return;
      }
      sent.then(
        (value) => (done(), resolve(value)),
        (error: unknown) => (done(), reject(error)),
      );
    });
  }

  #fail(error: StorageError): void {
    this.#dead ??= error;
    for (const reject of this.#pending) reject(this.#dead);
    this.#pending.clear();
  }
}

/**
 * The bytes to post. The port copies what it is given, so the caller's array is never
 * detached: a view over part of a buffer is copied once (and that copy transferred)
 * instead of cloning its whole buffer; a whole-buffer view is cloned by `postMessage`.
 */
function outgoing(bytes: Uint8Array): Uint8Array {
  if (!(bytes instanceof Uint8Array)) return bytes;
  const whole = bytes.buffer instanceof ArrayBuffer && bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
  if (whole) return bytes;
  const copy = bytes.slice();
  return Comlink.transfer(copy, [copy.buffer]);
}
