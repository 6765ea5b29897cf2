/**
 * The gate of one registry (`Sessions`) and the handles it opened: which operations are under
 * way and which handles hold their session, so that closing settles them before the store
 * ends (README "Closing a store"): an operation that was under way resolves or rejects with
 * its own outcome, a held session is given back (its `writer.lock` removed), and an operation
 * that starts later is refused with `StoreClosedError`, nothing read or written.
 *
 * @module
 */
import { StoreClosedError } from "../errors.ts";

/** A handle that holds its session until it gives it back (`CommitPath`). */
export interface HeldSession {
  /** Gives the held session back (`meta.json` caught up, `writer.lock` removed). */
  release(): Promise<void>;
}

/** Operations under way and held sessions of one registry (see the module doc). */
export class StoreGate {
  /** Set once `close()` began: the refusal of every later operation. */
  #closed: StoreClosedError | undefined;
  #underWay = 0;
  /** Resolves `close()`'s wait once the last operation under way ended. */
  #settled: (() => void) | undefined;
  /** The close under way or done, which a second `close()` waits for. */
  #closing: Promise<void> | undefined;
  /** The handles that hold their session now. */
  readonly held: Set<HeldSession> = new Set();

  /**
   * Counts an operation in; pair it with {@linkcode StoreGate.leave} (a counter: the held commit path pays no more).
   *
   * @throws {StoreClosedError} once `close()` began.
   */
  enter(): void {
    if (this.#closed) throw this.#closed;
    this.#underWay += 1;
  }

  /** Counts an operation that {@linkcode StoreGate.enter} let in out again. */
  leave(): void {
    this.#underWay -= 1;
    if (this.#underWay === 0) this.#settled?.();
  }

  /** Runs `body` as one operation: counted while it runs, refused once `close()` began. */
  async run<T>(body: () => Promise<T>): Promise<T> {
    this.enter();
    try {
      return await body();
    } finally {
      this.leave();
    }
  }

  /**
   * Refuses every later operation, waits for those under way to settle, then gives every held
   * session back (best effort: a failed release leaves the lock for the next writer's dead-owner
   * check or `unlock`). Idempotent; a second call waits for the first.
   */
  close(): Promise<void> {
    return this.#closing ??= this.#close();
  }

  async #close(): Promise<void> {
    this.#closed = new StoreClosedError("the store is closed; open it again to go on");
    if (this.#underWay > 0) await new Promise<void>((resolve) => (this.#settled = resolve));
    for (const session of [...this.held]) await session.release().catch(() => undefined);
  }
}
