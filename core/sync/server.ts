/**
 * The server side of sync over any store (docs/SYNC.md): pushes of numbered mutations, each
 * applied exactly once, pulls by cursor (long-polled), reads of a session's history and its
 * segments. It keeps no state of its own beyond the store: the client ledgers
 * (`sync/clients/<client_id>.json`), tombstones (`sync/tombstones/…`) and the change log
 * (`sync/changes/…`, `change-log.ts`) are files of the store, so several servers on one store
 * serve the same clients. The HTTP handler
 * (`handler.ts`) and the direct remote (`remote.ts`) both call it.
 *
 * @module
 */
import {
  asSessionfoldError,
  CorruptSessionError,
  NotFoundError,
  RevisionConflictError,
  SessionBusyError,
  SyncRefusedError,
  UnsupportedSchemaError,
  WriterLockedError,
} from "../errors.ts";
import { EncryptedStorage } from "../encryption/encrypted-storage.ts";
import { formatSessionRef, isValidId, parseSessionRef, type SessionRef, sessionRef } from "../layout/ids.ts";
import { formatSegmentName } from "../layout/segments.ts";
import { type KnownFields, knownOptions } from "../schema/arguments.ts";
import { encodeJsonDocument, type MessageRecord, nowTimestamp } from "../schema/mod.ts";
import { assertWritable } from "../session/commit-guards.ts";
import { lastCommittedRevision } from "../session/lock.ts";
import { appendSynced } from "../session/append-messages.ts";
import { ANONYMOUS_WRITER, type WriterIdentity } from "../session/owner.ts";
import type { Session } from "../session/session.ts";
import { Sessions } from "../session/registry.ts";
import { catalogDocument } from "../storage/catalog.ts";
import type { StoragePort } from "../storage/port.ts";
import {
  type AppendMutation,
  type CreateMutation,
  type ErrorResponse,
  type Mutation,
  type MutationResult,
  type PullRequest,
  type PullResponse,
  type PushRequest,
  type PushResponse,
  type ReadRequest,
  type ReadResponse,
  refused,
  type RefusedSession,
  type SealedAppendMutation,
  type SealedCreateMutation,
  segmentNamesAfter,
  type SegmentRequest,
  type SegmentResponse,
  type SessionHead,
  SYNC_PROTOCOL_VERSION,
  type Tombstone,
} from "./protocol.ts";
import { ChangeLog, type Cursor, decodeCursor, encodeCursor, type LogPosition } from "./change-log.ts";
import {
  adoptSealedSegment,
  appendSealedLines,
  archiveSealedSession,
  checkSealedDocuments,
  deleteSealedSession,
  installSealedSession,
  isSealedSession,
  isSealedText,
  mergeSealedKeys,
  readSealedSession,
  sealedChangeKey,
  sealedHeadOf,
  sealedLastSequence,
  type SealedLine,
  sealedLineOf,
  sealedMessagesAfter,
  sealedSegmentMessages,
  writeSealedDocuments,
} from "./sealed-files.ts";
import {
  adoptSegment,
  asNewMessage,
  forkFiles,
  headOf,
  installSession,
  labelsOf,
  lastSequenceOf,
  messageAt,
  messagesAfter,
  messagesOfSegments,
  readSegmentFile,
  sameLabels,
  segmentNamesOf,
  skipUnlisted,
  type SyncWriter,
  writeLabels,
} from "./session-files.ts";

/**
 * Who a request acts for, as the host's `authorize` hook decided: a user id, and which agents
 * and workspaces that user may read or write.
 *
 * @example
 * ```ts
 * const alice: SyncPrincipal = { user: "alice", may: (_access, place) => place.workspaceId === "alice" };
 * ```
 */
export interface SyncPrincipal {
  readonly user: string;
  may(access: "read" | "write", place: { readonly agentId: string; readonly workspaceId: string }): boolean;
}

/**
 * The principal of a direct sync between two stores the caller holds: it may do everything.
 *
 * @example
 * ```ts
 * STORE_OWNER.may("write", { agentId: "a1", workspaceId: "w1" }); // true
 * ```
 */
export const STORE_OWNER: SyncPrincipal = { user: "store-owner", may: () => true };

const SYNC_SERVER_FIELDS: KnownFields<SyncServerOptions> = { storage: true, clock: true, identity: true, pollIntervalMs: true, sweepIntervalMs: true };

/** Options of {@linkcode SyncServer}. */
export interface SyncServerOptions {
  /** The store it serves. An `EncryptedStorage` is served as stored (its `inner`): the server never uses the key. */
  readonly storage: StoragePort;
  /** Milliseconds since the epoch; injectable for tests. */
  readonly clock?: () => number;
  /** Who the server's writes are by, stamped into `writer.lock` (the Node runtime: `nodeWriterIdentity()`). */
  readonly identity?: WriterIdentity;
  /** How often a long-poll looks at the store again. Default 200 ms. */
  readonly pollIntervalMs?: number;
  /**
   * How often a pull compares every session with the last sweep, to log changes no mutation
   * announced (another writer of the store, a crash before a mutation's log entry). Default
   * 60 000 ms; `Infinity` when only this protocol writes the store (docs/SYNC.md "Pull by cursor").
   */
  readonly sweepIntervalMs?: number;
}

/** A push's answer as the server builds it: the results, and why it stopped before the end. */
export interface PushOutcome extends PushResponse {
  readonly error?: ErrorResponse["error"];
}

/** A client's record in the store: its user (bound on first use), its last mutation, its recent results. */
interface ClientLedger {
  readonly client_id: string;
  readonly user: string;
  readonly last_mutation: number;
  readonly results: readonly MutationResult[];
}

