/**
 * A held session (a lease): the `writer.lock` a handle keeps between operations, with
 * `active.jsonl` pinned open by backends that can (Node), and `meta.json` allowed to lag
 * behind the lines (`meta-lag.ts`). The commit path (`commit-path.ts`) takes the lock; this
 * keeps it, catches `meta.json` up, and gives it back.
 *
 * @module
 */
import type { SessionPaths } from "../layout/paths.ts";
import { encodeJsonDocument } from "../schema/mod.ts";
import type { StoragePort } from "../storage/port.ts";
import { releaseWriterLock, type WriterLease } from "./lock.ts";
import { MetaLag } from "./meta-lag.ts";
import type { SessionState } from "./state.ts";

/** The lease of one handle, held or not. */
export class Lease {
  readonly #storage: StoragePort;
  readonly #paths: SessionPaths;
  /** The lock this handle holds, if it holds the session. */
  #held: WriterLease | undefined;
  /** Held commits `meta.json` does not hold yet. */
  readonly lag = new MetaLag();

  constructor(storage: StoragePort, paths: SessionPaths) {
    this.#storage = storage;
    this.#paths = paths;
  }

  /** The held lock, if any. */
  get held(): WriterLease | undefined {
    return this.#held;
  }

  /** Keeps `lock` for this handle and pins `active.jsonl` (best effort). */
  async keep(lock: WriterLease): Promise<void> {
    this.#held = lock;
    await this.#storage.pinFile?.(this.#paths.active).catch(() => undefined);
  }

  /** Gives the held lock back: `meta.json` caught up first (the next writer's revision check reads it), the pinned file closed. */
  async release(state: SessionState): Promise<void> {
    const lock = this.#held;
    if (!lock) return;
    try {
      await this.catchUp(state);
    } finally {
      this.#held = undefined;
      await this.#storage.unpinFile?.(this.#paths.active).catch(() => undefined);
      await releaseWriterLock(this.#storage, lock);
    }
  }

  /** Writes `meta.json` from `state` when held commits left it behind. */
  async catchUp(state: SessionState): Promise<void> {
    this.lag.cancel();
    if (!this.#held || !this.lag.behind) return;
    const meta = state.meta;
    await this.#storage.replace(this.#paths.meta, encodeJsonDocument(meta), { durable: false });
    this.lag.clear();
    state.diskRevision = meta.revision;
  }
}
