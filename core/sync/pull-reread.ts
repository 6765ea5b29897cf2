/**
 * A pull's re-read of a session (docs/SYNC.md "Re-reads"): the server's copy fetched whole,
 * the local messages it lacks carried to the fork that holds their tail or into the copy, and
 * the copy swapped for the old one under the session's lock (rereads.ts keeps the swap
 * crash-safe).
 *
 * @module
 */
import { RevisionConflictError, WriterLockedError } from "../errors.ts";
import { parseSessionRef } from "../layout/ids.ts";
import type { MessageRecord } from "../schema/mod.ts";
import { acquireWriterLock, releaseWriterLock } from "../session/lock.ts";
import type { Session } from "../session/session.ts";
import { partsOf } from "../session/session-view.ts";
import { appendSynced } from "../session/append-messages.ts";
import { notifyRemoved } from "../session/context.ts";
import { type SessionHead, SYNC_PROTOCOL_VERSION } from "./protocol.ts";
import { type RereadSwap, settleSwap, type SwapOutcome, swapSession } from "./rereads.ts";
import { asNewMessage, hiddenFolder, messageIdsAfter, messagesAfter, type SessionFiles, stageSessionFiles, withCarried } from "./session-files.ts";
import { NO_SEGMENTS, positionAfter } from "./sync-state.ts";
import { fetchCopy, writeCopy } from "./remote-copy.ts";
import type { SyncRun } from "./sync-run.ts";

/**
 * Replaces the local copy with the server's (docs/SYNC.md "Re-reads"). Local messages after
 * `base` that the server's copy lacks (written after a tail the server forked, or after a
 * segmentation it did not take, or during this sync) are carried over: to the fork that
 * holds the tail they follow, appended there first (those it holds already skipped), else
 * into the new copy itself. The new copy is built out of sight, complete, and swapped for
 * the old one under the session's lock (rereads.ts): a crash at any point leaves the old
 * copy or the new one, never a copy without the carried messages. A commit between the
 * read of the carried messages and the lock starts it again.
 */
export async function reread(run: SyncRun, head: SessionHead, base: number, forkRef: string | undefined): Promise<void> {
  // Everything from the remote first: a request that fails (the network, a restart) then
  // leaves the local copy, and the messages only it holds, as they were.
  const copy = await fetchCopy(run, head);
  const theirs = messageIdsAfter(head.ref, copy, base);
  for (let attempt = 1;; attempt++) {
    const local = await run.openAnywhere(head.ref);
    // Deleted here meanwhile: the next push sends the delete.
    if (!local) return;
    const carried = (await messagesAfter(local, base)).messages.filter((m) => !theirs.has(m.message_id));
    try {
      if (forkRef && carried.length > 0) await carryToFork(run, forkRef, carried);
      await swap(run, local, head, withCarried(copy, forkRef ? [] : carried, local.revision));
    } catch (error) {
      if (error instanceof RevisionConflictError && attempt < 3) continue;
      throw error;
    }
    if (carried.length > 0) run.pushAgain = true;
    if (local.place === "live" && head.place === "archived") run.report.archives.pulled++;
    break;
  }
  run.countPulled(copy);
  run.report.reread.push(head.ref);
  // Saved at once: a later request of this pull that fails must not leave the session marked
  // for a re-read it had, which would take messages written after it for acknowledged ones.
  await run.agreed(head, positionAfter(NO_SEGMENTS, copy.segments.map((s) => s.name)));
  await run.save();
}

/**
 * Appends carried-over messages to the fork that holds the tail they follow, each once (a
 * re-read cut after this and run again finds them there); a fork this device lacks is
 * installed from the server with them.
 */
async function carryToFork(run: SyncRun, forkRef: string, carried: readonly MessageRecord[]): Promise<void> {
  const fork = await run.open(forkRef, false);
  if (fork) {
    const own = new Set((await messagesAfter(fork, fork.meta.forked_from?.through_sequence ?? 0)).messages.map((m) => m.message_id));
    const fresh = carried.filter((m) => !own.has(m.message_id));
    if (fresh.length > 0) await appendSynced(fork, fresh.map(asNewMessage));
    return;
  }
  const forkHead = (await run.remote.read({ v: SYNC_PROTOCOL_VERSION, ref: forkRef, after_sequence: 0, limit: 1 })).head;
  const forkCopy = await fetchCopy(run, forkHead);
  const own = messageIdsAfter(forkRef, forkCopy, forkCopy.meta.forked_from?.through_sequence ?? 0);
  // A fork that appeared here meanwhile takes them as an append.
  if (!(await writeCopy(run, forkHead, withCarried(forkCopy, carried.filter((m) => !own.has(m.message_id)), 0)))) return carryToFork(run, forkRef, carried);
  run.countPulled(forkCopy);
  await run.agreed(forkHead, positionAfter(NO_SEGMENTS, forkCopy.segments.map((s) => s.name)));
  await run.save();
}

/** Swaps the session's old copy for `files` under the old copy's lock (rereads.ts); a swap that fails is settled at once, as the next run would. */
async function swap(run: SyncRun, local: Session, head: SessionHead, files: SessionFiles): Promise<void> {
  const storage = run.local.storage;
  const ref = parseSessionRef(head.ref);
  const staged = await stageSessionFiles(storage, ref, files, run.clock, head.sealed?.keys);
  const swap: RereadSwap = { ref: head.ref, from: local.place, to: head.place, staged, aside: hiddenFolder(ref) };
  let outcome: SwapOutcome;
  try {
    outcome = await underLock(run, local, () => swapSession(storage, swap));
  } catch (error) {
    await settleSwap(storage, swap).catch(() => undefined);
    throw error;
  }
  // Not finished: the old copy was gone from under its lock, or a session took its place between the moves (both copies kept).
  if (outcome !== "finished") {
    throw new WriterLockedError(`${head.ref}: its re-read did not complete (${outcome}); nothing was lost, the next sync tries again`, { ref: head.ref });
  }
  if (head.place === "live") await run.announce(head.ref);
  else if (local.place === "live") notifyRemoved(partsOf(local).tx.ctx, local.ref, "archived");
}

/** Runs `fn` under a session's `writer.lock`: a live one's as a mutating operation (the revision check included), an archived one's as the engine's. */
async function underLock<T>(run: SyncRun, session: Session, fn: () => Promise<T>): Promise<T> {
  if (session.place === "live") return session.mutate("reread", fn);
  const { lease } = await acquireWriterLock(run.local.storage, session.paths.lock, run.writer, "reread");
  try {
    return await fn();
  } finally {
    await releaseWriterLock(run.local.storage, lease);
  }
}
