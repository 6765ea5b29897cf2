/**
 * Typed errors on the wire: {@linkcode serializeError} turns any thrown value into plain
 * data that survives `postMessage`, and {@linkcode deserializeError} rebuilds the same class
 * on the other side. Every error class of the core is known here, those of `core/agent` and
 * `core/formats` included, so a worker hop keeps `instanceof` for all of them.
 *
 * @module
 */
import { AgentConfigError } from "../agent/error.ts";
import {
  CancelledError,
  CompactionFailedError,
  ContextOverflowError,
  CorruptSessionError,
  type ErrorCode,
  type ErrorDetails,
  InternalError,
  InvalidIdError,
  InvalidInputError,
  KeyRequiredError,
  LeaseLostError,
  LimitExceededError,
  NotFoundError,
  ProviderError,
  RevisionConflictError,
  SessionBusyError,
  SessionfoldError,
  StorageError,
  StorageFullError,
  StoreClosedError,
  StoreEntryError,
  SyncRefusedError,
  UnsupportedSchemaError,
  WriterLockedError,
  WrongKeyError,
} from "../errors.ts";
import { FormatError } from "../formats/errors.ts";

// Keyed by each class's `name`, a string literal in every class (core/errors.ts), so a
// minified build, which renames the classes, still finds them. The details a class needs
// arrive with the data it was serialized from.
const errorClasses: Record<string, new (message: string, details: never) => SessionfoldError> = {
  InvalidIdError,
  NotFoundError,
  WriterLockedError,
  LeaseLostError,
  RevisionConflictError,
  SessionBusyError,
  StoreClosedError,
  CorruptSessionError,
  StoreEntryError,
  UnsupportedSchemaError,
  InvalidInputError,
  StorageFullError,
  StorageError,
  CompactionFailedError,
  ContextOverflowError,
  CancelledError,
  InternalError,
  ProviderError,
  AgentConfigError,
  FormatError,
  LimitExceededError,
  SyncRefusedError,
  KeyRequiredError,
  WrongKeyError,
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
 * import { NotFoundError } from "sessionfold";
 *
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
 * import { WriterLockedError } from "sessionfold";
 *
 * const e = deserializeError({ name: "WriterLockedError", code: "writer-locked", message: "locked", details: {} });
 * e instanceof WriterLockedError; // true
 * ```
 */
export function deserializeError(data: SerializedError): SessionfoldError {
  const Known = Object.hasOwn(errorClasses, data.name) ? errorClasses[data.name] : undefined;
  const error = Known ? new Known(data.message, data.details as never) : new SessionfoldError(data.code, data.message, data.details);
  if (data.stack) error.stack = data.stack;
  return error;
}
