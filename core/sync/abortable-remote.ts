/**
 * A remote whose calls end when a run's `signal` fires (`SyncStoresOptions.signal`,
 * docs/SYNC.md "The engine"): a call under way rejects with the signal's reason at once, as a
 * cut connection would, and a call after it is not made. The request itself may still reach
 * the remote: what it applies is acknowledged to the next run as a duplicate.
 *
 * @module
 */
import { untilAborted } from "../session/until-aborted.ts";
import type { SyncRemote } from "./remote.ts";

/** `remote`, its four calls ended by `signal`. */
export function abortableRemote(remote: SyncRemote, signal: AbortSignal): SyncRemote {
  // Not made once the signal fired; under way, raced with it.
  const ended = <T>(call: () => Promise<T>): Promise<T> => (signal.aborted ? Promise.reject(signal.reason) : untilAborted(call(), signal));
  return {
    id: remote.id,
    ...(remote.storage !== undefined ? { storage: remote.storage } : {}),
    push: (request) => ended(() => remote.push(request)),
    pull: (request) => ended(() => remote.pull(request)),
    read: (request) => ended(() => remote.read(request)),
    segment: (request) => ended(() => remote.segment(request)),
  };
}
