/**
 * The browser storage worker as runtime-browser/storage-worker.ts serves it, with a timing
 * wrapper of the bench's own around IndexedDB: every transaction created while
 * `IndexedDbStorage.readMany` runs is timed from its creation to its last request's last
 * `success` event, and each `readMany` posts a {@linkcode ReadManyTiming} on
 * `READ_MANY_TIMINGS`. The chromium flatness row's steps page starts it in place of the
 * product's worker, so its open's `readMany` splits into the IndexedDB part and the rest of
 * the round trip the page sees (the worker hop, Comlink, the copies).
 *
 * @module
 */
import * as Comlink from "comlink";
import { serveComlinkCalls, storageWorkerApi } from "../../../core/internal.ts";
import { IndexedDbStorage, type IndexedDbStorageOptions } from "../../../runtime-browser/indexeddb-storage.ts";
import { READ_MANY_TIMINGS, type ReadManyTiming } from "./read-many-timing.ts";

interface Span {
  created: number;
  lastSuccess: number;
  requests: number;
}

/** The spans of the transactions created during the `readMany` that runs (one at a time in the steps page's open). */
let spans: Span[] | undefined;
const spanOf = new WeakMap<IDBTransaction, Span>();

const transaction = IDBDatabase.prototype.transaction;
IDBDatabase.prototype.transaction = function (this: IDBDatabase, ...args: Parameters<IDBDatabase["transaction"]>) {
  const created = performance.now();
  const tx = transaction.apply(this, args);
  if (spans) {
    const span = { created, lastSuccess: created, requests: 0 };
    spans.push(span);
    spanOf.set(tx, span);
  }
  return tx;
};
for (const method of ["get", "getAll", "getAllKeys", "getKey", "count", "openCursor", "openKeyCursor"] as const) {
  const request = IDBObjectStore.prototype[method] as (this: IDBObjectStore, ...args: unknown[]) => IDBRequest;
  Object.defineProperty(IDBObjectStore.prototype, method, {
    configurable: true,
    writable: true,
    value(this: IDBObjectStore, ...args: unknown[]) {
      const made = request.apply(this, args);
      const span = spanOf.get(this.transaction);
      if (span) {
        span.requests++;
        // Registered before the store sets `onsuccess`, so it runs first; a cursor's request succeeds once per step.
        made.addEventListener("success", () => span.lastSuccess = performance.now());
      }
      return made;
    },
  });
}

const timings = new BroadcastChannel(READ_MANY_TIMINGS);

/** An `IndexedDbStorage` whose `readMany` posts what it took. */
function timedStore(options: IndexedDbStorageOptions): IndexedDbStorage {
  const store = new IndexedDbStorage(options);
  const readMany = store.readMany.bind(store);
  store.readMany = async (requests) => {
    spans = [];
    const t0 = performance.now();
    try {
      return await readMany(requests);
    } finally {
      const inWorkerMs = performance.now() - t0;
      const done = spans;
      spans = undefined;
      const timing: ReadManyTiming = {
        inWorkerMs,
        idbMs: done.length === 0 ? 0 : Math.max(...done.map((s) => s.lastSuccess)) - Math.min(...done.map((s) => s.created)),
        transactions: done.length,
        requests: done.reduce((sum, s) => sum + s.requests, 0),
      };
      timings.postMessage(timing);
    }
  };
  return store;
}

serveComlinkCalls(Comlink, globalThis, (comlink) => storageWorkerApi(comlink, timedStore));
