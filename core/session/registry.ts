import { InvalidInputError, NotFoundError, CorruptSessionError, asSessionfoldError } from "../errors.ts";
import { decodeJsonl } from "../jsonl/decode.ts";
import { assertId, formatSessionRef, isValidId, parseSessionRef, sessionRef, type SessionRef } from "../layout/ids.ts";
import { sessionPaths, sessionsDir, workspacesDir, type SessionPlace } from "../layout/paths.ts";
import { MessageRecord, SummaryRecord, describeIssues, encodeJsonDocument, nowTimestamp, parseMetaJson, type SessionMeta } from "../schema/mod.ts";
import { assertJsonDepth } from "../schema/json-depth.ts";
import type { ImportedFrom, PortableSession } from "../model/mod.ts";
import type { StoragePort } from "../storage/port.ts";
import { newId } from "./ids.ts";
import { importedHistoryFiles } from "./import-history.ts";
import type { LeaseLostNotice } from "./lease-fence.ts";
import { loadSessionState } from "./load.ts";
import { acquireWriterLock, releaseWriterLock, type WriterLease } from "./lock.ts";
import { resolveSessionOptions, type SessionOptions } from "./options.ts";
import { ANONYMOUS_WRITER, type OwnerProbe, type WriterIdentity } from "./owner.ts";
import { Session } from "./session.ts";
import { reportReclaimed, type CommitNotice, type SessionContext, type StaleLockReclaimed } from "./transaction.ts";
import { lastSequence } from "./state.ts";

/** Options of {@linkcode Sessions}. */
export interface SessionsOptions {
  /** Where sessions are stored: any {@linkcode StoragePort}. */
  readonly storage: StoragePort;
  /** Who writes, stamped into `writer.lock` (pid, host, runtime). */
  readonly identity?: WriterIdentity;
  /** Milliseconds since the epoch; injectable for tests. */
  readonly clock?: () => number;
  /** Options for every session this registry opens, unless a call gives its own. */
  readonly defaults?: SessionOptions;
  /**
   * Called after each write of a session opened here that gives it a new revision (a commit,
   * a compaction, a reset, a repair), with the session and its revision now: the browser
   * runtime announces these to other tabs. A listener's error is ignored.
   */
  readonly onCommit?: (event: CommitNotice) => void;
  /**
   * What the platform knows of other processes of this host (the Node runtime passes one).
   * With it, a `writer.lock` left by a dead writer of this host and boot is taken over
   * (docs/FORMAT.md `writer.lock`); without it, every lock found is honoured.
   */
  readonly probe?: OwnerProbe;
  /** Called when a dead writer's lock was taken over, with its old content (`stale_lock_reclaimed`). */
  readonly onStaleLockReclaimed?: (event: StaleLockReclaimed) => void;
  /** Called when a held session's commit finds its lease lost (its commit then fails with `LeaseLostError`; docs/FORMAT.md "Fencing"). */
  readonly onLeaseLost?: (event: LeaseLostNotice) => void;
}

/** Opening a session to hold it: `{ hold: true }` on {@linkcode Sessions.open} and {@linkcode Sessions.create}. */
export interface HoldOption {
  /**
   * Keep the session's `writer.lock` until `session.close()` (a lease): commits then need no
   * lock file operations and no revision read, and any other writer is refused at once with
   * `WriterLockedError` naming this one. Default `false`: a lock per operation.
   */
  readonly hold?: boolean;
}

/** What {@linkcode Sessions.create} needs. */
export interface CreateSessionInput {
  readonly agentId: string;
  readonly workspaceId: string;
  /** Defaults to a new random id. */
  readonly sessionId?: string;
  readonly title?: string;
  /** Written to `instruction.md`: the session's fixed system snapshot. */
  readonly instruction?: string;
  readonly modelLabel?: string;
  /** IANA time zone of the user, e.g. `Europe/Berlin`. */
  readonly timezone?: string;
}

