/**
 * A held session (a lease): the `writer.lock` a handle keeps between operations, with
 * `active.jsonl` pinned open by backends that can (Node), and `meta.json` allowed to lag
 * behind the lines (`meta-lag.ts`). The commit path (`commit-path.ts`) takes the lock; this
 * keeps it, runs the commit path's plans fenced by it (`lease-fence.ts`: a lost lease writes
 * nothing and leaves the handle holding nothing), catches `meta.json` up, and gives it back.
 *
 * @module
 */
import type { SessionPaths } from "../layout/paths.ts";
import { encodeJsonDocument } from "../schema/records.ts";
import type { CommitPlan, CommitPlanResult, PlannedWrite, StoragePort } from "../storage/port.ts";
import { applyFencedPlan, type LeaseLostNotice } from "./lease-fence.ts";
import { releaseWriterLock, type WriterLease } from "./lock.ts";
import { MetaLag } from "./meta-lag.ts";
import { applyCommitPlan } from "./apply-commit-plan.ts";
import type { SessionContext } from "./context.ts";
import type { HeldSession, StoreGate } from "./store-gate.ts";
import type { SessionState } from "./state.ts";

/** The lease of one handle, held or not. */
export class Lease {
  readonly #storage: StoragePort;
  readonly #paths: SessionPaths;
  readonly #refText: string;
  readonly #onLost: (event: LeaseLostNotice) => void;
  /** The registry's gate, told while the handle (`holder`) holds, so the store's `close()` gives the session back. */
  readonly #gate: StoreGate;
  readonly #holder: HeldSession;
  /** The lock this handle holds, if it holds the session. */
  #held: WriterLease | undefined;
  /** The release under way, which a second release joins. */
  #releasing: Promise<void> | undefined;
  /** Held commits `meta.json` does not hold yet. */
  readonly lag = new MetaLag();

  /**
   * `refText`: the session as `<agent_id>/<workspace_id>/<session_id>`; `onLost`: told once a fenced plan found the lease
   * lost; `holder`: the handle, which the store's `close()` asks to give the session back while it holds.
   */
  constructor(ctx: SessionContext, paths: SessionPaths, refText: string, onLost: (event: LeaseLostNotice) => void, holder: HeldSession) {
    this.#storage = ctx.storage;
    this.#gate = ctx.gate;
    this.#holder = holder;
    this.#paths = paths;
    this.#refText = refText;
    this.#onLost = onLost;
  }

  /** The held lock, if any. */
  get held(): WriterLease | undefined {
    return this.#held;
  }

  /** Keeps `lock` for this handle and pins `active.jsonl` and `writer.lock` (best effort): each held commit appends to the one and reads the other. */
  async keep(lock: WriterLease): Promise<void> {
    this.#held = lock;
    this.#gate.held.add(this.#holder);
    await Promise.all(this.#pinned().map((path) => this.#storage.pinFile?.(path).catch(() => undefined)));
  }

  /** The files a held lease keeps open where the backend can. */
  #pinned(): string[] {
    return [this.#paths.active, this.#paths.lock];
  }

  /** Closes what {@linkcode Lease.keep} pinned (best effort). */
  async #unpin(): Promise<void> {
    await Promise.all(this.#pinned().map((path) => this.#storage.unpinFile?.(path).catch(() => undefined)));
  }

  /**
   * Applies `plan` by the one dispatch (`apply-commit-plan.ts`); while held, fenced by the lease
   * (docs/FORMAT.md "Fencing"): it writes only while `writer.lock` is still this handle's, and
   * a lost lease is dropped and reported before the typed error reaches the caller.
   *
   * @throws {LeaseLostError} when the held lease was lost; nothing was written.
   */
  apply(plan: CommitPlan): Promise<CommitPlanResult> {
    const lock = this.#held;
    if (!lock) return applyCommitPlan(this.#storage, plan);
    return applyFencedPlan(this.#storage, plan, lock, this.#refText, (event) => this.#lost(event));
  }

  /**
   * Appends `bytes` to `path` as {@linkcode Lease.apply} would apply that one write, its plan made with the held lease as
   * its fence (not copied to add it: a held commit's plan, every commit).
   *
   * @throws {LeaseLostError} when the held lease was lost; nothing was written.
   */
  applyAppend(path: string, bytes: Uint8Array): Promise<CommitPlanResult> {
    const writes: PlannedWrite[] = [{ op: "append", path, bytes }];
    return this.apply(this.#held ? { writes, fence: this.#held } : { writes });
  }

  /** The lease is gone: nothing held, no `meta.json` catch-up (it is the new owner's now), the pinned files closed. */
  async #lost(event: LeaseLostNotice): Promise<void> {
    this.#held = undefined;
    this.#gate.held.delete(this.#holder);
    this.lag.cancel();
    this.lag.clear();
    this.#onLost(event);
    await this.#unpin();
  }

  /**
   * Gives the held lock back: `meta.json` caught up first (the next writer's revision check reads it), the pinned files
   * closed. A release asked for while one runs (the handle's `close()` and its store's) is that one.
   */
  release(state: SessionState): Promise<void> {
    return this.#releasing ??= this.#release(state).finally(() => (this.#releasing = undefined));
  }

  async #release(state: SessionState): Promise<void> {
    const lock = this.#held;
    if (!lock) return;
    this.#gate.held.delete(this.#holder);
    try {
      await this.catchUp(state);
    } finally {
      this.#held = undefined;
      try {
        await releaseWriterLock(this.#storage, lock);
      } finally {
        await this.#unpin();
      }
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
