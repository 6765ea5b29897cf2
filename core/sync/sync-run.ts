/**
 * One sync run's shared state ({@linkcode SyncRun}): the options it was given, the local
 * store's sync state for the remote (the outbox, the cursor, what both sides agreed on), the
 * report it builds, and the reads of the local store that pushing and pulling both make. The
 * engine (engine.ts) drives a run through the outbox (outbox.ts), the local changes
 * (local-changes.ts) and the pull (pull.ts) (docs/SYNC.md "The engine").
 *
 * @module
 */
import { CorruptSessionError, NotFoundError, UnsupportedSchemaError } from "../errors.ts";
import { EncryptedStorage } from "../encryption/encrypted-storage.ts";
import { formatSessionRef, parseSessionRef } from "../layout/ids.ts";
import { formatSegmentName, parseSegmentName } from "../layout/segments.ts";
import type { KnownFields } from "../schema/arguments.ts";
import { newId } from "../session/ids.ts";
import { contextOf } from "../session/context.ts";
import { ANONYMOUS_WRITER, type OwnerProbe, type WriterIdentity } from "../session/owner.ts";
import type { Session } from "../session/session.ts";
import { partsOf } from "../session/session-view.ts";
import type { Sessions } from "../session/registry.ts";
import { type SegmentFile, type SegmentNames, segmentNamesAfter, type SegmentPosition, type SessionHead } from "./protocol.ts";
import type { SyncConflict, SyncReport } from "./report.ts";
import { SealedCodec } from "./sealed-codec.ts";
import type { SyncRemote } from "./remote.ts";
import { abortableRemote } from "./abortable-remote.ts";
import { stateOf, type SyncState, syncStatePath } from "./sync-state.ts";
import { PendingFiles } from "./pending-files.ts";
import { lastSequenceOf, messageAt, readSegmentFile, segmentNamesOf, type SessionFiles, type SyncWriter } from "./session-files.ts";

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
  /**
   * Who the engine's own locked writes (labels, adopted segments, the run's lock) are by; default the identity `local`
   * was made with. The lock a dead run left is taken over when `local` was made with a `probe` (docs/SYNC.md "The engine").
   */
  readonly identity?: WriterIdentity;
  /**
   * Ends the run: a call to the remote under way rejects with the signal's reason (the request may still reach the
   * remote, as over a cut connection) and none is made after it; the run gives its lock back. What the remote
   * acknowledged stays agreed; the rest waits in the outbox for the next run, under the same numbers.
   */
  readonly signal?: AbortSignal;
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
  signal: true,
};

const decoder = new TextDecoder();

/**
 * A sync run's state and the local reads both directions make. Its fields are the run's own:
 * the outbox's functions and the pull's change them as the run goes (one run at a time per
 * instance, never shared).
 */
export class SyncRun {
  readonly local: Sessions;
  readonly remote: SyncRemote;
  readonly only: Set<string> | undefined;
  readonly batchMessages: number;
  readonly batchMutations: number;
  readonly batchBytes: number;
  readonly clock: () => number;
  readonly writer: SyncWriter;
  /** What `local` knows of other processes: the run's lock a dead run left is taken over with it. */
  readonly probe: OwnerProbe | undefined;
  readonly statePath: string;
  /** Where the state's large pending mutations are kept: in files beside it (docs/SYNC.md "The engine"). */
  readonly #pendingFiles: PendingFiles;
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
  /** Loaded by {@linkcode SyncRun.load} before anything else. */
  state!: SyncState;
  /** Set when the pull leaves local changes the remote lacks: messages a re-read appended again, segments it did not take. */
  pushAgain = false;
  /** Set when the remote rejected a mutation: the local changes are looked at again (it may need others). */
  rejected = false;
  /**
   * Sessions this run leaves as they are: their local copy cannot be read (corrupt, an unknown
   * schema) or the remote refused their mutation. Each was reported as a conflict.
   */
  readonly setAside = new Set<string>();
  /** Sessions whose mutations wait in the outbox for the next run (`session-busy` on the remote). */
  readonly deferred = new Set<string>();
  /** Mutations per request now: `batchMutations`, halved after a batch the remote found too large, doubled back after one it took. */
  batchCap: number;
  /** An encrypted local store: its sessions travel sealed (docs/SYNC.md "End-to-end encrypted sessions"). */
  readonly codec: SealedCodec | undefined;

  constructor(options: SyncStoresOptions) {
    this.local = options.local;
    this.remote = options.signal ? abortableRemote(options.remote, options.signal) : options.remote;
    this.only = options.refs && new Set(options.refs.map((r) => formatSessionRef(parseSessionRef(r))));
    this.batchMessages = options.batchMessages ?? 500;
    this.batchMutations = options.batchMutations ?? 20;
    this.batchCap = this.batchMutations;
    this.batchBytes = options.batchBytes ?? 8 * 1024 * 1024;
    this.clock = options.clock ?? Date.now;
    const registry = contextOf(options.local);
    this.writer = { identity: options.identity ?? registry?.identity ?? ANONYMOUS_WRITER, clock: this.clock };
    this.probe = registry?.probe;
    this.statePath = syncStatePath(options.remote.id);
    this.#pendingFiles = new PendingFiles(options.local.storage, options.remote.id);
    this.codec = options.local.storage instanceof EncryptedStorage ? new SealedCodec(options.local.storage) : undefined;
  }

