/**
 * A fault-injecting {@linkcode StoragePort} for crash-point tests: it wraps an inner
 * store (the "disk") and kills the "process" at a chosen mutating operation.
 *
 * ## The crash model
 *
 * The mutating operations (`replace`, `append`, `createExclusive`, `truncate`,
 * `remove`, `move`) are numbered 1, 2, 3… in the order they are *called* (so
 * concurrently issued operations are numbered in issue order). A call whose path is
 * rejected as invalid gets no number. With `crashAt: k`:
 *
 * - operations 1 … k−1 are passed to the inner store and take full effect;
 * - operation k crashes. If it is an `append`, a prefix of `tornBytes` of its bytes
 *   (default 0) reaches the inner store first, as a torn write would; any other
 *   operation has no effect at all (the port promises they are atomic). It rejects
 *   with {@linkcode SimulatedCrashError};
 * - from then on the process is dead: every call, reads included, rejects with
 *   `SimulatedCrashError`, and so does every call that was still in flight (its
 *   effect on the inner store may have happened, but its result never arrives);
 * - {@linkcode FaultyStorage.revive} waits until nothing is in flight and returns the
 *   inner store: the state the next process finds. The dead wrapper stays dead.
 *
 * What completed is exactly what the inner store holds: the wrapper models a
 * *durable* backend (the port's `replace` and `append` are durable when they
 * resolve), so a crash never loses an operation that completed, and never partially
 * applies one except for the torn append prefix. There is no `volatile` mode: the
 * port has no barrier operation, so "writes not yet made durable" has no boundary to
 * model. A non-durable backend (e.g. MemoryStorage, or NodeFileStorage with `fsync:
 * false`) promises nothing across a machine crash; test it by starting the next
 * process on a fresh, empty store.
 *
 * Not modelled: a `remove` of a tree that a crash interrupts half-way (the model
 * treats `remove` as atomic, which IndexedDB gives and a filesystem does not), and
 * a crash between an operation taking effect and its promise resolving (for the store
 * that is the same as crashing at the next operation).
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 * import { FaultyStorage, SimulatedCrashError } from "sessionfold/testing";
 *
 * const faulty = new FaultyStorage(new MemoryStorage(), { crashAt: 2, tornBytes: 3 });
 * await faulty.append("log.jsonl", new TextEncoder().encode('{"a":1}\n')); // op 1: done
 * await faulty.append("log.jsonl", new TextEncoder().encode('{"b":2}\n')).catch((e) => {
 *   e instanceof SimulatedCrashError; // true: op 2 crashed after writing '{"b'
 * });
 * const disk = await faulty.revive(); // '{"a":1}\n{"b' is what the next process reads
 * ```
 * @module
 */
import { assertStoragePath, type FileTail, InvalidInputError, SessionfoldError, type StoragePort, type WriteOptions } from "../core/mod.ts";

/**
 * The names of the port's mutating operations, the ones {@linkcode FaultyStorage} counts.
 *
 * @example
 * ```ts
 * import { FaultyStorage } from "sessionfold/testing";
 * import { MemoryStorage } from "sessionfold";
 * const faulty = new FaultyStorage(new MemoryStorage());
 *
 * const appends = faulty.log.filter((op) => op.name === ("append" satisfies MutatingOperationName));
 * ```
 */
export type MutatingOperationName = "replace" | "append" | "createExclusive" | "truncate" | "remove" | "move";

/**
 * One mutating call as {@linkcode FaultyStorage.log} records it.
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 *
 * const faulty = new FaultyStorage(new MemoryStorage());
 * await faulty.move("a", "b");
 * faulty.log[0]; // { k: 1, name: "move", path: "a", to: "b" }
 * ```
 */
export interface MutatingOperation {
  /** 1-based number of the call, in issue order. */
  readonly k: number;
  /** Which operation. */
  readonly name: MutatingOperationName;
  /** Its path (the source of a `move`). */
  readonly path: string;
  /** The target of a `move`. */
  readonly to?: string;
  /** Number of bytes passed to `replace`, `append` or `createExclusive`. */
  readonly bytes?: number;
  /** The length passed to `truncate`. */
  readonly length?: number;
}

