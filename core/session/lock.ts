import { type LockOwner, WriterLockedError } from "../errors.ts";
import { encodeJsonDocument, nowTimestamp, parseLockJson } from "../schema/records.ts";
import type { CommitPlan, CommitPlanResult, PlannedWrite, StoragePort } from "../storage/port.ts";
import { BATCH_FIELD, LINE_REVISION_FIELD } from "./batch.ts";
import { newId } from "./ids.ts";
import { isDeadOwner, type OwnerProbe, type WriterIdentity } from "./owner.ts";
import { applyCommitPlan } from "./apply-commit-plan.ts";

/** Lock and guard files guard a live process only: they need no flush (docs/FORMAT.md `writer.lock`). */
const NOT_DURABLE = { durable: false } as const;

/** What gives a held `writer.lock` back: its path and this holder's `lock_id` (a plan's `release`). */
export type WriterLease = NonNullable<CommitPlan["release"]>;

/** What {@linkcode takeWriterLock} does under the new lock. */
export interface LockedWrites {
  /** Who takes the lock and what for, stamped into `writer.lock`. */
  readonly identity: WriterIdentity;
  /** What the platform knows of other processes: with it, a dead writer's lock is taken over. */
  readonly probe?: OwnerProbe | undefined;
  readonly operation: string;
  readonly clock: () => number;
  /** Keep the lock once the writes committed (give it back with {@linkcode releaseWriterLock}). */
  readonly hold: boolean;
  /** What the lock guards when not its own folder (`CommitPlan`'s `lock.covers`). */
  readonly covers?: readonly string[] | undefined;
  /** `meta.json` must still hold this revision (`null`: be missing), or nothing is written. */
  readonly expect?: { readonly path: string; readonly revision: number | null } | undefined;
  /**
   * With `expect`: the lines file and the revision the caller has read. Checked after taking
   * over a dead writer's lock, before any write: a dead lease holder may have committed lines
   * without `meta.json`, so `meta.json`'s revision alone proves nothing then.
   */
  readonly lines?: { readonly path: string; readonly revision: number } | undefined;
  readonly writes?: readonly PlannedWrite[];
}

/** How {@linkcode takeWriterLock} ended: the lease (and the dead writer's lock it replaced, if any), or why not. */
export type TakenWriterLock =
  | { readonly outcome: "committed"; readonly lease: WriterLease; readonly reclaimed?: LockOwner }
  | Exclude<CommitPlanResult, { outcome: "committed" }>;

/**
 * The one way the core takes a session's `writer.lock`: a commit plan that creates the lock
 * (or takes the backend's platform lock), optionally checks the revision, does `writes`, and
 * with `hold` keeps the lock. When the lock found belongs to a dead writer of this host and
 * boot ({@linkcode isDeadOwner}), it is removed ({@linkcode reclaimDeadLock}) and the plan
 * runs once more; the old content is returned as `reclaimed`.
 *
 * @throws {StorageError} when a storage call fails.
 */
export async function takeWriterLock(storage: StoragePort, path: string, locked: LockedWrites): Promise<TakenWriterLock> {
  const owner = newLockOwner(locked.identity, locked.operation, locked.clock);
  const lock = { path, bytes: encodeJsonDocument(owner), lockId: owner.lock_id, ...(locked.covers ? { covers: locked.covers } : {}) };
  const plan: CommitPlan = locked.expect
    ? { lock, hold: locked.hold, expect: locked.expect, writes: locked.writes ?? [] }
    : { lock, hold: locked.hold, writes: locked.writes ?? [] };
  const lease = { path, lockId: lock.lockId };
  const result = await applyCommitPlan(storage, plan);
  if (result.outcome !== "locked" || !locked.probe) return result.outcome === "committed" ? { outcome: "committed", lease } : result;
  const found = await readLockOwner(storage, path);
  if (!found || !isDeadOwner(found, locked.identity, locked.probe) || !(await reclaimDeadLock(storage, path, found, lock.bytes, locked))) return result;
  // Taken over: hold the lock alone first, check the lines, then write under it.
  const taken = await applyCommitPlan(storage, { lock, hold: true, writes: [] });
  if (taken.outcome !== "committed") return taken;
  if (locked.lines) {
    const lines = await lastCommittedRevision(storage, locked.lines.path);
    if (lines > locked.lines.revision) {
      await releaseWriterLock(storage, lease);
      return { outcome: "conflict", revision: lines };
    }
  }
  const rest = await applyCommitPlan(storage, {
    ...(locked.expect ? { expect: locked.expect } : {}),
    writes: locked.writes ?? [],
    ...(locked.hold ? {} : { release: lease }),
  });
  if (rest.outcome !== "committed") {
    if (locked.hold) await releaseWriterLock(storage, lease);
    return rest;
  }
  return { outcome: "committed", lease, reclaimed: found };
}

