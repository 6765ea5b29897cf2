/**
 * The transaction of one session handle: everything a mutating operation goes through.
 * One operation at a time per session in this process, on a live and writable handle; the
 * session's `writer.lock` and the optimistic revision check, taken as one commit plan; the
 * repairs recovery postponed; the commit of messages; and, on failure, a reload and a typed
 * error. A handle whose check failed is stale until `reload()`.
 *
 * @module
 */
import { CorruptSessionError, InvalidInputError, RevisionConflictError, SessionBusyError, asSessionfoldError, type LockOwner } from "../errors.ts";
import { formatSessionRef, type SessionRef } from "../layout/ids.ts";
import type { SessionPaths, SessionPlace } from "../layout/paths.ts";
import { encodeJsonDocument, nowTimestamp, type MessageRecord, type SessionMeta } from "../schema/mod.ts";
import { assertJsonlFits, MAX_FILE_BYTES, MAX_LINE_BYTES } from "../storage/limits.ts";
import type { CommitPlan, PlannedWrite, StoragePort } from "../storage/port.ts";
import { markBatch, stampRevision } from "./batch.ts";
import { linesOf } from "./lines.ts";
import { loadSessionState } from "./load.ts";
import { MAX_LAG_MS, MetaLag } from "./meta-lag.ts";
import { runFencedPlan, type LeaseLostNotice } from "./lease-fence.ts";
import { releaseWriterLock, runPlan, takeWriterLock, writerLockedError, type WriterLease } from "./lock.ts";
import type { ResolvedSessionOptions } from "./options.ts";
import type { OwnerProbe, WriterIdentity } from "./owner.ts";
import { applyRepairs } from "./recovery.ts";
import { withNewestSegment } from "./segment-hint.ts";
import { isBlocked, lastSequence, type SessionState } from "./state.ts";
import type { CommitResult } from "./writer.ts";

/** What a session handle shares with its registry. */
export interface SessionContext {
  readonly storage: StoragePort;
  readonly identity: WriterIdentity;
  readonly clock: () => number;
  /** Called after each write that gives a session a new revision (`SessionsOptions.onCommit`). */
  readonly onCommit?: (event: CommitNotice) => void;
  /** What the platform knows of other processes; enables dead-owner reclaim (`SessionsOptions.probe`). */
  readonly probe?: OwnerProbe;
  /** Called when a dead writer's lock was taken over (`SessionsOptions.onStaleLockReclaimed`). */
  readonly onStaleLockReclaimed?: (event: StaleLockReclaimed) => void;
  /** Called when a held session's commit found its lease lost (`SessionsOptions.onLeaseLost`). */
  readonly onLeaseLost?: (event: LeaseLostNotice) => void;
}

/** A dead writer's `writer.lock` taken over (`stale_lock_reclaimed`): which session, which file, its old content. */
export interface StaleLockReclaimed {
  /** `<agent_id>/<workspace_id>/<session_id>`. */
  readonly ref: string;
  /** The lock's storage path. */
  readonly path: string;
  /** The dead writer's lock content. */
  readonly owner: LockOwner;
}

/** Tells `onStaleLockReclaimed` about a lock taken over. Best effort: the listener's failure is its own. */
export function reportReclaimed(ctx: SessionContext, ref: SessionRef, path: string, owner: LockOwner): void {
  try {
    ctx.onStaleLockReclaimed?.({ ref: formatSessionRef(ref), path, owner });
  } catch {
    // The operation went through; a listener's bug must not make it look failed.
  }
}

/** What {@linkcode SessionContext.onCommit} is told: which session, at which revision now. */
export interface CommitNotice {
  /** `<agent_id>/<workspace_id>/<session_id>`. */
  readonly ref: string;
  readonly revision: number;
}

const busyByStorage = new WeakMap<StoragePort, Map<string, string>>();