/**
 * Where and how a {@linkcode FaultyStorage} crashed.
 *
 * @example
 * ```ts
 * import { FaultyStorage } from "sessionfold/testing";
 * import { MemoryStorage } from "sessionfold";
 * const faulty = new FaultyStorage(new MemoryStorage());
 *
 * const { operation, tornBytes } = faulty.crash!;
 * console.log(`crashed at ${operation.k}: ${operation.name} ${operation.path}, ${tornBytes} bytes torn`);
 * ```
 */
export interface CrashInfo {
  /** The operation that crashed. */
  readonly operation: MutatingOperation;
  /** How many of its bytes reached the inner store (only an `append` writes any). */
  readonly tornBytes: number;
}

/**
 * Options of {@linkcode FaultyStorage}; without any, it is a transparent counting wrapper.
 *
 * @example
 * ```ts
 * const options: FaultyStorageOptions = { crashAt: 3, tornBytes: (bytes) => bytes.length - 1 };
 * ```
 */
export interface FaultyStorageOptions {
  /** The 1-based number of the mutating operation that crashes. Absent: never crash. */
  readonly crashAt?: number;
  /**
   * When the crashing operation is an `append`, how many of its bytes reach the inner
   * store before the crash: a number, or a function of the bytes and the operation.
   * Clamped to `0 … bytes.length`. Default 0. Ignored for other operations.
   */
  readonly tornBytes?: number | ((bytes: Uint8Array, operation: MutatingOperation) => number);
}

/**
 * The simulated death of the process: thrown by the crashing operation and by every
 * call after it. A `SessionfoldError` with code `internal`, so code that wraps
 * unknown errors keeps it as it is.
 *
 * @example
 * ```ts
 * import { FaultyStorage } from "sessionfold/testing";
 * import { MemoryStorage } from "sessionfold";
 * const faulty = new FaultyStorage(new MemoryStorage());
 *
 * declare function scenario(storage: FaultyStorage): Promise<void>;
 *
 * try {
 *   await scenario(faulty);
 * } catch (error) {
 *   if (!(error instanceof SimulatedCrashError)) throw error; // a real failure
 * }
 * ```
 */
export class SimulatedCrashError extends SessionfoldError {
  override readonly name: string = "SimulatedCrashError";
  constructor(message: string, details: Record<string, unknown> = {}) {
    super("internal", message, details);
  }
}

/** The state of a dead wrapper: crashed at an operation, or stopped by `revive()`. */
type Death = { readonly crash: CrashInfo } | { readonly crash: undefined };

/**
 * A {@linkcode StoragePort} that forwards to an inner store and simulates a crash at
 * the `crashAt`-th mutating operation; see the module documentation for the exact
 * model. Without options it only counts and logs.
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 * declare const bytes: Uint8Array;
 *
 * const inner = new MemoryStorage();
 * const faulty = new FaultyStorage(inner, { crashAt: 1 });
 * await faulty.replace("meta.json", bytes).catch(() => {}); // crashes: nothing written
 * await faulty.read("meta.json"); // rejects: the process is dead
 * const next = await faulty.revive(); // === inner, as the next process sees it
 * await next.read("meta.json"); // undefined
 * ```
 */
export class FaultyStorage implements StoragePort {
  /** The wrapped store: the "disk" that survives the crash. */
  readonly inner: StoragePort;
  readonly #crashAt: number | undefined;
  readonly #tornBytes: FaultyStorageOptions["tornBytes"];
  readonly #log: MutatingOperation[] = [];
  readonly #pending = new Set<Promise<unknown>>();
  #completed = 0;
  #death: Death | undefined;

  /**
   * @param inner The store to forward to; it survives the simulated crash.
   * @param options When to crash and how much of a crashing append lands.
   * @throws {InvalidInputError} when `crashAt` is not a positive integer.
   *
   * @example
   * ```ts
   * import { MemoryStorage } from "sessionfold";
   *
   * const faulty = new FaultyStorage(new MemoryStorage(), { crashAt: 4 });
   * ```
   */
  constructor(inner: StoragePort, options: FaultyStorageOptions = {}) {
    if (options.crashAt !== undefined && !(Number.isInteger(options.crashAt) && options.crashAt >= 1)) {
      throw new InvalidInputError(`crashAt must be a positive integer, got ${String(options.crashAt)}`, {
        crashAt: options.crashAt,
      });
    }
    this.inner = inner;
    this.#crashAt = options.crashAt;
    this.#tornBytes = options.tornBytes;
  }

