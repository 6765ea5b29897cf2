/**
 * What a sync run pulls (docs/SYNC.md "The engine", "Deleted elsewhere"): the remote's changes
 * after the cursor, each session's head against the local copy: installed when new here,
 * fast-forwarded, its segments adopted and labels taken, archived or deleted as the remote
 * was, or re-read (pull-reread.ts) when the two histories diverged.
 *
 * @module
 */
import {
  CorruptSessionError,
  InvalidInputError,
  NotFoundError,
  RevisionConflictError,
  SessionBusyError,
  SyncRefusedError,
  WriterLockedError,
} from "../errors.ts";
import { formatSessionRef, parseSessionRef } from "../layout/ids.ts";
import type { Session } from "../session/session.ts";
import { appendSynced } from "../session/append-messages.ts";
import { refused, type SegmentNames, segmentNamesAfter, type SessionHead, type SessionLabels, SYNC_PROTOCOL_VERSION } from "./protocol.ts";
import type { SyncConflict } from "./report.ts";
import { adoptSegment, asNewMessage, labelsOf, lastSequenceOf, messageAt, messagesAfter, sameLabels, segmentNamesOf, writeLabels } from "./session-files.ts";
import { NO_SEGMENTS, positionAfter } from "./sync-state.ts";
import { installCopy, pageMessages, remoteSegment } from "./remote-copy.ts";
import { reread } from "./pull-reread.ts";
import { localSegmentsAfter, type SyncRun } from "./sync-run.ts";

export async function pullChanges(run: SyncRun): Promise<void> {
  const state = run.state;
  const response = await run.remote.pull({ v: SYNC_PROTOCOL_VERSION, ...(state.cursor !== undefined ? { cursor: state.cursor } : {}) });
  for (const tombstone of response.tombstones) {
    if (!run.wanted(tombstone.ref) || (await keptFromTombstone(run, tombstone.ref))) continue;
    let deleted = false;
    for (const archived of [false, true]) {
      deleted = (await run.local.delete(tombstone.ref, { archived }).then(() =>
        true, (e: unknown) => (e instanceof NotFoundError ? false : Promise.reject(e)))) ||
        deleted;
    }
    if (deleted) run.report.deletes.pulled++;
    delete state.sessions[tombstone.ref];
  }
  const heads = response.sessions.filter((h) => run.wanted(h.ref));
  // Never mixed: a session in the clear is not pulled into an encrypted store, nor an encrypted one into a store in the clear.
  const mixed = heads.find((h) => Boolean(h.sealed) !== Boolean(run.codec));
  if (mixed) {
    throw refused(
      "encryption-mismatch",
      409,
      mixed.sealed
        ? `${mixed.ref} is end-to-end encrypted on the remote and this store is in the clear: sync it from an encrypted store with its key`
        : `${mixed.ref} is in the clear on the remote and this store is encrypted: an encrypted store syncs only encrypted sessions`,
      { ref: mixed.ref },
    );
  }
  // Sessions the remote cannot serve from its own copy: each is its conflict, as a refused read of it is.
  const refusedCopies = (response.refused ?? []).filter((c) => run.wanted(c.ref) && !run.setAside.has(c.ref));
  for (const copy of refusedCopies) copyRefused(run, copy);
  // Whose head the cursor passes (to look at again when set aside).
  const listed = new Set([...heads, ...refusedCopies].map((h) => h.ref));
  // A session to re-read, or to look at again, whose head did not change since the cursor: ask for it.
  const again = Object.entries(state.sessions).filter(([, known]) => known.reread || known.recheck).map(([ref]) => ref);
  for (const ref of [...again, ...(state.unseen ?? [])]) {
    if (!run.wanted(ref)) continue;
    listed.add(ref);
    if (run.setAside.has(ref) || heads.some((h) => h.ref === ref)) continue;
    const head = await unlessCopyRefused(run, ref, () => headOf(run, ref));
    if (head) heads.push(head);
    else if (!run.setAside.has(ref)) delete state.sessions[ref]?.recheck;
  }
  for (const head of heads) {
    if (!run.setAside.has(head.ref)) await unlessCopyRefused(run, head.ref, () => pullSession(run, head));
  }
  // Set aside in this run: left as it is, and looked at again on a later run (its head, which this cursor passes, may
  // hold changes): an agreed session is marked, one never agreed kept in `unseen`; the cursor goes on.
  const unseen = (state.unseen ?? []).filter((ref) => !run.wanted(ref));
  for (const ref of listed) {
    if (!run.setAside.has(ref)) continue;
    const known = state.sessions[ref];
    if (known) known.recheck = true;
    else unseen.push(ref);
  }
  if (unseen.length > 0) state.unseen = unseen;
  else delete state.unseen;
  state.cursor = response.cursor;
  await run.save();
}

