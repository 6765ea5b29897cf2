/**
 * A remote whose calls end when a run's `signal` fires (`SyncStoresOptions.signal`,
 * docs/SYNC.md "The engine"): a call under way rejects with the signal's reason at once, as a
 * cut connection would, and a call after it is not made. The request itself may still reach
 * the remote: what it applies is acknowledged to the next run as a duplicate.
 *
 * @module
 */
import type { SyncRemote } from "./remote.ts";

/** `remote`, its four calls ended by `signal`. */
export function abortableRemote(remote: SyncRemote, signal: AbortSignal): SyncRemote {
  return {
    id: remote.id,
    ...(remote.storage !== undefined ? { storage: remote.storage } : {}),
    push: (request) => untilAborted(signal, () => remote.push(request)),
    pull: (request) => untilAborted(signal, () => remote.pull(request)),
    read: (request) => untilAborted(signal, () => remote.read(request)),
    segment: (request) => untilAborted(signal, () => remote.segment(request)),
  };
}

/** `call()`, or the signal's reason once it fires, whichever comes first; `call` is not made after it fired. */
async function untilAborted<T>(signal: AbortSignal, call: () => Promise<T>): Promise<T> {
  signal.throwIfAborted();
  let onAbort!: () => void;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([call(), aborted]);
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}
