/**
 * A session read from the remote during a sync run: whole (its segments by name and Active
 * page by page, an encrypted session's records and documents opened here) before anything
 * local changes, then written as the local copy (docs/SYNC.md "The engine").
 *
 * @module
 */
import { parseSessionRef } from "../layout/ids.ts";
import { parseSegmentName } from "../layout/segments.ts";
import type { MessageRecord } from "../schema/mod.ts";
import { refused, type SealedRecord, type SegmentFile, type SegmentPosition, type SessionHead, SYNC_PROTOCOL_VERSION } from "./protocol.ts";
import { installSession, type SessionFiles } from "./session-files.ts";
import { NO_SEGMENTS } from "./sync-state.ts";
import type { SyncRun } from "./sync-run.ts";

/** The remote's session whole (an encrypted one's documents opened here), read before anything local changes. */
export async function fetchCopy(run: SyncRun, head: SessionHead): Promise<SessionFiles> {
  const ref = parseSessionRef(head.ref);
  const read = (after: number, segmentsAfter?: SegmentPosition) =>
    run.remote.read({
      v: SYNC_PROTOCOL_VERSION,
      ref: head.ref,
      after_sequence: after,
      limit: run.batchMessages,
      ...(segmentsAfter ? { segments_after: segmentsAfter } : {}),
    });
  // Every segment name, with the first page of Active after the head's newest segment.
  const headEnd = parseSegmentName(head.newest_segment ?? "")?.end ?? 0;
  let page = await read(headEnd, NO_SEGMENTS);
  const names = page.segments?.names ?? [];
  const newestEnd = parseSegmentName(names.at(-1) ?? "")?.end ?? 0;
  // Compacted since the head: Active is read after the newest segment listed.
  if (newestEnd !== headEnd) page = await read(newestEnd);
  const segments: SegmentFile[] = [];
  for (const name of names) segments.push(await remoteSegment(run, head, name));
  const active: MessageRecord[] = [];
  active.push(...(await pageMessages(run, head, newestEnd, page)));
  while (page.more) {
    const after = active.at(-1)!.sequence;
    page = await read(after);
    active.push(...(await pageMessages(run, head, after, page)));
  }
  const sealed = head.sealed && run.codec ? await run.codec.openDocuments(ref, head.sealed.keys, head.sealed) : undefined;
  return { ...(sealed ?? { meta: page.meta!, instruction: page.head.instruction }), segments, active };
}

/** Installs the remote's session whole: its segments by name, its Active messages, `meta.json`, `instruction.md`. */
export async function installCopy(run: SyncRun, head: SessionHead): Promise<SessionFiles> {
  const copy = await fetchCopy(run, head);
  if (await writeCopy(run, head, copy)) run.countPulled(copy);
  return copy;
}

/** Writes a fetched copy as the local session, with an encrypted session's keys; `false` (nothing written) when one is there. */
export async function writeCopy(run: SyncRun, head: SessionHead, copy: SessionFiles): Promise<boolean> {
  const ref = parseSessionRef(head.ref);
  if (!(await installSession(run.local.storage, ref, copy, run.clock, head.sealed?.keys))) return false;
  if (head.place === "archived") await run.local.archive(ref);
  else await run.announce(head.ref);
  return true;
}

/** A segment of the remote's session, its plaintext text (an encrypted session's opened here). */
export async function remoteSegment(run: SyncRun, head: SessionHead, name: string): Promise<SegmentFile> {
  const { segment } = await run.remote.segment({ v: SYNC_PROTOCOL_VERSION, ref: head.ref, name });
  return head.sealed && run.codec ? run.codec.openSegment(parseSessionRef(head.ref), head.sealed.keys, segment) : segment;
}

/** A page's messages (an encrypted session's records opened here, with the keys of its head). */
export async function pageMessages(
  run: SyncRun,
  head: SessionHead,
  after: number,
  page: { readonly messages: readonly MessageRecord[]; readonly sealed?: { readonly records: readonly SealedRecord[] } },
): Promise<MessageRecord[]> {
  if (!page.sealed) return [...page.messages];
  if (!head.sealed || !run.codec) throw refused("encryption-mismatch", 409, `${head.ref}: sealed records for a store in the clear`, { ref: head.ref });
  return run.codec.openRecords(parseSessionRef(head.ref), head.sealed.keys, page.sealed.records, after);
}
