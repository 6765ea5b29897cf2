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
import { NotFoundError, SyncRefusedError, WriterLockedError } from "../errors.ts";
import { formatSessionRef, parseSessionRef } from "../layout/ids.ts";
import { formatSegmentName, parseSegmentName } from "../layout/segments.ts";
import { encodeJsonDocument, type MessageRecord } from "../schema/mod.ts";
import { newId } from "../session/ids.ts";
import { ANONYMOUS_WRITER, type WriterIdentity } from "../session/owner.ts";
import type { Session } from "../session/session.ts";
import type { Sessions } from "../session/registry.ts";
import { type Mutation, type MutationResult, type SegmentFile, type SessionHead, type SessionLabels, SYNC_PROTOCOL_VERSION } from "./protocol.ts";
import type { SyncRemote } from "./remote.ts";
import {
  adoptSegment,
  asNewMessage,
  installSession,
  labelsOf,
  lastSequenceOf,
  messageAt,
  messagesAfter,
  messagesOfSegments,
  readSegmentFile,
  sameLabels,
  type SessionFiles,
  type SyncWriter,
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
  /** Messages per append mutation and per page read. Default 500. */
  readonly batchMessages?: number;
  /** Mutations per push request. Default 20. */
  readonly batchMutations?: number;
  /** Milliseconds since the epoch; injectable for tests. */
  readonly clock?: () => number;
  /** Who the engine's own locked writes (labels, adopted segments) are by; default the anonymous writer. */
  readonly identity?: WriterIdentity;
}

/** A tail that became a fork on the server: the session, the fork's ref, the last shared sequence. */
export interface SyncFork {
  readonly ref: string;
  readonly forked_as: string;
  readonly at_sequence: number;
}

/** Something sync did not do, and why (nothing was lost: the local copy stays as it was). */
export interface SyncConflict {
  readonly ref: string;
  readonly reason: string;
  readonly message: string;
}

/** What a sync did. */
export interface SyncReport {
  /** Messages the remote took (applied or forked). */
  pushed: number;
  /** Messages written into the local store. */
  pulled: number;
  forks: SyncFork[];
  conflicts: SyncConflict[];
  /** Sessions replaced by the server's copy: a fork took their local tail, or the server kept its own segmentation. */
  reread: string[];
  /** Message ids the remote acknowledged in this sync (applied, duplicate or forked). */
  acknowledged: string[];
}

/** What the local store last agreed with the remote about a session. */
export interface KnownSession {
  last_sequence: number;
  last_message_id: string | null;
  labels: SessionLabels;
  instruction: string | null;
  place: "live" | "archived";
  /** The segment names both sides have, oldest first. */
  segments: string[];
  /** The server forked this session's local tail or refused its segmentation: re-read it. */
  reread?: boolean;
  /** The fork that took this session's local tail, and the tail's last sequence: later local messages continue there. */
  fork?: { ref: string; through: number };
}

/** The local store's sync state for one remote: the outbox and the cursor. */
export interface SyncState {
  client_id: string;
  next_number: number;
  pending: Mutation[];
  cursor?: string;
  sessions: Record<string, KnownSession>;
}

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
 */
export async function syncStores(options: SyncStoresOptions): Promise<SyncReport> {
  return new SyncRun(options).run();
}

class SyncRun {
  readonly #local: Sessions;
  readonly #remote: SyncRemote;
  readonly #only: Set<string> | undefined;
  readonly #batchMessages: number;
  readonly #batchMutations: number;
  readonly #clock: () => number;
  readonly #writer: SyncWriter;
  readonly #statePath: string;
  readonly report: SyncReport = { pushed: 0, pulled: 0, forks: [], conflicts: [], reread: [], acknowledged: [] };
  #state!: SyncState;
  /** Set when the pull leaves local changes the remote lacks: messages a re-read appended again, segments it did not take. */
  #pushAgain = false;

  constructor(options: SyncStoresOptions) {
    this.#local = options.local;
    this.#remote = options.remote;
    this.#only = options.refs && new Set(options.refs.map((r) => formatSessionRef(parseSessionRef(r))));
    this.#batchMessages = options.batchMessages ?? 500;
    this.#batchMutations = options.batchMutations ?? 20;
    this.#clock = options.clock ?? Date.now;
    this.#writer = { identity: options.identity ?? ANONYMOUS_WRITER, clock: this.#clock };
    this.#statePath = syncStatePath(options.remote.id);
  }

