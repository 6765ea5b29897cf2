/**
 * The registry of sessions (`Sessions`): create, open, list, fork, import, archive,
 * delete and purge, over one store and one writer identity, and its close. A new session's
 * files, archiving, deletion, listing, the fork's copy, an import's files, the staged folder they are
 * built in, retention and the close's gate have files of their own (`create.ts`, `archive.ts`, `delete.ts`,
 * `session-listing.ts`, `fork.ts`, `import-portable.ts`, `staging.ts`, `purge.ts`, `store-gate.ts`).
 *
 * @module
 */
import { asSessionfoldError, CorruptSessionError } from "../errors.ts";
import { formatSessionRef, type SessionRef, sessionRef, toSessionRef } from "../layout/ids.ts";
import { sessionPaths, type SessionPlace } from "../layout/paths.ts";
import { assertFields, objectArgument } from "../schema/arguments.ts";
import type { SessionMeta } from "../schema/records.ts";
import type { PortableSession } from "../model/mod.ts";
import type { StoragePort } from "../storage/port.ts";
import { registerContext, type SessionContext } from "./context.ts";
import { createdRef, createSessionFiles } from "./create.ts";
import { archiveSession } from "./archive.ts";
import { acquireRegistryLock, deleteSession } from "./delete.ts";
import { copyForFork } from "./fork.ts";
import { IMPORTED_FIELD_NAMES, importedMessages, writeImported } from "./import-portable.ts";
import { readSessionFiles, readSessionState } from "./load.ts";
import { releaseWriterLock } from "./lock.ts";
import { resolveSessionOptions, type SessionOptions } from "./options.ts";
import { ANONYMOUS_WRITER } from "./owner.ts";
import type { CreateSessionInput, DeletedSession, ForkOptions, HoldOption, ListSessionsOptions, SessionList, SessionsOptions } from "./registry-options.ts";
import { assertSessionsOptions, callOptions } from "./registry-options.ts";
import { type PurgeOptions, type PurgeResult, purgeSessions } from "./purge.ts";
import { Session } from "./session.ts";
import { partsOf } from "./session-view.ts";
import { StoreGate } from "./store-gate.ts";
import { listSessions, rebuildCatalogs } from "./session-listing.ts";
import { alreadyExists, installStaged, sessionExists, stageSession } from "./staging.ts";