/** The transaction of one session handle (see the module doc). */
export class SessionTransaction {
  readonly ctx: SessionContext;
  readonly ref: SessionRef;
  readonly place: SessionPlace;
  readonly paths: SessionPaths;
  readonly options: ResolvedSessionOptions;
  /** What the handle knows; replaced by every reload. */
  state: SessionState;
  readonly #onReload: (state: SessionState) => void;
  #needsReload = false;
  /** The writer lock this handle holds for its lifetime (a lease), if it was opened to hold. */
  #lease: WriterLease | undefined;
  /** Held commits `meta.json` does not hold yet (it lags behind the lines under a lease). */
  readonly #lag = new MetaLag();
  #lagTimer: ReturnType<typeof setTimeout> | undefined;
  /** Set by a revision conflict: every write is refused until the host calls `reload()`. */
  #conflict: RevisionConflictError | undefined;

  constructor(ctx: SessionContext, ref: SessionRef, place: SessionPlace, paths: SessionPaths, state: SessionState, options: ResolvedSessionOptions, onReload: (state: SessionState) => void) {
    this.ctx = ctx;
    this.ref = ref;
    this.place = place;
    this.paths = paths;
    this.state = state;
    this.options = options;
    this.#onReload = onReload;
  }

  /** Re-reads the session from storage; the handle is current (and writable) again. */
  async reload(): Promise<void> {
    this.state = await loadSessionState(this.ctx.storage, this.paths, this.ref, this.ctx.clock);
    this.#onReload(this.state);
    this.#needsReload = false;
    this.#conflict = undefined;
  }

  /** Whether this handle holds the session (a lease) until `release()`. */
  get held(): boolean {
    return this.#lease !== undefined;
  }

