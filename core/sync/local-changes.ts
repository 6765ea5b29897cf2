/**
 * What a sync run pushes (docs/SYNC.md "The engine", "Batches"): each local session compared
 * with the agreed state and its changes numbered into the outbox (a new session as a `create`,
 * or in parts; appends, segments, labels, an archive, a delete), an encrypted session's
 * sealed; and the forks of encrypted tails the server answered `diverged`, made here.
 *
 * @module
 */
import { formatSessionRef, parseSessionRef } from "../layout/ids.ts";
import type { MessageRecord } from "../schema/mod.ts";
import { assertWritable } from "../session/commit-guards.ts";
import type { Session } from "../session/session.ts";
import { appendSynced } from "../session/append-messages.ts";
import type { Mutation } from "./protocol.ts";
import { leadingWithin, runsWithin } from "./request-sizes.ts";
import { asNewMessage, forkFiles, installSession, labelsOf, lastSequenceOf, messageAt, messagesAfter, sameLabels } from "./session-files.ts";
import type { KnownSession } from "./sync-state.ts";
import { localSegmentsAfter, type SyncRun } from "./sync-run.ts";

/**
 * Numbers the local changes the remote lacks and puts them in the outbox (saved before
 * sending). `false` when there were none. A session this run set aside or deferred is left
 * out; one that cannot be read is set aside here (a conflict), never taken for deleted.
 */
export async function enqueueLocalChanges(run: SyncRun): Promise<boolean> {
  const state = run.state;
  const before = state.pending.length;
  const seen = new Set<string>();
  for (const archived of [false, true]) {
    // A session whose meta.json cannot be listed is opened all the same: the open rebuilds it or says why it cannot.
    const unlisted: string[] = [];
    const listed = await run.local.list({ archived, onProblem: (problem) => unlisted.push(problem.refText) });
    for (const ref of [...listed.map((m) => `${m.agent_id}/${m.workspace_id}/${m.session_id}`), ...unlisted]) {
      if (!run.wanted(ref)) continue;
      seen.add(ref);
      if (run.setAside.has(ref) || run.deferred.has(ref)) continue;
      const changes = await run.readable(ref, async () => changesOf(run, await run.local.open(ref, { archived }), state.sessions[ref]));
      for (const mutation of changes ?? []) state.pending.push({ ...mutation, number: state.next_number++ } as Mutation);
    }
  }
  for (const ref of Object.keys(state.sessions)) {
    if (run.wanted(ref) && !seen.has(ref)) state.pending.push({ op: "delete", ref, number: state.next_number++ });
  }
  if (state.pending.length === before) return false;
  await run.save();
  return true;
}

/**
 * What a local session has that the agreed state `known` lacks, as mutations; all of them
 * or, when a file of it cannot be read, none. A session with a fatal diagnostic is not
 * sent: corruption blocks every write until a repair (docs/FORMAT.md "Recovery"), and what
 * a reader skips would arrive as a clean copy.
 *
 * @throws {CorruptSessionError} naming the first fatal diagnostic's file and line.
 */
async function changesOf(run: SyncRun, session: Session, known: KnownSession | undefined): Promise<DistributiveOmit<Mutation, "number">[]> {
  assertWritable(session, session.ref);
  const ref = formatSessionRef(session.ref);
  const archived = session.place === "archived";
  if (!known) return [...(await creation(run, session)), ...(archived ? [{ op: "archive" as const, ref }] : [])];
  if (known.reread) return [];
  const out: DistributiveOmit<Mutation, "number">[] = [];
  let base = known.last_sequence;
  let baseId = known.last_message_id;
  for (;;) {
    const page = await messagesAfter(session, base, run.batchMessages);
    for (const messages of runsWithin(page.messages, run.batchBytes)) {
      out.push(await appendOf(run, session, base, baseId, messages));
      base = messages.at(-1)!.sequence;
      baseId = messages.at(-1)!.message_id;
    }
    if (page.messages.length === 0 || !page.more) break;
  }
  if (!archived) {
    for (const name of (await localSegmentsAfter(session, known.segments)).names) {
      out.push({ op: "segment", ref, segment: await run.segmentFile(session, name), ...(run.codec ? { keys: await run.codec.keys(session) } : {}) });
    }
  }
  const instruction = await run.instructionOf(session);
  const agreed = known.sealed && run.codec ? await run.codec.openDocuments(session.ref, known.sealed.keys, known.sealed) : undefined;
  const [labels, agreedInstruction] = agreed ? [labelsOf(agreed.meta), agreed.instruction] : [known.labels, known.instruction];
  if (!archived && (!sameLabels(labelsOf(session.meta), labels) || instruction !== agreedInstruction)) {
    if (run.codec) out.push({ op: "set_meta_sealed", ref, keys: await run.codec.keys(session), ...(await run.codec.documents(session)) });
    else out.push({ op: "set_meta", ref, labels: labelsOf(session.meta), instruction });
  }
  if (archived && known.place === "live") out.push({ op: "archive", ref });
  return out;
}