export type { CreateSessionInput, DeletedSession, ForkOptions, HoldOption, ListProblem, ListSessionsOptions, SessionsOptions } from "./registry-options.ts";

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

  /**
   * @throws {InvalidInputError} when `options` is not an object, has a field it does not know (or its `defaults` one
   * session options lack), or its `storage` is not a {@linkcode StoragePort}.
   */
  constructor(options: SessionsOptions) {
    assertSessionsOptions(options);
    this.storage = options.storage;
    this.#ctx = registerContext(this, {
      storage: options.storage,
      identity: options.identity ?? ANONYMOUS_WRITER,
      clock: options.clock ?? Date.now,
      gate: new StoreGate(),
      ...(options.onCommit ? { onCommit: options.onCommit } : {}),
      ...(options.onRemoved ? { onRemoved: options.onRemoved } : {}),
      ...(options.probe ? { probe: options.probe } : {}),
      ...(options.onStaleLockReclaimed ? { onStaleLockReclaimed: options.onStaleLockReclaimed } : {}),
      ...(options.onLeaseLost ? { onLeaseLost: options.onLeaseLost } : {}),
    });
    this.#defaults = options.defaults ?? {};
  }

  /**
   * Creates an empty session: `meta.json` (revision 0) and, with `instruction`, `instruction.md`.
   *
   * @throws {InvalidIdError} before anything is written when an id is not valid.
   * @throws {InvalidInputError} when a session with that id exists (live or archived), or
   * before anything is written when `input` is not an object or a field is one `meta.json`
   * cannot hold (a `title` that is not a string: docs/FORMAT.md "The write limits are the read limits").
   * @throws {LimitExceededError} when `meta.json` or `instruction.md` would be over the store's file limit.
   * @throws {StoreClosedError} when {@linkcode Sessions.close} began.
   */
  create(input: CreateSessionInput, options?: SessionOptions & HoldOption): Promise<Session> {
    return this.#ctx.gate.run(async () => {
      const ref = createdRef(input);
      callOptions("create", options);
      const resolved = resolveSessionOptions({ ...this.#defaults, ...options });
      await createSessionFiles(this.storage, this.#ctx.clock, ref, input);
      return this.#open(ref, { ...resolved, ...(options?.hold ? { hold: true } : {}) }, true);
    });
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
   * @throws {StoreClosedError} when {@linkcode Sessions.close} began.
   */
  open(ref: SessionRef | string, options?: SessionOptions & HoldOption & { archived?: boolean }): Promise<Session> {
    return this.#ctx.gate.run(() => this.#open(ref, options));
  }

  /** `written`: the session was just written whole (created, forked, imported), which `onCommit` hears at its revision. */
  async #open(ref: SessionRef | string, options?: SessionOptions & HoldOption & { archived?: boolean }, written = false): Promise<Session> {
    const valid = toSessionRef(ref);
    callOptions("open", options);
    const place: SessionPlace = options?.archived ? "archived" : "live";
    const paths = sessionPaths(valid, place);
    // The first reads go out first: the options are resolved and the load's code runs (the first time in a process,
    // compiles) while the storage (a worker thread) reads. Refused options throw (the reads' outcome is then dropped).
    const files = readSessionFiles(this.storage, paths);
    files.catch(() => undefined);
    const resolved = resolveSessionOptions({ ...this.#defaults, ...options });
    const state = await readSessionState(this.storage, valid, place, paths, this.#ctx.clock, files);
    const session = new Session(this.#ctx, valid, place, paths, state, resolved);
    if (options?.hold) await partsOf(session).tx.hold(true);
    if (written) partsOf(session).tx.notifyCommit();
    return session;
  }

  /**
   * Lists sessions, newest activity (`updated_at`) first, then by ref, each workspace from
   * its catalog where the backend keeps one (docs/FORMAT.md "The catalog"). With `limit`, a
   * page whose `cursor` lists the next: a session appears at most once across pages, exactly
   * once if unchanged meanwhile. Unreadable ones go to `onProblem`. Changes nothing.
   *
   * @throws {InvalidIdError} when a filter id is not valid.
   * @throws {InvalidInputError} when `limit` is not a positive integer or `cursor` is not a listing's.
   * @throws {StoreEntryError} without `onProblem`, when a folder it lists is refused (a link, or a file where the
   * folder belongs: the root, `agents/`, a workspace's `sessions/`…); a missing folder lists as empty.
   */
  list(options: ListSessionsOptions = {}): Promise<SessionList> {
    return this.#ctx.gate.run(() => listSessions(this.storage, callOptions("list", options)));
  }

  /** Rebuilds the selected workspaces' catalogs from every `meta.json` (docs/FORMAT.md "The catalog"); resolves the sessions catalogued. */
  rebuildCatalog(filter: { agentId?: string; workspaceId?: string } = {}): Promise<number> {
    return this.#ctx.gate.run(() => rebuildCatalogs(this.storage, filter));
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
  fork(source: SessionRef | string, newSessionId: string, options: ForkOptions = {}): Promise<Session> {
    return this.#ctx.gate.run(() => this.#fork(source, newSessionId, options));
  }

  async #fork(source: SessionRef | string, newSessionId: string, options: ForkOptions): Promise<Session> {
    const { onProgress } = callOptions("fork", options);
    const from = await this.#open(source);
    const target = sessionRef(from.ref.agentId, from.ref.workspaceId, newSessionId);
    if ((await sessionExists(this.storage, target, "live")) || (await sessionExists(this.storage, target, "archived"))) throw alreadyExists(target);
    const fatal = from.diagnostics.find((d) => d.fatal);
    if (fatal) throw new CorruptSessionError(`cannot fork ${formatSessionRef(from.ref)}: ${fatal.message}`, { file: fatal.file, line: fatal.line });
    const lock = await acquireRegistryLock(this.#ctx, from.ref, from.paths.lock, "fork");
    const staging = stageSession(target, "fork");
    try {
      await from.reload();
      const { meta, total } = await copyForFork(this.storage, this.#ctx.clock, from, staging, onProgress);
      await installStaged(this.storage, staging, meta, `fork of ${formatSessionRef(from.ref)}`);
      onProgress?.(total, total);
    } catch (error) {
      await this.storage.remove(staging.paths.dir).catch(() => undefined);
      throw asSessionfoldError(error, `fork of ${formatSessionRef(from.ref)} failed`);
    } finally {
      await releaseWriterLock(this.storage, lock).catch(() => undefined);
    }
    return this.#open(target, undefined, true);
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
  importPortable(target: SessionRef | string, portable: PortableSession): Promise<Session> {
    return this.#ctx.gate.run(() => this.#importPortable(target, portable));
  }

  async #importPortable(target: SessionRef | string, portable: PortableSession): Promise<Session> {
    const ref = toSessionRef(target);
    objectArgument(portable, "importPortable(target, portable)", "a PortableSession { messages, … }");
    assertFields(portable, "importPortable(target, portable)", { messages: "array!" });
    if ((await sessionExists(this.storage, ref, "live")) || (await sessionExists(this.storage, ref, "archived"))) throw alreadyExists(ref);
    const { messages, revision } = importedMessages(portable);
    const staging = stageSession(ref, "import");
    try {
      const meta = await writeImported(this.storage, this.#ctx.clock, ref, portable, messages, revision, staging);
      await installStaged(this.storage, staging, meta, "importPortable(target, portable)", IMPORTED_FIELD_NAMES);
    } catch (error) {
      await this.storage.remove(staging.paths.dir).catch(() => undefined);
      throw asSessionfoldError(error, `import into ${formatSessionRef(ref)} failed`);
    }
    return this.#open(ref, undefined, true);
  }

  /**
   * Moves the whole session to `archived-sessions/` in one step (under its lock).
   *
   * @throws {NotFoundError} when there is no such live session.
   * @throws {InvalidInputError} when an archived session with that id exists.
   * @throws {WriterLockedError} when another writer holds it.
   */
  archive(ref: SessionRef | string): Promise<SessionMeta> {
    return this.#ctx.gate.run(() => this.#archive(ref));
  }

  async #archive(ref: SessionRef | string): Promise<SessionMeta> {
    const session = await this.#open(ref);
    await archiveSession(this.storage, session);
    return (await this.#open(session.ref, { archived: true })).meta;
  }

  /**
   * Deletes a session and its whole history, explicit and final: every file of the folder
   * (meta, segments, Active, the draft, `quarantine/`, the lock), from every place it is in
   * (live and archived) unless `archived` names one. On an encrypted store the data keys go
   * first (crypto-shredding). Resolves every file it removed (docs/FORMAT.md "Deletion").
   *
   * @throws {NotFoundError} when there is no such session.
   * @throws {WriterLockedError} when another writer holds it (nothing is removed).
   */
  delete(ref: SessionRef | string, options: { archived?: boolean } = {}): Promise<DeletedSession> {
    return this.#ctx.gate.run(() => deleteSession(this.#ctx, ref, callOptions("delete", options)));
  }

  /**
   * Retention, run only when the host calls it: deletes (through {@linkcode Sessions.delete})
   * the sessions last active more than `olderThan` ms ago and beyond the `keepNewest` newest
   * of each workspace, archived sessions first, then the oldest. A session a writer holds,
   * whose draft is streaming or whose `meta.json` cannot be read is skipped with the reason
   * (the last is never counted among the `keepNewest`); `dryRun` lists and deletes nothing.
   *
   * @example
   * ```ts
   * import { MemoryStorage, Sessions } from "sessionfold";
   *
   * const sessions = new Sessions({ storage: new MemoryStorage() });
   * await sessions.create({ agentId: "coder", workspaceId: "repo", sessionId: "old" });
   * const plan = await sessions.purge({ keepNewest: 0, dryRun: true });
   * plan.entries.map((e) => `${e.ref} ${e.outcome}`); // ["coder/repo/old would-delete"]
   * ```
   * @throws {InvalidInputError} when neither `olderThan` nor `keepNewest` is given.
   */
  purge(options: PurgeOptions): Promise<PurgeResult> {
    // Its listings and deletions are steps of the purge, counted once: never refused half-way by a close that began meanwhile.
    const steps = { storage: this.storage, list: (o: ListSessionsOptions) => listSessions(this.storage, o), delete: deleteSession.bind(null, this.#ctx) };
    return this.#ctx.gate.run(() => purgeSessions(steps, this.#ctx.clock(), options));
  }

  /**
   * Ends this registry before its storage is closed (what a runtime's store `close()` does first): operations under
   * way settle with their own outcome (a commit under way resolves), then every session a handle of it holds is given
   * back (`writer.lock` removed), and every operation started after `close()` began rejects with
   * `StoreClosedError`, nothing read or written. The storage stays open: its owner closes it. Idempotent.
   *
   * @example
   * ```ts
   * import { Session, Sessions } from "sessionfold";
   * declare const sessions: Sessions, held: Session;
   * const appended = held.append({ role: "user", parts: [{ type: "text", text: "hi" }] });
   * await sessions.close(); // the append settles first (it resolves), then the hold is given back
   * ```
   */
  close(): Promise<void> {
    return this.#ctx.gate.close();
  }
}