/** How many bytes of `active.jsonl`'s end are read first to find its last commit (a few lines). */
const TAIL_BYTES = 4096;
const LINE_REVISION = /"revision":(\d+)\}$/;

/**
 * The revision of the last commit whose lines are all in `active.jsonl` (0 when its lines
 * carry none, or there is no file), read from the file's end. The lines of one commit end
 * with its revision and a batch's first line carries `batch_size`, so a final batch a crash
 * tore (fewer lines than its mark, which recovery rule 1 drops) is not counted: the commit
 * before it is. The window grows until it holds the last commit's first line and the line
 * before it.
 *
 * @example
 * ```ts
 * import { MemoryStorage, Sessions } from "sessionfold";
 * const storage = new MemoryStorage();
 * const session = await new Sessions({ storage }).create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
 * await session.append({ role: "user", parts: [{ type: "text", text: "hi" }] });
 * await lastCommittedRevision(storage, session.paths.active); // 1
 * ```
 */
export async function lastCommittedRevision(storage: StoragePort, path: string): Promise<number> {
  for (let want = TAIL_BYTES;; want *= 16) {
    const tail = await storage.readTail(path, want);
    if (!tail || tail.size === 0) return 0;
    const whole = tail.bytes.length >= tail.size;
    const lines = new TextDecoder().decode(tail.bytes).split("\n");
    // After the final newline: nothing, or a torn line (kept when it is whole JSON, as recovery keeps it).
    const final = lines.pop()!;
    if (final !== "" && parsedLine(final) !== undefined) lines.push(final);
    // The window may begin inside a line.
    if (!whole) lines.shift();
    const found = committedRevisionOf(lines, whole);
    if (found !== undefined || whole) return found ?? 0;
  }
}

/** {@linkcode lastCommittedRevision} of complete `lines`, or `undefined` when the window must grow. */
function committedRevisionOf(lines: readonly string[], whole: boolean): number | undefined {
  if (lines.length === 0) return whole ? 0 : undefined;
  const last = revisionOfLine(lines.at(-1)!);
  // Lines written before lines carried a revision: nothing to compare.
  if (last === 0) return 0;
  let first = lines.length - 1;
  while (first > 0 && revisionOfLine(lines[first - 1]!) === last) first -= 1;
  if (first === 0 && !whole) return undefined;
  const size = parsedLine(lines[first]!)?.[BATCH_FIELD];
  const wanted = typeof size === "number" && Number.isInteger(size) && size > 1 ? size : 1;
  if (lines.length - first >= wanted) return last;
  if (first > 0) return revisionOfLine(lines[first - 1]!);
  return whole ? 0 : undefined;
}

/** The revision a line ends with (our writers put it last), else its parsed field, else 0. */
function revisionOfLine(line: string): number {
  const match = LINE_REVISION.exec(line.slice(-64));
  if (match) return Number(match[1]);
  const value = parsedLine(line)?.[LINE_REVISION_FIELD];
  return typeof value === "number" && Number.isSafeInteger(value) && value > 0 ? value : 0;
}

