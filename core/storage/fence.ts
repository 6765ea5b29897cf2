/**
 * Whether a held `writer.lock` is still this holder's: the one check a lease's commit makes
 * before its writes (docs/FORMAT.md `writer.lock`, "Fencing"), and the one a release makes
 * before removing the file, so nobody writes under, or removes, another owner's lock.
 *
 * @module
 */
import { sameBytes } from "./bytes.ts";
import type { FileTail, StoragePort } from "./port.ts";

/** The largest `writer.lock` this check reads: sessionfold's own are a few hundred bytes. */
export const MAX_LOCK_BYTES = 4096;

/** One decoder for every check (a held commit runs one each). */
const decoder = new TextDecoder("utf-8", { fatal: true });

/**
 * The last `writer.lock` found to carry its `lock_id`, byte for byte: a held session reads
 * the same bytes before every commit, so the same bytes are compared, not decoded and parsed
 * again (the same bytes parse to the same `lock_id`). One entry: another lock is parsed.
 */
let lastCarried: { readonly lockId: string; readonly bytes: Uint8Array } | undefined;

/**
 * `true` when `writer.lock` at `path` exists and carries `lockId`; `false` when it is gone,
 * unreadable, over 4 KiB, or another owner's (taken by `unlock --force`, or by a reclaimer
 * that judged this holder dead). One tail read of a small file.
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 * const storage = new MemoryStorage();
 *
 * await storage.replace("s/writer.lock", new TextEncoder().encode('{"pid":1,"hostname":"h","runtime":"node","operation":"lease","created_at":"2026-01-01T00:00:00.000Z","lock_id":"lock_1"}'));
 * await holdsWriterLock(storage, "s/writer.lock", "lock_1"); // true
 * await holdsWriterLock(storage, "s/writer.lock", "lock_2"); // false
 * ```
 * @throws {StorageError} when the storage call fails.
 */
export async function holdsWriterLock(storage: StoragePort, path: string, lockId: string): Promise<boolean> {
  // A tail read: no whole-file read path (on Node that one probes for bytes appended meanwhile),
  // since every held commit pays for this check. A lock is a few hundred bytes; a larger file is no lock of ours.
  return carriesLockId(await storage.readTail(path, MAX_LOCK_BYTES), lockId);
}

/**
 * `true` when `tail`, a tail read of at most {@linkcode MAX_LOCK_BYTES} of `writer.lock`, is
 * the whole lock and carries `lockId` (what {@linkcode holdsWriterLock} checks, for a plan
 * that has read the tail itself).
 *
 * @example
 * ```ts
 * const bytes = new TextEncoder().encode('{"lock_id":"lock_1"}');
 * carriesLockId({ bytes, size: bytes.length }, "lock_1"); // true
 * carriesLockId(undefined, "lock_1"); // false: no writer.lock
 * ```
 */
export function carriesLockId(tail: FileTail | undefined, lockId: string): boolean {
  if (!tail || tail.size > MAX_LOCK_BYTES) return false;
  if (lastCarried?.lockId === lockId && sameBytes(lastCarried.bytes, tail.bytes)) return true;
  let carries = false;
  try {
    // Only `lock_id` matters here: a plain parse, not the record's schema (every held commit pays for it).
    const value: unknown = JSON.parse(decoder.decode(tail.bytes));
    carries = typeof value === "object" && value !== null && (value as { lock_id?: unknown }).lock_id === lockId;
  } catch {
    return false;
  }
  // A copy: the store may hand out a view of bytes it changes later.
  if (carries) lastCarried = { lockId, bytes: tail.bytes.slice() };
  return carries;
}
