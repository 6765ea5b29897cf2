/**
 * Typed errors of sessionfold. Every error a host can see is a
 * {@linkcode SessionfoldError} with a stable `code` (the codes of the CLI) and
 * structured `details`, so it can cross a worker boundary and be printed as JSON.
 *
 * @module
 */

/** The stable error codes, as printed by the CLI (`error[<code>]`). */
export type ErrorCode =
  | "invalid-id"
  | "not-found"
  | "writer-locked"
  | "revision-conflict"
  | "busy"
  | "closed"
  | "corrupt"
  | "unsupported-schema"
  | "invalid-input"
  | "storage-full"
  | "compaction-failed"
  | "context-overflow"
  | "cancelled"
  | "usage"
  | "internal"
  | "unauthorized"
  | "sync-refused"
  | "key-required"
  | "wrong-key";

/** Structured, JSON-safe details carried by an error. */
export type ErrorDetails = Record<string, unknown>;

/**
 * Base class of every sessionfold error.
 *
 * @example
 * ```ts
 * import { Sessions } from "sessionfold";
 * const ref = { agentId: "a1", workspaceId: "w1", sessionId: "s1" };
 * declare const sessions: Sessions;
 *
 * try { await sessions.open(ref); } catch (e) {
 *   if (e instanceof SessionfoldError) console.error(`error[${e.code}]: ${e.message}`);
 * }
 * ```
 */
export class SessionfoldError extends Error {
  /**
   * The class's name as a string literal in every class (never `new.target.name`): a minifier
   * renames classes, and the worker wire ({@linkcode deserializeError}) rebuilds an error by it.
   */
  override readonly name: string = "SessionfoldError";
  /** Stable machine-readable code. */
  readonly code: ErrorCode;
  /** JSON-safe details: paths, line numbers, the lock owner, revisions… */
  readonly details: ErrorDetails;

  constructor(code: ErrorCode, message: string, details: ErrorDetails = {}, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.details = details;
  }

  /** The JSON shape the CLI prints: `{code, message, ...details}`. */
  toJSON(): { code: ErrorCode; message: string; name: string } & ErrorDetails {
    return { ...this.details, name: this.name, code: this.code, message: this.message };
  }
}

/**
 * An id (agent, workspace, session) that docs/FORMAT.md does not allow. Thrown before any path is built.
 *
 * @example
 * ```ts
 * import { sessionRef } from "sessionfold";
 * try { sessionRef("coder", "../etc", "s1"); } catch (e) {
 *   if (e instanceof InvalidIdError) console.error(e.code, e.message); // "invalid-id", naming workspace_id and the value
 * }
 * ```
 */
export class InvalidIdError extends SessionfoldError {
  override readonly name: string = "InvalidIdError";
  constructor(message: string, details: ErrorDetails = {}) {
    super("invalid-id", message, details);
  }
}

/**
 * A session, file or agent that does not exist.
 *
 * @example
 * ```ts
 * import { MemoryStorage, Sessions } from "sessionfold";
 * const sessions = new Sessions({ storage: new MemoryStorage() });
 * try { await sessions.open("coder/repo/missing"); } catch (e) {
 *   if (e instanceof NotFoundError) console.error(e.code); // "not-found"
 * }
 * ```
 */
export class NotFoundError extends SessionfoldError {
  override readonly name: string = "NotFoundError";
  constructor(message: string, details: ErrorDetails = {}) {
    super("not-found", message, details);
  }
}

/** The content of a `writer.lock` file (docs/FORMAT.md). */
export interface LockOwner {
  pid: number;
  hostname: string;
  runtime: string;
  operation: string;
  created_at: string;
  [extra: string]: unknown;
}

/**
 * Another writer holds the session's `writer.lock`; `owner` is its content. Nobody steals it.
 *
 * @example
 * ```ts
 * import { Sessions } from "sessionfold";
 * declare const sessions: Sessions;
 * try { await sessions.open("coder/repo/s1"); } catch (e) {
 *   if (e instanceof WriterLockedError) console.error(`held by pid ${e.owner?.pid} on ${e.owner?.hostname}`);
 * }
 * ```
 */
