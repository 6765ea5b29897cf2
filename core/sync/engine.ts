/**
 * The sync engine: brings a local store and a remote ({@linkcode SyncRemote}) to the same
 * state (docs/SYNC.md "The engine"). It pushes what the remote lacks as numbered mutations,
 * kept in the local store's outbox (`sync/remotes/<remote>.json`) before they are sent, so an
 * interrupted sync resends the same numbers and nothing is applied twice; then it pulls what
 * the local store lacks by cursor. A tail the server forked, or a segmentation it did not
 * take, is re-read from the server (the server's copy wins; the local messages are in the
 * session or its fork by then), and every fork is reported.
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
  UnsupportedSchemaError,
  WriterLockedError,
} from "../errors.ts";
import { EncryptedStorage } from "../encryption/encrypted-storage.ts";
import { STORE_MARKER } from "../encryption/places.ts";
import { formatSessionRef, parseSessionRef } from "../layout/ids.ts";
import { formatSegmentName, parseSegmentName } from "../layout/segments.ts";
import { assertFields, type KnownFields, knownOptions } from "../schema/arguments.ts";
import { encodeJsonDocument, type MessageRecord } from "../schema/mod.ts";
import { newId } from "../session/ids.ts";
import { assertWritable } from "../session/commit-guards.ts";
import { acquireWriterLock, releaseWriterLock } from "../session/lock.ts";
import { ANONYMOUS_WRITER, type WriterIdentity } from "../session/owner.ts";
import type { Session } from "../session/session.ts";
import { partsOf } from "../session/session-view.ts";
import { appendSynced } from "../session/append-messages.ts";
import { notifyRemoved } from "../session/context.ts";
import type { StoragePort } from "../storage/port.ts";
import type { Sessions } from "../session/registry.ts";
import {
  type Mutation,
  type MutationResult,
  refused,
  type SealedRecord,
  type SegmentFile,
  type SegmentNames,
  segmentNamesAfter,
  type SegmentPosition,
  type SessionHead,
  type SessionLabels,
  SYNC_PROTOCOL_VERSION,
} from "./protocol.ts";
import type { SyncConflict, SyncReport } from "./report.ts";
import { byteEstimate, leadingWithin, runsWithin, tooLarge } from "./request-sizes.ts";
import { SealedCodec, sealedMessagesOf } from "./sealed-codec.ts";
import type { SyncRemote } from "./remote.ts";
import { type RereadSwap, settleRereads, settleSwap, type SwapOutcome, swapSession } from "./rereads.ts";
import { type KnownSession, NO_SEGMENTS, positionAfter, stateOf, type SyncState, syncStatePath } from "./sync-state.ts";
import {
  adoptSegment,
  asNewMessage,
  forkFiles,
  hiddenFolder,
  installSession,
  labelsOf,
  lastSequenceOf,
  messageAt,
  messageIdsAfter,
  messagesAfter,
  messagesOfSegments,
  readSegmentFile,
  sameLabels,
  segmentNamesOf,
  type SessionFiles,
  stageSessionFiles,
  type SyncWriter,
  withCarried,
  writeLabels,
} from "./session-files.ts";

/** Options of {@linkcode syncStores}. */
export interface SyncStoresOptions {
  /** The local store's sessions. */
  readonly local: Sessions;
  /** The other side. */
  readonly remote: SyncRemote;
  /** Only these sessions (`agent/workspace/session`); default every session of both sides. */
  readonly refs?: readonly string[];
  /** Messages per append mutation (fewer when they weigh more than `batchBytes`) and per page read. Default 500. */
  readonly batchMessages?: number;
  /** Mutations per push request. Default 20. */
  readonly batchMutations?: number;
  /**
   * Bytes of segments and messages per push request, about (a request holds at least one
   * mutation), and the most a `create` or an `append` carries (an append at least one
   * message): a larger new session is sent as a `create` of its first segments, then
   * `segment`s and `append`s. Default 8 MiB.
   */
  readonly batchBytes?: number;
  /** Milliseconds since the epoch; injectable for tests. */
  readonly clock?: () => number;
  /** Who the engine's own locked writes (labels, adopted segments) are by; default the anonymous writer. */
  readonly identity?: WriterIdentity;
}

/** The fields of {@linkcode SyncStoresOptions} (the scheduler's options have them too). */
export const SYNC_STORES_FIELDS: KnownFields<SyncStoresOptions> = {
  local: true,
  remote: true,
  refs: true,
  batchMessages: true,
  batchMutations: true,
  batchBytes: true,
  clock: true,
  identity: true,
};

const decoder = new TextDecoder();

/**
 * Syncs the local store with a remote: push, then pull. Resumable: run it again after any
 * interruption and it finishes the job without applying anything twice.
 *
 * @example
 * ```ts
 * import { MemoryStorage, Sessions } from "sessionfold";
 * import { directRemote } from "sessionfold/sync";
 *
 * const local = new Sessions({ storage: new MemoryStorage() });
 * const report = await syncStores({ local, remote: directRemote(new MemoryStorage(), { id: "backup" }) });
 * console.log(report.pushed, report.pulled, report.forks);
 * ```
 * @throws {SyncRefusedError} when the remote refuses the client (401, 403, another user's client id); nothing was changed by the refused request.
 * @throws {InvalidInputError} when `options` is not an object with `local` and `remote`, or has a field it does not know;
 * when the remote serves the local store itself, or the local store is encrypted and not given as its `EncryptedStorage`; nothing was written.
 */
export async function syncStores(options: SyncStoresOptions): Promise<SyncReport> {
  assertFields(knownOptions(options, "syncStores(options)", SYNC_STORES_FIELDS), "syncStores(options)", { local: "object!", remote: "object!" });
  return new SyncRun(options).run();
}