  /**
   * Every mutating call so far, in issue order, the crashing one included.
   *
   * @example
   * ```ts
   * import { FaultyStorage } from "sessionfold/testing";
   * import { MemoryStorage } from "sessionfold";
   * const faulty = new FaultyStorage(new MemoryStorage());
   *
   * faulty.log.map((op) => `${op.k} ${op.name} ${op.path}`);
   * ```
   */
  get log(): readonly MutatingOperation[] {
    return [...this.#log];
  }

  /**
   * How many mutating operations completed on the inner store (the crashing one,
   * even when torn, is not counted).
   *
   * @example
   * ```ts
   * import { FaultyStorage } from "sessionfold/testing";
   * import { MemoryStorage } from "sessionfold";
   * declare const bytes: Uint8Array;
   * const faulty = new FaultyStorage(new MemoryStorage());
   *
   * await faulty.append("a", bytes);
   * faulty.operationCount; // 1
   * ```
   */
  get operationCount(): number {
    return this.#completed;
  }

  /**
   * Where the wrapper crashed, or `undefined` when it has not (or was only stopped by
   * {@linkcode FaultyStorage.revive}).
   *
   * @example
   * ```ts
   * import { FaultyStorage } from "sessionfold/testing";
   * import { MemoryStorage } from "sessionfold";
   * const faulty = new FaultyStorage(new MemoryStorage());
   *
   * if (faulty.crash) console.log(`crashed at operation ${faulty.crash.operation.k}`);
   * ```
   */
  get crash(): CrashInfo | undefined {
    return this.#death?.crash;
  }

  /**
   * `false` once the process crashed or was stopped by {@linkcode FaultyStorage.revive}.
   *
   * @example
   * ```ts
   * import { FaultyStorage } from "sessionfold/testing";
   * import { MemoryStorage } from "sessionfold";
   * const faulty = new FaultyStorage(new MemoryStorage());
   *
   * declare function scenario(storage: FaultyStorage): Promise<void>;
   * await scenario(faulty).catch(() => {});
   * faulty.alive; // false when the crash point was reached
   * ```
   */
  get alive(): boolean {
    return this.#death === undefined;
  }

  /**
   * Ends this process (if the crash has not already) and, once no call is in flight,
   * returns the inner store: what the next process finds. This wrapper stays dead.
   *
   * @example
   * ```ts
   * import { FaultyStorage } from "sessionfold/testing";
   * import { MemoryStorage } from "sessionfold";
   * const faulty = new FaultyStorage(new MemoryStorage());
   *
   * import type { Session, StoragePort } from "sessionfold";
   * declare function run(storage: FaultyStorage): Promise<void>;
   * declare function openSession(storage: StoragePort): Promise<Session>;
   * await run(faulty).catch(() => {});
   * const next = await faulty.revive();
   * const session = await openSession(next); // recovery runs on what survived
   * ```
   */
  async revive(): Promise<StoragePort> {
    this.#death ??= { crash: undefined };
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
    return this.inner;
  }

  /** @inheritdoc */
  read(path: string): Promise<Uint8Array | undefined> {
    return this.#query("read", path, () => this.inner.read(path));
  }

  /** @inheritdoc */
  readTail(path: string, maxBytes: number): Promise<FileTail | undefined> {
    return this.#query("readTail", path, () => this.inner.readTail(path, maxBytes));
  }

  /** @inheritdoc */
  list(dir: string): Promise<string[]> {
    return this.#query("list", dir, () => this.inner.list(dir));
  }

  /** @inheritdoc */
  replace(path: string, bytes: Uint8Array, options?: WriteOptions): Promise<void> {
    return this.#mutate({ name: "replace", path, bytes: bytes.length }, undefined, () => this.inner.replace(path, bytes, options));
  }

  /** @inheritdoc */
  append(path: string, bytes: Uint8Array): Promise<void> {
    return this.#mutate({ name: "append", path, bytes: bytes.length }, bytes, () => this.inner.append(path, bytes));
  }

  /** @inheritdoc */
  createExclusive(path: string, bytes: Uint8Array, options?: WriteOptions): Promise<boolean> {
    return this.#mutate({ name: "createExclusive", path, bytes: bytes.length }, undefined, () => this.inner.createExclusive(path, bytes, options));
  }

  /** @inheritdoc */
  truncate(path: string, length: number): Promise<void> {
    return this.#mutate({ name: "truncate", path, length }, undefined, () => this.inner.truncate(path, length));
  }

  /** @inheritdoc */
  remove(path: string, options?: WriteOptions): Promise<void> {
    return this.#mutate({ name: "remove", path }, undefined, () => this.inner.remove(path, options));
  }

  /** @inheritdoc */
  move(from: string, to: string): Promise<boolean> {
    return this.#mutate({ name: "move", path: from, to }, undefined, () => this.inner.move(from, to));
  }

  /** A read-only call: refused when dead, and its result is lost if the process dies meanwhile. */
  async #query<T>(name: string, path: string, run: () => Promise<T>): Promise<T> {
    this.#assertAlive(name, path);
    return await this.#settle(name, path, run());
  }