/**
 * Whether a tombstone must leave the local copy as it is: it holds messages the remote never
 * acknowledged (after the agreed sequence; every message of a session never agreed), which
 * the delete did not see, or it cannot be read. Reported as the session's conflict; the agreed
 * state stays, so the user's delete of it here is pushed as one (docs/SYNC.md "Deleted elsewhere").
 */
async function keptFromTombstone(run: SyncRun, ref: string): Promise<boolean> {
  const local = await run.readable(ref, async () => (await run.openAnywhere(ref)) ?? null);
  // Unreadable: set aside and reported as such. Not here: nothing to keep.
  if (local === undefined) return true;
  if (local === null) return false;
  const agreed = run.state.sessions[ref]?.last_sequence ?? 0;
  const unacknowledged = (await messagesAfter(local, agreed)).messages;
  if (unacknowledged.length === 0) return false;
  run.setAside.add(ref);
  run.conflict({
    ref,
    reason: "deleted",
    message: `${ref}: deleted on the remote, but the local copy holds messages the remote never acknowledged (after sequence ${agreed}); ` +
      `kept as it is, not deleted: fork it under a new id to sync them, then delete it here`,
  });
  return true;
}

/**
 * Runs `fn` on one session; a remote whose own copy of it cannot be served (`corrupt`,
 * `unsupported-schema`) sets it aside as that session's conflict (`undefined`).
 */
async function unlessCopyRefused<T>(run: SyncRun, ref: string, fn: () => Promise<T>): Promise<T | undefined> {
  try {
    return await fn();
  } catch (error) {
    const ownCopy = error instanceof SyncRefusedError && (error.reason === "corrupt" || error.reason === "unsupported-schema");
    if (!ownCopy || error.details["ref"] !== ref) throw error;
    copyRefused(run, { ref, reason: error.reason, message: error.message });
    return undefined;
  }
}

/** A session whose copy the remote cannot serve: set aside for this run, its conflict reported. */
function copyRefused(run: SyncRun, conflict: SyncConflict): void {
  run.setAside.add(conflict.ref);
  run.conflict({ ref: conflict.ref, reason: conflict.reason, message: conflict.message });
}

/** The remote's head of a session; `undefined` when it has none (a session marked to look at again that is gone there). */
async function headOf(run: SyncRun, ref: string): Promise<SessionHead | undefined> {
  try {
    return (await run.remote.read({ v: SYNC_PROTOCOL_VERSION, ref, after_sequence: 0, limit: 1 })).head;
  } catch (error) {
    if (error instanceof SyncRefusedError && error.reason === "not-found" && !run.state.sessions[ref]?.reread) return undefined;
    throw error;
  }
}