export class WriterLockedError extends SessionfoldError {
  override readonly name: string = "WriterLockedError";
  readonly owner: LockOwner | undefined;
  constructor(message: string, details: ErrorDetails & { owner?: LockOwner; path?: string } = {}) {
    super("writer-locked", message, details);
    this.owner = details.owner;
  }
}

/**
 * The lock this writer held (a lease, or an operation's lock) was lost before this write
 * (on files: its `writer.lock` was removed or taken by another writer, found by the lease's
 * fence before any write; on PostgreSQL: its connection ended). The write is refused;
 * `details.outcome` says whether it certainly did not land (`"not-written"`) or died on the
 * way (`"unknown"`). Close the handle and reopen (on files, `reload()` is enough: the handle
 * then writes per operation).
 *
 * @example
 * ```ts
 * import { Session, Sessions } from "sessionfold";
 * declare const sessions: Sessions;
 * declare let session: Session;
 * try { await session.append({ role: "user", parts: [{ type: "text", text: "hi" }] }); } catch (e) {
 *   if (e instanceof LeaseLostError) session = await sessions.open("coder/repo/s1"); // e.details.outcome: "not-written" or "unknown"
 * }
 * ```
 */
export class LeaseLostError extends WriterLockedError {
  override readonly name: string = "LeaseLostError";
}

/**
 * `meta.json` moved under this handle: another writer committed since it last read.
 *
 * @example
 * ```ts
 * import { Session } from "sessionfold";
 * declare const session: Session;
 * try { await session.append({ role: "user", parts: [{ type: "text", text: "hi" }] }); } catch (e) {
 *   if (e instanceof RevisionConflictError) await session.reload(); // another writer committed: read its work, then retry
 * }
 * ```
 */
export class RevisionConflictError extends SessionfoldError {
  override readonly name: string = "RevisionConflictError";
  constructor(message: string, details: ErrorDetails & { expected?: number | null; found?: number | null } = {}) {
    super("revision-conflict", message, details);
  }
}

/**
 * A mutating operation is already running on this session in this process (one at a time).
 *
 * @example
 * ```ts
 * import { Session } from "sessionfold";
 * declare const session: Session;
 * try { await session.compact(); } catch (e) {
 *   if (e instanceof SessionBusyError) console.error("a run or a compaction is already under way");
 * }
 * ```
 */
export class SessionBusyError extends SessionfoldError {
  override readonly name: string = "SessionBusyError";
  constructor(message: string, details: ErrorDetails = {}) {
    super("busy", message, details);
  }
}

/**
 * The store was closed: an operation started after its `close()` began (or a storage call
 * made after its storage's `close()`) is refused, and nothing was read or written. What was
 * under way when `close()` was called settled first with its own outcome. Code `closed`
 * (CLI exit 5).
 *
 * @example
 * ```ts
 * import { MemoryStorage, Sessions } from "sessionfold";
 * const sessions = new Sessions({ storage: new MemoryStorage() });
 * await sessions.close();
 * try { await sessions.open("coder/repo/s1"); } catch (e) {
 *   if (e instanceof StoreClosedError) console.error(e.code); // "closed": open the store again
 * }
 * ```
 */
export class StoreClosedError extends SessionfoldError {
  override readonly name: string = "StoreClosedError";
  constructor(message: string, details: ErrorDetails = {}) {
    super("closed", message, details);
  }
}

/**
 * A file is corrupt (an invalid line that is not a torn tail); writes are blocked.
 *
 * @example
 * ```ts
 * import { Sessions } from "sessionfold";
 * declare const sessions: Sessions;
 * try { await sessions.open("coder/repo/s1"); } catch (e) {
 *   if (e instanceof CorruptSessionError) console.error(e.details.file, e.details.line); // run `sessionfold repair`
 * }
 * ```
 */
export class CorruptSessionError extends SessionfoldError {
  override readonly name: string = "CorruptSessionError";
  constructor(message: string, details: ErrorDetails & { file?: string; line?: number | null } = {}) {
    super("corrupt", message, details);
  }
}