  /** A mutating call: numbered, logged, and the crash point when its number is `crashAt`. */
  async #mutate<T>(
    call: Omit<MutatingOperation, "k">,
    appended: Uint8Array | undefined,
    run: () => Promise<T>,
  ): Promise<T> {
    this.#assertAlive(call.name, call.path);
    assertStoragePath(call.path);
    if (call.to !== undefined) assertStoragePath(call.to);
    const operation: MutatingOperation = { k: this.#log.length + 1, ...call };
    this.#log.push(operation);
    if (operation.k === this.#crashAt) return await this.#crashWith(operation, appended);
    const result = await this.#settle(call.name, call.path, run(), () => this.#completed++);
    return result;
  }

  /** Kills the process at `operation`, writing the torn prefix of an append first. */
  async #crashWith(operation: MutatingOperation, appended: Uint8Array | undefined): Promise<never> {
    const tornBytes = appended ? this.#tornLength(appended, operation) : 0;
    this.#death = { crash: { operation, tornBytes } };
    if (tornBytes > 0) {
      try {
        await this.#track(this.inner.append(operation.path, appended!.slice(0, tornBytes)));
      } catch {
        // The process is dying anyway; whatever the inner store did is what survives.
      }
    }
    const torn = operation.name === "append" ? ` after writing ${tornBytes} of ${operation.bytes} bytes` : "";
    throw new SimulatedCrashError(
      `simulated crash at mutating operation ${operation.k}: ${describe(operation)}${torn}`,
      { operation: operation.name, path: operation.path, crash_at: operation.k, torn_bytes: tornBytes },
    );
  }

  #tornLength(bytes: Uint8Array, operation: MutatingOperation): number {
    const option = this.#tornBytes ?? 0;
    const wanted = typeof option === "function" ? option(bytes, operation) : option;
    return Number.isFinite(wanted) ? Math.min(bytes.length, Math.max(0, Math.floor(wanted))) : 0;
  }

  /** Awaits an inner call; if the process died meanwhile, its result is lost. */
  async #settle<T>(name: string, path: string, pending: Promise<T>, onDone?: () => void): Promise<T> {
    let result: T;
    try {
      result = await this.#track(pending);
    } catch (error) {
      this.#assertAlive(name, path);
      throw error;
    }
    onDone?.();
    this.#assertAlive(name, path);
    return result;
  }

  /** Remembers an inner call until it settles, so `revive()` can wait for it. */
  #track<T>(pending: Promise<T>): Promise<T> {
    this.#pending.add(pending);
    const forget = () => this.#pending.delete(pending);
    pending.then(forget, forget);
    return pending;
  }

  #assertAlive(name: string, path: string): void {
    const death = this.#death;
    if (death === undefined) return;
    const call = `${name} ${JSON.stringify(path)}`;
    const details = { operation: name, path, crash_at: death.crash?.operation.k ?? null };
    if (death.crash) {
      throw new SimulatedCrashError(
        `${call} refused: the process died in a simulated crash at mutating operation ${death.crash.operation.k} (${describe(death.crash.operation)})`,
        details,
      );
    }
    throw new SimulatedCrashError(`${call} refused: the process was stopped by revive()`, details);
  }
}