function parsedLine(line: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(line);
    return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The most dead reclaimers in a row one reclaim steps over (each left its guard behind). */
const MAX_GUARD_DEPTH = 8;

/**
 * Removes `writer.lock` when it still is `stale` (a dead writer's), so that exactly one
 * live writer can remove it however many try at once. The remover must hold a guard file
 * created with create-new semantics, `writer.lock.reclaim-<stale lock_id>`, and checks the
 * lock again while holding it: only a guard holder removes a lock, and only the stale one,
 * so a lock a live writer has just taken is never removed. A guard whose own owner is dead
 * (a reclaimer killed half-way) is stepped over by a guard named after it, so no crash can
 * leave the session locked for good (the next guard is `writer.lock.reclaim-<stale lock_id>.<dead
 * holder's lock_id>`). Guards are removed once the stale lock is gone.
 * Resolves whether the stale lock is gone.
 */
export async function reclaimDeadLock(
  storage: StoragePort,
  path: string,
  stale: LockOwner,
  guardBytes: Uint8Array,
  me: Pick<LockedWrites, "identity" | "probe">,
): Promise<boolean> {
  const staleId = stale["lock_id"];
  if (typeof staleId !== "string" || !/^[A-Za-z0-9_-]+$/.test(staleId)) return false;
  const chain: string[] = [];
  let guard = `${path}.reclaim-${staleId}`;
  for (let depth = 0; depth < MAX_GUARD_DEPTH; depth++) {
    chain.push(guard);
    if (await storage.createExclusive(guard, guardBytes, NOT_DURABLE)) {
      try {
        const current = await readLockOwner(storage, path);
        if (current?.["lock_id"] === staleId) {
          await storage.remove(path, NOT_DURABLE);
          return true;
        }
        // Someone removed it already (another reclaimer, `unlock --force`): gone all the same.
        return !(await storage.read(path));
      } finally {
        for (const name of chain.reverse()) await storage.remove(name, NOT_DURABLE).catch(() => undefined);
      }
    }
    const holder = await readLockOwner(storage, guard);
    const holderId = holder?.["lock_id"];
    // A live reclaimer is at work: it removes the stale lock; this writer sees the session as locked meanwhile.
    if (!holder || typeof holderId !== "string" || !/^[A-Za-z0-9_-]+$/.test(holderId) || !isDeadOwner(holder, me.identity, me.probe)) return false;
    // Named after the stale lock and the dead guard holder: those who saw the same dead holder contend for one name.
    guard = `${path}.reclaim-${staleId}.${holderId}`;
  }
  return false;
}

/**
 * Takes the session's `writer.lock` for one mutating operation that writes on its own
 * (fork, delete) and keeps it until {@linkcode releaseWriterLock}.
 *
 * @throws {WriterLockedError} at once when another writer holds it, with that writer's lock content.
 */
export async function acquireWriterLock(
  storage: StoragePort,
  path: string,
  who: Pick<LockedWrites, "identity" | "probe" | "clock">,
  operation: string,
): Promise<{ readonly lease: WriterLease; readonly reclaimed?: LockOwner }> {
  const taken = await takeWriterLock(storage, path, { ...who, operation, hold: true });
  if (taken.outcome === "committed") return taken;
  throw await writerLockedError(storage, path);
}

/** Gives a held lock back; the file is removed only if it still carries this holder's `lock_id`. */
export async function releaseWriterLock(storage: StoragePort, lease: WriterLease): Promise<void> {
  await applyCommitPlan(storage, { writes: [], release: lease });
}

/** The content of a new `writer.lock`: who writes, what for, and a `lock_id` of its own (fields set in order, not spread: docs/decisions.md "The commit path's own CPU"). */
function newLockOwner(identity: WriterIdentity, operation: string, clock: () => number): LockOwner & { lock_id: string } {
  const { pid, hostname, runtime, bootId, processStartedAt, pidNamespace } = identity;
  const owner: Record<string, unknown> = { pid, hostname };
  if (bootId !== undefined) owner["boot_id"] = bootId;
  if (pidNamespace !== undefined) owner["pid_namespace"] = pidNamespace;
  if (processStartedAt !== undefined) owner["process_started_at"] = processStartedAt;
  owner["runtime"] = runtime;
  owner["operation"] = operation;
  owner["lock_id"] = newId("lock");
  owner["created_at"] = nowTimestamp(clock);
  return owner as LockOwner & { lock_id: string };
}

/** The error for a lock someone else holds, naming that holder from the lock's content (`say`: what the lock's path is followed by). */
export async function writerLockedError(
  storage: StoragePort,
  path: string,
  say = (who: string) => `session is locked by ${who}; nothing was written`,
): Promise<WriterLockedError> {
  const existing = await readLockOwner(storage, path);
  const who = existing ? describeLockOwner(existing) : "an unreadable lock";
  return new WriterLockedError(`${path}: ${say(who)}`, {
    path,
    ...(existing ? { owner: existing } : {}),
  });
}

/** `pid 123 on host (node) for "append" since …`, with `?` for what the record lacks. */
export function describeLockOwner(owner: Partial<LockOwner>): string {
  return `pid ${String(owner.pid ?? "?")} on ${owner.hostname ?? "?"} (${owner.runtime ?? "?"}) for "${owner.operation ?? "?"}" since ${
    owner.created_at ?? "?"
  }`;
}

/** The content of a `writer.lock`, or `undefined` when there is none or it cannot be parsed. */
export async function readLockOwner(storage: StoragePort, path: string): Promise<LockOwner | undefined> {
  const bytes = await storage.read(path);
  if (!bytes) return undefined;
  try {
    return parseLockJson(bytes, path) as LockOwner;
  } catch {
    return undefined;
  }
}