/** A session handle a server keeps between pushes: the last message it appended, and the `created_at` of the session it belongs to. */
interface KeptHandle {
  readonly session: Session;
  readonly last: { readonly sequence: number; readonly message_id: string };
  readonly created_at: string;
}

/** How many recent results a ledger keeps, to answer a retried push with what it did. */
const KEPT_RESULTS = 64;
/** How many session handles a server keeps between pushes (each holds its session's Active in memory). */
const KEPT_HANDLES = 64;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * The sync server's logic over one store.
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 * import { SYNC_PROTOCOL_VERSION } from "sessionfold/sync";
 *
 * const server = new SyncServer({ storage: new MemoryStorage() });
 * const { sessions } = await server.pull(STORE_OWNER, { v: SYNC_PROTOCOL_VERSION });
 * ```
 */
export class SyncServer {
  readonly sessions: Sessions;
  readonly #clock: () => number;
  readonly #writer: SyncWriter;
  readonly #pollMs: number;
  readonly #sweepMs: number;
  readonly #log: ChangeLog;
  /** One push at a time per client id in this process (pushes of one client are ordered anyway). */
  readonly #clientQueues = new Map<string, Promise<unknown>>();
  /**
   * One mutation at a time per session in this process: a session's operations are one at a
   * time per process (`SessionBusyError`), so two clients' pushes to one session take turns
   * here instead of one failing.
   */
  readonly #sessionQueues = new Map<string, Promise<unknown>>();
  #encrypted: Promise<boolean> | undefined;
  /**
   * The handle of each session a push appended to last, with the last message it appended and
   * the session's `created_at`, kept for the next append to it (at most {@linkcode KEPT_HANDLES}):
   * taken out while a push uses it, so no two pushes share one; trusted only as far as the store
   * proves it current ({@linkcode SyncServer.#fastForward}).
   */
  readonly #handles = new Map<string, KeptHandle>();

  /** @throws {InvalidInputError} when `options` is not an object, or has a field it does not know. */
  constructor(options: SyncServerOptions) {
    knownOptions(options, "new SyncServer(options)", SYNC_SERVER_FIELDS);
    this.#clock = options.clock ?? Date.now;
    const identity = options.identity ?? ANONYMOUS_WRITER;
    this.#writer = { identity, clock: this.#clock };
    // A server never uses a key, even when its host has one: an encrypted store is served as stored, a replica of ciphertext.
    const storage = options.storage instanceof EncryptedStorage ? options.storage.inner : options.storage;
    this.sessions = new Sessions({ storage, clock: this.#clock, identity });
    this.#pollMs = options.pollIntervalMs ?? 200;
    this.#sweepMs = options.sweepIntervalMs ?? 60_000;
    this.#log = new ChangeLog(options.storage);
  }

  /** Whether the store served is an encrypted store (its marker is there): then it takes sealed sessions only. */
  #encryptedStore(): Promise<boolean> {
    this.#encrypted ??= EncryptedStorage.isEncrypted(this.storage);
    return this.#encrypted;
  }

  get storage(): StoragePort {
    return this.sessions.storage;
  }

  /**
   * Applies a client's mutations in order, each exactly once: a number at or below the
   * client's last is a duplicate (acknowledged, nothing applied), the next one is applied and
   * recorded, a higher one is a gap (refused). Stops at the first refusal and says why in
   * `error`, with the results of the mutations before it.
   *
   * @throws {SyncRefusedError} when nothing could be applied: `client-id-taken` (403) for
   * another user's client id, `forbidden` (403), `mutation-gap` (409, `expected`), `session-busy` (409).
   */
  async push(principal: SyncPrincipal, request: PushRequest): Promise<PushOutcome> {
    return inTurn(this.#clientQueues, request.client_id, () => this.#push(principal, request));
  }

  async #push(principal: SyncPrincipal, request: PushRequest): Promise<PushOutcome> {
    let ledger = await this.#bindClient(principal, request.client_id);
    const results: MutationResult[] = [];
    for (const mutation of request.mutations) {
      try {
        const ref = parseSessionRef(mutation.ref);
        if (!principal.may("write", ref)) throw refused("forbidden", 403, `${principal.user} may not write ${mutation.ref}`, { ref: mutation.ref });
        if (mutation.number <= ledger.last_mutation) {
          const first = ledger.results.find((r) => r.number === mutation.number);
          results.push({ number: mutation.number, status: "duplicate", ref: mutation.ref, ...(first ? { result: first } : {}) });
          continue;
        }
        if (mutation.number > ledger.last_mutation + 1) {
          const expected = ledger.last_mutation + 1;
          throw refused("mutation-gap", 409, `client ${request.client_id}: mutation ${mutation.number} after ${ledger.last_mutation}; expected ${expected}`, {
            expected,
          });
        }
        const result = (await this.#continueFork(ledger, mutation)) ?? (await this.#apply(request.client_id, ref, mutation));
        // After the data, before the ledger: a retry after a crash between them finds its effect and logs it then.
        if (result.status !== "rejected") await this.#log.record(result.fork ? [mutation.ref, result.fork.ref] : [mutation.ref]);
        ledger = { ...ledger, last_mutation: mutation.number, results: [...ledger.results, result].slice(-KEPT_RESULTS) };
        await this.storage.replace(ledgerPath(request.client_id), encodeJsonDocument(ledger));
        results.push(result);
      } catch (error) {
        const typed = refusalOf(error, mutation.ref);
        if (results.length === 0) throw typed;
        return { v: SYNC_PROTOCOL_VERSION, results, error: errorBody(typed) };
      }
    }
    return { v: SYNC_PROTOCOL_VERSION, results };
  }

  /**
   * The sessions the principal may read that changed since `cursor`, and deleted ones; with
   * `wait_ms`, waits (looking at the store every poll interval) until something changed or
   * the time is up. An absent cursor means everything.
   */
  async pull(principal: SyncPrincipal, request: PullRequest, signal?: AbortSignal): Promise<PullResponse> {
    let cursor: Cursor | undefined = request.cursor === undefined ? undefined : decodeCursor(request.cursor);
    const deadline = this.#clock() + (request.wait_ms ?? 0);
    await this.#log.sweepIfDue(this.#clock(), this.#sweepMs, () => this.#placesAndRevisions());
    for (;;) {
      const { response, at } = await this.#changes(principal, cursor);
      const changed = response.sessions.length > 0 || response.tombstones.length > 0 || response.refused !== undefined;
      if (changed || this.#clock() >= deadline || signal?.aborted) return response;
      cursor = { kind: "log", at };
      await sleep(Math.min(this.#pollMs, Math.max(1, deadline - this.#clock())), signal);
    }
  }

  /**
   * One page of a session's history after `after_sequence`, with its head and `meta.json`.
   *
   * @throws {SyncRefusedError} `forbidden` (403), `not-found` (404).
   */
  async read(principal: SyncPrincipal, request: ReadRequest): Promise<ReadResponse> {
    const sealed = await this.#sealedReadable(principal, request.ref);
    if (sealed) {
      const at = (await sealedMessagesAfter(this.storage, sealed, request.after_sequence - 1, 1)).messages[0];
      const diverged = request.expect_message_id !== undefined &&
        ((at?.sequence === request.after_sequence ? at.message_id : null) ?? null) !== request.expect_message_id;
      const page = await sealedMessagesAfter(this.storage, sealed, request.after_sequence, request.limit ?? 1000);
      const records = page.messages.map(({ file, line }) => ({ file, line }));
      const segments = request.segments_after && segmentNamesAfter(sealed.segments.map(formatSegmentName), request.segments_after);
      return {
        v: SYNC_PROTOCOL_VERSION,
        head: sealedHeadOf(sealed),
        diverged,
        messages: [],
        more: page.more,
        sealed: { records },
        ...(segments ? { segments } : {}),
      };
    }
    const session = await this.#openReadable(principal, request.ref);
    let diverged = false;
    if (request.expect_message_id !== undefined) {
      const at = await messageAt(session, request.after_sequence);
      diverged = (at?.message_id ?? null) !== request.expect_message_id;
    }
    const page = await messagesAfter(session, request.after_sequence, request.limit ?? 1000);
    // Only asked for (a compaction on either side, an install): the one listing of segments/ a sync makes here.
    const segments = request.segments_after && segmentNamesAfter(await segmentNamesOf(session), request.segments_after);
    const head = await headOf(this.storage, session);
    return { v: SYNC_PROTOCOL_VERSION, head, meta: session.meta, diverged, messages: page.messages, more: page.more, ...(segments ? { segments } : {}) };
  }

  /**
   * One segment file, exact text.
   *
   * @throws {SyncRefusedError} `forbidden` (403), `not-found` (404).
   */
  async segment(principal: SyncPrincipal, request: SegmentRequest): Promise<SegmentResponse> {
    const sealed = await this.#sealedReadable(principal, request.ref);
    const bytes = sealed && (await this.storage.read(`${sealed.dir}/messages/segments/${request.name}`));
    const segment = sealed
      ? bytes && { name: request.name, text: decoder.decode(bytes) }
      : await readSegmentFile(this.storage, await this.#openReadable(principal, request.ref), request.name);
    if (!segment) throw refused("not-found", 404, `${request.ref} has no segment ${request.name}`, { ref: request.ref, name: request.name });
    return { v: SYNC_PROTOCOL_VERSION, segment };
  }

  /**
   * An append that continues a tail this client's earlier mutation sent into a fork (the
   * next batch of the same offline tail) goes to that fork: the session never had the
   * messages before its base, the fork has exactly them.
   */
  async #continueFork(ledger: ClientLedger, mutation: Mutation): Promise<MutationResult | undefined> {
    if (mutation.op === "append_sealed") {
      // An encrypted tail the device forks itself: the next batch of it belongs to the same fork, and nothing is applied here.
      const diverged = ledger.results.findLast((r) =>
        r.ref === mutation.ref && r.reason === "diverged" && r.fork && r.last_sequence === mutation.base_sequence
      );
      if (!diverged?.fork) return undefined;
      const last = sealedLineOf(mutation.lines.at(-1)!, `${mutation.ref}: lines.${mutation.lines.length - 1}`).sequence;
      return { number: mutation.number, status: "rejected", reason: "diverged", ref: mutation.ref, fork: diverged.fork, last_sequence: last };
    }
    if (mutation.op !== "append") return undefined;
    const forked = ledger.results.findLast((r) => r.ref === mutation.ref && r.status === "forked" && r.fork && r.last_sequence === mutation.base_sequence);
    if (!forked?.fork) return undefined;
    const result = await this.#apply(ledger.client_id, parseSessionRef(forked.fork.ref), { ...mutation, ref: forked.fork.ref });
    if (result.status === "forked") return { ...result, ref: mutation.ref };
    if (result.status === "rejected") return undefined;
    return { number: mutation.number, status: "forked", ref: mutation.ref, fork: forked.fork, last_sequence: mutation.messages.at(-1)!.sequence };
  }

  /** The client's ledger, created (binding the id to this user) on first use. */
  async #bindClient(principal: SyncPrincipal, clientId: string): Promise<ClientLedger> {
    const path = ledgerPath(clientId);
    const fresh: ClientLedger = { client_id: clientId, user: principal.user, last_mutation: 0, results: [] };
    // Read first: a known client (every push but its first) costs no durable create that fails.
    const bytes = (await this.storage.read(path)) ??
      ((await this.storage.createExclusive(path, encodeJsonDocument(fresh))) ? undefined : await this.storage.read(path));
    const ledger = bytes ? (JSON.parse(decoder.decode(bytes)) as ClientLedger) : fresh;
    if (ledger.user !== principal.user) {
      throw refused("client-id-taken", 403, `client id ${clientId} belongs to another user; nothing was applied`, { client_id: clientId });
    }
    return ledger;
  }

  /** `mutation` applied to the session `ref` once every earlier mutation of this process to that session has settled. */
  #apply(clientId: string, ref: SessionRef, mutation: Mutation): Promise<MutationResult> {
    return inTurn(this.#sessionQueues, mutation.ref, () => this.#applyInTurn(clientId, ref, mutation));
  }

  async #applyInTurn(clientId: string, ref: SessionRef, mutation: Mutation): Promise<MutationResult> {
    const refText = mutation.ref;
    const sealed = (await isSealedSession(this.storage, ref, "live")) || (await isSealedSession(this.storage, ref, "archived"));
    const sent = mutation.op.endsWith("_sealed") || (mutation.op === "segment" && isSealedText(mutation.segment.text));
    const removal = mutation.op === "archive" || mutation.op === "delete";
    const mismatch = sealed !== sent && (sealed || (await this.#open(ref, false)) || (await this.#open(ref, true)));
    if (!removal && (mismatch || (!sent && (await this.#encryptedStore())))) {
      throw refused(
        "encryption-mismatch",
        409,
        !sent
          ? `${refText} is end-to-end encrypted on the server (or the server's store is), so a mutation in the clear is refused: an encrypted session is never mixed with plaintext`
          : `${refText} is in the clear on the server; a sealed mutation is refused (an encrypted session is never mixed with plaintext)`,
        { ref: refText },
      );
    }
    switch (mutation.op) {
      case "create":
      case "append":
      case "create_sealed":
      case "append_sealed": {
        if (await this.storage.readTail(tombstonePath(ref), 0)) return { number: mutation.number, status: "rejected", ref: refText, reason: "deleted" };
        // A writer of the server's own committed meanwhile: look again (the check is by message ids, so it cannot apply twice).
        for (let attempt = 0;; attempt++) {
          try {
            return mutation.op === "create" || mutation.op === "append"
              ? await this.#applyMessages(clientId, ref, mutation)
              : await this.#applySealed(clientId, ref, mutation);
          } catch (error) {
            if (!(error instanceof RevisionConflictError) || attempt >= 5) throw error;
          }
        }
      }
      case "set_meta_sealed": {
        checkSealedDocuments(ref, mutation.keys, mutation);
        const session = await readSealedSession(this.storage, ref, "live");
        if (!session) return { number: mutation.number, status: "rejected", ref: refText, reason: "deleted" };
        await mergeSealedKeys(this.storage, session, mutation.keys);
        await writeSealedDocuments(this.storage, ref, mutation, this.#writer);
        return { number: mutation.number, status: "applied", ref: refText };
      }
      case "segment": {
        if (sealed) {
          checkSealedDocuments(ref, mutation.keys, {});
          const session = await readSealedSession(this.storage, ref, "live");
          if (!session) return { number: mutation.number, status: "rejected", ref: refText, reason: "deleted" };
          if (mutation.keys !== undefined) await mergeSealedKeys(this.storage, session, mutation.keys);
          const adopted = await adoptSealedSegment(this.storage, ref, mutation.segment, this.#writer);
          if (adopted === "conflict") return { number: mutation.number, status: "rejected", ref: refText, reason: "segmentation" };
          return { number: mutation.number, status: adopted === "adopted" ? "applied" : "duplicate", ref: refText };
        }
        const session = await this.#open(ref);
        if (!session) return { number: mutation.number, status: "rejected", ref: refText, reason: "deleted" };
        const adopted = await adoptSegment(this.sessions, refText, mutation.segment, this.#writer);
        if (adopted === "conflict") return { number: mutation.number, status: "rejected", ref: refText, reason: "segmentation" };
        return { number: mutation.number, status: adopted === "adopted" ? "applied" : "duplicate", ref: refText };
      }
      case "set_meta": {
        const session = await this.#open(ref);
        if (!session || session.place !== "live") return { number: mutation.number, status: "rejected", ref: refText, reason: "deleted" };
        const instruction = await this.storage.read(session.paths.instruction);
        const current = instruction ? decoder.decode(instruction) : null;
        if (!sameLabels(labelsOf(session.meta), mutation.labels) || current !== mutation.instruction) {
          await writeLabels(this.sessions, refText, mutation.labels, mutation.instruction, this.#writer);
        }
        return { number: mutation.number, status: "applied", ref: refText };
      }
      case "archive": {
        if (await isSealedSession(this.storage, ref, "live")) await archiveSealedSession(this.storage, ref, this.#writer);
        else if (!sealed && (await this.#open(ref))?.place === "live") await this.sessions.archive(ref);
        return { number: mutation.number, status: "applied", ref: refText };
      }
      case "delete": {
        // The tombstone first: a crash after it leaves a delete the next retry finishes.
        const tombstone: Tombstone = { ref: refText, deleted_at: nowTimestamp(this.#clock) };
        await this.storage.replace(tombstonePath(ref), encodeJsonDocument(tombstone));
        for (const archived of [false, true]) {
          // An encrypted session loses its keys.json first: a copy of its lines left anywhere opens no more.
          if (await isSealedSession(this.storage, ref, archived ? "archived" : "live")) {
            await deleteSealedSession(this.storage, ref, archived ? "archived" : "live");
          } else await this.sessions.delete(ref, { archived }).catch((e: unknown) => (e instanceof NotFoundError ? undefined : Promise.reject(e)));
        }
        return { number: mutation.number, status: "applied", ref: refText };
      }
    }
  }

  /** `create` and `append`: install, fast-forward, acknowledge what is there, or fork at the first difference. */
  async #applyMessages(clientId: string, ref: SessionRef, mutation: CreateMutation | AppendMutation): Promise<MutationResult> {
    const refText = mutation.ref;
    const base = mutation.op === "create" ? 0 : mutation.base_sequence;
    const messages = mutation.op === "create" ? [...messagesOfSegments(refText, mutation.segments), ...mutation.messages] : [...mutation.messages];
    assertContiguous(refText, base, messages);
    const fast = mutation.op === "append" ? await this.#fastForward(mutation, messages) : undefined;
    if (fast) return fast;
    // Archived too: a session held archived is never taken for a missing one (a create would install a second copy at its ref).
    let session = (await this.#open(ref)) ?? (await this.#open(ref, true));
    if (!session && mutation.op === "create") {
      const files = { meta: mutation.meta, instruction: mutation.instruction, segments: mutation.segments, active: mutation.messages };
      if (await installSession(this.storage, ref, files, this.#clock)) return { number: mutation.number, status: "applied", ref: refText };
      session = await this.#open(ref);
    }
    if (!session) return { number: mutation.number, status: "rejected", ref: refText, reason: "server-behind", last_sequence: 0 };
    // A create at an archived ref is refused unless it is that session (docs/SYNC.md "Archived sessions").
    if (session.place !== "live" && mutation.op === "create" && messages[0]?.message_id !== (await messageAt(session, 1))?.message_id) {
      return { number: mutation.number, status: "rejected", ref: refText, reason: "deleted" };
    }
    // Before anything is compared: a copy that waits for a repair would take what its reader skips for a difference, and fork.
    assertWritable(session, ref);
    const last = lastSequenceOf(session);
    if (last < base) return { number: mutation.number, status: "rejected", ref: refText, reason: "server-behind", last_sequence: last };
    if (
      mutation.op === "append" && base > 0 && mutation.base_message_id !== null && (await messageAt(session, base))?.message_id !== mutation.base_message_id
    ) {
      return { number: mutation.number, status: "rejected", ref: refText, reason: "base-mismatch", last_sequence: last };
    }
    const theirs = (await messagesAfter(session, base, messages.length)).messages;
    const differs = theirs.findIndex((m, i) => m.message_id !== messages[i]!.message_id);
    if (differs < 0 && theirs.length >= messages.length) return { number: mutation.number, status: "duplicate", ref: refText };
    if (differs < 0 && session.place === "live") {
      const { sequences } = await appendSynced(session, messages.slice(theirs.length).map(asNewMessage));
      this.#keep(refText, session, messages, sequences, session.meta.created_at);
      return { number: mutation.number, status: "applied", ref: refText };
    }
    // The first difference, or past an archived session's end: it is read-only, so a tail written after the archive
    // reached here becomes a fork, as a tail written after another one does (docs/SYNC.md "Divergence").
    const shared = differs < 0 ? theirs.length : differs;
    const atSequence = base + shared;
    const fork = sessionRef(ref.agentId, ref.workspaceId, await forkIdOf(refText, clientId, mutation.number));
    const forkRef = formatSessionRef(fork);
    const result: MutationResult = {
      number: mutation.number,
      status: "forked",
      ref: refText,
      fork: { ref: forkRef, at_sequence: atSequence },
      last_sequence: messages.at(-1)!.sequence,
    };
    if (await this.#open(fork)) return result;
    await installSession(this.storage, fork, await forkFiles(this.storage, session, fork, atSequence, messages.slice(shared), this.#clock), this.#clock);
    return result;
  }

  /**
   * An `append` right after the server's last message, through the handle an earlier push of
   * this process left: no open, no re-check of all of Active (docs/SYNC.md "The cost of a
   * push"). Only the plain case is decided on the kept state (its last message is the base);
   * anything else (a duplicate, a fork, a refusal) is decided on a fresh open. The state is
   * trusted as far as the store proves it: `meta.json` still has the handle's revision and
   * `created_at` (not another session made at that ref since), no committed line of
   * `active.jsonl` is newer (a commit that crashed before its `meta.json`), no draft was left
   * there (an open would finish it before the append), and the commit's
   * own revision check, under the lock, refuses it, writing nothing, when another writer went
   * past it meanwhile; then the push opens the session afresh.
   */
  async #fastForward(mutation: AppendMutation, messages: readonly MessageRecord[]): Promise<MutationResult | undefined> {
    const kept = this.#handles.get(mutation.ref);
    if (!kept) return undefined;
    this.#handles.delete(mutation.ref);
    const { session, last } = kept;
    if (last.sequence !== mutation.base_sequence || (mutation.base_message_id !== null && last.message_id !== mutation.base_message_id)) return undefined;
    const { meta, active, draft } = session.paths;
    const [bytes, lines, drafted] = await Promise.all([this.storage.read(meta), lastCommittedRevision(this.storage, active), this.storage.readTail(draft, 1)]);
    // catalogDocument: the fields, or `undefined` for bytes that are not a plain meta.json (damaged, sealed), which the
    // fresh open then reports as it does any.
    const disk = bytes && catalogDocument(bytes);
    if (!disk || disk.revision !== session.revision || disk.created_at !== kept.created_at || lines > session.revision || drafted !== undefined) {
      return undefined;
    }
    let sequences: readonly number[];
    try {
      ({ sequences } = await appendSynced(session, messages.map(asNewMessage)));
    } catch (error) {
      if (error instanceof RevisionConflictError) return undefined;
      throw error;
    }
    this.#keep(mutation.ref, session, messages, sequences, kept.created_at);
    return { number: mutation.number, status: "applied", ref: mutation.ref };
  }

  /**
   * Keeps a live session's handle for the next append to it, with the last message it appended
   * (when the commit gave the sequences the mutation said, as it must), the oldest let go past
   * {@linkcode KEPT_HANDLES}.
   */
  #keep(refText: string, session: Session, messages: readonly MessageRecord[], sequences: readonly number[], createdAt: string): void {
    this.#handles.delete(refText);
    const last = messages.at(-1)!;
    if (session.place !== "live" || sequences.at(-1) !== last.sequence) return;
    this.#handles.set(refText, { session, last: { sequence: last.sequence, message_id: last.message_id }, created_at: createdAt });
    if (this.#handles.size > KEPT_HANDLES) this.#handles.delete(this.#handles.keys().next().value!);
  }

  /**
   * `create_sealed` and `append_sealed`: install, fast-forward or acknowledge by the message
   * ids in the clear, as `create` and `append` do. At the first difference the server cannot
   * fork (it has no key, and a record opens only in the session it was sealed for): the
   * mutation is rejected as `diverged` with the fork's ref, and the device makes that fork
   * itself, sealed for it, and pushes it (docs/SYNC.md "End-to-end encrypted sessions").
   */
  async #applySealed(clientId: string, ref: SessionRef, mutation: SealedCreateMutation | SealedAppendMutation): Promise<MutationResult> {
    const refText = mutation.ref;
    const base = mutation.op === "create_sealed" ? 0 : mutation.base_sequence;
    const lines = mutation.lines.map((line, i) => sealedLineOf(line, `${refText}: lines.${i}`));
    const fromSegments = mutation.op === "create_sealed" ? mutation.segments.flatMap((segment) => sealedSegmentMessages(refText, segment)) : [];
    const messages: SealedLine[] = [...fromSegments, ...lines];
    assertContiguous(refText, base, messages);
    checkSealedDocuments(ref, mutation.keys, mutation.op === "create_sealed" ? mutation : {});
    let session = (await readSealedSession(this.storage, ref, "live")) ?? (await readSealedSession(this.storage, ref, "archived"));
    if (!session && mutation.op === "create_sealed") {
      if (await installSealedSession(this.storage, ref, { ...mutation, lines })) return { number: mutation.number, status: "applied", ref: refText };
      session = await readSealedSession(this.storage, ref, "live");
    }
    if (!session) return { number: mutation.number, status: "rejected", ref: refText, reason: "server-behind", last_sequence: 0 };
    // As `create` at an archived ref (docs/SYNC.md "Archived sessions").
    if (
      session.place !== "live" && mutation.op === "create_sealed" &&
      messages[0]?.message_id !== (await sealedMessagesAfter(this.storage, session, 0, 1)).messages[0]?.message_id
    ) return { number: mutation.number, status: "rejected", ref: refText, reason: "deleted" };
    const last = sealedLastSequence(session);
    if (last < base) return { number: mutation.number, status: "rejected", ref: refText, reason: "server-behind", last_sequence: last };
    if (mutation.op === "append_sealed" && base > 0 && mutation.base_message_id !== null) {
      const at = (await sealedMessagesAfter(this.storage, session, base - 1, 1)).messages[0];
      if (at?.message_id !== mutation.base_message_id) {
        return { number: mutation.number, status: "rejected", ref: refText, reason: "base-mismatch", last_sequence: last };
      }
    }
    const theirs = (await sealedMessagesAfter(this.storage, session, base, messages.length)).messages;
    const differs = theirs.findIndex((m, i) => m.message_id !== messages[i]!.message_id);
    if (differs < 0 && theirs.length >= messages.length) return { number: mutation.number, status: "duplicate", ref: refText };
    if (differs < 0 && session.place === "live") {
      const missing = messages.slice(theirs.length);
      // A record sealed inside a segment opens only there: what the server lacks must come as Active lines.
      if (missing.length > lines.length) return { number: mutation.number, status: "rejected", ref: refText, reason: "server-behind", last_sequence: last };
      await mergeSealedKeys(this.storage, session, mutation.keys);
      await appendSealedLines(this.storage, ref, last, missing, this.#writer);
      return { number: mutation.number, status: "applied", ref: refText };
    }
    const fork = sessionRef(ref.agentId, ref.workspaceId, await forkIdOf(refText, clientId, mutation.number));
    return {
      number: mutation.number,
      status: "rejected",
      reason: "diverged",
      ref: refText,
      // Past an archived session's end too: it is read-only, so the tail becomes a fork (docs/SYNC.md "Archived sessions").
      fork: { ref: formatSessionRef(fork), at_sequence: base + (differs < 0 ? theirs.length : differs) },
      last_sequence: messages.at(-1)!.sequence,
    };
  }

  /** What changed since `cursor`: from the log when it can say, else by a scan (no cursor, a version 1 cursor, a log rewritten or pruned). */
  async #changes(principal: SyncPrincipal, cursor: Cursor | undefined): Promise<{ response: PullResponse; at: LogPosition }> {
    const read = cursor?.kind === "log" ? await this.#log.since(cursor.at) : undefined;
    if (!read) return this.#scan(principal, cursor?.kind === "seen" ? cursor : { s: {}, t: [] });
    const sessions: SessionHead[] = [];
    const tombstones: Tombstone[] = [];
    const refusedCopies: RefusedSession[] = [];
    for (const refText of [...read.refs].sort()) {
      const ref = parseSessionRef(refText);
      if (!principal.may("read", ref)) continue;
      // An encrypted session is read as stored (its keys.json says so), never opened.
      const sealed = (await readSealedSession(this.storage, ref, "live")) ?? (await readSealedSession(this.storage, ref, "archived"));
      let session: Session | undefined;
      try {
        session = sealed ? undefined : ((await this.#open(ref)) ?? (await this.#open(ref, true)));
      } catch (error) {
        refusedCopies.push(refusedSession(error, refText));
        continue;
      }
      if (sealed) sessions.push(sealedHeadOf(sealed));
      else if (session) sessions.push(await headOf(this.storage, session));
      else {
        const bytes = await this.storage.read(tombstonePath(ref));
        if (bytes) tombstones.push(JSON.parse(decoder.decode(bytes)) as Tombstone);
      }
    }
    return { response: pullResponse(read.at, sessions, tombstones, refusedCopies), at: read.at };
  }

  /**
   * The sessions the listing could not read (`problems`, their refs as text) that the
   * principal may read: a head when the open reads it after all, an entry of `refused` when
   * the server's copy cannot be served (an unknown schema, a `meta.json` that does not parse).
   */
  async #unlisted(principal: SyncPrincipal, problems: readonly string[], archived: boolean, into: { sessions: SessionHead[]; refused: RefusedSession[] }) {
    for (const refText of problems) {
      // A folder above the sessions the listing could not read names no session.
      const ref = refText.split("/").length === 3 ? parseSessionRef(refText) : undefined;
      if (!ref || !principal.may("read", ref)) continue;
      try {
        const session = await this.#open(ref, archived);
        if (session) into.sessions.push(await headOf(this.storage, session));
      } catch (error) {
        into.refused.push(refusedSession(error, refText));
      }
    }
  }

  /**
   * Every session the principal may read whose place and revision differ from `known`, and
   * the tombstones not in it; the cursor is the log's head read first, so a change logged
   * during the scan is read again next time, never missed.
   */
  async #scan(principal: SyncPrincipal, known: { readonly s: Record<string, string>; readonly t: readonly string[] }) {
    const at = await this.#log.head();
    const sessions: SessionHead[] = [];
    const refusedCopies: RefusedSession[] = [];
    for (const archived of [false, true]) {
      const problems: string[] = [];
      for (const meta of await this.sessions.list({ archived, onProblem: (problem) => problems.push(problem.refText) })) {
        const ref = sessionRef(meta.agent_id, meta.workspace_id, meta.session_id);
        if (!principal.may("read", ref)) continue;
        const refText = formatSessionRef(ref);
        // An encrypted session's meta.json is sealed by a device and never rewritten here: what changed is read from its lines.
        const sealed = Object.hasOwn(meta, "sealed") ? await readSealedSession(this.storage, ref, archived ? "archived" : "live") : undefined;
        if (sealed) {
          if (known.s[refText] !== (await sealedChangeKey(sealed))) sessions.push(sealedHeadOf(sealed));
          continue;
        }
        if (known.s[refText] === placeAndRevision(archived, meta.revision)) continue;
        const session = await this.#open(ref, archived);
        if (session) sessions.push(await headOf(this.storage, session));
      }
      await this.#unlisted(principal, problems, archived, { sessions, refused: refusedCopies });
    }
    const tombstones: Tombstone[] = [];
    for (const agentId of (await this.storage.list("sync/tombstones")).filter(isValidId)) {
      for (const workspaceId of (await this.storage.list(`sync/tombstones/${agentId}`)).filter(isValidId)) {
        if (!principal.may("read", { agentId, workspaceId })) continue;
        for (const name of await this.storage.list(`sync/tombstones/${agentId}/${workspaceId}`)) {
          if (known.t.includes(`${agentId}/${workspaceId}/${name.replace(/\.json$/, "")}`)) continue;
          const bytes = await this.storage.read(`sync/tombstones/${agentId}/${workspaceId}/${name}`);
          if (bytes) tombstones.push(JSON.parse(decoder.decode(bytes)) as Tombstone);
        }
      }
    }
    return { response: pullResponse(at, sessions, tombstones, refusedCopies), at };
  }

  /** Every session of the store (every user's) as `place:revision` by ref, for the log's sweep. */
  async #placesAndRevisions(): Promise<Record<string, string>> {
    const keys: Record<string, string> = {};
    for (const archived of [false, true]) {
      for (const meta of await this.sessions.list({ archived, onProblem: skipUnlisted })) {
        keys[formatSessionRef(sessionRef(meta.agent_id, meta.workspace_id, meta.session_id))] = placeAndRevision(archived, meta.revision);
      }
    }
    return keys;
  }

  /** The encrypted session a read is for (the user checked), or `undefined` when it is not one. */
  async #sealedReadable(principal: SyncPrincipal, refText: string) {
    const ref = parseSessionRef(refText);
    if (!principal.may("read", ref)) throw refused("forbidden", 403, `${principal.user} may not read ${refText}`, { ref: refText });
    return (await readSealedSession(this.storage, ref, "live")) ?? (await readSealedSession(this.storage, ref, "archived"));
  }

  async #openReadable(principal: SyncPrincipal, refText: string): Promise<Session> {
    const ref = parseSessionRef(refText);
    if (!principal.may("read", ref)) throw refused("forbidden", 403, `${principal.user} may not read ${refText}`, { ref: refText });
    try {
      const session = (await this.#open(ref)) ?? (await this.#open(ref, true));
      if (!session) throw refused("not-found", 404, `no session ${refText}`, { ref: refText });
      // A copy that waits for a repair is not served: what a reader skips would arrive as a clean copy (docs/SYNC.md "One session at a time").
      assertWritable(session, ref);
      return session;
    } catch (error) {
      if (error instanceof CorruptSessionError || error instanceof UnsupportedSchemaError) throw serverCopyRefused(error, refText);
      throw error;
    }
  }

  /** The session, or `undefined` when there is none in that place. */
  async #open(ref: SessionRef, archived = false): Promise<Session | undefined> {
    try {
      return await this.sessions.open(ref, { archived });
    } catch (error) {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
  }
}

/** Runs `fn` once every earlier call for `key` in `queues` has settled (one at a time per key); the key is dropped when idle. */
async function inTurn<T>(queues: Map<string, Promise<unknown>>, key: string, fn: () => Promise<T>): Promise<T> {
  const previous = queues.get(key) ?? Promise.resolve();
  const run = previous.catch(() => undefined).then(fn);
  queues.set(key, run);
  try {
    return await run;
  } finally {
    if (queues.get(key) === run) queues.delete(key);
  }
}

/** A session's place and revision, as a version 1 cursor and the log's sweep compare them. */
function placeAndRevision(archived: boolean, revision: number): string {
  return `${archived ? "archived" : "live"}:${revision}`;
}

function ledgerPath(clientId: string): string {
  return `sync/clients/${clientId}.json`;
}

function tombstonePath(ref: SessionRef): string {
  return `sync/tombstones/${ref.agentId}/${ref.workspaceId}/${ref.sessionId}.json`;
}

/** The fork's session id, derived from the request: a retried push finds the same fork. */
async function forkIdOf(ref: string, clientId: string, number: number): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(`${ref}\n${clientId}\n${number}`) as Uint8Array<ArrayBuffer>));
  const hex = Array.from(digest.subarray(0, 8), (b) => b.toString(16).padStart(2, "0")).join("");
  return `${parseSessionRef(ref).sessionId.slice(0, 100)}.fork-${hex}`;
}

function assertContiguous(ref: string, base: number, messages: readonly { readonly sequence: number }[]): void {
  messages.forEach((m, i) => {
    if (m.sequence !== base + i + 1) {
      throw refused("malformed", 400, `${ref}: message ${i} has sequence ${m.sequence}; expected ${base + i + 1}`, { ref, index: i });
    }
  });
}

/**
 * A refusal as it is; a session another writer holds (another process, or an operation of this one's host) as
 * `session-busy`; a session whose copy on the server is corrupt or of an unknown schema as `corrupt` /
 * `unsupported-schema`, that session's refusal (docs/SYNC.md "One session at a time"); bad input in a mutation as
 * `malformed`; anything else is the server's failure and goes on up.
 */
function refusalOf(error: unknown, ref: string): SyncRefusedError {
  if (error instanceof SyncRefusedError) return error;
  if (error instanceof WriterLockedError || error instanceof SessionBusyError) {
    return refused("session-busy", 409, `${ref} is held by another writer of the server's store; push again later`, { ref });
  }
  if (error instanceof CorruptSessionError || error instanceof UnsupportedSchemaError) return serverCopyRefused(error, ref);
  const typed = asSessionfoldError(error, "push failed");
  if (typed.code !== "invalid-input" && typed.code !== "invalid-id") throw typed;
  return new SyncRefusedError(typed.message, { ...typed.details, reason: "malformed", status: 400 });
}

/** A session the server cannot write or read because its own copy needs a repair (or a newer sessionfold): that session's refusal, never a 500. */
function serverCopyRefused(error: CorruptSessionError | UnsupportedSchemaError, ref: string): SyncRefusedError {
  const reason = error instanceof CorruptSessionError ? "corrupt" : "unsupported-schema";
  return refused(reason, 409, `${ref}: the server's copy cannot be synced until it is repaired on the server: ${error.message}`, { ref });
}

/** A session a pull cannot list because the server's own copy cannot be read, as an entry of its `refused`; any other error goes on up. */
function refusedSession(error: unknown, ref: string): RefusedSession {
  if (!(error instanceof CorruptSessionError || error instanceof UnsupportedSchemaError)) throw error;
  const { reason, message } = serverCopyRefused(error, ref);
  return { ref, reason: reason as RefusedSession["reason"], message };
}

/** A pull's answer at the log position `at`; `refused` only when a copy was refused, so an answer without one is as before. */
function pullResponse(at: LogPosition, sessions: SessionHead[], tombstones: Tombstone[], refusedCopies: RefusedSession[]): PullResponse {
  return { v: SYNC_PROTOCOL_VERSION, cursor: encodeCursor(at), sessions, tombstones, ...(refusedCopies.length > 0 ? { refused: refusedCopies } : {}) };
}

/** The JSON error of a refusal. */
export function errorBody(error: SyncRefusedError): ErrorResponse["error"] {
  const { reason: _reason, status: _status, ...details } = error.details;
  return { ...details, reason: error.reason, message: error.message };
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
  });
}