/** What {@linkcode StoreEntryError} says about the entry it refused. */
export interface StoreEntryDetails extends ErrorDetails {
  /** The storage key, relative to the store's root. */
  path: string;
  /** Where the backend keeps it (the absolute file on Node), when that differs from the key. */
  file?: string;
  /** What is there: `"a symbolic link"`, `"a FIFO"`, `"a folder"`, `"a file with 2 hard links"`, `"a file of 300 MiB"`… */
  found: string;
  /** What belongs there: `"a regular file"`, `"a folder"`, `"a file of at most 256 MiB"`… */
  expected: string;
}

/**
 * An entry of the store that sessionfold refuses to follow, read or write: a symbolic link
 * anywhere under the root, a FIFO, socket or device, a folder where a file belongs (or the
 * reverse, for a write or a listing), a file with other hard links (for a write), or a file over the size
 * limit. Code `corrupt` (CLI exit 4). Nothing was read from it or written to it, and its
 * message quotes nothing of its content.
 *
 * @example
 * ```ts
 * import { Sessions } from "sessionfold";
 * declare const sessions: Sessions;
 *
 * try { await sessions.open("a1/w1/s1"); } catch (e) {
 *   if (e instanceof StoreEntryError) console.error(e.details.path, e.details.found); // ".../meta.json", "a symbolic link"
 * }
 * ```
 */
export class StoreEntryError extends CorruptSessionError {
  override readonly name: string = "StoreEntryError";
  declare readonly details: StoreEntryDetails;
  constructor(message: string, details: StoreEntryDetails) {
    super(message, details);
  }
}

/**
 * A `schema_version` (or other format version) this reader does not know. It never guesses.
 *
 * @example
 * ```ts
 * import { parseMetaJson } from "sessionfold";
 * try { parseMetaJson('{"schema_version": 99}'); } catch (e) {
 *   if (e instanceof UnsupportedSchemaError) console.error(e.code); // "unsupported-schema": a newer sessionfold wrote it
 * }
 * ```
 */
export class UnsupportedSchemaError extends SessionfoldError {
  override readonly name: string = "UnsupportedSchemaError";
  constructor(message: string, details: ErrorDetails = {}) {
    super("unsupported-schema", message, details);
  }
}

/**
 * A caller passed a value the API does not accept (the message says which and why).
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 * try { await new MemoryStorage().read("../etc/passwd"); } catch (e) {
 *   if (e instanceof InvalidInputError) console.error(e.code); // "invalid-input"
 * }
 * ```
 */
export class InvalidInputError extends SessionfoldError {
  override readonly name: string = "InvalidInputError";
  constructor(message: string, details: ErrorDetails = {}) {
    super("invalid-input", message, details);
  }
}

/**
 * The storage has no room left; nothing was half-written.
 *
 * @example
 * ```ts
 * import { Session } from "sessionfold";
 * declare const session: Session;
 * try { await session.append({ role: "user", parts: [{ type: "text", text: "hi" }] }); } catch (e) {
 *   if (e instanceof StorageFullError) console.error("disk full: the message was not stored; free space and retry");
 * }
 * ```
 */
export class StorageFullError extends SessionfoldError {
  override readonly name: string = "StorageFullError";
  constructor(message: string, details: ErrorDetails = {}) {
    super("storage-full", message, details);
  }
}

/**
 * A storage backend failed for a reason other than a full disk.
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 * try { await new MemoryStorage().read("a"); } catch (e) {
 *   if (e instanceof StorageError) console.error(e.message, e.cause); // the backend's own error as the cause
 * }
 * ```
 */
export class StorageError extends SessionfoldError {
  override readonly name: string = "StorageError";
  constructor(message: string, details: ErrorDetails = {}, options?: { cause?: unknown }) {
    super("internal", message, details, options);
  }
}

/**
 * Compaction failed (summarizer error, cancellation, empty summary); nothing changed.
 *
 * @example
 * ```ts
 * import { Session } from "sessionfold";
 * declare const session: Session;
 * try { await session.compact(); } catch (e) {
 *   if (e instanceof CompactionFailedError) console.error(e.message, e.cause); // the session is as it was
 * }
 * ```
 */
export class CompactionFailedError extends SessionfoldError {
  override readonly name: string = "CompactionFailedError";
  constructor(message: string, details: ErrorDetails = {}, options?: { cause?: unknown }) {
    super("compaction-failed", message, details, options);
  }
}