/** `append "s/active.jsonl"`, `move "a" -> "b"`. */
function describe(operation: MutatingOperation): string {
  const to = operation.to === undefined ? "" : ` -> ${JSON.stringify(operation.to)}`;
  return `${operation.name} ${JSON.stringify(operation.path)}${to}`;
}

/**
 * One crash point found by {@linkcode enumerateCrashPoints}.
 *
 * @example
 * ```ts
 * declare const points: CrashPoint[];
 * const point: CrashPoint = points[0]!;
 * console.log(point.k, point.operation.name, point.operation.path);
 * ```
 */
export interface CrashPoint {
  /** The number of the crashing mutating operation, 1 … `total`. */
  readonly k: number;
  /** How many mutating operations the scenario issues without a crash. */
  readonly total: number;
  /** The operation that crashed. */
  readonly operation: MutatingOperation;
  /** How many bytes of a crashing `append` reached the store (0 otherwise). */
  readonly tornBytes: number;
  /** The store as the next process finds it (the revived inner store). */
  readonly inner: StoragePort;
  /** What the scenario rejected with (normally a `SimulatedCrashError`); `undefined` if it resolved anyway. */
  readonly error: unknown;
}

/**
 * Runs `scenario` once on a fresh store to count its N mutating operations, then once
 * per k in 1 … N on another fresh store with `crashAt: k`, and returns every crash
 * point with the store the next process would find. The scenario must be
 * deterministic: the same calls in the same order on every run.
 *
 * @param scenario What the process does; it receives the faulty storage.
 * @param makeInner Creates a fresh inner store (the "disk") for each run.
 * @param options `tornBytes` for crashing appends, as in {@linkcode FaultyStorageOptions}.
 * @returns One entry per crash point, in order of k.
 * @throws whatever the uncrashed run throws, or an `Error` when the scenario is not deterministic.
 *
 * @example
 * ```ts
 * import type { StoragePort } from "sessionfold";
 * declare function appendMessage(storage: StoragePort, message: MessageRecord): Promise<void>;
 * declare function expectRecoverable(storage: StoragePort): Promise<void>;
 * declare function expect(value: unknown, message?: string): { toBeInstanceOf(type: unknown): void };
 * import { MemoryStorage, MessageRecord } from "sessionfold";
 * declare const message: MessageRecord;
 *
 * const points = await enumerateCrashPoints(
 *   async (storage) => { await appendMessage(storage, message); },
 *   () => new MemoryStorage(),
 *   { tornBytes: (bytes) => bytes.length >> 1 },
 * );
 * for (const { k, inner, error } of points) {
 *   expect(error, `crash point ${k}`).toBeInstanceOf(SimulatedCrashError);
 *   await expectRecoverable(inner);
 * }
 * ```
 */
export async function enumerateCrashPoints(
  scenario: (storage: StoragePort) => Promise<void>,
  makeInner: () => StoragePort | Promise<StoragePort>,
  options: Pick<FaultyStorageOptions, "tornBytes"> = {},
): Promise<CrashPoint[]> {
  const baseline = new FaultyStorage(await makeInner());
  await scenario(baseline);
  await baseline.revive();
  const expected = baseline.log;
  const total = expected.length;
  const points: CrashPoint[] = [];
  for (let k = 1; k <= total; k++) {
    const faulty = new FaultyStorage(await makeInner(), { crashAt: k, tornBytes: options.tornBytes });
    let error: unknown;
    try {
      await scenario(faulty);
    } catch (thrown) {
      error = thrown;
    }
    const inner = await faulty.revive();
    const crash = faulty.crash;
    const planned = expected[k - 1]!;
    if (!crash) {
      throw new Error(
        `scenario is not deterministic: crash point ${k} of ${total} (${describe(planned)}) was never reached; ` +
          `that run issued ${faulty.log.length} mutating operations`,
        { cause: error },
      );
    }
    if (crash.operation.name !== planned.name || crash.operation.path !== planned.path || crash.operation.to !== planned.to) {
      throw new Error(
        `scenario is not deterministic: operation ${k} was ${describe(planned)} in the uncrashed run ` +
          `but ${describe(crash.operation)} in the run crashing there`,
      );
    }
    points.push({ k, total, operation: crash.operation, tornBytes: crash.tornBytes, inner, error });
  }
  return points;
}
