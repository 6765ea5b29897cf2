/**
 * A pushed mutation's answer taken into a sync run's agreed state and report (docs/SYNC.md
 * "Push: numbered mutations, each applied exactly once"): applied, a duplicate (its first
 * answer), forked by the server, or rejected (sent again from what the server has, re-read,
 * forked here for an encrypted tail, or the session set aside).
 *
 * @module
 */
import { parseSegmentName } from "../layout/segments.ts";
import type { MessageRecord } from "../schema/mod.ts";
import type { MutationResult } from "./protocol.ts";
import { sealedMessagesOf } from "./sealed-codec.ts";
import { labelsOf, messagesOfSegments } from "./session-files.ts";
import { NO_SEGMENTS, positionAfter } from "./sync-state.ts";
import type { SyncRun } from "./sync-run.ts";

/** Takes a mutation's result into the agreed state. */
export function acknowledge(run: SyncRun, reported: MutationResult): void {
  const mutation = run.state.pending.find((m) => m.number === reported.number);
  if (!mutation) return;
  const result = reported.status === "duplicate" && reported.result ? reported.result : reported;
  if (result.status === "rejected") run.rejected = true;
  const known = run.state.sessions;
  // A create's messages include those of its segments.
  const messages = mutation.op === "create"
    ? [...messagesOfSegments(mutation.ref, mutation.segments), ...mutation.messages]
    : mutation.op === "append"
    ? mutation.messages
    : sealedMessagesOf(mutation);
  if (result.status === "rejected" && result.reason === "diverged" && result.fork) {
    // An encrypted tail the server could not fork: this device makes the fork, sealed for it, and pushes it.
    const fork = result.fork;
    if (!run.report.forks.some((f) => f.forked_as === fork.ref)) {
      run.report.forks.push({ ref: mutation.ref, forked_as: fork.ref, at_sequence: fork.at_sequence });
    }
    const entry = known[mutation.ref];
    const through = Math.max(result.last_sequence ?? 0, entry?.fork?.ref === fork.ref ? entry.fork.through : 0);
    const marked = { reread: true, fork: { ref: fork.ref, through, at: fork.at_sequence } };
    if (entry) Object.assign(entry, marked);
    else known[mutation.ref] = { last_sequence: 0, last_message_id: null, labels: {}, instruction: null, place: "live", segments: NO_SEGMENTS, ...marked };
    return;
  }
  if (result.status === "rejected") {
    if (result.reason === "server-behind" && mutation.op.endsWith("_sealed") && (result.last_sequence ?? 0) > 0) {
      // An encrypted session goes on from what the server has, each message sealed for Active (a record sealed in a segment opens only there).
      const entry = known[mutation.ref];
      const last = result.last_sequence!;
      known[mutation.ref] = {
        ...(entry ?? { labels: {}, instruction: null, place: "live" }),
        last_sequence: last,
        last_message_id: null,
        // The agreed segments through `last` (the server may hold any later one's messages in Active); else from the first again, which the server finds present.
        segments: entry && (parseSegmentName(entry.segments.last ?? "")?.end ?? 0) <= last ? entry.segments : NO_SEGMENTS,
      };
    } else if (result.reason === "server-behind") {
      // The server lacks messages before these: send the session again from what it has.
      delete known[mutation.ref];
    } else if (result.reason === "base-mismatch") {
      delete known[mutation.ref];
    } else if (result.reason === "segmentation") {
      // The server's segmentation wins: this device re-reads the session (its messages are all there).
      const entry = known[mutation.ref];
      if (entry) entry.reread = true;
    } else {
      // Deleted there (a tombstone, or a create at a ref it holds archived): this run sends the session nothing more, and the
      // agreed state stays, so a tombstone pulled later deletes only what the remote acknowledged (docs/SYNC.md "Deleted elsewhere").
      run.setAside.add(mutation.ref);
      run.conflict({
        ref: mutation.ref,
        reason: result.reason ?? "rejected",
        message: `${mutation.ref}: the remote refused ${mutation.op} (${result.reason}: deleted there, or archived there and this copy is not that session); ` +
          `the local copy is kept as it is: fork it under a new id to sync its messages, then delete it here`,
      });
    }
    return;
  }
  run.report.acknowledged.push(...messages.map((m) => m.message_id));
  if (mutation.op === "create" || mutation.op === "append" || mutation.op === "create_sealed" || mutation.op === "append_sealed") {
    if (reported.status !== "duplicate") run.report.pushed += messages.length;
    const last = messages.at(-1);
    const entry = known[mutation.ref];
    if (result.status === "forked" && result.fork) {
      const fork = result.fork;
      if (!run.report.forks.some((f) => f.forked_as === fork.ref)) {
        run.report.forks.push({ ref: mutation.ref, forked_as: fork.ref, at_sequence: fork.at_sequence });
      }
      const through = result.last_sequence ?? last?.sequence ?? 0;
      const marked = { reread: true, fork: { ref: fork.ref, through } };
      if (entry) Object.assign(entry, marked);
      else known[mutation.ref] = { last_sequence: 0, last_message_id: null, labels: {}, instruction: null, place: "live", segments: NO_SEGMENTS, ...marked };
      return;
    }
    if (mutation.op === "create" || mutation.op === "create_sealed") {
      known[mutation.ref] = {
        last_sequence: last?.sequence ?? 0,
        last_message_id: last?.message_id ?? null,
        labels: mutation.op === "create" ? labelsOf(mutation.meta) : {},
        instruction: mutation.op === "create" ? mutation.instruction : null,
        place: "live",
        segments: positionAfter(NO_SEGMENTS, mutation.segments.map((s) => s.name)),
        ...(mutation.op === "create_sealed" ? { sealed: { meta: mutation.meta, instruction: mutation.instruction, keys: mutation.keys } } : {}),
      };
    } else if (entry && last) {
      entry.last_sequence = last.sequence;
      entry.last_message_id = last.message_id;
    }
  } else if (mutation.op === "segment") {
    const entry = known[mutation.ref];
    // Segments are pushed in order after the agreed one: an acknowledged one that starts right after it is the next.
    const next = parseSegmentName(mutation.segment.name)!.start === (parseSegmentName(entry?.segments.last ?? "")?.end ?? 0) + 1;
    if (entry && next) entry.segments = positionAfter(entry.segments, [mutation.segment.name]);
    // A segment of a session sent in parts carried its messages: the agreed history reaches its end.
    if (entry && entry.last_sequence < parseSegmentName(mutation.segment.name)!.end) {
      // The server checked the segment; its message lines are all but the footer (a sealed line keeps sequence and id in the clear).
      const lines = mutation.segment.text.split("\n").filter((line) => line !== "").slice(0, -1);
      const carried = lines.map((line) => JSON.parse(line) as MessageRecord).filter((m) => m.sequence > entry.last_sequence);
      run.report.acknowledged.push(...carried.map((m) => m.message_id));
      if (reported.status !== "duplicate") run.report.pushed += carried.length;
      Object.assign(entry, { last_sequence: carried.at(-1)!.sequence, last_message_id: carried.at(-1)!.message_id });
    }
  } else if (mutation.op === "set_meta") {
    const entry = known[mutation.ref];
    if (entry) Object.assign(entry, { labels: mutation.labels, instruction: mutation.instruction });
  } else if (mutation.op === "set_meta_sealed") {
    const entry = known[mutation.ref];
    if (entry) entry.sealed = { meta: mutation.meta, instruction: mutation.instruction, keys: mutation.keys };
  } else if (mutation.op === "archive") {
    const entry = known[mutation.ref];
    if (entry) entry.place = "archived";
    if (reported.status !== "duplicate") run.report.archives.pushed++;
  } else {
    delete known[mutation.ref];
    if (reported.status !== "duplicate") run.report.deletes.pushed++;
  }
}