/**
 * The model input still overflows after the bounded number of in-memory folds.
 *
 * @example
 * ```ts
 * import { Session } from "sessionfold";
 * declare const session: Session;
 * try { await session.compact(); } catch (e) {
 *   if (e instanceof ContextOverflowError) console.error("the input does not fit the context window even folded");
 * }
 * ```
 */
export class ContextOverflowError extends SessionfoldError {
  override readonly name: string = "ContextOverflowError";
  constructor(message: string, details: ErrorDetails = {}) {
    super("context-overflow", message, details);
  }
}

/**
 * A run was cancelled cooperatively; `revision` is the revision its recoverable work committed.
 *
 * @example
 * ```ts
 * import { Session } from "sessionfold";
 * declare const session: Session;
 * try { await session.compact({ signal: AbortSignal.abort() }); } catch (e) {
 *   if (e instanceof CancelledError) console.error(`cancelled at revision ${e.revision}`);
 * }
 * ```
 */
export class CancelledError extends SessionfoldError {
  override readonly name: string = "CancelledError";
  readonly revision: number | undefined;
  constructor(message: string, details: ErrorDetails & { revision?: number } = {}) {
    super("cancelled", message, details);
    this.revision = details.revision;
  }
}

/**
 * An unexpected failure inside sessionfold or a host callback, wrapped so it stays typed.
 *
 * @example
 * ```ts
 * try { throw new InternalError("host callback failed", { callback: "onCommit" }); } catch (e) {
 *   if (e instanceof InternalError) console.error(e.code, e.details); // "internal", { callback: "onCommit" }
 * }
 * ```
 */
export class InternalError extends SessionfoldError {
  override readonly name: string = "InternalError";
  constructor(message: string, details: ErrorDetails = {}, options?: { cause?: unknown }) {
    super("internal", message, details, options);
  }
}

/**
 * The provider failed the request (not a context-length refusal); nothing of the run was committed.
 *
 * @example
 * ```ts
 * import { Session } from "sessionfold";
 * declare const session: Session;
 * try { await session.compact(); } catch (e) {
 *   if (e instanceof ProviderError) console.error(e.message, e.cause); // the SDK's own error as the cause
 * }
 * ```
 */
export class ProviderError extends SessionfoldError {
  override readonly name: string = "ProviderError";
  constructor(message: string, details: ErrorDetails = {}, options?: { cause?: unknown }) {
    super("internal", message, details, options);
  }
}

/**
 * Wraps a value thrown by host code or a platform API so that no untyped error reaches a host.
 * A typed error is returned as it is, but for a `StorageFullError`: the storage's names the
 * file it could not write, and the one returned names what was being written (`context`) first.
 *
 * @example
 * ```ts
 * declare function hostCallback(): Promise<void>;
 * try { await hostCallback(); } catch (e) { throw asSessionfoldError(e, "summarizer failed"); }
 * ```
 */
