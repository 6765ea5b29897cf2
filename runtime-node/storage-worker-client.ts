/**
 * The host's side of the Node storage worker: {@linkcode WorkerFileStorage} starts
 * `storage-worker.ts` in a worker thread and forwards every storage call to it.
 *
 * @module
 */
import { isAbsolute, resolve as resolvePath } from "node:path";
import { Worker } from "node:worker_threads";
import * as Comlink from "comlink";
import nodeEndpoint from "comlink/dist/esm/node-adapter.mjs";
import { InvalidInputError, MAX_FILE_BYTES, StorageError } from "../core/mod.ts";
import { WorkerStorageClient } from "../core/internal.ts";
import { folderStoreIdentity } from "./fs-boundary.ts";
import type { NodeFileStorageOptions } from "./fs-storage.ts";

/** Options of {@linkcode WorkerFileStorage}: those of the {@linkcode NodeFileStorage} it runs. */
export type WorkerFileStorageOptions = NodeFileStorageOptions;

/**
 * Starts the storage worker. A compiled build (the npm package) starts `storage-worker.js`.
 * From TypeScript sources, a runtime that runs TypeScript itself (Deno, Bun, Node with type
 * stripping) starts `storage-worker.ts` directly; Node 20 cannot load a `.ts` worker, so a
 * tiny eval bootstrap registers tsx in the worker and imports it (tests, `tsx`).
 */
function startWorker(): Worker {
  if (!import.meta.url.endsWith(".ts")) return new Worker(new URL("./storage-worker.js", import.meta.url));
  const workerUrl = new URL("./storage-worker.ts", import.meta.url);
  if (runsTypeScript()) return new Worker(workerUrl);
  let tsxApi: string;
  try {
    tsxApi = import.meta.resolve("tsx/esm/api");
  } catch (error) {
    throw new StorageError("running the Node storage worker from TypeScript sources under Node 20 needs the tsx package", {}, { cause: error });
  }
  const code = `import(${JSON.stringify(tsxApi)}).then(({ register }) => { register(); return import(${JSON.stringify(workerUrl.href)}); });`;
  return new Worker(code, { eval: true });
}

/** Whether this runtime loads `.ts` modules by itself: Deno, Bun, or Node with type stripping on. */
function runsTypeScript(): boolean {
  const features = process.features as { typescript?: string | false };
  return "Deno" in globalThis || process.versions["bun"] !== undefined || Boolean(features.typescript);
}

/**
 * The host thread's {@linkcode StoragePort}: forwards every call to one worker thread that
 * runs a {@linkcode NodeFileStorage}, so file I/O and fsyncs never run on the host's thread.
 * Typed errors cross the hop with their class, `code` and `details`; a commit plan runs in
 * the worker, one round trip. When the worker dies (crash, `terminate()`), every pending and
 * later call rejects with a {@linkcode StorageError}; nothing hangs. {@linkcode WorkerFileStorage.close}
 * ends it once it answered every call made before (each settles with its own outcome) and
 * refuses later calls with `StoreClosedError`. While no call is pending the worker does not
 * keep the process alive.
 *
 * @example
 * ```ts
 * const storage = new WorkerFileStorage({ root: "/home/me/.sessionfold" });
 * await storage.append("log.jsonl", new TextEncoder().encode('{"a":1}\n'));
 * await storage.close();
 * ```
 * @throws {InvalidInputError} from the constructor when `root` is not absolute.
 */
export class WorkerFileStorage extends WorkerStorageClient<NodeFileStorageOptions> {
  /** The thread serving this store. Terminating it makes every pending and later call reject. */
  readonly worker: Worker;
  /** The largest file `read` returns (`maxFileBytes`, sent to the worker's store); writers keep every file within it. */
  readonly maxFileBytes: number;
  /** The absolute root folder the worker's store serves. */
  readonly #root: string;

  constructor(options: WorkerFileStorageOptions) {
    if (typeof options?.root !== "string" || !isAbsolute(options.root)) {
      throw new InvalidInputError(`WorkerFileStorage root must be an absolute folder, got ${JSON.stringify(options?.root)}`, { root: options?.root });
    }
    const root = resolvePath(options.root);
    const fsync = options.fsync ?? true;
    const worker = startWorker();
    worker.unref();
    super({
      comlink: Comlink,
      endpoint: nodeEndpoint(worker),
      options: { root, fsync, maxFileBytes: options.maxFileBytes ?? MAX_FILE_BYTES },
      locks: false,
      staging: true,
      stagesAtOnce: true,
      details: { root: options.root },
      // Referenced only while an answer is owed, so an idle store never keeps the process alive.
      onPending: (pending) => (pending ? worker.ref() : worker.unref()),
      // An unreferenced worker would let the process exit before terminate() settles.
      terminate: () => (worker.ref(), worker.terminate()),
    });
    this.worker = worker;
    this.maxFileBytes = options.maxFileBytes ?? MAX_FILE_BYTES;
    this.#root = root;
    worker.on("error", (error) => this.fail(new StorageError(`storage worker crashed: ${error.message}`, { root: options.root }, { cause: error })));
    worker.on("exit", (code) => this.fail(new StorageError(`storage worker stopped (exit code ${code})`, { root: options.root, exit_code: code })));
  }

  /**
   * Where this store's data is, as `NodeFileStorage.storeIdentity` answers it: its root
   * folder's device and inode, looked at from this thread (the worker is not asked).
   *
   * @example
   * ```ts
   * const storage = new WorkerFileStorage({ root: "/home/me/.sessionfold" });
   * console.log(await storage.storeIdentity());
   * await storage.close();
   * ```
   * @throws {StorageError} when the root cannot be looked at.
   */
  storeIdentity(): Promise<string> {
    return folderStoreIdentity(this.#root);
  }
}
