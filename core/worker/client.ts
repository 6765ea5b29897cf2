/**
 * The host side of a storage hop: a {@linkcode StoragePort} that forwards every call to a
 * {@linkcode storageWorkerApi} in a worker (a Node worker thread, a Web Worker). Both
 * runtimes use this one client; each gives it the worker's endpoint and lifecycle, and
 * Comlink itself, which the core never imports.
 *
 * @module
 */
import type { ErrorDetails } from "../errors.ts";
import { StorageError } from "../errors.ts";
import type { CatalogListing, CatalogPage } from "../storage/catalog.ts";
import type { CommitPlan, CommitPlanResult, FileTail, ReadRequest, ReadResult, StoragePort, WriteOptions } from "../storage/port.ts";
import type { StorageWorkerApi } from "./storage-api.ts";
import { type ComlinkLike, ownsBuffer, registerErrorTransfer } from "./transfer.ts";

/** The slice of Comlink the client needs beyond {@linkcode ComlinkLike}: wrapping an endpoint. */
export interface ComlinkClientLike extends ComlinkLike {
  wrap(endpoint: never): unknown;
}

/** How a runtime connects a {@linkcode WorkerStorageClient} to its worker. */
export interface WorkerLink<Options> {
  /** The `comlink` module (the core never imports it). */
  readonly comlink: ComlinkClientLike;
  /** What `comlink.wrap` takes: the Web Worker, or a Node worker wrapped by Comlink's node adapter. */
  readonly endpoint: unknown;
  /** The backend's options, sent first with `open()`; the worker builds its store from them. */
  readonly options: Options;
  /** Whether the store in the worker has platform locks: then the client offers `acquireLock` / `releaseLock`. */
  readonly locks: boolean;
  /** Added to the details of the client's own errors (`{ root }`, `{ db }`). */
  readonly details: ErrorDetails;
  /**
   * Called with `true` when a call starts while none was pending and with `false` when the
   * last pending one settles (a Node worker is kept referenced only while it owes an answer).
   */
  readonly onPending?: (pending: boolean) => void;
  /** Ends the worker. */
  readonly terminate: () => Promise<unknown> | void;
}

/**
 * A {@linkcode StoragePort} served by a worker. Typed errors cross the hop with their
 * class, `code` and `details`. When the worker dies ({@linkcode WorkerStorageClient.fail},
 * which the runtime calls from its worker's error and exit events) or is closed, every
 * pending and later call rejects with a {@linkcode StorageError}; nothing hangs. A commit
 * plan runs in the worker: one round trip.
 *
 * @example
 * ```ts
 * import * as Comlink from "comlink";
 * import { WorkerStorageClient } from "sessionfold/internal";
 *
 * const worker = new Worker(new URL("./my-storage-worker.js", import.meta.url), { type: "module" });
 * const storage = new WorkerStorageClient({
 *   comlink: Comlink, endpoint: worker, options: { dbName: "app" },
 *   locks: false,
 *   details: { db: "app" }, terminate: () => worker.terminate(),
 * });
 * await storage.append("log.jsonl", new TextEncoder().encode('{"a":1}\n'));
 * ```
 */
export class WorkerStorageClient<Options = unknown> implements StoragePort {
  /** Takes a platform lock in the worker; own property only when the link has `locks`. */
  declare readonly acquireLock?: (name: string) => Promise<boolean>;
  /** Releases a lock taken with `acquireLock`; own property only when the link has `locks`. */
  declare readonly releaseLock?: (name: string) => Promise<void>;
  readonly #link: WorkerLink<Options>;
  readonly #remote: StorageWorkerApi<Options>;
  readonly #pending = new Set<(error: StorageError) => void>();
  #dead: StorageError | undefined;

