/**
 * The lock a sync run holds from its first read of the sync state to its end
 * (`sync/run.lock`, docs/SYNC.md "The engine"), whatever its remote: two runs against one
 * remote would number mutations from the same state, and a run against another remote in the
 * middle of a re-read's swap would settle it as cut (losing the session) or take the session
 * for deleted. It is taken like a session's `writer.lock`: the backend's
 * own lock where it has one (a Web Lock, a PostgreSQL advisory lock, which its holder's death
 * frees), else the file created exclusively, which a dead run of this host leaves and a run
 * given a process probe (`SessionsOptions.probe`) takes over.
 *
 * @module
 */
import type { WriterLockedError } from "../errors.ts";
import { type LockedWrites, releaseWriterLock, takeWriterLock, writerLockedError } from "../session/lock.ts";
import type { StoragePort } from "../storage/port.ts";
import { SYNC_REREADS } from "./rereads.ts";
import { SYNC_LOCK_PATH, SYNC_PENDING, SYNC_STATES } from "./sync-state.ts";

/**
 * Runs `body`, a run against the remote `remoteId`, holding the sync lock of `storage`, and
 * gives the lock back however `body` ends. `holder` is stamped into the lock with the remote
 * (who runs which sync, so a second run can say who holds it); with its `probe`, a lock a dead
 * run of this host left is taken over.
 *
 * @throws {WriterLockedError} before `body` runs, when another run holds the lock: the message
 * names the lock and its holder; nothing was read or written.
 */
export async function underSyncLock<T>(
  storage: StoragePort,
  remoteId: string,
  holder: Pick<LockedWrites, "identity" | "probe" | "clock">,
  body: () => Promise<T>,
): Promise<T> {
  // What a run writes besides sessions: on PostgreSQL those writes go on the lock's connection (docs/POSTGRES.md "Fencing").
  const covers = [SYNC_STATES, SYNC_PENDING, SYNC_REREADS];
  const taken = await takeWriterLock(storage, SYNC_LOCK_PATH, { ...holder, operation: `sync with ${remoteId}`, hold: true, covers });
  if (taken.outcome !== "committed") throw await syncRunningError(storage);
  let value: T;
  try {
    value = await body();
  } catch (error) {
    // The run's own error says what happened; a lock that cannot be given back is the next run's to take over.
    await releaseWriterLock(storage, taken.lease).catch(() => undefined);
    throw error;
  }
  await releaseWriterLock(storage, taken.lease);
  return value;
}

/** The error for a sync lock another run holds, naming that run from the lock's content. */
function syncRunningError(storage: StoragePort): Promise<WriterLockedError> {
  return writerLockedError(
    storage,
    SYNC_LOCK_PATH,
    (who) =>
      `another sync of this store is running, by ${who}; nothing was done. ` +
      `A lock whose run is gone is taken over by a run on its host that can tell (the CLI can); from elsewhere, remove ${SYNC_LOCK_PATH} once that run is known to be gone`,
  );
}
