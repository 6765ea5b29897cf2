import { isAbsolute, resolve as resolvePath } from "node:path";
import { Worker } from "node:worker_threads";
import * as Comlink from "comlink";
import nodeEndpoint from "comlink/dist/esm/node-adapter.mjs";
import { InvalidInputError, StorageError, type FileTail, type StorageCapabilities, type StoragePort, type WriteOptions, type CommitPlan, type CommitPlanResult } from "../core/mod.ts";
import type { NodeFileStorageOptions } from "./fs-storage.ts";
import type { StorageWorkerApi } from "./storage-worker.ts";
import { ownsBuffer, registerErrorTransfer } from "../core/internal.ts";

/** Options of {@linkcode WorkerStorage}: those of the {@linkcode NodeFileStorage} it runs. */
export type WorkerStorageOptions = NodeFileStorageOptions;

/**
 * Starts the storage worker. A compiled build (the npm package) starts `storage-worker.js`.
 * From TypeScript sources, a runtime that runs TypeScript itself (Deno, Bun, Node with type
 * stripping) starts `storage-worker.ts` directly; Node 20 cannot load a `.ts` worker, so a
 * tiny eval bootstrap registers tsx in the worker and imports it (tests, `tsx`).
 */
function startWorker(options: WorkerStorageOptions): Worker {
  const workerData = { options };
  if (!import.meta.url.endsWith(".ts")) return new Worker(new URL("./storage-worker.js", import.meta.url), { workerData });
  const workerUrl = new URL("./storage-worker.ts", import.meta.url);
  if (runsTypeScript()) return new Worker(workerUrl, { workerData });
  let tsxApi: string;
  try {
    tsxApi = import.meta.resolve("tsx/esm/api");
  } catch (error) {
    throw new StorageError("running the Node storage worker from TypeScript sources under Node 20 needs the tsx package", {}, { cause: error });
  }
  const code = `import(${JSON.stringify(tsxApi)}).then(({ register }) => { register(); return import(${JSON.stringify(workerUrl.href)}); });`;
  return new Worker(code, { eval: true, workerData });
}

/** Whether this runtime loads `.ts` modules by itself: Deno, Bun, or Node with type stripping on. */
function runsTypeScript(): boolean {
  const features = process.features as { typescript?: string | false };
  return "Deno" in globalThis || process.versions["bun"] !== undefined || Boolean(features.typescript);
}

/**
 * The host thread's {@linkcode StoragePort}: forwards every call to one worker thread that
 * runs a {@linkcode NodeFileStorage}, so file I/O and fsyncs never run on the host's thread.
 * Typed errors cross the hop with their class, `code` and `details`. When the worker dies
 * (crash, `terminate()`, {@linkcode WorkerStorage.close}), every pending and later call
 * rejects with a {@linkcode StorageError}; nothing hangs. While no call is pending the
 * worker does not keep the process alive.
 *
 * @example
 * ```ts
 * const storage = new WorkerStorage({ root: "/home/me/.sessionfold" });
 * await storage.append("log.jsonl", new TextEncoder().encode('{"a":1}\n'));
 * await storage.close();
 * ```
 * @throws {InvalidInputError} from the constructor when `root` is not absolute.
 */
export class WorkerStorage implements StoragePort {
  readonly capabilities: StorageCapabilities;
  /** The thread serving this store. Terminating it makes every pending and later call reject. */
  readonly worker: Worker;
  readonly #remote: Comlink.Remote<StorageWorkerApi>;
  readonly #pending = new Set<(error: StorageError) => void>();
  #dead: StorageError | undefined;

  constructor(options: WorkerStorageOptions) {
    if (typeof options?.root !== "string" || !isAbsolute(options.root)) {
      throw new InvalidInputError(`WorkerStorage root must be an absolute folder, got ${JSON.stringify(options?.root)}`, { root: options?.root });
    }
    registerErrorTransfer(Comlink);
    this.capabilities = { durable: options.fsync ?? true, backend: "node-fs" };
    this.worker = startWorker({ root: resolvePath(options.root), fsync: options.fsync ?? true });
    this.worker.unref();
    this.worker.on("error", (error) => this.#fail(new StorageError(`storage worker crashed: ${error.message}`, { root: options.root }, { cause: error })));
    this.worker.on("exit", (code) => this.#fail(new StorageError(`storage worker stopped (exit code ${code})`, { root: options.root, exit_code: code })));
    this.#remote = Comlink.wrap<StorageWorkerApi>(nodeEndpoint(this.worker));
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

  /** Runs the whole commit in the worker: one round trip instead of one per storage call. */
  runCommitPlan(plan: CommitPlan): Promise<CommitPlanResult> {
    // Comlink's Remote type distributes over the union; the value is the worker's result as is.
    return this.#call(() => this.#remote.runCommitPlan(plan) as Promise<CommitPlanResult>);
  }

  /** Ends the worker. Pending calls reject with a `StorageError`; later calls too. Idempotent. */
  async close(): Promise<void> {
    if (this.#dead) return;
    this.#fail(new StorageError("storage worker was closed", {}));
    // An unreferenced worker would let the process exit before terminate() settles.
    this.worker.ref();
    await this.worker.terminate();
  }

  /** Forwards one call; it settles with the worker's answer or rejects when the worker dies. */
  #call<T>(send: () => Promise<T>): Promise<T> {
    if (this.#dead) return Promise.reject(this.#dead);
    return new Promise<T>((resolve, reject) => {
      if (this.#pending.size === 0) this.worker.ref(); // keep the process alive for the answer
      this.#pending.add(reject);
      const done = () => {
        // An answer that comes after close() (which rejected it already) must not unreference the worker being terminated.
        if (this.#pending.delete(reject) && this.#pending.size === 0 && !this.#dead) this.worker.unref();
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

  #fail(error: StorageError): void {
    this.#dead ??= error;
    for (const reject of this.#pending) reject(this.#dead);
    this.#pending.clear();
  }
}

/**
 * The bytes to post: the caller keeps its array (the port copies), so a view over part of a
 * buffer (or a shared one) is copied once and that copy transferred, instead of cloning the
 * whole underlying buffer. A view that owns its buffer is cloned (that is the copy).
 */
function outgoing(bytes: Uint8Array): Uint8Array {
  if (!(bytes instanceof Uint8Array)) return bytes;
  const whole = bytes.buffer instanceof ArrayBuffer && bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
  if (whole) return bytes;
  const copy = bytes.slice();
  return ownsBuffer(copy) ? Comlink.transfer(copy, [copy.buffer]) : copy;
}
