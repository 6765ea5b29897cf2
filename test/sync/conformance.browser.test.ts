/**
 * The sync conformance suite with its devices in real Chromium: each device an IndexedDB store
 * served by the browser runtime's storage worker (a module Web Worker, as a page uses it), the
 * server a memory store in the page reached directly. The same cases over HTTP run with
 * IndexedDB under happy-dom (browser.dom.test.ts) and, for two browser contexts through a real
 * server, in test/browser-runtime/sync-pages.test.ts and test/postgres/browser-sync.test.ts.
 */
import { afterAll } from "vitest";
import { MemoryStorage } from "../../core/mod.ts";
import { directRemote } from "../../core/sync/mod.ts";
import { WorkerIndexedDbStorage } from "../../runtime-browser/storage-worker-client.ts";
import { deleteDatabase, startStorageWorker } from "../support/indexeddb-worker.ts";
import { runSyncTests, type SyncCaseCounts, testPrincipal } from "../../testing/sync-conformance.ts";

let next = 0;

// The pair's counts, logged as test/sync/matrix.ts logs the others (that module writes files: Node only).
const total = { cases: 0, acknowledged: 0, found: 0, forked: 0, faults: 0 };
afterAll(() => {
  console.info(
    `sync matrix, IndexedDB in Chromium↔memory direct: ${total.cases} cases, ${total.acknowledged} messages acknowledged, ${total.found} found, ${total.forked} in forks, ${total.faults} requests met a fault`,
  );
});
const onCase = (_name: string, counts: SyncCaseCounts) => {
  total.cases++;
  for (const key of ["acknowledged", "found", "forked", "faults"] as const) total[key] += counts[key];
};

runSyncTests("IndexedDB in Chromium (storage worker) ↔ memory (direct)", () => {
  const server = new MemoryStorage();
  const devices: { storage: WorkerIndexedDbStorage; dbName: string }[] = [];
  return {
    server,
    newDevice: () => {
      const dbName = `sync-conformance-${Date.now()}-${next++}`;
      const storage = new WorkerIndexedDbStorage({ dbName, worker: startStorageWorker });
      devices.push({ storage, dbName });
      return storage;
    },
    remote: (user) => directRemote(server, { id: "server", principal: testPrincipal(user ?? "nobody") }),
    teardown: async () => {
      for (const { storage, dbName } of devices) {
        await storage.close();
        await deleteDatabase(dbName);
      }
    },
  };
}, { onCase });
