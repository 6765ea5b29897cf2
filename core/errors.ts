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
  | "internal";

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

const errorClasses: Record<string, new (message: string, details: ErrorDetails) => SessionfoldError> = {
  InvalidIdError,
  NotFoundError,
  WriterLockedError,
  RevisionConflictError,
  SessionBusyError,
  CorruptSessionError,
  UnsupportedSchemaError,
  InvalidInputError,
  StorageFullError,
  StorageError,
  CompactionFailedError,
  ContextOverflowError,
  CancelledError,
  InternalError,
  ProviderError,
};

/** The plain-data form of an error, as it crosses a worker boundary. */
export interface SerializedError {
  name: string;
  code: ErrorCode;
  message: string;
  details: ErrorDetails;
  stack?: string;
}

/**
 * Turns any thrown value into plain data that survives `postMessage`.
 * Non-sessionfold errors become `internal`.
 *
 * @example
 * ```ts
 * const data = serializeError(new NotFoundError("no session s1"));
 * deserializeError(data) instanceof NotFoundError; // true
 * ```
 */
export function serializeError(error: unknown): SerializedError {
  if (error instanceof SessionfoldError) {
    return { name: error.name, code: error.code, message: error.message, details: error.details, stack: error.stack };
  }
  const message = error instanceof Error ? error.message : String(error);
  return {
    name: "InternalError",
    code: "internal",
    message,
    details: error instanceof Error ? { original_name: error.name } : {},
    stack: error instanceof Error ? error.stack : undefined,
  };
}

/**
 * Rebuilds a typed error from {@linkcode serializeError}'s output, keeping its class.
 *
 * @example
 * ```ts
 * const e = deserializeError({ name: "WriterLockedError", code: "writer-locked", message: "locked", details: {} });
 * e instanceof WriterLockedError; // true
 * ```
 */
export function deserializeError(data: SerializedError): SessionfoldError {
  const Known = Object.hasOwn(errorClasses, data.name) ? errorClasses[data.name] : undefined;
  const error = Known
    ? new Known(data.message, data.details)
    : new SessionfoldError(data.code, data.message, data.details);
  if (data.stack) error.stack = data.stack;
  return error;
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