class SyncRun {
  readonly #local: Sessions;
  readonly #remote: SyncRemote;
  readonly #only: Set<string> | undefined;
  readonly #batchMessages: number;
  readonly #batchMutations: number;
  readonly #batchBytes: number;
  readonly #clock: () => number;
  readonly #writer: SyncWriter;
  readonly #statePath: string;
  readonly report: SyncReport = {
    pushed: 0,
    pulled: 0,
    deletes: { pushed: 0, pulled: 0 },
    archives: { pushed: 0, pulled: 0 },
    forks: [],
    conflicts: [],
    reread: [],
    acknowledged: [],
  };
  #state!: SyncState;
  /** Set when the pull leaves local changes the remote lacks: messages a re-read appended again, segments it did not take. */
  #pushAgain = false;
  /** Set when the remote rejected a mutation: the local changes are looked at again (it may need others). */
  #rejected = false;
  /**
   * Sessions this run leaves as they are: their local copy cannot be read (corrupt, an unknown
   * schema) or the remote refused their mutation. Each was reported as a conflict.
   */
  readonly #setAside = new Set<string>();
  /** Sessions whose mutations wait in the outbox for the next run (`session-busy` on the remote). */
  readonly #deferred = new Set<string>();
  /** Mutations per request now: `batchMutations`, halved after a batch the remote found too large, doubled back after one it took. */
  #batchCap: number;
  /** An encrypted local store: its sessions travel sealed (docs/SYNC.md "End-to-end encrypted sessions"). */
  readonly #codec: SealedCodec | undefined;

  constructor(options: SyncStoresOptions) {
    this.#local = options.local;
    this.#remote = options.remote;
    this.#only = options.refs && new Set(options.refs.map((r) => formatSessionRef(parseSessionRef(r))));
    this.#batchMessages = options.batchMessages ?? 500;
    this.#batchMutations = options.batchMutations ?? 20;
    this.#batchCap = this.#batchMutations;
    this.#batchBytes = options.batchBytes ?? 8 * 1024 * 1024;
    this.#clock = options.clock ?? Date.now;
    this.#writer = { identity: options.identity ?? ANONYMOUS_WRITER, clock: this.#clock };
    this.#statePath = syncStatePath(options.remote.id);
    this.#codec = options.local.storage instanceof EncryptedStorage ? new SealedCodec(options.local.storage) : undefined;
  }

