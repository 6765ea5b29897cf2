/**
 * A backend's failure as the core's typed error, by one rule for every backend: a
 * `SessionfoldError` passes through unchanged, a full store (disk, quota, the server's
 * disk) is a {@linkcode StorageFullError} with nothing written, anything else a
 * {@linkcode StorageError} carrying the original as its `cause`. Each backend only says
 * how it recognizes a full store and what its message and details are.
 *
 * @module
 */
import { type ErrorDetails, SessionfoldError, StorageError, StorageFullError } from "../errors.ts";

/** How a backend describes one failed call to {@linkcode storageFailure}. */
export interface StorageFailure {
  /** The message: the backend, the operation, the key and what went wrong. */
  readonly message: string;
  /** Whether the store ran out of space (a `StorageFullError`: the call wrote nothing). */
  readonly full: boolean;
  /** The error's `details`: the key, the operation and the backend's own code. */
  readonly details: ErrorDetails;
}

/**
 * The typed error of a failed backend call (see the module doc).
 *
 * @example
 * ```ts
 * storageFailure(new Error("quota"), { message: "append of \"log\" failed", full: true, details: { path: "log" } }); // StorageFullError
 * ```
 */
export function storageFailure(error: unknown, failure: StorageFailure): SessionfoldError {
  if (error instanceof SessionfoldError) return error;
  if (failure.full) return new StorageFullError(failure.message, failure.details);
  return new StorageError(failure.message, failure.details, { cause: error });
}

/**
 * The message of anything thrown: an `Error`'s (or a `DOMException`'s) `message`, else the value as a string.
 *
 * @example
 * ```ts
 * messageOf(new Error("disk on fire")); // "disk on fire"
 * messageOf(42); // "42"
 * ```
 */
export function messageOf(error: unknown): string {
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === "string" ? message : String(error);
}