/** Options of {@linkcode Sessions.list}: which sessions, and where to report the unreadable. */
export interface ListSessionsOptions {
  /** Only this agent's sessions. */
  readonly agentId?: string;
  /** Only this workspace's sessions (of every agent listed). */
  readonly workspaceId?: string;
  /** List `archived-sessions/` instead of `sessions/`. */
  readonly archived?: boolean;
  /** Called for each session folder whose `meta.json` cannot be read; it is left out of the list. */
  readonly onProblem?: (problem: ListProblem) => void;
}

/** Options of {@linkcode Sessions.fork}. */
export interface ForkOptions {
  /** Called after each segment copied and once at the end with `(done, total)` files. */
  readonly onProgress?: (done: number, total: number) => void;
}

/** A session folder whose `meta.json` could not be listed, and why. */
export interface ListProblem {
  readonly ref: string;
  readonly message: string;
}

/**
 * The sessions of one store: create, open, list, fork, archive and delete.
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 *
 * const sessions = new Sessions({ storage: new MemoryStorage() });
 * const s = await sessions.create({ agentId: "coder", workspaceId: "repo", sessionId: "s1", title: "Fix the build" });
 * const again = await sessions.open(s.ref);
 * ```
 */
export class Sessions {
  readonly storage: StoragePort;
  readonly #ctx: SessionContext;
  readonly #defaults: SessionOptions;

