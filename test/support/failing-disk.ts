/**
 * A memory store that fails as a disk does: once `fail()` is called, every call rejects with
 * the error Node's `fs` gives for an I/O failure, naming a file under a server path (what a
 * server's error must not hand its client, docs/SYNC.md "Errors"). Not a test file itself.
 */
import { MemoryStorage, type StoragePort } from "../../core/mod.ts";

/** The server path the disk's errors name. */
export const SERVER_PATH = "/srv/sessionfold/users/bob/sessions/a1/w1/s1/messages.jsonl";

/** The error `fs` gives for a failed read or write of {@linkcode SERVER_PATH}. */
export function diskFailure(): Error {
  return Object.assign(new Error(`EIO: i/o error, write '${SERVER_PATH}'`), { code: "EIO" });
}

/** A memory store whose every call rejects with {@linkcode diskFailure} once `fail()` was called (at once with `failing`). */
export function failingDisk(failing = false): { readonly storage: StoragePort; fail(): void } {
  const storage = new Proxy(new MemoryStorage(), {
    get: (target, name) => {
      const value = Reflect.get(target, name, target) as unknown;
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => (failing ? Promise.reject(diskFailure()) : (value as (...a: unknown[]) => unknown).apply(target, args));
    },
  });
  return { storage, fail: () => void (failing = true) };
}