  /**
   * Takes the session for this handle until {@linkcode SessionTransaction.release}: the lock
   * (after the revision check) is kept, so later operations need neither a new lock nor a
   * revision read, and the backend may keep `active.jsonl` open. Nothing when already held.
   *
   * @throws {WriterLockedError} at once when another writer holds the session.
   * @throws {RevisionConflictError} when another writer committed since this handle read.
   */
  async hold(): Promise<void> {
    if (this.#lease) return;
    await this.exclusive("lease", async () => {
      const lease = await this.lock("lease", [], true);
      this.#lease = lease;
      await this.ctx.storage.pinFile?.(this.paths.active).catch(() => undefined);
    });
  }

  /** Gives a held session back (lock removed, pinned file closed). Nothing when not held. */
  async release(): Promise<void> {
    const lease = this.#lease;
    if (!lease) return;
    try {
      // Before the lock goes: the next writer's revision check reads meta.json.
      await this.#catchUpMeta();
    } finally {
      this.#lease = undefined;
      await this.ctx.storage.unpinFile?.(this.paths.active).catch(() => undefined);
      await releaseWriterLock(this.ctx.storage, lease);
    }
  }

  /**
   * Runs `body` as this process's only mutating operation on the session, on a live,
   * writable handle. `repairing`: the handle may be blocked by corruption or stale (repair
   * reads the files afresh under the lock).
   *
   * @throws {SessionBusyError} when another operation of this registry's store runs on this session.
   */
  async exclusive<T>(operation: string, body: () => Promise<T>, repairing = false): Promise<T> {
    const busy = busyMap(this.ctx.storage);
    const holder = busy.get(this.paths.dir);
    if (holder) {
      throw new SessionBusyError(`${formatSessionRef(this.ref)}: "${holder}" is still running; one mutating operation at a time`, { operation: holder });
    }
    if (this.place !== "live") {
      throw new InvalidInputError(`${formatSessionRef(this.ref)} is archived; archived sessions are read-only`);
    }
    busy.set(this.paths.dir, operation);
    try {
      if (!repairing) {
        if (this.#conflict) throw this.#conflict;
        if (this.#needsReload) await this.reload();
        this.#assertWritable();
      }
      return await body();
    } finally {
      busy.delete(this.paths.dir);
    }
  }

  /**
   * The body of a mutating operation that does more than one commit: lock and revision
   * check (one plan, so one round trip through a worker), recovery's repairs, `fn`, release.
   */
  async locked<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    const lease = await this.lock(operation, [], true);
    try {
      await applyRepairs(this);
      return await fn();
    } catch (error) {
      throw await this.failed(operation, error);
    } finally {
      await this.unlock(lease).catch(() => undefined);
    }
  }

  /**
   * Appends `records` as one commit plan: lock, revision check, append and `meta.json` in
   * one storage call when the backend runs plans itself. Only for a session without repairs
   * to do or a draft to finish (those take {@linkcode SessionTransaction.locked}).
   */
  async commitAlone(operation: string, records: readonly MessageRecord[]): Promise<CommitResult> {
    // Held: the lease stands for the lock and the revision check; only the writes go out.
    if (this.#lease) return this.commit(records);
    const { sequenced, bytes, meta } = this.#prepareCommit(records);
    await this.lock(operation, this.#commitWrites(bytes, meta), false);
    return this.#committed(sequenced, bytes.length, meta);
  }

  /**
   * Commits `records` inside a held lock: one append (each line carries the new revision)
   * and, unless a lease lets it lag (at most 64 commits or one second), a `meta.json` update.
   */
  async commit(records: readonly MessageRecord[]): Promise<CommitResult> {
    const { sequenced, bytes, meta } = this.#prepareCommit(records);
    const now = this.ctx.clock();
    const lazy = this.#lease !== undefined && !this.#lag.due(now);
    await this.runPlan({ writes: lazy ? [{ op: "append", path: this.paths.active, bytes }] : this.#commitWrites(bytes, meta) });
    if (!lazy) return this.#committed(sequenced, bytes.length, meta);
    this.state.active.push(...sequenced);
    this.state.activeBytes += bytes.length;
    this.state.meta = meta;
    this.#lag.add(now);
    this.#scheduleCatchUp();
    this.notifyCommit(meta.revision);
    return { sequences: sequenced.map((r) => r.sequence), revision: meta.revision };
  }

  /** Writes `meta.json` from memory when held commits left it behind. */
  async #catchUpMeta(): Promise<void> {
    clearTimeout(this.#lagTimer);
    this.#lagTimer = undefined;
    if (!this.#lag.behind) return;
    const meta = this.state.meta;
    await this.ctx.storage.replace(this.paths.meta, encodeJsonDocument(meta), { durable: false });
    this.#lag.clear();
    this.state.diskRevision = meta.revision;
  }

  /** One second after the first lagging commit, `meta.json` is written, unless an operation runs then (it tries again later). */
  #scheduleCatchUp(): void {
    if (this.#lagTimer !== undefined) return;
    const timer = setTimeout(() => {
      this.#lagTimer = undefined;
      if (!this.#lease || !this.#lag.behind) return;
      // Never takes the operation slot (a host's next operation must not meet SessionBusyError):
      // while one runs, try again later; the lines stay the truth either way.
      if (busyMap(this.ctx.storage).has(this.paths.dir)) this.#scheduleCatchUp();
      else this.#catchUpMeta().catch(() => this.#scheduleCatchUp());
    }, MAX_LAG_MS);
    // A pending catch-up never keeps a Node process alive (close() writes meta.json anyway).
    (timer as { unref?: () => void }).unref?.();
    this.#lagTimer = timer;
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
    if (this.#lease) {
      // The held lease stands for every lock this handle would take.
      if (writes.length > 0) await this.runPlan({ writes });
      return this.#lease;
    }
    const { storage, identity, clock, probe } = this.ctx;
    const path = this.paths.lock;
    const expect = checkRevision ? { path: this.paths.meta, revision: this.state.diskRevision ?? null } : undefined;
    let taken: Awaited<ReturnType<typeof takeWriterLock>>;
    try {
      taken = await takeWriterLock(storage, path, {
        identity,
        operation,
        clock,
        hold,
        writes,
        ...(probe ? { probe } : {}),
        ...(expect ? { expect, lines: { path: this.paths.active, revision: this.state.meta.revision } } : {}),
      });
    } catch (error) {
      throw await this.failed(operation, error);
    }
    if (taken.outcome === "locked") throw await writerLockedError(storage, path);
    if (taken.outcome === "conflict") throw this.#revisionConflict(taken.revision ?? undefined);
    if (taken.reclaimed) reportReclaimed(this.ctx, this.ref, path, taken.reclaimed);
    return taken.lease;
  }

  /** Gives back a lock {@linkcode SessionTransaction.lock} returned, unless it is the held lease. */
  async unlock(lease: WriterLease): Promise<void> {
    if (lease !== this.#lease) await releaseWriterLock(this.ctx.storage, lease);
  }

  /**
   * Runs a plan in one storage call when the backend offers it. Under a lease the plan is
   * fenced: it writes only while `writer.lock` is still this handle's (docs/FORMAT.md
   * "Fencing"); a lost lease is dropped and reported before the typed error reaches the caller.
   *
   * @throws {LeaseLostError} when the held lease was lost; nothing was written.
   */
  runPlan(plan: CommitPlan): ReturnType<typeof runPlan> {
    const lease = this.#lease;
    if (!lease) return runPlan(this.ctx.storage, plan);
    return runFencedPlan(this.ctx.storage, plan, lease, formatSessionRef(this.ref), (event) => this.#leaseLost(event));
  }

  /** The lease is gone: the handle holds nothing now, and re-reads the files before its next write. */
  #leaseLost(event: LeaseLostNotice): void {
    this.#lease = undefined;
    this.#needsReload = true;
    clearTimeout(this.#lagTimer);
    this.#lagTimer = undefined;
    this.#lag.clear();
    this.ctx.storage.unpinFile?.(this.paths.active).catch(() => undefined);
    try {
      this.ctx.onLeaseLost?.(event);
    } catch {
      // The listener's failure is its own; the typed error still reaches the caller.
    }
  }

  /** After a failed operation: reload what is on disk (unless the handle is stale) and type the error. */
  async failed(operation: string, error: unknown): Promise<Error> {
    if (!(error instanceof RevisionConflictError)) await this.reload().catch(() => (this.#needsReload = true));
    return asSessionfoldError(error, `${operation} on ${formatSessionRef(this.ref)} failed`);
  }

  /** Marks the handle for a reload before its next operation (a reload after a failure failed too). */
  reloadLater(): void {
    this.#needsReload = true;
  }

  /** `meta.json` with `patch`, a new `updated_at` and the newest-segment hint (`newest`, else the current one). */
  nextMeta(patch: Partial<SessionMeta>, newest = this.state.newest): SessionMeta {
    return withNewestSegment({ ...this.state.meta, ...patch, updated_at: nowTimestamp(this.ctx.clock) }, newest);
  }

  /** Writes `meta.json` with `patch` (see {@linkcode SessionTransaction.nextMeta}). */
  async writeMeta(patch: Partial<SessionMeta>): Promise<void> {
    const meta = this.nextMeta(patch);
    await this.ctx.storage.replace(this.paths.meta, encodeJsonDocument(meta));
    this.metaWritten(meta);
  }

  /** Takes a `meta.json` now on disk into memory and tells the registry's `onCommit`. */
  metaWritten(meta: SessionMeta): void {
    const known = this.state.meta.revision;
    const wasBehind = this.#lag.behind;
    this.state.meta = meta;
    this.state.diskRevision = meta.revision;
    this.#lag.clear();
    if (meta.revision !== known || wasBehind) this.notifyCommit(meta.revision);
  }

  /** Tells the registry's `onCommit` the session's revision now. Best effort: a committed write never looks failed because of it. */
  notifyCommit(revision = this.state.meta.revision): void {
    if (!this.ctx.onCommit) return;
    try {
      this.ctx.onCommit({ ref: formatSessionRef(this.ref), revision });
    } catch {
      // The listener's failure is its own.
    }
  }

  /** Sequences, line bytes and the next `meta.json` of a commit of `records` (nothing is written). */
  #prepareCommit(records: readonly MessageRecord[]): { sequenced: MessageRecord[]; bytes: Uint8Array; meta: SessionMeta } {
    if (records.length === 0) throw new InvalidInputError("a commit needs at least one message");
    const state = this.state;
    let sequence = lastSequence(state);
    const revision = state.meta.revision + 1;
    const numbered = records.map((m) => ({ ...m, sequence: ++sequence }));
    // The line revision goes last, after a batch mark: it ends every line (docs/FORMAT.md `revision`).
    const sequenced = stampRevision(numbered, revision);
    // Each line but a batch's first (its mark) is the record Active keeps: its bytes are
    // remembered, and a compaction copies them instead of encoding the record again.
    const lines = sequenced.length < 2 ? sequenced : [...stampRevision(markBatch(numbered).slice(0, 1), revision), ...sequenced.slice(1)];
    const bytes = linesOf(lines);
    this.#assertCommitFits(bytes, sequenced);
    // docs/FORMAT.md: meta.json's provider is the identity of the newest assistant message.
    const produced = sequenced.findLast((m) => m.role === "assistant" && m.provider)?.provider;
    const meta: SessionMeta = {
      ...withNewestSegment(state.meta, state.newest),
      ...(produced ? { provider: { provider: produced.provider, api: produced.api, model: produced.model } } : {}),
      message_count: sequence,
      history_bytes: state.meta.history_bytes + bytes.length,
      revision,
      updated_at: nowTimestamp(this.ctx.clock),
    };
    return { sequenced, bytes, meta };
  }

  /** A commit whose lines an open could not read back is refused before it is written (docs/FORMAT.md "Limits"). */
  #assertCommitFits(bytes: Uint8Array, sequenced: readonly MessageRecord[]): void {
    const describeLine = (index: number) => `message ${index + 1} of ${sequenced.length} in this commit (sequence ${sequenced[index]?.sequence})`;
    assertJsonlFits(bytes, { file: "messages/active.jsonl", sizeBefore: this.state.activeBytes, describeLine }, MAX_LINE_BYTES, this.ctx.storage.maxFileBytes ?? MAX_FILE_BYTES);
  }

  /**
   * A commit's writes: the lines, then `meta.json`. The lines are durable when the append
   * resolves; `meta.json` need not be (recovery rule 5 rebuilds one left behind).
   */
  #commitWrites(bytes: Uint8Array, meta: SessionMeta): PlannedWrite[] {
    return [
      { op: "append", path: this.paths.active, bytes },
      { op: "replace", path: this.paths.meta, bytes: encodeJsonDocument(meta), durable: false },
    ];
  }

  /** Takes a commit written to disk into memory. */
  #committed(sequenced: readonly MessageRecord[], byteLength: number, meta: SessionMeta): CommitResult {
    this.state.active.push(...sequenced);
    this.state.activeBytes += byteLength;
    this.metaWritten(meta);
    return { sequences: sequenced.map((r) => r.sequence), revision: meta.revision };
  }

  #assertWritable(): void {
    if (!isBlocked(this.state)) return;
    const first = this.state.diagnostics.find((d) => d.fatal)!;
    throw new CorruptSessionError(`${formatSessionRef(this.ref)} is read-only until repaired: ${first.message}`, {
      file: first.file,
      line: first.line,
      diagnostic: first.code,
    });
  }

  /** Marks the handle stale: every write is refused until `reload()`. */
  #revisionConflict(found: number | undefined): RevisionConflictError {
    const expected = this.state.diskRevision;
    return (this.#conflict = new RevisionConflictError(
      `${formatSessionRef(this.ref)}: meta.json is at revision ${found ?? "none"} but this handle read ${expected ?? "none"}; another writer committed (reopen or reload)`,
      { expected: expected ?? null, found: found ?? null },
    ));
  }
}

function busyMap(storage: StoragePort): Map<string, string> {
  let map = busyByStorage.get(storage);
  if (!map) busyByStorage.set(storage, (map = new Map()));
  return map;
}
