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
  | "corrupt"
  | "unsupported-schema"
  | "invalid-input"
  | "storage-full"
  | "compaction-failed"
  | "context-overflow"
  | "cancelled"
  | "usage"
  | "internal"
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
  /** Stable machine-readable code. */
  readonly code: ErrorCode;
  /** JSON-safe details: paths, line numbers, the lock owner, revisions… */
  readonly details: ErrorDetails;

  constructor(code: ErrorCode, message: string, details: ErrorDetails = {}, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.details = details;
    this.name = new.target.name;
  }

  /** The JSON shape the CLI prints: `{code, message, ...details}`. */
  toJSON(): { code: ErrorCode; message: string; name: string } & ErrorDetails {
    return { ...this.details, name: this.name, code: this.code, message: this.message };
  }
}

/** An id (agent, workspace, session) that docs/FORMAT.md does not allow. Thrown before any path is built. */
export class InvalidIdError extends SessionfoldError {
  constructor(message: string, details: ErrorDetails = {}) {
    super("invalid-id", message, details);
  }
}

/** A session, file or agent that does not exist. */
export class NotFoundError extends SessionfoldError {
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

/** Another writer holds the session's `writer.lock`; `owner` is its content. Nobody steals it. */
export class WriterLockedError extends SessionfoldError {
  readonly owner: LockOwner | undefined;
  constructor(message: string, details: ErrorDetails & { owner?: LockOwner; path?: string } = {}) {
    super("writer-locked", message, details);
    this.owner = details.owner;
  }
}

/**
 * The lock this writer held (a lease, or an operation's lock) was lost before this write
 * (on PostgreSQL: its connection ended). The write is refused; `details.outcome` says whether
 * it certainly did not land (`"not-written"`) or died on the way (`"unknown"`). Close the handle and reopen.
 */
export class LeaseLostError extends WriterLockedError {}

/** `meta.json` moved under this handle: another writer committed since it last read. */
export class RevisionConflictError extends SessionfoldError {
  constructor(message: string, details: ErrorDetails & { expected?: number | null; found?: number | null } = {}) {
    super("revision-conflict", message, details);
  }
}

/** A mutating operation is already running on this session in this process (one at a time). */
export class SessionBusyError extends SessionfoldError {
  constructor(message: string, details: ErrorDetails = {}) {
    super("busy", message, details);
  }
}

/** A file is corrupt (an invalid line that is not a torn tail); writes are blocked. */
export class CorruptSessionError extends SessionfoldError {
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
 * reverse, for a write), a file with other hard links (for a write), or a file over the size
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
  declare readonly details: StoreEntryDetails;
  constructor(message: string, details: StoreEntryDetails) {
    super(message, details);
  }
}

/** A `schema_version` (or other format version) this reader does not know. It never guesses. */
export class UnsupportedSchemaError extends SessionfoldError {
  constructor(message: string, details: ErrorDetails = {}) {
    super("unsupported-schema", message, details);
  }
}

/** A caller passed a value the API does not accept (the message says which and why). */
export class InvalidInputError extends SessionfoldError {
  constructor(message: string, details: ErrorDetails = {}) {
    super("invalid-input", message, details);
  }
}

/** The storage has no room left; nothing was half-written. */
export class StorageFullError extends SessionfoldError {
  constructor(message: string, details: ErrorDetails = {}) {
    super("storage-full", message, details);
  }
}

/** A storage backend failed for a reason other than a full disk. */
export class StorageError extends SessionfoldError {
  constructor(message: string, details: ErrorDetails = {}, options?: { cause?: unknown }) {
    super("internal", message, details, options);
  }
}

/** Compaction failed (summarizer error, cancellation, empty summary); nothing changed. */
export class CompactionFailedError extends SessionfoldError {
  constructor(message: string, details: ErrorDetails = {}, options?: { cause?: unknown }) {
    super("compaction-failed", message, details, options);
  }
}

/** The model input still overflows after the bounded number of in-memory folds. */
export class ContextOverflowError extends SessionfoldError {
  constructor(message: string, details: ErrorDetails = {}) {
    super("context-overflow", message, details);
  }
}

/** A run was cancelled cooperatively; `revision` is the revision its recoverable work committed. */
export class CancelledError extends SessionfoldError {
  readonly revision: number | undefined;
  constructor(message: string, details: ErrorDetails & { revision?: number } = {}) {
    super("cancelled", message, details);
    this.revision = details.revision;
  }
}

/** An unexpected failure inside sessionfold or a host callback, wrapped so it stays typed. */
export class InternalError extends SessionfoldError {
  constructor(message: string, details: ErrorDetails = {}, options?: { cause?: unknown }) {
    super("internal", message, details, options);
  }
}

/** The provider failed the request (not a context-length refusal); nothing of the run was committed. */
export class ProviderError extends SessionfoldError {
  constructor(message: string, details: ErrorDetails = {}, options?: { cause?: unknown }) {
    super("internal", message, details, options);
  }
}

/**
 * Wraps a value thrown by host code or a platform API so that no untyped error reaches a host.
 *
 * @example
 * ```ts
 * declare function hostCallback(): Promise<void>;
 * try { await hostCallback(); } catch (e) { throw asSessionfoldError(e, "summarizer failed"); }
 * ```
 */
export function asSessionfoldError(error: unknown, context: string): SessionfoldError {
  if (error instanceof SessionfoldError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new InternalError(`${context}: ${message}`, {}, { cause: error });
}

/**
 * An encrypted store (docs/FORMAT.md "Encrypted stores") was opened without a key, or a
 * file names a key-encryption key (`kid`) the key provider does not hold. Nothing was changed.
 */
export class KeyRequiredError extends SessionfoldError {
  constructor(message: string, details: ErrorDetails & { kid?: string } = {}) {
    super("key-required", message, details);
    this.name = "KeyRequiredError";
  }
}

/** The key given does not open the encrypted store (its key check or a data key's unwrap failed). Nothing was changed. */
export class WrongKeyError extends SessionfoldError {
  constructor(message: string, details: ErrorDetails & { kid?: string } = {}) {
    super("wrong-key", message, details);
    this.name = "WrongKeyError";
  }
}
