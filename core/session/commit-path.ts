/**
 * The one commit path of a session handle: what it knows of the session (`state`), the lock and the optimistic revision
 * check taken as one commit plan, a held lease (the lock kept between operations), and the application of every planned
 * change (`planned-change.ts`: an append, a segment close; `recovery.ts`: recovery's repairs), each written as one commit
 * plan (`apply-commit-plan.ts`), fenced while held (`lease.ts`). On failure it reloads and types the error; a revision
 * conflict leaves the handle refusing writes until `reload()`, which goes through the handle's operation slot
 * (`operation-slot.ts`), so a reload and an operation never overlap.
 *
 * @module
 */
import { InvalidInputError, LeaseLostError, RevisionConflictError } from "../errors.ts";
import { formatSessionRef, type SessionRef } from "../layout/ids.ts";
import type { SessionPaths, SessionPlace } from "../layout/paths.ts";
import { encodeJsonDocument, type MessageRecord, nowTimestamp, type SessionMeta } from "../schema/records.ts";
import type { PlannedWrite } from "../storage/port.ts";
import { notifyCommit, reportLeaseLost, reportReclaimed, type SessionContext } from "./context.ts";
import { readSessionState } from "./load.ts";
import { Lease } from "./lease.ts";
import type { LeaseLostNotice } from "./lease-fence.ts";
import { releaseWriterLock, takeWriterLock, type WriterLease, writerLockedError } from "./lock.ts";
import { OperationSlot } from "./operation-slot.ts";
import type { ResolvedSessionOptions } from "./options.ts";
import { type AppendChange, appendWrites, planAppend, type SegmentClose, segmentCloseWrites } from "./planned-change.ts";
import { type PendingRepairPlan, planPendingRepairs, unknownActiveLines } from "./recovery.ts";
import { assertWritable, failedOperationError, revisionConflict } from "./commit-guards.ts";
import type { SessionState } from "./state.ts";
import type { CommitResult } from "./locked-operation.ts";

/** The commit path of one session handle (see the module doc). */
export class CommitPath {
  readonly ctx: SessionContext;
  readonly ref: SessionRef;
  readonly place: SessionPlace;
  readonly paths: SessionPaths;
  readonly options: ResolvedSessionOptions;
  /** What the handle knows; replaced by every reload. */
  state: SessionState;
  readonly #onReload: (state: SessionState) => void;
  #needsReload = false;
  /** The operation slot and the lease (the writer lock kept between operations), made at the first write or `held` (`#slot`, `#lease`). */
  #slotMade: OperationSlot | undefined;
  #leaseMade: Lease | undefined;
  /** A lost lease: the handle re-reads the files before its next write. */
  readonly #leaseLost = (event: LeaseLostNotice) => ((this.#needsReload = true), reportLeaseLost(this.ctx, event));
  /** Set by a revision conflict: every write is refused until the host calls `reload()`. */
  #conflict: RevisionConflictError | undefined;
  /** The lock of a running {@linkcode CommitPath.locked} operation that ends with a segment close, until given back. */
  #giveBack: WriterLease | undefined;

  constructor(
    ctx: SessionContext,
    ref: SessionRef,
    place: SessionPlace,
    paths: SessionPaths,
    state: SessionState,
    options: ResolvedSessionOptions,
    onReload: (state: SessionState) => void,
  ) {
    this.ctx = ctx;
    this.ref = ref;
    this.place = place;
    this.paths = paths;
    this.state = state;
    this.options = options;
    this.#onReload = onReload;
  }

