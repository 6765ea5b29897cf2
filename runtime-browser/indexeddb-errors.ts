/**
 * IndexedDB failures as the core's typed errors, by the shared rule of `storageFailure`: a
 * quota failure is a `StorageFullError` (the transaction was aborted: nothing was written),
 * any other a `StorageError` naming the operation, the key and the DOM error.
 *
 * @module
 */
import type { SessionfoldError } from "../core/mod.ts";
import { messageOf, storageFailure } from "../core/internal.ts";

/** `true` for a quota failure, however the platform reports it. */
export function isQuotaError(error: unknown): boolean {
  const e = error as { name?: unknown; code?: unknown } | null;
  return !!e && (e.name === "QuotaExceededError" || e.code === 22);
}

/** The typed error of a failed `operation` on `path` (see the module doc). */
export function indexedDbFailure(error: unknown, operation: string, path: string): SessionfoldError {
  if (isQuotaError(error)) {
    const message = `IndexedDB ${operation} of "${path}" failed: the origin's storage quota is exhausted; nothing was written`;
    return storageFailure(error, { message, full: true, details: { path, operation } });
  }
  const name = (error as { name?: unknown } | null)?.name;
  const named = typeof name === "string";
  return storageFailure(error, {
    message: `IndexedDB ${operation} of "${path}" failed: ${named ? `${name}: ` : ""}${messageOf(error)}`,
    full: false,
    details: { path, operation, ...(named ? { dom_error: name } : {}) },
  });
}