async function pullSession(run: SyncRun, head: SessionHead): Promise<void> {
  const known = run.state.sessions[head.ref];
  const local = await run.openAnywhere(head.ref);
  if (!local) {
    const copy = await installCopy(run, head);
    return run.agreed(head, positionAfter(NO_SEGMENTS, copy.segments.map((s) => s.name)));
  }
  const last = lastSequenceOf(local);
  const agreed = known?.segments ?? NO_SEGMENTS;
  // The segments after the agreed ones on each side: nothing listed when both newest segments are the agreed one.
  let ours = await localSegmentsAfter(local, agreed);
  let theirs: SegmentNames = { after: ours.after, names: [] };
  // Local messages the remote has not acknowledged: never dropped.
  const unacknowledged = (await messagesAfter(local, known?.fork?.through ?? known?.last_sequence ?? 0)).messages;
  let diverged = Boolean(known?.reread);
  if (!diverged) {
    const shared = Math.min(last, head.last_sequence);
    const oursAtShared = (await messageAt(local, shared))?.message_id ?? null;
    const ask = head.newest_segment !== agreed.last || ours.after !== agreed.count ? (ours.after === agreed.count ? agreed : NO_SEGMENTS) : undefined;
    if (!ask && shared === head.last_sequence && head.last_message_id !== null) {
      // The head names the server's message at `shared` (its last): nothing to ask (the one-message path).
      diverged = head.last_message_id !== oursAtShared;
    } else {
      const page = await run.remote.read({
        v: SYNC_PROTOCOL_VERSION,
        ref: head.ref,
        after_sequence: shared,
        expect_message_id: oursAtShared,
        limit: 1,
        ...(ask ? { segments_after: ask } : {}),
      });
      if (ask) theirs = page.segments ?? { after: 0, names: [] };
      // The server's list lacks the agreed position: both whole lists are compared.
      if (theirs.after !== ours.after) ours = segmentNamesAfter(await segmentNamesOf(local), NO_SEGMENTS);
      // Two segmentations that are not one the other's start: the server's wins (a re-read).
      diverged = !(startsWith(ours.names, theirs.names) || startsWith(theirs.names, ours.names)) || page.diverged;
    }
  }
  if (diverged && !known?.reread && unacknowledged.length > 0) {
    run.conflict({
      ref: head.ref,
      reason: "unacknowledged",
      message: `${head.ref}: local messages after ${known?.last_sequence ?? 0} are not on the remote; kept as they are`,
    });
    return;
  }
  // The local handle stays current through its own appends; another writer's (a segment closed, labels, the archive) needs a new one.
  let current: Session | undefined = local.place === head.place ? local : undefined;
  try {
    if (diverged) {
      return await reread(run, head, known?.fork?.through ?? known?.last_sequence ?? 0, known?.fork?.ref);
    } else {
      // An archived copy is read-only: the messages it lacks (written elsewhere before the archive reached the remote) come as a re-read.
      if (head.last_sequence > last && local.place === "archived") return await reread(run, head, last, undefined);
      if (head.last_sequence > last) await fastForward(run, local, last, head);
      const adopted = theirs.names.slice(ours.names.length);
      if (adopted.length > 0) current = undefined;
      if (!(await adoptSegments(run, head, adopted))) return await reread(run, head, head.last_sequence, undefined);
      const instruction = await run.instructionOf(local);
      const { labels, instruction: remoteInstruction, updatedAt } = await headLabels(run, head);
      if (head.place === "live" && (!sameLabels(labelsOf(local.meta), labels) || instruction !== remoteInstruction)) {
        current = undefined;
        await writeLabels(run.local, head.ref, labels, remoteInstruction, run.writer, updatedAt);
      }
      if (head.place === "archived" && local.place === "live") {
        await run.local.archive(head.ref);
        run.report.archives.pulled++;
      }
    }
  } catch (error) {
    // Another writer holds the session or keeps committing to it, or it waits for a repair: nothing was changed, the next run tries again.
    if (error instanceof CorruptSessionError) run.conflict({ ref: head.ref, reason: "corrupt", message: error.message });
    else if (error instanceof WriterLockedError || error instanceof SessionBusyError || error instanceof RevisionConflictError) {
      run.conflict({ ref: head.ref, reason: "session-busy", message: error.message });
    } else if (error instanceof InvalidInputError) {
      // The local copy cannot take the remote's change (archived here, so read-only, while the remote's goes on live).
      run.setAside.add(head.ref);
      run.conflict({ ref: head.ref, reason: error.code, message: error.message });
    } else throw error;
    return;
  }
  // Local segments the server lacks (a `create` it took as an append of messages to the session it had) are pushed in this run.
  if (head.place === "live" && ours.names.length > theirs.names.length) run.pushAgain = true;
  await run.agreed(head, positionAfter(theirs.after === agreed.count ? agreed : NO_SEGMENTS, theirs.names), current);
}

/** A head's labels and instruction: as sent, or opened from an encrypted session's sealed `meta.json` and `instruction.md` (with its `updated_at`, which travelled). */
async function headLabels(run: SyncRun, head: SessionHead): Promise<{ labels: SessionLabels; instruction: string | null; updatedAt?: string }> {
  if (!head.sealed || !run.codec) return { labels: head.labels, instruction: head.instruction };
  const opened = await run.codec.openDocuments(parseSessionRef(head.ref), head.sealed.keys, head.sealed);
  return { labels: labelsOf(opened.meta), instruction: opened.instruction, updatedAt: opened.meta.updated_at };
}

/** Closes locally the server's segments `names`, in order. `false` when one does not fit (then the session is re-read). */
async function adoptSegments(run: SyncRun, head: SessionHead, names: readonly string[]): Promise<boolean> {
  for (const name of names) {
    if ((await adoptSegment(run.local, head.ref, await remoteSegment(run, head, name), run.writer)) === "conflict") return false;
  }
  return true;
}

/** Appends the remote's messages after `last` through the local commit path, page by page. */
async function fastForward(run: SyncRun, local: Session, last: number, head: SessionHead): Promise<void> {
  let after = last;
  for (;;) {
    const page = await run.remote.read({ v: SYNC_PROTOCOL_VERSION, ref: formatSessionRef(local.ref), after_sequence: after, limit: run.batchMessages });
    const messages = await pageMessages(run, head, after, page);
    if (messages.length > 0) {
      await appendSynced(local, messages.map(asNewMessage));
      run.report.pulled += messages.length;
      after = messages.at(-1)!.sequence;
    }
    if (!page.more) return;
  }
}

/** Whether `list` begins with every name of `prefix`, in order. */
function startsWith(list: readonly string[], prefix: readonly string[]): boolean {
  return prefix.every((name, i) => list[i] === name);
}
