/**
 * The operation slot of a session handle: one mutating operation at a time per session in
 * this process (`SessionBusyError` for a second one, whichever handle of the same store it
 * comes through), and this handle's reloads ordered with its operations. A `reload()` called
 * while an operation of the handle runs waits for it to end; an operation called while a
 * reload is pending waits for the reload. So `onCommit(() => session.reload())` followed by
 * `session.run(…)` neither checks the revision against a state the reload is replacing nor
 * has the state swapped under a running operation.
 *
 * @module
 */
import { SessionBusyError } from "../errors.ts";
import type { StoragePort } from "../storage/port.ts";
import type { StoreGate } from "./store-gate.ts";

/** Which operation runs on which session directory, per store (two handles of one store share it). */
const busyByStorage = new WeakMap<StoragePort, Map<string, string>>();

/** The operation slot of one handle (see the module doc). */
export class OperationSlot {
  readonly #busy: Map<string, string>;
  readonly #dir: string;
  readonly #name: string;
  readonly #gate: StoreGate;
  /** This handle's running operation, settled when it ends. */
  #running: Promise<unknown> | undefined;
  /** The last reload asked for; later operations start after it. */
  #reload: Promise<void> | undefined;

  /** `name` is how errors call the session (`<agent>/<workspace>/<session>`); `gate` counts the operations of its registry. */
  constructor(storage: StoragePort, dir: string, name: string, gate: StoreGate) {
    let busy = busyByStorage.get(storage);
    if (!busy) busyByStorage.set(storage, busy = new Map());
    this.#busy = busy;
    this.#dir = dir;
    this.#name = name;
    this.#gate = gate;
  }

  /** Whether an operation runs on this session in this process (through any handle of the store). */
  get taken(): boolean {
    return this.#busy.has(this.#dir);
  }

  /**
   * Runs `body` as this process's only mutating operation on the session, after the reloads
   * this handle was asked for before it. A `body` that throws is an operation that failed: its
   * error rejects the promise. The registry's gate counts it while it runs, so closing the store waits for it;
   * `nested`: it is a step of a registry operation the gate counts already (an archive's move, an open's hold).
   *
   * @throws {StoreClosedError} when the store's `close()` began (unless `nested`).
   * @throws {SessionBusyError} when another operation runs on this session (from this store).
   */
  async exclusive<T>(operation: string, body: () => Promise<T>, nested = false): Promise<T> {
    if (!nested) this.#gate.enter();
    try {
      while (this.#reload) await this.#reload.catch(() => undefined);
      const holder = this.#busy.get(this.#dir);
      if (holder) {
        throw new SessionBusyError(`${this.#name}: "${holder}" is still running; one mutating operation at a time`, { operation: holder });
      }
      this.#busy.set(this.#dir, operation);
      let running: Promise<T> | undefined;
      try {
        running = body();
        this.#running = running;
        return await running;
      } finally {
        this.#busy.delete(this.#dir);
        if (this.#running === running) this.#running = undefined;
      }
    } finally {
      if (!nested) this.#gate.leave();
    }
  }

  /** Runs `load` once this handle's running operation and earlier reloads are done. */
  reload(load: () => Promise<void>): Promise<void> {
    const before = [this.#running, this.#reload].map((p) => p?.catch(() => undefined));
    const reload: Promise<void> = Promise.all(before).then(load);
    this.#reload = reload;
    const done = () => {
      if (this.#reload === reload) this.#reload = undefined;
    };
    reload.then(done, done);
    return reload;
  }
}