/**
 * A new session as mutations: one `create` when it fits in `batchBytes`; else a `create` of
 * its first segments within that size, a `segment` for each later one (which the receiver
 * adds whole after its history), and `append`s of Active (docs/SYNC.md "Batches"). An
 * encrypted session the same way, sealed: its segments as stored (a record opens only in the
 * file it was sealed for), each Active message sealed for Active.
 */
async function creation(run: SyncRun, session: Session): Promise<DistributiveOmit<Mutation, "number">[]> {
  const ref = formatSessionRef(session.ref);
  const segments = await run.segmentsOf(session);
  const whole = session.meta.history_bytes <= run.batchBytes;
  const first = whole ? segments.length : leadingWithin(segments, run.batchBytes);
  const active = whole ? session.active : [];
  const keys = run.codec && (await run.codec.keys(session));
  const out: DistributiveOmit<Mutation, "number">[] = [
    run.codec
      ? {
        op: "create_sealed",
        ref,
        keys: keys!,
        ...(await run.codec.documents(session)),
        segments: segments.slice(0, first),
        lines: await run.codec.sealActive(session, active),
      }
      : { op: "create", ref, meta: session.meta, instruction: await run.instructionOf(session), segments: segments.slice(0, first), messages: [...active] },
  ];
  if (whole) return out;
  for (const segment of segments.slice(first)) out.push({ op: "segment", ref, segment, ...(keys ? { keys } : {}) });
  let base = session.newestSegment?.end ?? 0;
  let baseId = (await messageAt(session, base))?.message_id ?? null;
  for (let at = 0; at < session.active.length; at += run.batchMessages) {
    for (const messages of runsWithin(session.active.slice(at, at + run.batchMessages), run.batchBytes)) {
      out.push(await appendOf(run, session, base, baseId, messages));
      base = messages.at(-1)!.sequence;
      baseId = messages.at(-1)!.message_id;
    }
  }
  return out;
}

/** An `append` of `messages` after `base` (an encrypted session's `append_sealed`, each message sealed for Active). */
async function appendOf(
  run: SyncRun,
  session: Session,
  base: number,
  baseId: string | null,
  messages: MessageRecord[],
): Promise<DistributiveOmit<Mutation, "number">> {
  const ref = formatSessionRef(session.ref);
  if (!run.codec) return { op: "append", ref, base_sequence: base, base_message_id: baseId, messages };
  const [keys, lines] = [await run.codec.keys(session), await run.codec.sealActive(session, messages)];
  return { op: "append_sealed", ref, keys, base_sequence: base, base_message_id: baseId, lines };
}

/**
 * Makes the forks of encrypted tails the server answered `diverged` (docs/SYNC.md "End-to-end
 * encrypted sessions"): the local history through the last shared sequence and the tail
 * through the last one sent, installed as the fork (so sealed for it, under this session's
 * keys made anew), to be pushed as a new session. Made once: a fork already here is only
 * completed with the tail it lacks.
 */
export async function makeSealedForks(run: SyncRun): Promise<void> {
  for (const [ref, known] of Object.entries(run.state.sessions)) {
    const fork = known.fork;
    if (fork?.at === undefined) continue;
    const origin = await run.openAnywhere(ref);
    if (origin) {
      const tail = (await messagesAfter(origin, fork.at)).messages.filter((m) => m.sequence <= fork.through);
      const made = await run.open(fork.ref, false);
      if (!made) {
        const forkRef = parseSessionRef(fork.ref);
        await installSession(run.local.storage, forkRef, await forkFiles(run.local.storage, origin, forkRef, fork.at, tail, run.clock), run.clock);
        await run.announce(fork.ref);
      } else if (lastSequenceOf(made) < fork.through) {
        await appendSynced(made, tail.filter((m) => m.sequence > lastSequenceOf(made)).map(asNewMessage));
      }
    }
    delete fork.at;
    await run.save();
  }
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
