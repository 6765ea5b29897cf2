/**
 * The host side of a storage hop: a {@linkcode StoragePort} that forwards every call to a
 * {@linkcode storageWorkerApi} in a worker (a Node worker thread, a Web Worker). Both
 * runtimes use this one client; each gives it the worker's endpoint and lifecycle, and
 * Comlink itself, which the core never imports.
 *
 * @module
 */
import type { ErrorDetails } from "../errors.ts";
import { StorageError, StoreClosedError } from "../errors.ts";
import type { CatalogListing, CatalogPage } from "../storage/catalog.ts";
import type { CommitPlan, CommitPlanResult, FileTail, ReadRequest, ReadResult, StoragePort, WriteOptions } from "../storage/port.ts";
import { catalogListingOfText } from "./catalog-text.ts";
import { comlinkAnswerValue, type ComlinkCall, comlinkCall, isComlinkAnswer, type MessageEndpoint } from "./comlink-wire.ts";
import type { StorageWorkerApi } from "./storage-api.ts";
import { type ComlinkLike, NOTHING_MOVED, ownsBuffer, registerErrorTransfer } from "./transfer.ts";
import { joinedLength, joinLinesInto } from "../jsonl/join.ts";
import { StagingPool } from "./staging-pool.ts";

/** How a runtime connects a {@linkcode WorkerStorageClient} to its worker. */
export interface WorkerLink<Options> {
  /** The `comlink` module (the core never imports it): its transfer handlers rebuild what the worker answers. */
  readonly comlink: ComlinkLike;
  /**
   * Where `Comlink.expose` serves the worker's API: the Web Worker, or a Node worker wrapped by
   * Comlink's node adapter (a {@linkcode MessageEndpoint}; DOM's and Comlink's own types of it
   * do not fit one declaration, so it is taken as it comes).
   */
  readonly endpoint: unknown;
  /** The backend's options, sent first with `open()`; the worker builds its store from them. */
  readonly options: Options;
  /** Whether the store in the worker has platform locks: then the client offers `acquireLock` / `releaseLock`. */
  readonly locks: boolean;
  /** Whether the store in the worker stages files (`StoragePort.stage`): then the client offers `stage` / `unstage`. */
  readonly staging?: boolean;
  /**
   * With `staging`: the worker's store has read a stage's bytes when its call returns (the Node store writes them at
   * once). Then the client offers `stageLines` and joins the lines into shared memory it lends again once the worker
   * answered a later call (`staging-pool.ts`), where the platform has shared memory.
   */
  readonly stagesAtOnce?: boolean;
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
 * which the runtime calls from its worker's error and exit events), every pending and later
 * call rejects with a {@linkcode StorageError}; nothing hangs. {@linkcode WorkerStorageClient.close}
 * ends the worker once every call made before it was answered, and refuses later calls with
 * `StoreClosedError`. A commit
 * plan runs in the worker: one round trip, one message each way (Comlink's protocol, spoken
 * here without `Comlink.wrap`'s proxies: `core/worker/comlink-wire.ts`).
 *
 * @example
 * ```ts
 * import * as Comlink from "comlink";
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
  /** Stages the start of a file in the worker's store (posted with no answer owed: it settles once sent); own property only when the link has `staging`. */
  declare readonly stage?: (path: string, bytes: Uint8Array, id: string) => Promise<void>;
  /** Stages the lines joined into shared memory (`StoragePort.stageLines`); own property only when the link has `stagesAtOnce`. */
  declare readonly stageLines?: (path: string, lines: readonly Uint8Array[], id: string) => Promise<void>;
  /** Drops what `stage` staged; own property only when the link has `staging`. */
  declare readonly unstage?: (id: string) => Promise<void>;
  readonly #link: WorkerLink<Options>;
  readonly #endpoint: MessageEndpoint;
  /** The calls the worker still owes an answer, by id. */
  readonly #pending = new Map<string, PendingCall>();
  /** The number of the last message posted (a call's id, or a stage's number, which it does not carry). */
  #lastId = 0;
  /** Shared memory lent to staged lines (`stagesAtOnce`), free again once a later call is answered. */
  readonly #staging = new StagingPool();
  /** Why every later call is refused: the worker died, or `close()` began. */
  #dead: StorageError | StoreClosedError | undefined;
  /** Resolves `close()`'s wait once the worker answered every call made before it. */
  #answeredAll: (() => void) | undefined;
  /** The close under way or done, which a second `close()` waits for. */
  #closing: Promise<void> | undefined;

  constructor(link: WorkerLink<Options>) {
    this.#link = link;
    registerErrorTransfer(link.comlink);
    this.#endpoint = link.endpoint as MessageEndpoint;
    this.#endpoint.addEventListener("message", (event) => this.#answered(event.data));
    this.#endpoint.start?.();
    // Sent first: the worker opens its store before any other call reaches it (one channel, in order).
    void this.#call("open", [link.options]).catch(() => undefined);
    if (link.locks) {
      Object.defineProperty(this, "acquireLock", { value: (name: string) => this.#call("acquireLock", [name]) });
      Object.defineProperty(this, "releaseLock", { value: (name: string) => this.#call("releaseLock", [name]) });
    }
    if (link.staging) {
      // The caller gives staged bytes up with their whole buffer (a compaction's segment and Active, room included), which moves.
      // Sent with no answer owed: a failed stage fails the plan that names it, so an answer would only wake this thread.
      const stage = (path: string, bytes: Uint8Array, id: string) =>
        this.#send("stage", [path, bytes, id], ownsBuffer(new Uint8Array(bytes.buffer)) ? [bytes.buffer as ArrayBuffer] : []);
      // Configurable, as PageStorage's: a Proxy over this storage (a timing wrapper) may answer them its own way.
      Object.defineProperty(this, "stage", { value: stage, configurable: true });
      Object.defineProperty(this, "unstage", { value: (id: string) => this.#call("unstage", [id]), configurable: true });
    }
    if (link.staging && link.stagesAtOnce) {
      Object.defineProperty(this, "stageLines", {
        value: (path: string, lines: readonly Uint8Array[], id: string) => this.#stageLines(path, lines, id),
        configurable: true,
      });
    }
  }

  read(path: string): Promise<Uint8Array | undefined> {
    return this.#call("read", [path]);
  }

  readTail(path: string, maxBytes: number): Promise<FileTail | undefined> {
    return this.#call("readTail", [path, maxBytes]);
  }

  /** Every read of `requests` in the worker: one round trip (the worker's store reads them as `readMany` says). */
  readMany(requests: readonly ReadRequest[]): Promise<(ReadResult | null | undefined)[]> {
    return this.#call("readMany", [requests]);
  }

  list(dir: string): Promise<string[]> {
    return this.#call("list", [dir]);
  }

  replace(path: string, bytes: Uint8Array, options?: WriteOptions): Promise<void> {
    const moved: ArrayBuffer[] = [];
    return this.#call("replace", [path, outgoing(bytes, moved), options], moved);
  }

  append(path: string, bytes: Uint8Array): Promise<void> {
    const moved: ArrayBuffer[] = [];
    return this.#call("append", [path, outgoing(bytes, moved)], moved);
  }

  createExclusive(path: string, bytes: Uint8Array, options?: WriteOptions): Promise<boolean> {
    const moved: ArrayBuffer[] = [];
    return this.#call("createExclusive", [path, outgoing(bytes, moved), options], moved);
  }

  truncate(path: string, length: number): Promise<void> {
    return this.#call("truncate", [path, length]);
  }

  remove(path: string, options?: WriteOptions): Promise<void> {
    return this.#call("remove", [path, options]);
  }

  move(from: string, to: string): Promise<boolean> {
    return this.#call("move", [from, to]);
  }

  /** Keeps `path` open for appends in the worker's store (when it can). */
  pinFile(path: string): Promise<void> {
    return this.#call("pinFile", [path]);
  }

  /** Ends {@linkcode WorkerStorageClient.pinFile}. */
  unpinFile(path: string): Promise<void> {
    return this.#call("unpinFile", [path]);
  }

  /** Runs the whole commit in the worker: one round trip instead of one per storage call. */
  applyCommitPlan(plan: CommitPlan): Promise<CommitPlanResult> {
    // Writes handed over move their buffers to the worker instead of a structured clone (a
    // compaction's segment and Active: hundreds of KiB, copied twice otherwise). The whole buffer
    // is handed over with them, room a view leaves unused included (a segment's spare room for its footer).
    // A held commit hands nothing over: no list, no view made to ask.
    let moved: ArrayBuffer[] | undefined;
    for (const write of plan.writes) {
      if (!write.handOver) continue;
      const buffer = write.bytes.buffer as ArrayBuffer;
      if (ownsBuffer(new Uint8Array(buffer)) && !moved?.includes(buffer)) (moved ??= []).push(buffer);
    }
    return this.#call("applyCommitPlan", [plan], moved);
  }

  /** The catalog of `dir` (with `page`, that page's part where the store answers pages) as the worker's store keeps it; `undefined` when it keeps none. */
  async readCatalog(dir: string, page?: CatalogPage): Promise<CatalogListing | undefined> {
    const text = await this.#call("readCatalog", [dir, page]);
    return text === undefined ? undefined : catalogListingOfText(text, dir);
  }

  /** Rebuilds the catalog of `dir` in the worker's store (`0` when it keeps none). */
  rebuildCatalog(dir: string): Promise<number> {
    return this.#call("rebuildCatalog", [dir]);
  }

  /**
   * Ends the worker (its locks go with it) once it answered every call made before: a call under way settles with its
   * own outcome (a commit the worker made resolves; the worker is never ended half-way through a plan). Calls made after
   * `close()` began reject with `StoreClosedError`. Idempotent: a second call waits for the first.
   */
  close(): Promise<void> {
    return this.#closing ??= this.#close();
  }

  async #close(): Promise<void> {
    this.#dead ??= new StoreClosedError("the store is closed (its storage worker ends); open it again to go on", this.#link.details);
    if (this.#pending.size > 0) await new Promise<void>((resolve) => (this.#answeredAll = resolve));
    await this.#link.terminate();
  }

  /**
   * Marks the worker dead: every pending call rejects with `error`, and every later one.
   * The runtime calls it from its worker's failure events; the first error is kept.
   */
  fail(error: StorageError): void {
    this.#dead ??= error;
    for (const call of this.#pending.values()) call.reject(error);
    if (this.#pending.size > 0) this.#link.onPending?.(false);
    this.#pending.clear();
    this.#answeredAll?.();
  }

  /**
   * Posts one call (`moved`: buffers it transfers instead of copying); it settles with the
   * worker's answer, or rejects when the worker is gone.
   */
  #call<K extends keyof StorageWorkerApi<Options>>(
    method: K,
    args: Parameters<StorageWorkerApi<Options>[K]>,
    moved: readonly ArrayBuffer[] = NOTHING_MOVED as readonly ArrayBuffer[],
  ): ReturnType<StorageWorkerApi<Options>[K]> {
    type Answer = Awaited<ReturnType<StorageWorkerApi<Options>[K]>>;
    if (this.#dead) return Promise.reject(this.#dead) as ReturnType<StorageWorkerApi<Options>[K]>;
    return new Promise<Answer>((resolve, reject) => {
      const id = String(++this.#lastId);
      const unsent = this.#post(comlinkCall(id, method, args), moved);
      if (unsent) return reject(unsent);
      if (this.#pending.size === 0) this.#link.onPending?.(true);
      this.#pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
    }) as ReturnType<StorageWorkerApi<Options>[K]>;
  }

  /** Posts one call that owes no answer (no id, but a number of its own): it settles once posted; what it does wrong the worker's store reports later. */
  #send<K extends keyof StorageWorkerApi<Options>>(method: K, args: Parameters<StorageWorkerApi<Options>[K]>, moved: readonly ArrayBuffer[]): Promise<void> {
    if (this.#dead) return Promise.reject(this.#dead);
    ++this.#lastId;
    const unsent = this.#post(comlinkCall(undefined, method, args), moved);
    return unsent ? Promise.reject(unsent) : Promise.resolve();
  }

  /**
   * `stageLines`: the lines joined into a buffer of the pool, posted as a `stage` (shared, neither copied nor moved) and
   * held until the worker answers a later call; into a buffer of their own, moved, when the pool has none to lend.
   */
  #stageLines(path: string, lines: readonly Uint8Array[], id: string): Promise<void> {
    const size = joinedLength(lines);
    const lent = this.#staging.lend(size);
    const bytes = lent ?? new Uint8Array(size);
    joinLinesInto(lines, bytes);
    const sent = this.#send("stage", [path, bytes, id], lent ? NOTHING_MOVED as ArrayBuffer[] : [bytes.buffer as ArrayBuffer]);
    if (lent) this.#staging.posted(lent, this.#lastId);
    return sent;
  }

  /** Posts `message`; the error to give its caller when the port refused it (what it cannot clone, a closed port). */
  #post(message: ComlinkCall, moved: readonly ArrayBuffer[]): StorageError | undefined {
    try {
      this.#endpoint.postMessage(message, moved as never[]);
      return undefined;
    } catch (error) {
      return new StorageError(`storage call could not be sent: ${error instanceof Error ? error.message : String(error)}`, {}, { cause: error });
    }
  }

  /** Settles the call a message from the worker answers; anything else (an answer after `fail()`) is dropped. */
  #answered(data: unknown): void {
    if (!isComlinkAnswer(data)) return;
    const call = this.#pending.get(data.id);
    if (!call) return;
    this.#staging.answered(Number(data.id));
    this.#pending.delete(data.id);
    if (this.#pending.size === 0) (this.#link.onPending?.(false), this.#answeredAll?.());
    let value: unknown;
    try {
      value = comlinkAnswerValue(this.#link.comlink, data);
    } catch (error) {
      call.reject(error);
      return;
    }
    call.resolve(value);
  }
}

/** A call posted to the worker and not answered yet. */
interface PendingCall {
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/**
 * The bytes to post. The port copies what it is given, so the caller's array is never
 * detached: a view over part of a buffer is copied once (that copy moved, pushed on `moved`,
 * when it is large) instead of cloning its whole buffer; a whole-buffer view is cloned by the hop.
 */
function outgoing(bytes: Uint8Array, moved: ArrayBuffer[]): Uint8Array {
  if (!(bytes instanceof Uint8Array)) return bytes;
  const whole = bytes.buffer instanceof ArrayBuffer && bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
  if (whole) return bytes;
  const copy = bytes.slice();
  if (ownsBuffer(copy)) moved.push(copy.buffer);
  return copy;
}