export function asSessionfoldError(error: unknown, context: string): SessionfoldError {
  if (error instanceof StorageFullError) return new StorageFullError(`${context}: ${error.message}`, error.details);
  if (error instanceof SessionfoldError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new InternalError(`${context}: ${message}`, {}, { cause: error });
}

/** What {@linkcode LimitExceededError} says about the limit a value went over. */
export interface LimitExceededDetails extends ErrorDetails {
  /** The limit's exported name: `"MAX_LINE_BYTES"`, `"MAX_FILE_BYTES"` or `"MAX_JSON_DEPTH"`. */
  limit: string;
  /** The limit's value (bytes, or levels of nesting). */
  max: number;
  /** What was found: the size in bytes, or the depth. */
  found: number;
  /** The file it concerns (a store file, or the file being imported), when there is one. */
  file?: string;
  /** Its 1-based line, when there is one. */
  line?: number | null;
}

/**
 * A value over one of the store's limits (docs/FORMAT.md "Limits"): a message whose line would
 * be longer than 64 MiB, a commit that would make `active.jsonl` larger than 256 MiB, a value
 * nested deeper than 512 levels, an imported line over 64 MiB. Refused before anything is
 * written, so nothing is acknowledged that an open cannot read back. Code `invalid-input`
 * (CLI exit 4).
 *
 * @example
 * ```ts
 * import { Sessions } from "sessionfold";
 * declare const sessions: Sessions;
 * declare const message: Parameters<Awaited<ReturnType<Sessions["open"]>>["append"]>[0];
 *
 * const session = await sessions.open("a1/w1/s1");
 * try { await session.append(message); } catch (e) {
 *   if (e instanceof LimitExceededError) console.error(e.details.limit, e.details.found); // "MAX_LINE_BYTES", 70000000
 * }
 * ```
 */
export class LimitExceededError extends InvalidInputError {
  override readonly name: string = "LimitExceededError";
  declare readonly details: LimitExceededDetails;
  constructor(message: string, details: LimitExceededDetails) {
    super(message, details);
  }
}

/** Why a sync request was refused (docs/SYNC.md "Errors"); each has one HTTP status. */
export type SyncRefusal =
  | "unauthorized"
  | "forbidden"
  | "client-id-taken"
  | "malformed"
  | "too-large"
  | "unsupported-version"
  | "mutation-gap"
  | "session-busy"
  | "not-found"
  | "unknown-route"
  | "encryption-mismatch"
  | "corrupt"
  | "unsupported-schema";

/**
 * A sync request refused by the server (or by the direct remote, which applies the same
 * rules): nothing was changed. `status` is the HTTP status the handler answers with,
 * `reason` says why (docs/SYNC.md "Errors"); a `mutation-gap` carries `expected`, the
 * mutation number the server waits for.
 *
 * @example
 * ```ts
 * import { syncStores, type SyncRemote } from "sessionfold/sync";
 * import { Sessions } from "sessionfold";
 * declare const local: Sessions;
 * declare const remote: SyncRemote;
 *
 * try { await syncStores({ local, remote }); } catch (e) {
 *   if (e instanceof SyncRefusedError && e.status === 401) console.error("sign in again:", e.message);
 * }
 * ```
 */
export class SyncRefusedError extends SessionfoldError {
  override readonly name: string = "SyncRefusedError";
  readonly status: number;
  readonly reason: SyncRefusal;
  constructor(message: string, details: ErrorDetails & { readonly reason: SyncRefusal; readonly status: number }) {
    const { reason } = details;
    super(reason === "unauthorized" || reason === "forbidden" || reason === "client-id-taken" ? "unauthorized" : "sync-refused", message, details);
    this.status = details.status;
    this.reason = reason;
  }
}

/**
 * An encrypted store (docs/FORMAT.md "Encrypted stores") was opened without a key, or a
 * file names a key-encryption key (`kid`) the key provider does not hold. Nothing was
 * changed. Code `key-required` (CLI exit 4).
 *
 * @example
 * ```ts
 * import { EncryptedStorage, MemoryStorage } from "sessionfold";
 * try { await EncryptedStorage.open(new MemoryStorage(), undefined); } catch (e) {
 *   if (e instanceof KeyRequiredError) console.error(e.code, e.details.kid); // "key-required", "k1"
 * }
 * ```
 */
export class KeyRequiredError extends SessionfoldError {
  override readonly name: string = "KeyRequiredError";
  constructor(message: string, details: ErrorDetails & { kid?: string } = {}) {
    super("key-required", message, details);
  }
}

/**
 * The key given does not open the encrypted store (its key check or a data key's unwrap
 * failed). Nothing was changed. Code `wrong-key` (CLI exit 4).
 *
 * @example
 * ```ts
 * import { EncryptedStorage, MemoryStorage, type KeyProvider } from "sessionfold";
 * declare const otherKeys: KeyProvider;
 * try { await EncryptedStorage.open(new MemoryStorage(), otherKeys); } catch (e) {
 *   if (e instanceof WrongKeyError) console.error(e.code); // "wrong-key"
 * }
 * ```
 */
export class WrongKeyError extends SessionfoldError {
  override readonly name: string = "WrongKeyError";
  constructor(message: string, details: ErrorDetails & { kid?: string } = {}) {
    super("wrong-key", message, details);
  }
}