  // A handle that only reads (an open, a compose) never builds these, nor in a fresh process compiles their code.
  get #slot(): OperationSlot {
    return this.#slotMade ??= new OperationSlot(this.ctx.storage, this.paths.dir, formatSessionRef(this.ref), this.ctx.gate);
  }

  get #lease(): Lease {
    return this.#leaseMade ??= new Lease(this.ctx, this.paths, formatSessionRef(this.ref), this.#leaseLost, this);
  }

  /** The clock as a `meta.json` / record timestamp. */
  readonly now = (): string => nowTimestamp(this.ctx.clock);

  /** Re-reads the session as an open does (one deleted or moved since is not found, never empty) once this handle's operation ended. */
  reload(): Promise<void> {
    return this.#slot.reload(() => this.#reloadNow());
  }

  async #reloadNow(): Promise<void> {
    this.state = await readSessionState(this.ctx.storage, this.ref, this.place, this.paths, this.ctx.clock);
    this.#onReload(this.state);
    this.#needsReload = false;
    this.#conflict = undefined;
  }

  /** Whether this handle holds the session (a lease) until `release()`. */
  get held(): boolean {
    return this.#lease.held !== undefined;
  }

  /**
   * Takes the session for this handle until {@linkcode CommitPath.release}: the lock (after the revision check) is kept, so
   * later operations need neither a new lock nor a revision read (the store's `close()` gives it back). `nested`: an open's.
   *
   * @throws {WriterLockedError} at once when another writer holds the session.
   * @throws {RevisionConflictError} when another writer committed since this handle read.
   */
  async hold(nested = false): Promise<void> {
    if (this.#lease.held) return;
    await this.exclusive("lease", async () => this.#lease.keep(await this.lock("lease", [], true)), false, nested);
  }

  /** Gives a held session back (`meta.json` caught up, lock removed, pinned file closed). Nothing when not held. */
  release(): Promise<void> {
    return this.#lease.release(this.state);
  }

  /**
   * Runs `body` in the handle's operation slot, on a live, writable handle. `repairing`: the handle may be blocked by
   * corruption or stale (repair reads the files afresh under the lock). `nested`: a registry operation's step (the slot's).
   *
   * @throws {SessionBusyError} when another operation of this registry's store runs on this session.
   */
  exclusive<T>(operation: string, body: () => Promise<T>, repairing = false, nested = false): Promise<T> {
    // Not an async function: the slot takes a body that throws as one that rejects, and every commit would pay for a promise and a turn more.
    return this.#slot.exclusive(operation, () => {
      if (this.place !== "live") throw new InvalidInputError(`${formatSessionRef(this.ref)} is archived; archived sessions are read-only`);
      if (repairing) return body();
      if (this.#conflict) throw this.#conflict;
      if (!this.#needsReload) return (assertWritable(this.state, this.ref), body());
      return this.#reloadNow().then(() => (assertWritable(this.state, this.ref), body()));
    }, nested);
  }

  /**
   * The body of a mutating operation that does more than one commit: lock and revision check (one plan), recovery's repairs,
   * `fn`, release. `closes`: `fn` ends with a segment close, whose plan then gives the lock back (one round trip fewer).
   * `prepare` (pure work on the state; it must not throw) runs while the lock's plan is in flight, and `fn` gets its result.
   */
  async locked<T, P = never>(operation: string, fn: (prepared?: P) => Promise<T>, closes = false, prepare?: () => P): Promise<T> {
    const [lease, prepared] = await Promise.all([this.lock(operation, [], true), prepare?.()]);
    this.#giveBack = closes && lease !== this.#lease.held ? lease : undefined;
    try {
      const unknown = this.state.repairs.rewriteActive ? await unknownActiveLines(this) : [];
      await this.#applyPendingRepairs(planPendingRepairs(this.state, unknown, this.now));
      return await fn(prepared);
    } catch (error) {
      throw await this.failed(operation, error);
    } finally {
      const pending = closes ? this.#giveBack : lease;
      this.#giveBack = undefined;
      if (pending) await this.unlock(pending).catch(() => undefined);
    }
  }

  /**
   * Appends `records` as one commit plan: lock, revision check, append and `meta.json` in one storage call when the backend
   * runs plans itself. Only for a session without repairs to do or a draft to finish (those take {@linkcode CommitPath.locked}).
   * A held session commits with {@linkcode CommitPath.commit}, which lets `meta.json` lag. `at`: its `updated_at` (a sync's).
   */
  async commitAlone(operation: string, records: readonly MessageRecord[], at = this.now()): Promise<CommitResult> {
    const change = planAppend(this.state, records, at, this.ctx.storage.maxFileBytes);
    await this.lock(operation, appendWrites(this.paths, change), false);
    return this.#appended(change);
  }

  /** Commits `records` inside a held lock: one append (lines carry the new revision), and `meta.json` unless a lease lets it lag. */
  async commit(records: readonly MessageRecord[], at = this.now()): Promise<CommitResult> {
    const change = planAppend(this.state, records, at, this.ctx.storage.maxFileBytes);
    const now = this.ctx.clock();
    const lag = this.#lease.lag;
    const lazy = this.#lease.held !== undefined && !lag.due(now);
    await (lazy ? this.#lease.applyAppend(this.paths.active, change.bytes) : this.#lease.apply({ writes: appendWrites(this.paths, change) }));
    if (!lazy) return this.#appended(change);
    this.state.active.push(...change.sequenced);
    this.state.activeBytes += change.bytes.length;
    this.state.meta = change.meta;
    lag.add(now);
    if (!lag.scheduled) lag.schedule(() => this.#lease.catchUp(this.state), () => this.#slot.taken); // two closures a second, not per commit
    notifyCommit(this.ctx, this.ref, change.meta.revision);
    return { sequences: change.sequenced.map((r) => r.sequence), revision: change.meta.revision };
  }

  /** Applies a segment close (compaction, reset): one plan (that gives the lock back when it ends a `closes` operation), then the state. */
  async closeSegment(close: SegmentClose): Promise<void> {
    const { storage } = this.ctx;
    const activeBytes = close.staged?.active.size ?? close.activeBytes.length; // the bytes themselves are handed over to the plan
    const release = this.#giveBack;
    this.#giveBack = undefined;
    try {
      await this.#lease.apply({ writes: segmentCloseWrites(this.paths, close), ...(release ? { release } : {}) });
    } catch (error) {
      // Best effort: put back the meta.json that matches the files unless the segment was written (the next open would
      // rebuild it anyway); never after a lost lease (meta.json is the new owner's). The state is unchanged until the plan
      // committed. A failed plan gave the lock back: the put-back takes it again and replaces only this plan's meta.json.
      if (!(error instanceof LeaseLostError) && !(await storage.readTail(this.paths.segment(close.range), 0).catch(() => undefined))) {
        const bytes = encodeJsonDocument(this.state.meta);
        const { identity, clock } = this.ctx;
        const expect = { path: this.paths.meta, revision: close.meta.revision };
        const writes: PlannedWrite[] = [{ op: "replace", path: this.paths.meta, bytes }];
        if (!release) await storage.replace(this.paths.meta, bytes).catch(() => undefined);
        else await takeWriterLock(storage, this.paths.lock, { identity, operation: "restore", clock, hold: false, expect, writes }).catch(() => undefined);
      }
      throw error;
    }
    const state = this.state;
    state.segments?.push(close.range);
    state.newest = close.range;
    state.footer = close.footer;
    state.active = close.kept;
    state.activeBytes = activeBytes;
    this.metaWritten(close.meta);
  }

  /** Recovery's repairs, in their order (see {@linkcode PendingRepairPlan}); truncate and remove are not plan writes, so they are storage calls of their own. */
  async #applyPendingRepairs(plan: PendingRepairPlan): Promise<void> {
    const { storage } = this.ctx;
    if (plan.meta) {
      await this.#lease.apply({ writes: [{ op: "replace", path: this.paths.meta, bytes: encodeJsonDocument(plan.meta) }] });
      this.metaWritten(plan.meta);
    }
    const active = plan.active;
    if (active?.op === "replace") await this.#lease.apply({ writes: [{ op: "replace", path: this.paths.active, bytes: active.bytes }] });
    else if (active?.op === "truncate") await storage.truncate(this.paths.active, active.size);
    else if (active?.op === "newline") await this.#lease.apply({ writes: [{ op: "append", path: this.paths.active, bytes: new TextEncoder().encode("\n") }] });
    this.state.activeBytes = plan.activeBytes;
    if (plan.removeDraft) await storage.remove(this.paths.draft);
    this.state.repairs = {};
  }

  /**
   * Runs `writes` as a plan that first takes a new `writer.lock` for `operation` and (unless
   * `checkRevision` is false) checks that `meta.json` is still what this handle read; with
   * `hold` the lock stays taken. Returns the lease that gives it back.
   *
   * @throws {WriterLockedError} when another writer holds the lock; nothing was written.
   * @throws {RevisionConflictError} when another writer committed; nothing was written.
   */
  async lock(operation: string, writes: PlannedWrite[], hold: boolean, checkRevision = true): Promise<WriterLease> {
    const held = this.#lease.held;
    if (held) {
      // The held lease stands for every lock this handle would take.
      if (writes.length > 0) await this.#lease.apply({ writes });
      return held;
    }
    const { storage, identity, clock, probe } = this.ctx;
    const path = this.paths.lock;
    // The revision this check is made against, kept for the error (the state may be reloaded meanwhile).
    const read = this.state.diskRevision ?? null;
    const expect = checkRevision ? { path: this.paths.meta, revision: read } : undefined;
    const lines = expect && { path: this.paths.active, revision: this.state.meta.revision };
    let taken: Awaited<ReturnType<typeof takeWriterLock>>;
    try {
      // Fields left undefined rather than spread in (a spread's copy is V8's slow object; docs/decisions.md "The commit path's own CPU").
      taken = await takeWriterLock(storage, path, { identity, operation, clock, hold, writes, probe, expect, lines });
    } catch (error) {
      throw await this.failed(operation, error);
    }
    if (taken.outcome === "locked") throw await writerLockedError(storage, path);
    // A conflict marks the handle stale: every write is refused until `reload()`.
    if (taken.outcome === "conflict") throw (this.#conflict = revisionConflict(this.ref, read, taken.revision ?? null));
    if (taken.reclaimed) reportReclaimed(this.ctx, this.ref, path, taken.reclaimed);
    return taken.lease;
  }

  /** Gives back a lock {@linkcode CommitPath.lock} returned, unless it is the held lease. */
  async unlock(lease: WriterLease): Promise<void> {
    if (lease !== this.#lease.held) await releaseWriterLock(this.ctx.storage, lease);
  }

  /** After a failed operation (at revision `before`): reload what is on disk (unless the handle is stale) and type the error. */
  async failed(operation: string, error: unknown, before = this.state.meta.revision): Promise<Error> {
    if (!(error instanceof RevisionConflictError)) await this.#reloadNow().catch(() => (this.#needsReload = true));
    return failedOperationError(error, `${operation} on ${formatSessionRef(this.ref)} failed`, before, this.state.meta.revision);
  }

  /** After a repair (inside the operation slot): re-read the files, or mark the handle for a reload before its next operation. */
  async reloadAfterRepair(): Promise<void> {
    await this.#reloadNow().then(() => this.notifyCommit(), () => (this.#needsReload = true));
  }

  /** Takes a `meta.json` now on disk into memory and tells the registry's `onCommit`. */
  metaWritten(meta: SessionMeta): void {
    const known = this.state.meta.revision;
    const wasBehind = this.#lease.lag.behind;
    this.state.meta = meta;
    this.state.diskRevision = meta.revision;
    this.#lease.lag.clear();
    if (meta.revision !== known || wasBehind) this.notifyCommit(meta.revision);
  }

  /** Tells the registry's `onCommit` the session's revision now. */
  notifyCommit(revision = this.state.meta.revision): void {
    notifyCommit(this.ctx, this.ref, revision);
  }

  /** Takes an append written to disk into memory. */
  #appended(change: AppendChange): CommitResult {
    this.state.active.push(...change.sequenced);
    this.state.activeBytes += change.bytes.length;
    this.metaWritten(change.meta);
    return { sequences: change.sequenced.map((r) => r.sequence), revision: change.meta.revision };
  }
}