  constructor(options: SessionsOptions) {
    this.storage = options.storage;
    this.#ctx = {
      storage: options.storage,
      identity: options.identity ?? ANONYMOUS_WRITER,
      clock: options.clock ?? Date.now,
      ...(options.onCommit ? { onCommit: options.onCommit } : {}),
      ...(options.probe ? { probe: options.probe } : {}),
      ...(options.onStaleLockReclaimed ? { onStaleLockReclaimed: options.onStaleLockReclaimed } : {}),
      ...(options.onLeaseLost ? { onLeaseLost: options.onLeaseLost } : {}),
    };
    this.#defaults = options.defaults ?? {};
  }

  /**
   * Creates an empty session: `meta.json` (revision 0) and, with `instruction`, `instruction.md`.
   *
   * @throws {InvalidIdError} before anything is written when an id is not valid.
   * @throws {InvalidInputError} when a session with that id exists (live or archived).
   */
  async create(input: CreateSessionInput, options?: SessionOptions & HoldOption): Promise<Session> {
    const ref = sessionRef(input.agentId, input.workspaceId, input.sessionId ?? newId("s"));
    const resolved = resolveSessionOptions({ ...this.#defaults, ...options });
    const paths = sessionPaths(ref);
    if (await this.#exists(ref, "archived")) {
      throw new InvalidInputError(`${formatSessionRef(ref)} exists in archived-sessions/; choose another id`, { ref: formatSessionRef(ref) });
    }
    const now = nowTimestamp(this.#ctx.clock);
    const meta: SessionMeta = {
      schema_version: 1,
      session_id: ref.sessionId,
      agent_id: ref.agentId,
      workspace_id: ref.workspaceId,
      ...(input.title !== undefined ? { title: input.title } : {}),
      ...(input.modelLabel !== undefined ? { model_label: input.modelLabel } : {}),
      created_at: now,
      updated_at: now,
      message_count: 0,
      history_bytes: 0,
      ...(input.timezone !== undefined ? { timezone: input.timezone } : {}),
      revision: 0,
    };
    if ((await this.#exists(ref, "live")) || !(await this.storage.createExclusive(paths.meta, encodeJsonDocument(meta)))) {
      throw this.#alreadyExists(ref);
    }
    if (input.instruction !== undefined) await this.storage.replace(paths.instruction, new TextEncoder().encode(input.instruction));
    return this.open(ref, { ...resolved, ...(options?.hold ? { hold: true } : {}) });
  }

  /**
   * Opens a session, applying docs/FORMAT.md's recovery rules (see `session.diagnostics`).
   * Reads `meta.json`, `active.jsonl`, the draft, `instruction.md` and the newest segment's
   * tail; nothing else, whatever the history length. Writes nothing.
   *
   * @throws {InvalidIdError} when an id is not valid.
   * @throws {NotFoundError} when there is no such session.
   * @throws {UnsupportedSchemaError} when `meta.json` has an unknown schema version.
   * @throws {InvalidInputError} when the options are inconsistent.
   */
  async open(ref: SessionRef | string, options?: SessionOptions & HoldOption & { archived?: boolean }): Promise<Session> {
    const valid = typeof ref === "string" ? parseSessionRef(ref) : sessionRef(ref.agentId, ref.workspaceId, ref.sessionId);
    const place: SessionPlace = options?.archived ? "archived" : "live";
    const resolved = resolveSessionOptions({ ...this.#defaults, ...options });
    const paths = sessionPaths(valid, place);
    // The existence check and the reads go out together (one round trip through a worker);
    // a load that fails on a session that does not exist is reported as not found.
    const [exists, state] = await Promise.allSettled([this.#exists(valid, place), loadSessionState(this.storage, paths, valid, this.#ctx.clock)]);
    if (exists.status === "rejected") throw exists.reason;
    if (!exists.value) {
      throw new NotFoundError(`no session ${formatSessionRef(valid)}${place === "archived" ? " in archived-sessions/" : ""}`, { ref: formatSessionRef(valid) });
    }
    if (state.status === "rejected") throw state.reason;
    const session = new Session(this.#ctx, valid, place, paths, state.value, resolved);
    if (options?.hold) await session.hold();
    return session;
  }

  /**
   * Lists sessions from their `meta.json`, newest update first. Folders whose meta cannot
   * be read are left out and passed to `options.onProblem`; nothing is changed.
   *
   * @throws {InvalidIdError} when a filter id is not valid.
   */
  async list(options: ListSessionsOptions = {}): Promise<SessionMeta[]> {
    const { onProblem, ...filter } = options;
    const agents = filter.agentId !== undefined ? [filter.agentId] : (await this.storage.list("agents")).filter(isValidId);
    const metas: SessionMeta[] = [];
    for (const agentId of agents) {
      assertId("agent_id", agentId);
      const workspaces = filter.workspaceId !== undefined ? [filter.workspaceId] : (await this.storage.list(workspacesDir(agentId))).filter(isValidId);
      for (const workspaceId of workspaces) {
        const dir = sessionsDir(agentId, workspaceId, filter.archived ? "archived" : "live");
        for (const sessionId of (await this.storage.list(dir)).filter(isValidId)) {
          const ref = `${agentId}/${workspaceId}/${sessionId}`;
          // One session that cannot be read (a bad meta.json, a link or a FIFO where a file belongs) is a problem, not the end of the listing.
          try {
            const bytes = await this.storage.read(`${dir}/${sessionId}/meta.json`);
            if (bytes) {
              metas.push(parseMetaJson(bytes, `${ref}/meta.json`));
            } else if ((await this.storage.list(`${dir}/${sessionId}/messages`)).length > 0) {
              // An empty folder (a create interrupted before meta.json) is no session at all.
              onProblem?.({ ref, message: "meta.json is missing (open the session to rebuild it)" });
            }
          } catch (error) {
            onProblem?.({ ref, message: asSessionfoldError(error, ref).message });
          }
        }
      }
    }
    return metas.sort((a, b) => b.updated_at.localeCompare(a.updated_at) || a.session_id.localeCompare(b.session_id));
  }

  /**
   * Copies the full history into a new session in the same workspace: every segment,
   * Active and `instruction.md`, sequences kept, `forked_from` set. The copy is built in a
   * hidden folder and moved into place in one step, so a crash never leaves half a fork.
   * Reads every segment: the one full-history operation.
   *
   * @throws {InvalidIdError} when `newSessionId` is not valid.
   * @throws {InvalidInputError} when a session with that id exists.
   * @throws {WriterLockedError} when another writer holds the source.
   * @throws {CorruptSessionError} when a source file has an invalid line (named by file and line).
   */
  async fork(source: SessionRef | string, newSessionId: string, options: ForkOptions = {}): Promise<Session> {
    const { onProgress } = options;
    const from = await this.open(source);
    const target = sessionRef(from.ref.agentId, from.ref.workspaceId, newSessionId);
    if ((await this.#exists(target, "live")) || (await this.#exists(target, "archived"))) throw this.#alreadyExists(target);
    const fatal = from.diagnostics.find((d) => d.fatal);
    if (fatal) throw new CorruptSessionError(`cannot fork ${formatSessionRef(from.ref)}: ${fatal.message}`, { file: fatal.file, line: fatal.line });
    const lock = await this.#acquire(from.ref, from.paths.lock, "fork");
    const staging = this.#stagingDir(target, "fork");
    try {
      await from.reload();
      const fromPaths = from.paths;
      let historyBytes = 0;
      const segments = await from.segments();
      const total = segments.length + 1;
      for (const [i, range] of segments.entries()) {
        const bytes = (await this.storage.read(fromPaths.segment(range))) ?? new Uint8Array(0);
        const file = `messages/segments/${fromPaths.segment(range).split("/").at(-1)}`;
        const result = decodeJsonl(bytes, { file, schemas: { message: MessageRecord, summary: SummaryRecord }, tornTailRecoverable: false });
        const bad = result.diagnostics.find((d) => d.fatal);
        if (bad) throw new CorruptSessionError(`cannot fork ${formatSessionRef(from.ref)}: ${bad.message}`, { file, line: bad.line });
        await this.storage.replace(`${staging}/${file}`, bytes);
        historyBytes += bytes.length;
        onProgress?.(i + 1, total);
      }
      const activeBytes = new TextEncoder().encode(from.active.map((m) => `${JSON.stringify(m)}\n`).join(""));
      if (activeBytes.length > 0) await this.storage.replace(`${staging}/messages/active.jsonl`, activeBytes);
      historyBytes += activeBytes.length;
      const instruction = await this.storage.read(fromPaths.instruction);
      if (instruction) await this.storage.replace(`${staging}/instruction.md`, instruction);
      const now = nowTimestamp(this.#ctx.clock);
      // A fork is a new session: it keeps the history's accounting, not the import record.
      const { imported_from: _importedFrom, ...inherited } = from.meta as SessionMeta & { imported_from?: unknown };
      const meta: SessionMeta = {
        ...inherited,
        session_id: target.sessionId,
        created_at: now,
        updated_at: now,
        history_bytes: historyBytes,
        message_count: lastSequence({ newest: from.newestSegment, active: [...from.active] }),
        forked_from: { session_id: from.ref.sessionId, through_sequence: lastSequence({ newest: from.newestSegment, active: [...from.active] }) },
      };
      await this.#installStaged(staging, target, meta);
      onProgress?.(total, total);
    } catch (error) {
      await this.storage.remove(staging).catch(() => undefined);
      throw asSessionfoldError(error, `fork of ${formatSessionRef(from.ref)} failed`);
    } finally {
      await releaseWriterLock(this.storage, lock).catch(() => undefined);
    }
    return this.open(target);
  }

  /**
   * Imports a whole session from another system (see `core/formats`): every message into
   * Active with sequences 1..n, the system prompt into `instruction.md`, and `meta.json`
   * with the source's revision when it has one. Built in a hidden folder and moved into
   * place in one step: a refused or failed import creates nothing.
   *
   * @example
   * ```ts
   * import { MemoryStorage, Sessions, readDeepCode } from "sessionfold";
   *
   * const sessions = new Sessions({ storage: new MemoryStorage() });
   * const bytes = new TextEncoder().encode(
   *   '{"type":"session_meta","schema_version":1,"id":"s","cwd":"/repo","created_at":"2026-12-02T13:00:00.000Z","updated_at":"2026-12-02T13:00:00.000Z"}\n' +
   *     '{"type":"message","role":"user","content":[{"type":"text","text":"hi"}],"created_at":"2026-12-02T13:00:00.000Z"}\n',
   * );
   * const { session: portable } = readDeepCode({ file: "s.v1.jsonl", bytes });
   * const session = await sessions.importPortable("a1/w1/imported", portable);
   * ```
   * @throws {InvalidIdError} when the target id is not valid.
   * @throws {InvalidInputError} when a session with that id exists or a message is not a valid record.
   */
  async importPortable(target: SessionRef | string, portable: PortableSession): Promise<Session> {
    const ref = typeof target === "string" ? parseSessionRef(target) : sessionRef(target.agentId, target.workspaceId, target.sessionId);
    if ((await this.#exists(ref, "live")) || (await this.#exists(ref, "archived"))) throw this.#alreadyExists(ref);
    const messages = portable.messages.map((message, i) => {
      assertJsonDepth(message, `imported message ${i + 1}`);
      const parsed = MessageRecord.safeParse({ ...message, sequence: i + 1 });
      if (!parsed.success || parsed.data.status === "streaming") {
        const why = parsed.success ? "status \"streaming\" cannot be imported" : describeIssues(parsed.error);
        throw new InvalidInputError(`imported message ${i + 1} is not a valid message record: ${why}`, { index: i });
      }
      return parsed.data;
    });
    const revision = portable.revision ?? (messages.length > 0 ? 1 : 0);
    if (!Number.isSafeInteger(revision) || revision < 0) throw new InvalidInputError(`imported revision ${String(revision)} is not a non-negative integer`);
    const staging = this.#stagingDir(ref, "import");
    try {
      const now = nowTimestamp(this.#ctx.clock);
      const createdAt = portable.createdAt ?? messages[0]?.created_at ?? now;
      const history = importedHistoryFiles(ref.sessionId, messages, portable.segments ?? [], now, this.storage.maxFileBytes);
      for (const segment of history.segments) await this.storage.replace(`${staging}/messages/segments/${segment.name}`, segment.bytes);
      if (history.active.length > 0) await this.storage.replace(`${staging}/messages/active.jsonl`, history.active);
      if (portable.system) await this.storage.replace(`${staging}/instruction.md`, new TextEncoder().encode(portable.system));
      const importedFrom: ImportedFrom = {
        format: portable.format ?? "portable",
        ...(portable.sourceId !== undefined ? { session_id: portable.sourceId } : {}),
        ...(portable.cwd !== undefined ? { cwd: portable.cwd } : {}),
        ...(portable.updatedAt !== undefined ? { updated_at: portable.updatedAt } : {}),
        imported_at: now,
      };
      const meta: SessionMeta = {
        schema_version: 1,
        session_id: ref.sessionId,
        agent_id: ref.agentId,
        workspace_id: ref.workspaceId,
        ...(portable.title !== undefined ? { title: portable.title } : {}),
        ...(portable.modelLabel !== undefined ? { model_label: portable.modelLabel } : {}),
        // An import is not activity: the session's times are its source's (imported_from.imported_at
        // records the import); the import time stands in only where the source has no time at all.
        created_at: createdAt,
        updated_at: portable.updatedAt ?? messages.at(-1)?.created_at ?? createdAt,
        message_count: messages.length,
        history_bytes: history.historyBytes,
        revision,
        ...(portable.compaction ? { compaction: portable.compaction } : {}),
        ...(portable.metadata ? { metadata: { ...portable.metadata } } : {}),
        ...(portable.promptCacheKey !== undefined ? { prompt_cache_key: portable.promptCacheKey } : {}),
        ...(portable.provider ? { provider: { ...portable.provider } } : {}),
        ...(portable.summary !== undefined ? { imported_summary: portable.summary } : {}),
        imported_from: importedFrom,
      };
      await this.#installStaged(staging, ref, meta);
    } catch (error) {
      await this.storage.remove(staging).catch(() => undefined);
      throw asSessionfoldError(error, `import into ${formatSessionRef(ref)} failed`);
    }
    return this.open(ref);
  }

  /**
   * Moves the whole session to `archived-sessions/` in one step (under its lock).
   *
   * @throws {NotFoundError} when there is no such live session.
   * @throws {InvalidInputError} when an archived session with that id exists.
   * @throws {WriterLockedError} when another writer holds it.
   */
  async archive(ref: SessionRef | string): Promise<SessionMeta> {
    const session = await this.open(ref);
    const archived = sessionPaths(session.ref, "archived");
    if (await this.#exists(session.ref, "archived")) {
      throw new InvalidInputError(`${formatSessionRef(session.ref)} already exists in archived-sessions/`, { ref: formatSessionRef(session.ref) });
    }
    await session.mutate("archive", async () => {
      if (!(await this.storage.move(session.paths.dir, archived.dir))) {
        throw new InvalidInputError(`${formatSessionRef(session.ref)} already exists in archived-sessions/`, { ref: formatSessionRef(session.ref) });
      }
      // The lock moved with the folder; it is this operation's, so it goes.
      await this.storage.remove(archived.lock);
    });
    return (await this.open(session.ref, { archived: true })).meta;
  }

  /**
   * Deletes a session and its whole history (live or archived). Explicit and final.
   *
   * @throws {NotFoundError} when there is no such session.
   * @throws {WriterLockedError} when another writer holds it.
   */
  async delete(ref: SessionRef | string, options: { archived?: boolean } = {}): Promise<void> {
    const valid = typeof ref === "string" ? parseSessionRef(ref) : sessionRef(ref.agentId, ref.workspaceId, ref.sessionId);
    const place: SessionPlace = options.archived ? "archived" : "live";
    if (!(await this.#exists(valid, place))) throw new NotFoundError(`no session ${formatSessionRef(valid)}`, { ref: formatSessionRef(valid) });
    const paths = sessionPaths(valid, place);
    // Taken so a running writer is never deleted under; the removal takes the lock file with it.
    const lock = await this.#acquire(valid, paths.lock, "delete");
    try {
      await this.storage.remove(paths.dir);
    } finally {
      await releaseWriterLock(this.storage, lock);
    }
  }

  /** Takes a session's lock for an operation of the registry's own, reporting a dead writer's lock it took over. */
  async #acquire(ref: SessionRef, path: string, operation: string): Promise<WriterLease> {
    const { lease, reclaimed } = await acquireWriterLock(this.storage, path, this.#ctx, operation);
    if (reclaimed) reportReclaimed(this.#ctx, ref, path, reclaimed);
    return lease;
  }

  /** A hidden folder beside the sessions (never a valid id), where a new session is built. */
  #stagingDir(target: SessionRef, purpose: string): string {
    return `${sessionsDir(target.agentId, target.workspaceId)}/.${purpose}-${target.sessionId}-${newId("t")}`;
  }

  /** Writes `meta.json` last and moves the staged folder into place in one step. */
  async #installStaged(staging: string, target: SessionRef, meta: SessionMeta): Promise<void> {
    await this.storage.replace(`${staging}/meta.json`, encodeJsonDocument(meta));
    if (!(await this.storage.move(staging, sessionPaths(target).dir))) throw this.#alreadyExists(target);
  }

  /**
   * A session exists when its `meta.json` does, or (meta lost) when it has messages. A point
   * read first: listing the session folder would cost O(files) on backends that list by key
   * range over every descendant (IndexedDB), and a turn must not grow with history.
   */
  async #exists(ref: SessionRef, place: SessionPlace): Promise<boolean> {
    const paths = sessionPaths(ref, place);
    if (await this.storage.readTail(paths.meta, 0)) return true;
    return (await this.storage.list(paths.messagesDir)).length > 0;
  }

  #alreadyExists(ref: SessionRef): InvalidInputError {
    return new InvalidInputError(`a session ${formatSessionRef(ref)} already exists`, { ref: formatSessionRef(ref) });
  }
}