  async run(): Promise<SyncReport> {
    // Fail closed: an encrypted store reached through anything but its EncryptedStorage would sync its plaintext view.
    if (!this.#codec && (await EncryptedStorage.isEncrypted(this.#local.storage))) {
      throw new InvalidInputError(
        `the local store is encrypted (${STORE_MARKER}) but sync was not given its EncryptedStorage: give Sessions over the EncryptedStorage itself, so that its sessions travel sealed`,
        { file: STORE_MARKER },
      );
    }
    if (this.#remote.storage !== undefined && (await sameStore(this.#remote.storage, this.#local.storage))) {
      throw new InvalidInputError(`the remote ${JSON.stringify(this.#remote.id)} serves the local store itself: sync needs two stores`, {
        remote: this.#remote.id,
      });
    }
    // A re-read a crash cut is finished or undone first: until then its session may be missing here, which a push would take for a delete.
    for (const { ref, message } of await settleRereads(this.#local.storage)) this.#conflict({ ref, reason: "reread-blocked", message });
    const bytes = await this.#local.storage.read(this.#statePath);
    this.#state = bytes ? stateOf(JSON.parse(decoder.decode(bytes))) : { client_id: newId("client"), next_number: 1, pending: [], sessions: {} };
    // A pull that left local changes the remote lacks (messages a re-read carried over to a
    // fork, segments a create did not bring) pushes them: once more.
    for (let pass = 0; pass < 3; pass++) {
      this.#pushAgain = false;
      // A rejected mutation can ask for another (the server lacks earlier messages, a sealed fork to push): a few rounds.
      for (let round = 0; round < 4; round++) {
        this.#rejected = false;
        if (!(await this.#flush())) return this.report;
        await this.#makeSealedForks();
        // What was enqueued went through: every session is not opened again to find nothing (changes made meanwhile go next time).
        if (round > 0 && !this.#rejected) break;
        if (!(await this.#enqueueLocalChanges())) break;
      }
      await this.#pull();
      if (!this.#pushAgain) break;
    }
    return this.report;
  }

  #wanted(ref: string): boolean {
    return !this.#only || this.#only.has(ref);
  }

  async #save(): Promise<void> {
    await this.#local.storage.replace(this.#statePath, encodeJsonDocument(this.#state));
  }

  /**
   * Sends the outbox until it is empty, or holds only mutations deferred to the next run.
   * `false` when the remote stopped it for a reason that is not one session's (reported as a
   * conflict); a refusal of one session's mutation sets that session aside and goes on with
   * the others (docs/SYNC.md "The engine", "One session at a time").
   */
  async #flush(): Promise<boolean> {
    const state = this.#state;
    this.#deferredLast();
    while (state.pending.length > 0 && !this.#deferred.has(state.pending[0]!.ref)) {
      const batch = this.#nextBatch();
      let outcome;
      try {
        outcome = await this.#remote.push({ v: SYNC_PROTOCOL_VERSION, client_id: state.client_id, mutations: batch });
      } catch (error) {
        if (!(error instanceof SyncRefusedError)) throw error;
        // Refused whole: nothing was applied. Too large: a smaller batch, down to the one mutation, which is its session's refusal.
        if (error.reason === "too-large" && batch.length > 1) {
          this.#batchCap = Math.ceil(batch.length / 2);
          continue;
        }
        const refusal = error.reason === "too-large" ? tooLarge(batch[0]!, error) : { ...error.details, reason: error.reason, message: error.message };
        // Otherwise the refusal is about the batch's first mutation.
        if (!(await this.#refused(refusal))) throw error;
        continue;
      }
      // Taken: the next batch may be larger again.
      this.#batchCap = Math.min(this.#batchMutations, this.#batchCap * 2);
      for (const result of outcome.results) this.#acknowledged(result);
      state.pending = state.pending.filter((m) => !outcome.results.some((r) => r.number === m.number));
      await this.#save();
      if (outcome.error && !(await this.#refused(outcome.error))) {
        this.report.conflicts.push({ ref: String(outcome.error.ref ?? ""), reason: outcome.error.reason, message: outcome.error.message });
        return false;
      }
    }
    return true;
  }

  /**
   * Answers a refusal of the first pending mutation, which the remote did not apply (docs/SYNC.md
   * "Errors": a refused request changes nothing, and the answered ones before it left the
   * outbox). A gap renumbers the outbox. A refusal that names that mutation's session is a
   * conflict of that session alone: `session-busy` (another writer holds it on the remote)
   * defers its mutations to the next run, behind the others; any other reason takes them out
   * of the outbox, and the session is compared again on the next run. The rest is numbered
   * from the refused number, which the remote still waits for. `false`: not one session's
   * refusal (the caller stops).
   */
  async #refused(refusal: { readonly reason: string; readonly message: string; readonly [detail: string]: unknown }): Promise<boolean> {
    const state = this.#state;
    const first = state.pending[0];
    if (refusal.reason === "mutation-gap") {
      this.#closeGap(Number(refusal["expected"]));
    } else if (first && refusal["ref"] === first.ref) {
      this.#conflict({ ref: first.ref, reason: refusal.reason, message: refusal.message });
      if (refusal.reason === "session-busy") {
        this.#deferred.add(first.ref);
        this.#deferredLast();
      } else {
        this.#setAside.add(first.ref);
        state.pending = state.pending.filter((m) => m.ref !== first.ref);
        this.#renumberFrom(first.number);
      }
    } else return false;
    await this.#save();
    return true;
  }

  /**
   * Moves the mutations of deferred sessions behind the others, numbered from the first
   * pending number. Only when a deferred session's mutation is first: then the remote refused
   * it in this run and waits for its number, so no pending number was applied.
   */
  #deferredLast(): void {
    const pending = this.#state.pending;
    const first = pending[0];
    if (!first || !this.#deferred.has(first.ref)) return;
    this.#state.pending = [...pending.filter((m) => !this.#deferred.has(m.ref)), ...pending.filter((m) => this.#deferred.has(m.ref))];
    this.#renumberFrom(first.number);
  }

  /** Numbers the pending mutations `number`, `number + 1`… in their order (none of them was applied). */
  #renumberFrom(number: number): void {
    const state = this.#state;
    state.pending = state.pending.map((m, i) => ({ ...m, number: number + i }));
    state.next_number = number + state.pending.length;
  }

  /**
   * The first pending mutations, at most `batchMutations` (fewer after a batch the remote
   * found too large) and about `batchBytes` (at least one), none of a deferred session.
   */
  #nextBatch(): Mutation[] {
    const pending = this.#state.pending;
    let bytes = byteEstimate(pending[0]!);
    let count = 1;
    const sendable = (m: Mutation) => !this.#deferred.has(m.ref) && (bytes += byteEstimate(m)) <= this.#batchBytes;
    while (count < Math.min(pending.length, this.#batchCap) && sendable(pending[count]!)) count++;
    return pending.slice(0, count);
  }

  /**
   * The server waits for `expected`. Below the first pending number: the numbers before it
   * were applied and their answer lost, so they go. Above it: the server lost mutations it
   * had acknowledged (restored from a backup), so the pending ones are numbered from there.
   */
  #closeGap(expected: number): void {
    const state = this.#state;
    const first = state.pending[0]?.number;
    if (first === undefined || !Number.isSafeInteger(expected)) return;
    if (expected > first) {
      state.pending = state.pending.filter((m) => m.number >= expected);
      state.next_number = (state.pending.at(-1)?.number ?? expected - 1) + 1;
    } else this.#renumberFrom(expected);
  }

  /** Takes a mutation's result into the agreed state. */
  #acknowledged(reported: MutationResult): void {
    const mutation = this.#state.pending.find((m) => m.number === reported.number);
    if (!mutation) return;
    const result = reported.status === "duplicate" && reported.result ? reported.result : reported;
    if (result.status === "rejected") this.#rejected = true;
    const known = this.#state.sessions;
    // A create's messages include those of its segments.
    const messages = mutation.op === "create"
      ? [...messagesOfSegments(mutation.ref, mutation.segments), ...mutation.messages]
      : mutation.op === "append"
      ? mutation.messages
      : sealedMessagesOf(mutation);
    if (result.status === "rejected" && result.reason === "diverged" && result.fork) {
      // An encrypted tail the server could not fork: this device makes the fork, sealed for it, and pushes it.
      const fork = result.fork;
      if (!this.report.forks.some((f) => f.forked_as === fork.ref)) {
        this.report.forks.push({ ref: mutation.ref, forked_as: fork.ref, at_sequence: fork.at_sequence });
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
        this.#setAside.add(mutation.ref);
        this.#conflict({
          ref: mutation.ref,
          reason: result.reason ?? "rejected",
          message:
            `${mutation.ref}: the remote refused ${mutation.op} (${result.reason}: deleted there, or archived there and this copy is not that session); ` +
            `the local copy is kept as it is: fork it under a new id to sync its messages, then delete it here`,
        });
      }
      return;
    }
    this.report.acknowledged.push(...messages.map((m) => m.message_id));
    if (mutation.op === "create" || mutation.op === "append" || mutation.op === "create_sealed" || mutation.op === "append_sealed") {
      if (reported.status !== "duplicate") this.report.pushed += messages.length;
      const last = messages.at(-1);
      const entry = known[mutation.ref];
      if (result.status === "forked" && result.fork) {
        const fork = result.fork;
        if (!this.report.forks.some((f) => f.forked_as === fork.ref)) {
          this.report.forks.push({ ref: mutation.ref, forked_as: fork.ref, at_sequence: fork.at_sequence });
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
        this.report.acknowledged.push(...carried.map((m) => m.message_id));
        if (reported.status !== "duplicate") this.report.pushed += carried.length;
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
      if (reported.status !== "duplicate") this.report.archives.pushed++;
    } else {
      delete known[mutation.ref];
      if (reported.status !== "duplicate") this.report.deletes.pushed++;
    }
  }

  /**
   * Numbers the local changes the remote lacks and puts them in the outbox (saved before
   * sending). `false` when there were none. A session this run set aside or deferred is left
   * out; one that cannot be read is set aside here (a conflict), never taken for deleted.
   */
  async #enqueueLocalChanges(): Promise<boolean> {
    const state = this.#state;
    const before = state.pending.length;
    const seen = new Set<string>();
    for (const archived of [false, true]) {
      // A session whose meta.json cannot be listed is opened all the same: the open rebuilds it or says why it cannot.
      const unlisted: string[] = [];
      const listed = await this.#local.list({ archived, onProblem: (problem) => unlisted.push(problem.refText) });
      for (const ref of [...listed.map((m) => `${m.agent_id}/${m.workspace_id}/${m.session_id}`), ...unlisted]) {
        if (!this.#wanted(ref)) continue;
        seen.add(ref);
        if (this.#setAside.has(ref) || this.#deferred.has(ref)) continue;
        const changes = await this.#readable(ref, async () => this.#changesOf(await this.#local.open(ref, { archived }), state.sessions[ref]));
        for (const mutation of changes ?? []) state.pending.push({ ...mutation, number: state.next_number++ } as Mutation);
      }
    }
    for (const ref of Object.keys(state.sessions)) {
      if (this.#wanted(ref) && !seen.has(ref)) state.pending.push({ op: "delete", ref, number: state.next_number++ });
    }
    if (state.pending.length === before) return false;
    await this.#save();
    return true;
  }

  /**
   * Runs `read` on a local session; `undefined` when its copy cannot be read: recovery
   * reports it corrupt, or a newer sessionfold wrote it. Such a session is set aside for this
   * run and reported; the others go on (docs/SYNC.md "One session at a time").
   */
  async #readable<T>(ref: string, read: () => Promise<T>): Promise<T | undefined> {
    try {
      return await read();
    } catch (error) {
      if (!(error instanceof CorruptSessionError || error instanceof UnsupportedSchemaError)) throw error;
      this.#setAside.add(ref);
      const message = error.message.startsWith(ref) ? error.message : `${ref}: ${error.message}`;
      this.#conflict({ ref, reason: error.code, message });
      return undefined;
    }
  }

  /**
   * What a local session has that the agreed state `known` lacks, as mutations; all of them
   * or, when a file of it cannot be read, none. A session with a fatal diagnostic is not
   * sent: corruption blocks every write until a repair (docs/FORMAT.md "Recovery"), and what
   * a reader skips would arrive as a clean copy.
   *
   * @throws {CorruptSessionError} naming the first fatal diagnostic's file and line.
   */
  async #changesOf(session: Session, known: KnownSession | undefined): Promise<DistributiveOmit<Mutation, "number">[]> {
    assertWritable(session, session.ref);
    const ref = formatSessionRef(session.ref);
    const archived = session.place === "archived";
    if (!known) return [...(await this.#creation(session)), ...(archived ? [{ op: "archive" as const, ref }] : [])];
    if (known.reread) return [];
    const out: DistributiveOmit<Mutation, "number">[] = [];
    let base = known.last_sequence;
    let baseId = known.last_message_id;
    for (;;) {
      const page = await messagesAfter(session, base, this.#batchMessages);
      for (const messages of runsWithin(page.messages, this.#batchBytes)) {
        out.push(await this.#appendOf(session, base, baseId, messages));
        base = messages.at(-1)!.sequence;
        baseId = messages.at(-1)!.message_id;
      }
      if (page.messages.length === 0 || !page.more) break;
    }
    if (!archived) {
      for (const name of (await localSegmentsAfter(session, known.segments)).names) {
        out.push({ op: "segment", ref, segment: await this.#segmentFile(session, name), ...(this.#codec ? { keys: await this.#codec.keys(session) } : {}) });
      }
    }
    const instruction = await this.#instructionOf(session);
    const agreed = known.sealed && this.#codec ? await this.#codec.openDocuments(session.ref, known.sealed.keys, known.sealed) : undefined;
    const [labels, agreedInstruction] = agreed ? [labelsOf(agreed.meta), agreed.instruction] : [known.labels, known.instruction];
    if (!archived && (!sameLabels(labelsOf(session.meta), labels) || instruction !== agreedInstruction)) {
      if (this.#codec) out.push({ op: "set_meta_sealed", ref, keys: await this.#codec.keys(session), ...(await this.#codec.documents(session)) });
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
  async #creation(session: Session): Promise<DistributiveOmit<Mutation, "number">[]> {
    const ref = formatSessionRef(session.ref);
    const segments = await this.#segmentsOf(session);
    const whole = session.meta.history_bytes <= this.#batchBytes;
    const first = whole ? segments.length : leadingWithin(segments, this.#batchBytes);
    const active = whole ? session.active : [];
    const keys = this.#codec && (await this.#codec.keys(session));
    const out: DistributiveOmit<Mutation, "number">[] = [
      this.#codec
        ? {
          op: "create_sealed",
          ref,
          keys: keys!,
          ...(await this.#codec.documents(session)),
          segments: segments.slice(0, first),
          lines: await this.#codec.sealActive(session, active),
        }
        : { op: "create", ref, meta: session.meta, instruction: await this.#instructionOf(session), segments: segments.slice(0, first), messages: [...active] },
    ];
    if (whole) return out;
    for (const segment of segments.slice(first)) out.push({ op: "segment", ref, segment, ...(keys ? { keys } : {}) });
    let base = session.newestSegment?.end ?? 0;
    let baseId = (await messageAt(session, base))?.message_id ?? null;
    for (let at = 0; at < session.active.length; at += this.#batchMessages) {
      for (const messages of runsWithin(session.active.slice(at, at + this.#batchMessages), this.#batchBytes)) {
        out.push(await this.#appendOf(session, base, baseId, messages));
        base = messages.at(-1)!.sequence;
        baseId = messages.at(-1)!.message_id;
      }
    }
    return out;
  }

  /** An `append` of `messages` after `base` (an encrypted session's `append_sealed`, each message sealed for Active). */
  async #appendOf(session: Session, base: number, baseId: string | null, messages: MessageRecord[]): Promise<DistributiveOmit<Mutation, "number">> {
    const ref = formatSessionRef(session.ref);
    if (!this.#codec) return { op: "append", ref, base_sequence: base, base_message_id: baseId, messages };
    const [keys, lines] = [await this.#codec.keys(session), await this.#codec.sealActive(session, messages)];
    return { op: "append_sealed", ref, keys, base_sequence: base, base_message_id: baseId, lines };
  }

  async #pull(): Promise<void> {
    const state = this.#state;
    const response = await this.#remote.pull({ v: SYNC_PROTOCOL_VERSION, ...(state.cursor !== undefined ? { cursor: state.cursor } : {}) });
    for (const tombstone of response.tombstones) {
      if (!this.#wanted(tombstone.ref) || (await this.#keptFromTombstone(tombstone.ref))) continue;
      let deleted = false;
      for (const archived of [false, true]) {
        deleted = (await this.#local.delete(tombstone.ref, { archived }).then(() =>
          true, (e: unknown) => (e instanceof NotFoundError ? false : Promise.reject(e)))) ||
          deleted;
      }
      if (deleted) this.report.deletes.pulled++;
      delete state.sessions[tombstone.ref];
    }
    const heads = response.sessions.filter((h) => this.#wanted(h.ref));
    // Never mixed: a session in the clear is not pulled into an encrypted store, nor an encrypted one into a store in the clear.
    const mixed = heads.find((h) => Boolean(h.sealed) !== Boolean(this.#codec));
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
    const refusedCopies = (response.refused ?? []).filter((c) => this.#wanted(c.ref) && !this.#setAside.has(c.ref));
    for (const copy of refusedCopies) this.#copyRefused(copy);
    // Whose head the cursor passes (to look at again when set aside).
    const listed = new Set([...heads, ...refusedCopies].map((h) => h.ref));
    // A session to re-read, or to look at again, whose head did not change since the cursor: ask for it.
    const again = Object.entries(state.sessions).filter(([, known]) => known.reread || known.recheck).map(([ref]) => ref);
    for (const ref of [...again, ...(state.unseen ?? [])]) {
      if (!this.#wanted(ref)) continue;
      listed.add(ref);
      if (this.#setAside.has(ref) || heads.some((h) => h.ref === ref)) continue;
      const head = await this.#unlessCopyRefused(ref, () => this.#headOf(ref));
      if (head) heads.push(head);
      else if (!this.#setAside.has(ref)) delete state.sessions[ref]?.recheck;
    }
    for (const head of heads) {
      if (!this.#setAside.has(head.ref)) await this.#unlessCopyRefused(head.ref, () => this.#pullSession(head));
    }
    // Set aside in this run: left as it is, and looked at again on a later run (its head, which this cursor passes, may
    // hold changes): an agreed session is marked, one never agreed kept in `unseen`; the cursor goes on.
    const unseen = (state.unseen ?? []).filter((ref) => !this.#wanted(ref));
    for (const ref of listed) {
      if (!this.#setAside.has(ref)) continue;
      const known = state.sessions[ref];
      if (known) known.recheck = true;
      else unseen.push(ref);
    }
    if (unseen.length > 0) state.unseen = unseen;
    else delete state.unseen;
    state.cursor = response.cursor;
    await this.#save();
  }

  /**
   * Whether a tombstone must leave the local copy as it is: it holds messages the remote never
   * acknowledged (after the agreed sequence; every message of a session never agreed), which
   * the delete did not see, or it cannot be read. Reported as the session's conflict; the agreed
   * state stays, so the user's delete of it here is pushed as one (docs/SYNC.md "Deleted elsewhere").
   */
  async #keptFromTombstone(ref: string): Promise<boolean> {
    const local = await this.#readable(ref, async () => (await this.#open(ref, false)) ?? (await this.#open(ref, true)) ?? null);
    // Unreadable: set aside and reported as such. Not here: nothing to keep.
    if (local === undefined) return true;
    if (local === null) return false;
    const agreed = this.#state.sessions[ref]?.last_sequence ?? 0;
    const unacknowledged = (await messagesAfter(local, agreed)).messages;
    if (unacknowledged.length === 0) return false;
    this.#setAside.add(ref);
    this.#conflict({
      ref,
      reason: "deleted",
      message: `${ref}: deleted on the remote, but the local copy holds messages the remote never acknowledged (after sequence ${agreed}); ` +
        `kept as it is, not deleted: fork it under a new id to sync them, then delete it here`,
    });
    return true;
  }

  /** Reports a session's conflict, once per session in a run: the first says why it was set aside. */
  #conflict(conflict: SyncConflict): void {
    if (!this.report.conflicts.some((c) => c.ref === conflict.ref)) this.report.conflicts.push(conflict);
  }

  /**
   * Runs `fn` on one session; a remote whose own copy of it cannot be served (`corrupt`,
   * `unsupported-schema`) sets it aside as that session's conflict (`undefined`).
   */
  async #unlessCopyRefused<T>(ref: string, fn: () => Promise<T>): Promise<T | undefined> {
    try {
      return await fn();
    } catch (error) {
      const ownCopy = error instanceof SyncRefusedError && (error.reason === "corrupt" || error.reason === "unsupported-schema");
      if (!ownCopy || error.details["ref"] !== ref) throw error;
      this.#copyRefused({ ref, reason: error.reason, message: error.message });
      return undefined;
    }
  }

  /** A session whose copy the remote cannot serve: set aside for this run, its conflict reported. */
  #copyRefused(conflict: SyncConflict): void {
    this.#setAside.add(conflict.ref);
    this.#conflict({ ref: conflict.ref, reason: conflict.reason, message: conflict.message });
  }

  /** The remote's head of a session; `undefined` when it has none (a session marked to look at again that is gone there). */
  async #headOf(ref: string): Promise<SessionHead | undefined> {
    try {
      return (await this.#remote.read({ v: SYNC_PROTOCOL_VERSION, ref, after_sequence: 0, limit: 1 })).head;
    } catch (error) {
      if (error instanceof SyncRefusedError && error.reason === "not-found" && !this.#state.sessions[ref]?.reread) return undefined;
      throw error;
    }
  }

  async #pullSession(head: SessionHead): Promise<void> {
    const known = this.#state.sessions[head.ref];
    const local = (await this.#open(head.ref, false)) ?? (await this.#open(head.ref, true));
    if (!local) {
      const copy = await this.#install(head);
      return this.#agreed(head, positionAfter(NO_SEGMENTS, copy.segments.map((s) => s.name)));
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
        const page = await this.#remote.read({
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
      this.#conflict({
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
        return await this.#reread(head, known?.fork?.through ?? known?.last_sequence ?? 0, known?.fork?.ref);
      } else {
        // An archived copy is read-only: the messages it lacks (written elsewhere before the archive reached the remote) come as a re-read.
        if (head.last_sequence > last && local.place === "archived") return await this.#reread(head, last, undefined);
        if (head.last_sequence > last) await this.#fastForward(local, last, head);
        const adopted = theirs.names.slice(ours.names.length);
        if (adopted.length > 0) current = undefined;
        if (!(await this.#adoptSegments(head, adopted))) return await this.#reread(head, head.last_sequence, undefined);
        const instruction = await this.#instructionOf(local);
        const { labels, instruction: remoteInstruction, updatedAt } = await this.#labelsOf(head);
        if (head.place === "live" && (!sameLabels(labelsOf(local.meta), labels) || instruction !== remoteInstruction)) {
          current = undefined;
          await writeLabels(this.#local, head.ref, labels, remoteInstruction, this.#writer, updatedAt);
        }
        if (head.place === "archived" && local.place === "live") {
          await this.#local.archive(head.ref);
          this.report.archives.pulled++;
        }
      }
    } catch (error) {
      // Another writer holds the session or keeps committing to it, or it waits for a repair: nothing was changed, the next run tries again.
      if (error instanceof CorruptSessionError) this.#conflict({ ref: head.ref, reason: "corrupt", message: error.message });
      else if (error instanceof WriterLockedError || error instanceof SessionBusyError || error instanceof RevisionConflictError) {
        this.#conflict({ ref: head.ref, reason: "session-busy", message: error.message });
      } else if (error instanceof InvalidInputError) {
        // The local copy cannot take the remote's change (archived here, so read-only, while the remote's goes on live).
        this.#setAside.add(head.ref);
        this.#conflict({ ref: head.ref, reason: error.code, message: error.message });
      } else throw error;
      return;
    }
    // Local segments the server lacks (a `create` it took as an append of messages to the session it had) are pushed in this run.
    if (head.place === "live" && ours.names.length > theirs.names.length) this.#pushAgain = true;
    await this.#agreed(head, positionAfter(theirs.after === agreed.count ? agreed : NO_SEGMENTS, theirs.names), current);
  }

  /**
   * Records what both sides now have of a session: through the server's last sequence (local
   * messages after it are still to push), and `segments`, how far both have the same ones.
   * `session`: the local copy as it is now, when the caller holds it.
   */
  async #agreed(head: SessionHead, segments: SegmentPosition, session?: Session): Promise<void> {
    const now = session ?? (await this.#open(head.ref, head.place === "archived"))!;
    const last = Math.min(lastSequenceOf(now), head.last_sequence);
    this.#state.sessions[head.ref] = {
      last_sequence: last,
      last_message_id: (await messageAt(now, last))?.message_id ?? null,
      labels: head.labels,
      instruction: head.instruction,
      place: head.place,
      segments,
      ...(head.sealed ? { sealed: head.sealed } : {}),
    };
  }

  /** A head's labels and instruction: as sent, or opened from an encrypted session's sealed `meta.json` and `instruction.md` (with its `updated_at`, which travelled). */
  async #labelsOf(head: SessionHead): Promise<{ labels: SessionLabels; instruction: string | null; updatedAt?: string }> {
    if (!head.sealed || !this.#codec) return { labels: head.labels, instruction: head.instruction };
    const opened = await this.#codec.openDocuments(parseSessionRef(head.ref), head.sealed.keys, head.sealed);
    return { labels: labelsOf(opened.meta), instruction: opened.instruction, updatedAt: opened.meta.updated_at };
  }

  /**
   * Makes the forks of encrypted tails the server answered `diverged` (docs/SYNC.md "End-to-end
   * encrypted sessions"): the local history through the last shared sequence and the tail
   * through the last one sent, installed as the fork (so sealed for it, under this session's
   * keys made anew), to be pushed as a new session. Made once: a fork already here is only
   * completed with the tail it lacks.
   */
  async #makeSealedForks(): Promise<void> {
    for (const [ref, known] of Object.entries(this.#state.sessions)) {
      const fork = known.fork;
      if (fork?.at === undefined) continue;
      const origin = (await this.#open(ref, false)) ?? (await this.#open(ref, true));
      if (origin) {
        const tail = (await messagesAfter(origin, fork.at)).messages.filter((m) => m.sequence <= fork.through);
        const made = await this.#open(fork.ref, false);
        if (!made) {
          const forkRef = parseSessionRef(fork.ref);
          await installSession(this.#local.storage, forkRef, await forkFiles(this.#local.storage, origin, forkRef, fork.at, tail, this.#clock), this.#clock);
          await this.#announce(fork.ref);
        } else if (lastSequenceOf(made) < fork.through) {
          await appendSynced(made, tail.filter((m) => m.sequence > lastSequenceOf(made)).map(asNewMessage));
        }
      }
      delete fork.at;
      await this.#save();
    }
  }

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
  async #reread(head: SessionHead, base: number, forkRef: string | undefined): Promise<void> {
    // Everything from the remote first: a request that fails (the network, a restart) then
    // leaves the local copy, and the messages only it holds, as they were.
    const copy = await this.#fetch(head);
    const theirs = messageIdsAfter(head.ref, copy, base);
    for (let attempt = 1;; attempt++) {
      const local = (await this.#open(head.ref, false)) ?? (await this.#open(head.ref, true));
      // Deleted here meanwhile: the next push sends the delete.
      if (!local) return;
      const carried = (await messagesAfter(local, base)).messages.filter((m) => !theirs.has(m.message_id));
      try {
        if (forkRef && carried.length > 0) await this.#carryToFork(forkRef, carried);
        await this.#swap(local, head, withCarried(copy, forkRef ? [] : carried, local.revision));
      } catch (error) {
        if (error instanceof RevisionConflictError && attempt < 3) continue;
        throw error;
      }
      if (carried.length > 0) this.#pushAgain = true;
      if (local.place === "live" && head.place === "archived") this.report.archives.pulled++;
      break;
    }
    this.#countPulled(copy);
    this.report.reread.push(head.ref);
    // Saved at once: a later request of this pull that fails must not leave the session marked
    // for a re-read it had, which would take messages written after it for acknowledged ones.
    await this.#agreed(head, positionAfter(NO_SEGMENTS, copy.segments.map((s) => s.name)));
    await this.#save();
  }

  /**
   * Appends carried-over messages to the fork that holds the tail they follow, each once (a
   * re-read cut after this and run again finds them there); a fork this device lacks is
   * installed from the server with them.
   */
  async #carryToFork(forkRef: string, carried: readonly MessageRecord[]): Promise<void> {
    const fork = await this.#open(forkRef, false);
    if (fork) {
      const own = new Set((await messagesAfter(fork, fork.meta.forked_from?.through_sequence ?? 0)).messages.map((m) => m.message_id));
      const fresh = carried.filter((m) => !own.has(m.message_id));
      if (fresh.length > 0) await appendSynced(fork, fresh.map(asNewMessage));
      return;
    }
    const forkHead = (await this.#remote.read({ v: SYNC_PROTOCOL_VERSION, ref: forkRef, after_sequence: 0, limit: 1 })).head;
    const forkCopy = await this.#fetch(forkHead);
    const own = messageIdsAfter(forkRef, forkCopy, forkCopy.meta.forked_from?.through_sequence ?? 0);
    // A fork that appeared here meanwhile takes them as an append.
    if (!(await this.#write(forkHead, withCarried(forkCopy, carried.filter((m) => !own.has(m.message_id)), 0)))) return this.#carryToFork(forkRef, carried);
    this.#countPulled(forkCopy);
    await this.#agreed(forkHead, positionAfter(NO_SEGMENTS, forkCopy.segments.map((s) => s.name)));
    await this.#save();
  }

  /** Swaps the session's old copy for `files` under the old copy's lock (rereads.ts); a swap that fails is settled at once, as the next run would. */
  async #swap(local: Session, head: SessionHead, files: SessionFiles): Promise<void> {
    const storage = this.#local.storage;
    const ref = parseSessionRef(head.ref);
    const staged = await stageSessionFiles(storage, ref, files, this.#clock, head.sealed?.keys);
    const swap: RereadSwap = { ref: head.ref, from: local.place, to: head.place, staged, aside: hiddenFolder(ref) };
    let outcome: SwapOutcome;
    try {
      outcome = await this.#underLock(local, () => swapSession(storage, swap));
    } catch (error) {
      await settleSwap(storage, swap).catch(() => undefined);
      throw error;
    }
    // Not finished: the old copy was gone from under its lock, or a session took its place between the moves (both copies kept).
    if (outcome !== "finished") {
      throw new WriterLockedError(`${head.ref}: its re-read did not complete (${outcome}); nothing was lost, the next sync tries again`, { ref: head.ref });
    }
    if (head.place === "live") await this.#announce(head.ref);
    else if (local.place === "live") notifyRemoved(partsOf(local).tx.ctx, local.ref, "archived");
  }

  /** Runs `fn` under a session's `writer.lock`: a live one's as a mutating operation (the revision check included), an archived one's as the engine's. */
  async #underLock<T>(session: Session, fn: () => Promise<T>): Promise<T> {
    if (session.place === "live") return session.mutate("reread", fn);
    const { lease } = await acquireWriterLock(this.#local.storage, session.paths.lock, this.#writer, "reread");
    try {
      return await fn();
    } finally {
      await releaseWriterLock(this.#local.storage, lease);
    }
  }

  /** Closes locally the server's segments `names`, in order. `false` when one does not fit (then the session is re-read). */
  async #adoptSegments(head: SessionHead, names: readonly string[]): Promise<boolean> {
    for (const name of names) {
      if ((await adoptSegment(this.#local, head.ref, await this.#segment(head, name), this.#writer)) === "conflict") return false;
    }
    return true;
  }

  /** A segment of the remote's session, its plaintext text (an encrypted session's opened here). */
  async #segment(head: SessionHead, name: string): Promise<SegmentFile> {
    const { segment } = await this.#remote.segment({ v: SYNC_PROTOCOL_VERSION, ref: head.ref, name });
    return head.sealed && this.#codec ? this.#codec.openSegment(parseSessionRef(head.ref), head.sealed.keys, segment) : segment;
  }

  /** A page's messages (an encrypted session's records opened here, with the keys of its head). */
  async #messagesOf(
    head: SessionHead,
    after: number,
    page: { readonly messages: readonly MessageRecord[]; readonly sealed?: { readonly records: readonly SealedRecord[] } },
  ): Promise<MessageRecord[]> {
    if (!page.sealed) return [...page.messages];
    if (!head.sealed || !this.#codec) throw refused("encryption-mismatch", 409, `${head.ref}: sealed records for a store in the clear`, { ref: head.ref });
    return this.#codec.openRecords(parseSessionRef(head.ref), head.sealed.keys, page.sealed.records, after);
  }

  /** Appends the remote's messages after `last` through the local commit path, page by page. */
  async #fastForward(local: Session, last: number, head: SessionHead): Promise<void> {
    let after = last;
    for (;;) {
      const page = await this.#remote.read({ v: SYNC_PROTOCOL_VERSION, ref: formatSessionRef(local.ref), after_sequence: after, limit: this.#batchMessages });
      const messages = await this.#messagesOf(head, after, page);
      if (messages.length > 0) {
        await appendSynced(local, messages.map(asNewMessage));
        this.report.pulled += messages.length;
        after = messages.at(-1)!.sequence;
      }
      if (!page.more) return;
    }
  }

  /** Installs the remote's session whole: its segments by name, its Active messages, `meta.json`, `instruction.md`. */
  async #install(head: SessionHead): Promise<SessionFiles> {
    const copy = await this.#fetch(head);
    if (await this.#write(head, copy)) this.#countPulled(copy);
    return copy;
  }

  /** The remote's session whole (an encrypted one's documents opened here), read before anything local changes. */
  async #fetch(head: SessionHead): Promise<SessionFiles> {
    const ref = parseSessionRef(head.ref);
    const read = (after: number, segmentsAfter?: SegmentPosition) =>
      this.#remote.read({
        v: SYNC_PROTOCOL_VERSION,
        ref: head.ref,
        after_sequence: after,
        limit: this.#batchMessages,
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
    for (const name of names) segments.push(await this.#segment(head, name));
    const active: MessageRecord[] = [];
    active.push(...(await this.#messagesOf(head, newestEnd, page)));
    while (page.more) {
      const after = active.at(-1)!.sequence;
      page = await read(after);
      active.push(...(await this.#messagesOf(head, after, page)));
    }
    const sealed = head.sealed && this.#codec ? await this.#codec.openDocuments(ref, head.sealed.keys, head.sealed) : undefined;
    return { ...(sealed ?? { meta: page.meta!, instruction: page.head.instruction }), segments, active };
  }

  /** Writes a fetched copy as the local session, with an encrypted session's keys; `false` (nothing written) when one is there. */
  async #write(head: SessionHead, copy: SessionFiles): Promise<boolean> {
    const ref = parseSessionRef(head.ref);
    if (!(await installSession(this.#local.storage, ref, copy, this.#clock, head.sealed?.keys))) return false;
    if (head.place === "archived") await this.#local.archive(ref);
    else await this.#announce(head.ref);
    return true;
  }

  /**
   * Tells the local store's `onCommit` of a live session this run wrote whole (new here, re-read,
   * a fork), at its revision: what a commit of its own tells, so pages follow it the same way
   * (docs/SYNC.md "Background sync in the browser").
   */
  async #announce(ref: string): Promise<void> {
    const session = await this.#open(ref, false);
    if (session) partsOf(session).tx.notifyCommit();
  }

  /** Counts a fetched copy's messages as pulled. */
  #countPulled(copy: SessionFiles): void {
    this.report.pulled += copy.active.length + (parseSegmentName(copy.segments.at(-1)?.name ?? "")?.end ?? 0);
  }

  async #instructionOf(session: Session): Promise<string | null> {
    const bytes = await this.#local.storage.read(session.paths.instruction);
    return bytes ? decoder.decode(bytes) : null;
  }

  async #segmentsOf(session: Session): Promise<SegmentFile[]> {
    const out: SegmentFile[] = [];
    for (const range of await session.segments()) out.push(await this.#segmentFile(session, formatSegmentName(range)));
    return out;
  }

  /** A segment file as it travels: its exact text, an encrypted session's as stored (sealed). */
  async #segmentFile(session: Session, name: string): Promise<SegmentFile> {
    if (!this.#codec) return (await readSegmentFile(this.#local.storage, session, name))!;
    const path = `${session.paths.segmentsDir}/${name}`;
    const text = await this.#codec.stored(path);
    if (text === null) throw new CorruptSessionError(`${path}: listed but not there`, { file: path, line: null });
    return { name, text };
  }

  async #open(ref: string, archived: boolean): Promise<Session | undefined> {
    try {
      return await this.#local.open(ref, { archived });
    } catch (error) {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
  }
}

/**
 * Whether two stores are one: the same handle, or two handles whose backends say they hold
 * the same data (`StoragePort.storeIdentity`: one PostgreSQL schema under two spellings of
 * its URL). A backend that cannot say is taken for another store.
 */
async function sameStore(a: StoragePort, b: StoragePort): Promise<boolean> {
  if (a === b) return true;
  if (!a.storeIdentity || !b.storeIdentity) return false;
  const [ours, theirs] = await Promise.all([a.storeIdentity(), b.storeIdentity()]);
  return ours === theirs;
}

/**
 * A local session's segment names after `position`, every name when its list does not have
 * that segment there. `segments/` is listed only when the newest segment is another one (a
 * compaction since): an incremental sync costs the same whatever the history holds.
 */
async function localSegmentsAfter(session: Session, position: SegmentPosition): Promise<SegmentNames> {
  const newest = session.newestSegment ? formatSegmentName(session.newestSegment) : null;
  if (newest === position.last) return { after: position.count, names: [] };
  return segmentNamesAfter(await segmentNamesOf(session), position);
}

/** Whether `list` begins with every name of `prefix`, in order. */
function startsWith(list: readonly string[], prefix: readonly string[]): boolean {
  return prefix.every((name, i) => list[i] === name);
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