  async run(): Promise<SyncReport> {
    const bytes = await this.#local.storage.read(this.#statePath);
    this.#state = bytes ? (JSON.parse(decoder.decode(bytes)) as SyncState) : { client_id: newId("client"), next_number: 1, pending: [], sessions: {} };
    // A pull that left local changes the remote lacks (messages a re-read carried over to a
    // fork, segments a create did not bring) pushes them: once more.
    for (let pass = 0; pass < 3; pass++) {
      this.#pushAgain = false;
      // A refused mutation can ask for another (the server lacks earlier messages): a few rounds.
      for (let round = 0; round < 4; round++) {
        if (!(await this.#flush())) return this.report;
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

  /** Sends the outbox until it is empty. `false` when the remote stopped it (reported as a conflict). */
  async #flush(): Promise<boolean> {
    const state = this.#state;
    while (state.pending.length > 0) {
      const batch = state.pending.slice(0, this.#batchMutations);
      let outcome;
      try {
        outcome = await this.#remote.push({ v: SYNC_PROTOCOL_VERSION, client_id: state.client_id, mutations: batch });
      } catch (error) {
        if (error instanceof SyncRefusedError && error.reason === "mutation-gap") {
          this.#closeGap(Number(error.details.expected));
          await this.#save();
          continue;
        }
        if (error instanceof SyncRefusedError && error.reason === "session-busy") {
          this.report.conflicts.push({ ref: String(error.details.ref ?? ""), reason: "session-busy", message: error.message });
          return false;
        }
        throw error;
      }
      for (const result of outcome.results) this.#acknowledged(result);
      state.pending = state.pending.filter((m) => !outcome.results.some((r) => r.number === m.number));
      await this.#save();
      if (outcome.error) {
        if (outcome.error.reason === "mutation-gap") {
          this.#closeGap(Number(outcome.error.expected));
          await this.#save();
          continue;
        }
        this.report.conflicts.push({ ref: String(outcome.error.ref ?? ""), reason: outcome.error.reason, message: outcome.error.message });
        return false;
      }
    }
    return true;
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
    if (expected > first) state.pending = state.pending.filter((m) => m.number >= expected);
    else state.pending = state.pending.map((m, i) => ({ ...m, number: expected + i }));
    state.next_number = (state.pending.at(-1)?.number ?? expected - 1) + 1;
  }

  /** Takes a mutation's result into the agreed state. */
  #acknowledged(reported: MutationResult): void {
    const mutation = this.#state.pending.find((m) => m.number === reported.number);
    if (!mutation) return;
    const result = reported.status === "duplicate" && reported.result ? reported.result : reported;
    const known = this.#state.sessions;
    // A create's messages include those of its segments.
    const messages = mutation.op === "create"
      ? [...messagesOfSegments(mutation.ref, mutation.segments), ...mutation.messages]
      : mutation.op === "append"
      ? mutation.messages
      : [];
    if (result.status === "rejected") {
      if (result.reason === "server-behind") {
        // The server lacks messages before these: send the session again from what it has.
        delete known[mutation.ref];
      } else if (result.reason === "base-mismatch") {
        delete known[mutation.ref];
      } else if (result.reason === "segmentation") {
        // The server's segmentation wins: this device re-reads the session (its messages are all there).
        const entry = known[mutation.ref];
        if (entry) entry.reread = true;
      } else {
        this.report.conflicts.push({
          ref: mutation.ref,
          reason: result.reason ?? "rejected",
          message: `${mutation.ref}: the remote refused ${mutation.op} (${result.reason}); the local copy is kept as it is`,
        });
        delete known[mutation.ref];
      }
      return;
    }
    this.report.acknowledged.push(...messages.map((m) => m.message_id));
    if (mutation.op === "create" || mutation.op === "append") {
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
        else known[mutation.ref] = { last_sequence: 0, last_message_id: null, labels: {}, instruction: null, place: "live", segments: [], ...marked };
        return;
      }
      if (mutation.op === "create") {
        known[mutation.ref] = {
          last_sequence: last?.sequence ?? 0,
          last_message_id: last?.message_id ?? null,
          labels: labelsOf(mutation.meta),
          instruction: mutation.instruction,
          place: "live",
          segments: mutation.segments.map((s) => s.name),
        };
      } else if (entry && last) {
        entry.last_sequence = last.sequence;
        entry.last_message_id = last.message_id;
      }
    } else if (mutation.op === "segment") {
      const entry = known[mutation.ref];
      if (entry && !entry.segments.includes(mutation.segment.name)) entry.segments.push(mutation.segment.name);
    } else if (mutation.op === "set_meta") {
      const entry = known[mutation.ref];
      if (entry) Object.assign(entry, { labels: mutation.labels, instruction: mutation.instruction });
    } else if (mutation.op === "archive") {
      const entry = known[mutation.ref];
      if (entry) entry.place = "archived";
    } else {
      delete known[mutation.ref];
    }
  }

  /** Numbers the local changes the remote lacks and puts them in the outbox (saved before sending). `false` when there were none. */
  async #enqueueLocalChanges(): Promise<boolean> {
    const state = this.#state;
    const add = (mutation: DistributiveOmit<Mutation, "number">) => state.pending.push({ ...mutation, number: state.next_number++ } as Mutation);
    const seen = new Set<string>();
    for (const archived of [false, true]) {
      for (const meta of await this.#local.list({ archived })) {
        const ref = `${meta.agent_id}/${meta.workspace_id}/${meta.session_id}`;
        if (!this.#wanted(ref)) continue;
        seen.add(ref);
        const session = await this.#local.open(ref, { archived });
        const known = state.sessions[ref];
        if (!known) {
          add({
            op: "create",
            ref,
            meta: session.meta,
            instruction: await this.#instructionOf(session),
            segments: await this.#segmentsOf(session),
            messages: [...session.active],
          });
          if (archived) add({ op: "archive", ref });
          continue;
        }
        if (known.reread) continue;
        let base = known.last_sequence;
        let baseId = known.last_message_id;
        for (;;) {
          const { messages, more } = await messagesAfter(session, base, this.#batchMessages);
          if (messages.length === 0) break;
          add({ op: "append", ref, base_sequence: base, base_message_id: baseId, messages });
          base = messages.at(-1)!.sequence;
          baseId = messages.at(-1)!.message_id;
          if (!more) break;
        }
        const segments = (await session.segments()).map(formatSegmentName);
        if (!archived) {
          for (const name of segments.slice(known.segments.length)) {
            add({ op: "segment", ref, segment: (await readSegmentFile(this.#local.storage, session, name))! });
          }
        }
        const instruction = await this.#instructionOf(session);
        if (!archived && (!sameLabels(labelsOf(session.meta), known.labels) || instruction !== known.instruction)) {
          add({ op: "set_meta", ref, labels: labelsOf(session.meta), instruction });
        }
        if (archived && known.place === "live") add({ op: "archive", ref });
      }
    }
    for (const ref of Object.keys(state.sessions)) if (this.#wanted(ref) && !seen.has(ref)) add({ op: "delete", ref });
    if (state.pending.length === 0) return false;
    await this.#save();
    return true;
  }

  async #pull(): Promise<void> {
    const state = this.#state;
    const response = await this.#remote.pull({ v: SYNC_PROTOCOL_VERSION, ...(state.cursor !== undefined ? { cursor: state.cursor } : {}) });
    for (const tombstone of response.tombstones) {
      if (!this.#wanted(tombstone.ref)) continue;
      for (const archived of [false, true]) {
        await this.#local.delete(tombstone.ref, { archived }).catch((e: unknown) => (e instanceof NotFoundError ? undefined : Promise.reject(e)));
      }
      delete state.sessions[tombstone.ref];
    }
    const heads = response.sessions.filter((h) => this.#wanted(h.ref));
    // A session to re-read whose head did not change since the cursor: ask for it.
    for (const [ref, known] of Object.entries(state.sessions)) {
      if (known.reread && this.#wanted(ref) && !heads.some((h) => h.ref === ref)) {
        heads.push((await this.#remote.read({ v: SYNC_PROTOCOL_VERSION, ref, after_sequence: 0, limit: 1 })).head);
      }
    }
    for (const head of heads) await this.#pullSession(head);
    state.cursor = response.cursor;
    await this.#save();
  }

  async #pullSession(head: SessionHead): Promise<void> {
    const known = this.#state.sessions[head.ref];
    const local = (await this.#open(head.ref, false)) ?? (await this.#open(head.ref, true));
    if (!local) {
      await this.#install(head);
      return this.#agreed(head);
    }
    const last = lastSequenceOf(local);
    const segments = (await local.segments()).map(formatSegmentName);
    // Local messages the remote has not acknowledged: never dropped.
    const unacknowledged = (await messagesAfter(local, known?.fork?.through ?? known?.last_sequence ?? 0)).messages;
    // Two segmentations that are not one the other's start: the server's wins (a re-read).
    let diverged = Boolean(known?.reread) || !(startsWith(segments, head.segments) || startsWith(head.segments, segments));
    if (!diverged) {
      const shared = Math.min(last, head.last_sequence);
      const page = await this.#remote.read({
        v: SYNC_PROTOCOL_VERSION,
        ref: head.ref,
        after_sequence: shared,
        expect_message_id: (await messageAt(local, shared))?.message_id ?? null,
        limit: 1,
      });
      diverged = page.diverged;
    }
    if (diverged && !known?.reread && unacknowledged.length > 0) {
      this.report.conflicts.push({
        ref: head.ref,
        reason: "unacknowledged",
        message: `${head.ref}: local messages after ${known?.last_sequence ?? 0} are not on the remote; kept as they are`,
      });
      return;
    }
    try {
      if (diverged) {
        return await this.#reread(local, head, unacknowledged, known?.fork?.ref);
      } else {
        if (head.last_sequence > last) await this.#fastForward(local, last);
        if (!(await this.#adoptSegments(head, segments.length))) {
          return await this.#reread(local, head, (await messagesAfter(local, head.last_sequence)).messages, undefined);
        }
        const instruction = await this.#instructionOf(local);
        if (head.place === "live" && (!sameLabels(labelsOf(local.meta), head.labels) || instruction !== head.instruction)) {
          await writeLabels(this.#local, head.ref, head.labels, head.instruction, this.#writer);
        }
        if (head.place === "archived" && local.place === "live") await this.#local.archive(head.ref);
      }
    } catch (error) {
      if (!(error instanceof WriterLockedError)) throw error;
      this.report.conflicts.push({ ref: head.ref, reason: "session-busy", message: error.message });
      return;
    }
    await this.#agreed(head);
  }

  /**
   * Records what both sides now have of a session: through the server's last sequence (local
   * messages after it are still to push), and the segments both have. Local segments the
   * server lacks (a `create` it took as an append of messages to the session it had) are
   * pushed in this run.
   */
  async #agreed(head: SessionHead): Promise<void> {
    const now = (await this.#open(head.ref, head.place === "archived"))!;
    const last = Math.min(lastSequenceOf(now), head.last_sequence);
    const segments = (await now.segments()).map(formatSegmentName);
    const agreed = segments.filter((name) => head.segments.includes(name));
    if (head.place === "live" && agreed.length < segments.length) this.#pushAgain = true;
    this.#state.sessions[head.ref] = {
      last_sequence: last,
      last_message_id: (await messageAt(now, last))?.message_id ?? null,
      labels: head.labels,
      instruction: head.instruction,
      place: head.place,
      segments: agreed,
    };
  }

  /**
   * Replaces the local copy with the server's. Local messages the server has not
   * acknowledged (written after a tail the server forked, or after a segmentation it did not
   * take) are appended again after the re-read: to the fork that holds the tail they follow,
   * else to the session; the next sync pushes them.
   */
  async #reread(local: Session, head: SessionHead, unacknowledged: readonly MessageRecord[], forkRef: string | undefined): Promise<void> {
    // Everything from the remote first: a request that fails (the network, a restart) then
    // leaves the local copy, and the messages only it holds, as they were.
    const copy = await this.#fetch(head);
    const forkHead = unacknowledged.length > 0 && forkRef && !(await this.#open(forkRef, false))
      ? (await this.#remote.read({ v: SYNC_PROTOCOL_VERSION, ref: forkRef, after_sequence: 0, limit: 1 })).head
      : undefined;
    const forkCopy = forkHead && (await this.#fetch(forkHead));
    await this.#local.delete(head.ref, { archived: local.place === "archived" });
    await this.#write(head, copy);
    this.report.reread.push(head.ref);
    if (unacknowledged.length > 0) {
      if (forkHead && forkCopy) {
        await this.#write(forkHead, forkCopy);
        await this.#agreed(forkHead);
      }
      await (await this.#local.open(forkRef ?? head.ref)).append(unacknowledged.map(asNewMessage));
      this.#pushAgain = true;
    }
    // Saved at once: a later request of this pull that fails must not leave the session marked
    // for a re-read it had, which would take messages written after it for acknowledged ones.
    await this.#agreed(head);
    await this.#save();
  }

  /** Closes locally the server's segments after the first `have`. `false` when one does not fit (then the session is re-read). */
  async #adoptSegments(head: SessionHead, have: number): Promise<boolean> {
    for (const name of head.segments.slice(have)) {
      const { segment } = await this.#remote.segment({ v: SYNC_PROTOCOL_VERSION, ref: head.ref, name });
      if ((await adoptSegment(this.#local, head.ref, segment, this.#writer)) === "conflict") return false;
    }
    return true;
  }

  /** Appends the remote's messages after `last` through the local commit path, page by page. */
  async #fastForward(local: Session, last: number): Promise<void> {
    let after = last;
    for (;;) {
      const page = await this.#remote.read({ v: SYNC_PROTOCOL_VERSION, ref: formatSessionRef(local.ref), after_sequence: after, limit: this.#batchMessages });
      if (page.messages.length > 0) {
        await local.append(page.messages.map(asNewMessage));
        this.report.pulled += page.messages.length;
        after = page.messages.at(-1)!.sequence;
      }
      if (!page.more) return;
    }
  }

  /** Installs the remote's session whole: its segments by name, its Active messages, `meta.json`, `instruction.md`. */
  async #install(head: SessionHead): Promise<void> {
    await this.#write(head, await this.#fetch(head));
  }

  /** The remote's session whole, read before anything local changes. */
  async #fetch(head: SessionHead): Promise<SessionFiles> {
    const segments: SegmentFile[] = [];
    for (const name of head.segments) segments.push((await this.#remote.segment({ v: SYNC_PROTOCOL_VERSION, ref: head.ref, name })).segment);
    const newestEnd = segments.length > 0 ? Number(head.segments.at(-1)!.split("-")[1]!.replace(".jsonl", "")) : 0;
    const active: MessageRecord[] = [];
    let page = await this.#remote.read({ v: SYNC_PROTOCOL_VERSION, ref: head.ref, after_sequence: newestEnd, limit: this.#batchMessages });
    active.push(...page.messages);
    while (page.more) {
      page = await this.#remote.read({ v: SYNC_PROTOCOL_VERSION, ref: head.ref, after_sequence: active.at(-1)!.sequence, limit: this.#batchMessages });
      active.push(...page.messages);
    }
    return { meta: page.meta, instruction: page.head.instruction, segments, active };
  }

  /** Writes a fetched copy as the local session (absent locally by then). */
  async #write(head: SessionHead, copy: SessionFiles): Promise<void> {
    const ref = parseSessionRef(head.ref);
    await installSession(this.#local.storage, ref, copy, this.#clock);
    this.report.pulled += copy.active.length + (parseSegmentName(copy.segments.at(-1)?.name ?? "")?.end ?? 0);
    if (head.place === "archived") await this.#local.archive(ref);
  }

  async #instructionOf(session: Session): Promise<string | null> {
    const bytes = await this.#local.storage.read(session.paths.instruction);
    return bytes ? decoder.decode(bytes) : null;
  }

  async #segmentsOf(session: Session): Promise<SegmentFile[]> {
    const out: SegmentFile[] = [];
    for (const range of await session.segments()) out.push((await readSegmentFile(this.#local.storage, session, formatSegmentName(range)))!);
    return out;
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

/** Whether `list` begins with every name of `prefix`, in order. */
function startsWith(list: readonly string[], prefix: readonly string[]): boolean {
  return prefix.every((name, i) => list[i] === name);
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** Where the local store keeps its sync state for the remote `remoteId` (docs/SYNC.md "The engine"). */
export function syncStatePath(remoteId: string): string {
  return `sync/remotes/${remoteKey(remoteId)}.json`;
}

/** A file name for a remote's id: its characters kept where they are safe, the rest hex-escaped. */
function remoteKey(id: string): string {
  return Array.from(
    new TextEncoder().encode(id),
    (b) => (/[A-Za-z0-9_-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `.${b.toString(16).padStart(2, "0")}`),
  ).join("").slice(0, 200);
}