  /** Reads the sync state for this remote (a new client's when there is none). */
  async load(): Promise<void> {
    const bytes = await this.local.storage.read(this.statePath);
    const stored = bytes ? stateOf(JSON.parse(decoder.decode(bytes))) : { client_id: newId("client"), next_number: 1, pending: [], sessions: {} };
    this.state = await this.#pendingFiles.load(this.statePath, stored);
  }

  /** Whether this run syncs `ref` (`refs`, else every session). */
  wanted(ref: string): boolean {
    return !this.only || this.only.has(ref);
  }

  /** Saves the sync state (the outbox, the cursor, the agreed state) in the local store. */
  async save(): Promise<void> {
    await this.#pendingFiles.save(this.statePath, this.state);
  }

  /** Reports a session's conflict, once per session in a run: the first says why it was set aside. */
  conflict(conflict: SyncConflict): void {
    if (!this.report.conflicts.some((c) => c.ref === conflict.ref)) this.report.conflicts.push(conflict);
  }

  /**
   * Runs `read` on a local session; `undefined` when its copy cannot be read: recovery
   * reports it corrupt, or a newer sessionfold wrote it. Such a session is set aside for this
   * run and reported; the others go on (docs/SYNC.md "One session at a time").
   */
  async readable<T>(ref: string, read: () => Promise<T>): Promise<T | undefined> {
    try {
      return await read();
    } catch (error) {
      if (!(error instanceof CorruptSessionError || error instanceof UnsupportedSchemaError)) throw error;
      this.setAside.add(ref);
      const message = error.message.startsWith(ref) ? error.message : `${ref}: ${error.message}`;
      this.conflict({ ref, reason: error.code, message });
      return undefined;
    }
  }

  /** The local session `ref` (live or archived); `undefined` when the store does not have it there. */
  async open(ref: string, archived: boolean): Promise<Session | undefined> {
    try {
      return await this.local.open(ref, { archived });
    } catch (error) {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
  }

  /** The local session `ref` where it is: live, else archived; `undefined` when the store has it in neither place. */
  async openAnywhere(ref: string): Promise<Session | undefined> {
    return (await this.open(ref, false)) ?? (await this.open(ref, true));
  }

  /**
   * Records what both sides now have of a session: through the server's last sequence (local
   * messages after it are still to push), and `segments`, how far both have the same ones.
   * `session`: the local copy as it is now, when the caller holds it.
   */
  async agreed(head: SessionHead, segments: SegmentPosition, session?: Session): Promise<void> {
    const now = session ?? (await this.open(head.ref, head.place === "archived"))!;
    const last = Math.min(lastSequenceOf(now), head.last_sequence);
    this.state.sessions[head.ref] = {
      last_sequence: last,
      last_message_id: (await messageAt(now, last))?.message_id ?? null,
      labels: head.labels,
      instruction: head.instruction,
      place: head.place,
      segments,
      ...(head.sealed ? { sealed: head.sealed } : {}),
    };
  }

  /**
   * Tells the local store's `onCommit` of a live session this run wrote whole (new here, re-read,
   * a fork), at its revision: what a commit of its own tells, so pages follow it the same way
   * (docs/SYNC.md "Background sync in the browser").
   */
  async announce(ref: string): Promise<void> {
    const session = await this.open(ref, false);
    if (session) partsOf(session).tx.notifyCommit();
  }

  /** Counts a fetched copy's messages as pulled. */
  countPulled(copy: SessionFiles): void {
    this.report.pulled += copy.active.length + (parseSegmentName(copy.segments.at(-1)?.name ?? "")?.end ?? 0);
  }

  /** A local session's `instruction.md`, `null` when it has none. */
  async instructionOf(session: Session): Promise<string | null> {
    const bytes = await this.local.storage.read(session.paths.instruction);
    return bytes ? decoder.decode(bytes) : null;
  }

  /** A local session's segment files, oldest first, as they travel. */
  async segmentsOf(session: Session): Promise<SegmentFile[]> {
    const out: SegmentFile[] = [];
    for (const range of await session.segments()) out.push(await this.segmentFile(session, formatSegmentName(range)));
    return out;
  }

  /** A segment file as it travels: its exact text, an encrypted session's as stored (sealed). */
  async segmentFile(session: Session, name: string): Promise<SegmentFile> {
    if (!this.codec) return (await readSegmentFile(this.local.storage, session, name))!;
    const path = `${session.paths.segmentsDir}/${name}`;
    const text = await this.codec.stored(path);
    if (text === null) throw new CorruptSessionError(`${path}: listed but not there`, { file: path, line: null });
    return { name, text };
  }
}

/**
 * A local session's segment names after `position`, every name when its list does not have
 * that segment there. `segments/` is listed only when the newest segment is another one (a
 * compaction since): an incremental sync costs the same whatever the history holds.
 */
export async function localSegmentsAfter(session: Session, position: SegmentPosition): Promise<SegmentNames> {
  const newest = session.newestSegment ? formatSegmentName(session.newestSegment) : null;
  if (newest === position.last) return { after: position.count, names: [] };
  return segmentNamesAfter(await segmentNamesOf(session), position);
}
