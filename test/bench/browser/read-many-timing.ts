/**
 * What the steps page's storage worker (browser/idb-timed-worker.ts) measures of each
 * `readMany` it serves, and the channel it posts it on: a module of its own, so the page and
 * the worker share it without either loading the other.
 *
 * @module
 */

/**
 * The `BroadcastChannel` the timed storage worker posts one {@linkcode ReadManyTiming} on per `readMany`.
 *
 * @example
 * ```ts
 * const timings = new BroadcastChannel(READ_MANY_TIMINGS);
 * timings.onmessage = (event: MessageEvent<ReadManyTiming>) => console.log(`IndexedDB ${event.data.idbMs} ms`);
 * ```
 */
export const READ_MANY_TIMINGS = "sessionfold-bench:read-many";

/** One `readMany` as the storage worker ran it (ms, the worker's clock). */
export interface ReadManyTiming {
  /** From the worker's call of `IndexedDbStorage.readMany` to its answer (before Comlink posts it). */
  inWorkerMs: number;
  /** Its IndexedDB transactions: from the first's creation to the last request's last `success`. */
  idbMs: number;
  transactions: number;
  requests: number;
}
