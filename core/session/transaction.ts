/**
 * The transaction of one session handle: everything a mutating operation goes through.
 * One operation at a time per session in this process, on a live and writable handle; the
 * session's `writer.lock` and the optimistic revision check, taken as one commit plan; the
 * repairs recovery postponed; the commit of messages; and, on failure, a reload and a typed
 * error. A handle whose check failed is stale until `reload()`.
 *
 * @module
 */
import { CorruptSessionError, InvalidInputError, RevisionConflictError, SessionBusyError, asSessionfoldError } from "../errors.ts";
import { formatSessionRef, type SessionRef } from "../layout/ids.ts";
import type { SessionPaths, SessionPlace } from "../layout/paths.ts";
import { encodeJsonDocument, nowTimestamp, type MessageRecord, type SessionMeta } from "../schema/mod.ts";
import type { CommitPlan, PlannedWrite, StoragePort } from "../storage/port.ts";
import { markBatch } from "./batch.ts";
import { joinLines, lineOf } from "./lines.ts";
import { loadSessionState } from "./load.ts";
import { releaseWriterLock, runPlan, takeWriterLock, writerLockedError, type WriterLease } from "./lock.ts";
import type { ResolvedSessionOptions } from "./options.ts";
import type { WriterIdentity } from "./owner.ts";
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

  /**
   * Runs `body` as this process's only mutating operation on the session, on a live,
   * writable handle. `repairing`: the handle may be blocked by corruption or stale (repair
   * reads the files afresh under the lock).
   *
   * @throws {SessionBusyError} when another operation runs on this session in this process.
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
      await releaseWriterLock(this.ctx.storage, lease).catch(() => undefined);
    }
  }

  /**
   * Appends `records` as one commit plan: lock, revision check, append and `meta.json` in
   * one storage call when the backend runs plans itself. Only for a session without repairs
   * to do or a draft to finish (those take {@linkcode SessionTransaction.locked}).
   */
  async commitAlone(operation: string, records: readonly MessageRecord[]): Promise<CommitResult> {
    const { sequenced, bytes, meta } = this.#prepareCommit(records);
    await this.lock(operation, this.#commitWrites(bytes, meta), false);
    return this.#committed(sequenced, bytes.length, meta);
  }

  /** Commits `records` inside a held lock: one append and one `meta.json` update (revision + 1). */
  async commit(records: readonly MessageRecord[]): Promise<CommitResult> {
    const { sequenced, bytes, meta } = this.#prepareCommit(records);
    await this.runPlan({ writes: this.#commitWrites(bytes, meta) });
    return this.#committed(sequenced, bytes.length, meta);
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
    const { storage, identity, clock } = this.ctx;
    const path = this.paths.lock;
    const expect = checkRevision ? { path: this.paths.meta, revision: this.state.diskRevision ?? null } : undefined;
    let taken: Awaited<ReturnType<typeof takeWriterLock>>;
    try {
      taken = await takeWriterLock(storage, path, { identity, operation, clock, hold, ...(expect ? { expect } : {}), writes });
    } catch (error) {
      throw await this.failed(operation, error);
    }
    if (taken.outcome === "locked") throw await writerLockedError(storage, path);
    if (taken.outcome === "conflict") throw this.#revisionConflict(taken.revision ?? undefined);
    return taken.lease;
  }

  /** Runs a plan in one storage call when the backend offers it. */
  runPlan(plan: CommitPlan): ReturnType<typeof runPlan> {
    return runPlan(this.ctx.storage, plan);
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
    const known = this.state.diskRevision;
    this.state.meta = meta;
    this.state.diskRevision = meta.revision;
    if (meta.revision !== known) this.notifyCommit();
  }

  /** Tells the registry's `onCommit` the revision now on disk. Best effort: a committed write never looks failed because of it. */
  notifyCommit(): void {
    const revision = this.state.diskRevision;
    if (!this.ctx.onCommit || revision === undefined) return;
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
    const sequenced = records.map((m) => ({ ...m, sequence: ++sequence }));
    const bytes = joinLines(markBatch(sequenced).map(lineOf));
    // docs/FORMAT.md: meta.json's provider is the identity of the newest assistant message.
    const produced = sequenced.findLast((m) => m.role === "assistant" && m.provider)?.provider;
    const meta: SessionMeta = {
      ...withNewestSegment(state.meta, state.newest),
      ...(produced ? { provider: { provider: produced.provider, api: produced.api, model: produced.model } } : {}),
      message_count: sequence,
      history_bytes: state.meta.history_bytes + bytes.length,
      revision: state.meta.revision + 1,
      updated_at: nowTimestamp(this.ctx.clock),
    };
    return { sequenced, bytes, meta };
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
