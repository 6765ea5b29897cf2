/**
 * Node system errors in a file store: reading an error's errno, treating "nothing there" as
 * absence, and mapping every other failure to the core's typed error
 * ({@linkcode storageErrorFromFs}, by the shared rule of `storageFailure`).
 *
 * @module
 */
import type { SessionfoldError } from "../core/errors.ts";
import { messageOf, storageFailure } from "../core/reader.ts";

/**
 * The `code` of a Node system error (`"ENOENT"`), `undefined` for anything else.
 *
 * @example
 * ```ts
 * errno(Object.assign(new Error("x"), { code: "EEXIST" })); // "EEXIST"
 * ```
 */
export function errno(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

/** Runs `action`, turning "nothing there" (ENOENT, or a parent that is a file: ENOTDIR) into `undefined`. */
export function missingAsUndefined<T>(action: () => T): T | undefined {
  try {
    return action();
  } catch (error) {
    if (errno(error) === "ENOENT" || errno(error) === "ENOTDIR") return undefined;
    throw error;
  }
}

/** Throws the error a store retries on once it created the folders: a folder on the way to `file` is missing. */
export function missingParent(file: string): never {
  throw Object.assign(new Error(`a folder on the way to ${file} is missing`), { code: "ENOENT" });
}

/** Runs a cleanup whose own failure must not hide the error being handled. */
export function bestEffort(cleanup: () => void): void {
  try {
    cleanup();
  } catch {
    // the original error is what the caller needs to see
  }
}

/**
 * Maps a Node fs failure to a typed error: ENOSPC/EDQUOT become `StorageFullError`,
 * every other failure a `StorageError` whose details carry the key, the file and
 * the errno code. A `SessionfoldError` passes through unchanged.
 *
 * @example
 * ```ts
 * storageErrorFromFs(Object.assign(new Error("full"), { code: "ENOSPC" }), "append", "log", "/r/log"); // StorageFullError
 * ```
 */
export function storageErrorFromFs(error: unknown, operation: string, path: string, file: string): SessionfoldError {
  const code = errno(error) ?? "UNKNOWN";
  const where = `${operation} "${path}" (${file})`;
  const full = code === "ENOSPC" || code === "EDQUOT";
  const reason = full ? "no space left" : FS_REASONS[code] ?? `failed: ${messageOf(error)}`;
  return storageFailure(error, {
    message: `${where}: ${reason} (${code})${full ? "; nothing was written" : ""}`,
    full,
    details: { path, file, errno: code, operation },
  });
}

/** Reasons of errors that the boundary checks leave to the system: permissions, and the root's own path (outside the store). */
const FS_REASONS: Record<string, string> = {
  EACCES: "permission denied",
  EPERM: "permission denied",
  EISDIR: "a folder is where a file was expected",
  ENOTDIR: "a file is where a folder was expected",
  EEXIST: "a file is where a folder was expected",
};
