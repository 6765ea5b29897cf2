/**
 * Deleting a session, as `Sessions.delete` (and purge, one step of it) does: every lock first,
 * then every file of each place the session is in (docs/FORMAT.md "Deletion").
 *
 * @module
 */
import { NotFoundError } from "../errors.ts";
import { formatSessionRef, type SessionRef, toSessionRef } from "../layout/ids.ts";
import { sessionPaths, type SessionPlace } from "../layout/paths.ts";
import { filesUnder } from "../storage/files-under.ts";
import { notifyRemoved, reportReclaimed, type SessionContext } from "./context.ts";
import { acquireWriterLock, releaseWriterLock, type WriterLease } from "./lock.ts";
import type { DeletedSession } from "./registry-options.ts";
import { sessionExists } from "./staging.ts";

/**
 * Deletes `ref` from every place it is in, or the one `archived` names; resolves every file removed.
 *
 * @throws {NotFoundError} when there is no such session.
 * @throws {WriterLockedError} when another writer holds it (nothing is removed).
 */
export async function deleteSession(ctx: SessionContext, ref: SessionRef | string, options: { archived?: boolean }): Promise<DeletedSession> {
  const { storage } = ctx;
  const valid = toSessionRef(ref);
  const wanted: SessionPlace[] = options.archived === undefined ? ["live", "archived"] : [options.archived ? "archived" : "live"];
  const places: SessionPlace[] = [];
  for (const place of wanted) if (await sessionExists(storage, valid, place)) places.push(place);
  if (places.length === 0) throw new NotFoundError(`no session ${formatSessionRef(valid)}`, { ref: formatSessionRef(valid) });
  // Every lock first, so a running writer of either copy is never deleted under and a refusal removes nothing.
  const locks: WriterLease[] = [];
  const removed: string[] = [];
  try {
    for (const place of places) locks.push(await acquireRegistryLock(ctx, valid, sessionPaths(valid, place).lock, "delete"));
    for (const place of places) {
      const { dir } = sessionPaths(valid, place);
      removed.push(...(await filesUnder(storage, dir)));
      // The removal takes the lock file with it.
      await storage.remove(dir);
    }
  } finally {
    for (const lock of locks) await releaseWriterLock(storage, lock);
  }
  notifyRemoved(ctx, valid, "deleted");
  return { ref: formatSessionRef(valid), places, removed };
}

/** Takes a session's lock for an operation of the registry's own (fork, delete), reporting a dead writer's lock it took over. */
export async function acquireRegistryLock(ctx: SessionContext, ref: SessionRef, path: string, operation: string): Promise<WriterLease> {
  const { lease, reclaimed } = await acquireWriterLock(ctx.storage, path, ctx, operation);
  if (reclaimed) reportReclaimed(ctx, ref, path, reclaimed);
  return lease;
}
