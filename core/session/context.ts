/**
 * What a session handle shares with its registry (`SessionContext`): the store, the writer's
 * identity, the clock and the host's listeners, with the notices those listeners get.
 *
 * @module
 */
import type { LockOwner } from "../errors.ts";
import { formatSessionRef, type SessionRef } from "../layout/ids.ts";
import type { StoragePort } from "../storage/port.ts";
import type { LeaseLostNotice } from "./lease-fence.ts";
import type { OwnerProbe, WriterIdentity } from "./owner.ts";
import type { StoreGate } from "./store-gate.ts";

/** What a session handle shares with its registry. */
export interface SessionContext {
  readonly storage: StoragePort;
  readonly identity: WriterIdentity;
  readonly clock: () => number;
  /** The registry's operations under way and held sessions, which its `close()` settles and gives back. */
  readonly gate: StoreGate;
  /** Called after each write that gives a session a new revision (`SessionsOptions.onCommit`). */
  readonly onCommit?: (event: CommitNotice) => void;
  /** Called after a session was archived or deleted (`SessionsOptions.onRemoved`). */
  readonly onRemoved?: (event: RemovalNotice) => void;
  /** What the platform knows of other processes; enables dead-owner reclaim (`SessionsOptions.probe`). */
  readonly probe?: OwnerProbe;
  /** Called when a dead writer's lock was taken over (`SessionsOptions.onStaleLockReclaimed`). */
  readonly onStaleLockReclaimed?: (event: StaleLockReclaimed) => void;
  /** Called when a held session's commit found its lease lost (`SessionsOptions.onLeaseLost`). */
  readonly onLeaseLost?: (event: LeaseLostNotice) => void;
}

/** A dead writer's `writer.lock` taken over (`stale_lock_reclaimed`): which session, which file, its old content. */
export interface StaleLockReclaimed {
  /** The session's ref as text, `<agent_id>/<workspace_id>/<session_id>`. */
  readonly refText: string;
  /** The lock's storage path. */
  readonly path: string;
  /** The dead writer's lock content. */
  readonly owner: LockOwner;
}

/** What {@linkcode SessionContext.onCommit} is told: which session, at which revision now. */
export interface CommitNotice {
  /** The session's ref as text, `<agent_id>/<workspace_id>/<session_id>`. */
  readonly refText: string;
  readonly revision: number;
}

/**
 * What {@linkcode SessionContext.onRemoved} is told: a session archived (it left the live sessions for
 * `archived-sessions/`) or deleted (every copy the delete found, live or archived, is gone). Not a
 * {@linkcode CommitNotice}: the session has no revision in the live store to name.
 */
export interface RemovalNotice {
  /** The session's ref as text, `<agent_id>/<workspace_id>/<session_id>`. */
  readonly refText: string;
  readonly removed: "archived" | "deleted";
}

/** Tells `onStaleLockReclaimed` about a lock taken over. Best effort: the listener's failure is its own. */
export function reportReclaimed(ctx: SessionContext, ref: SessionRef, path: string, owner: LockOwner): void {
  try {
    ctx.onStaleLockReclaimed?.({ refText: formatSessionRef(ref), path, owner });
  } catch {
    // The operation went through; a listener's bug must not make it look failed.
  }
}

/** Tells `onLeaseLost` a held lease was found lost. Best effort: the typed error still reaches the caller. */
export function reportLeaseLost(ctx: SessionContext, event: LeaseLostNotice): void {
  try {
    ctx.onLeaseLost?.(event);
  } catch {
    // The listener's failure is its own.
  }
}

/** Tells `onCommit` a session's revision now. Best effort: a committed write never looks failed because of it. */
export function notifyCommit(ctx: SessionContext, ref: SessionRef, revision: number): void {
  if (!ctx.onCommit) return;
  try {
    ctx.onCommit({ refText: formatSessionRef(ref), revision });
  } catch {
    // The listener's failure is its own.
  }
}

/** Tells `onRemoved` a session was archived or deleted. Best effort, as {@linkcode notifyCommit}. */
export function notifyRemoved(ctx: SessionContext, ref: SessionRef, removed: RemovalNotice["removed"]): void {
  if (!ctx.onRemoved) return;
  try {
    ctx.onRemoved({ refText: formatSessionRef(ref), removed });
  } catch {
    // The listener's failure is its own.
  }
}

/** Each `Sessions`' context, by the registry: the sync engine stamps its own locks with the registry's identity and probe. */
const contexts = new WeakMap<object, SessionContext>();

/** Keeps `context` as `registry`'s, for {@linkcode contextOf}; returns it. */
export function registerContext(registry: object, context: SessionContext): SessionContext {
  contexts.set(registry, context);
  return context;
}

/** The context a registry was made with ({@linkcode registerContext}); `undefined` for an object that is none. */
export function contextOf(registry: object): SessionContext | undefined {
  return contexts.get(registry);
}