  constructor(link: WorkerLink<Options>) {
    this.#link = link;
    registerErrorTransfer(link.comlink);
    // Comlink's Remote<T> of this API is the API itself: every method already returns a promise.
    this.#remote = link.comlink.wrap(link.endpoint as never) as StorageWorkerApi<Options>;
    // Sent first: the worker opens its store before any other call reaches it (one channel, in order).
    void this.#call(() => this.#remote.open(link.options)).catch(() => undefined);
    if (link.locks) {
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

  /** Every read of `requests` in the worker: one round trip (the worker's store reads them as `readMany` says). */
  readMany(requests: readonly ReadRequest[]): Promise<(ReadResult | null | undefined)[]> {
    return this.#call(() => this.#remote.readMany(requests));
  }

  list(dir: string): Promise<string[]> {
    return this.#call(() => this.#remote.list(dir));
  }

  replace(path: string, bytes: Uint8Array, options?: WriteOptions): Promise<void> {
    return this.#call(() => this.#remote.replace(path, this.#outgoing(bytes), options));
  }

  append(path: string, bytes: Uint8Array): Promise<void> {
    return this.#call(() => this.#remote.append(path, this.#outgoing(bytes)));
  }

  createExclusive(path: string, bytes: Uint8Array, options?: WriteOptions): Promise<boolean> {
    return this.#call(() => this.#remote.createExclusive(path, this.#outgoing(bytes), options));
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

  /** Keeps `path` open for appends in the worker's store (when it can). */
  pinFile(path: string): Promise<void> {
    return this.#call(() => this.#remote.pinFile(path));
  }

  /** Ends {@linkcode WorkerStorageClient.pinFile}. */
  unpinFile(path: string): Promise<void> {
    return this.#call(() => this.#remote.unpinFile(path));
  }

  /** Runs the whole commit in the worker: one round trip instead of one per storage call. */
  applyCommitPlan(plan: CommitPlan): Promise<CommitPlanResult> {
    // Writes handed over move their buffers to the worker instead of a structured clone (a
    // compaction's segment and Active: hundreds of KiB, copied twice otherwise).
    const moved = plan.writes.filter((write) => write.handOver && ownsBuffer(write.bytes)).map((write) => write.bytes.buffer as never);
    return this.#call(() => this.#remote.applyCommitPlan(moved.length > 0 ? this.#link.comlink.transfer(plan, moved) : plan));
  }

  /** The catalog of `dir` (with `page`, that page's part where the store answers pages) as the worker's store keeps it; `undefined` when it keeps none. */
  async readCatalog(dir: string, page?: CatalogPage): Promise<CatalogListing | undefined> {
    const text = await this.#call(() => this.#remote.readCatalog(dir, page));
    return text === undefined ? undefined : (JSON.parse(text) as CatalogListing);
  }

  /** Rebuilds the catalog of `dir` in the worker's store (`0` when it keeps none). */
  rebuildCatalog(dir: string): Promise<number> {
    return this.#call(() => this.#remote.rebuildCatalog(dir));
  }

  /** Ends the worker (its locks go with it). Pending calls reject with a `StorageError`; later calls too. Idempotent. */
  async close(): Promise<void> {
    if (this.#dead) return;
    this.fail(new StorageError("storage worker was closed", this.#link.details));
    await this.#link.terminate();
  }

  /**
   * Marks the worker dead: every pending call rejects with `error`, and every later one.
   * The runtime calls it from its worker's failure events; the first error is kept.
   */
  fail(error: StorageError): void {
    this.#dead ??= error;
    for (const reject of this.#pending) reject(this.#dead);
    if (this.#pending.size > 0) this.#link.onPending?.(false);
    this.#pending.clear();
  }

  /** Forwards one call; it settles with the worker's answer or rejects when the worker is gone. */
  #call<T>(send: () => Promise<T>): Promise<T> {
    if (this.#dead) return Promise.reject(this.#dead);
    return new Promise<T>((resolve, reject) => {
      if (this.#pending.size === 0) this.#link.onPending?.(true);
      this.#pending.add(reject);
      const done = () => {
        // An answer after fail() (which rejected it already) must not report the idle state again.
        if (this.#pending.delete(reject) && this.#pending.size === 0 && !this.#dead) this.#link.onPending?.(false);
      };
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

  /**
   * The bytes to post. The port copies what it is given, so the caller's array is never
   * detached: a view over part of a buffer is copied once (that copy transferred when it is
   * large) instead of cloning its whole buffer; a whole-buffer view is cloned by the hop.
   */
  #outgoing(bytes: Uint8Array): Uint8Array {
    if (!(bytes instanceof Uint8Array)) return bytes;
    const whole = bytes.buffer instanceof ArrayBuffer && bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
    if (whole) return bytes;
    const copy = bytes.slice();
    return ownsBuffer(copy) ? this.#link.comlink.transfer(copy, [copy.buffer as never]) : copy;
  }
}
