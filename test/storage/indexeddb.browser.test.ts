import { runStorageTests } from "../../testing/storage-conformance.ts";
import { WorkerIndexedDbStorage } from "../../runtime-browser/storage-worker-client.ts";

let next = 0;

const startWorker = () => new Worker(new URL("../../runtime-browser/storage-worker.ts", import.meta.url), { type: "module" });

/** Deletes a database; resolves on `blocked` too (a terminated worker's connection goes away on its own). */
function deleteDatabase(name: string): Promise<void> {
  return new Promise((resolve) => {
    const request = indexedDB.deleteDatabase(name);
    request.onsuccess = request.onerror = request.onblocked = () => resolve();
  });
}

runStorageTests("IndexedDbStorage via WorkerIndexedDbStorage (Chromium, module Web Worker)", () => {
  const dbName = `conformance-${Date.now()}-${next++}`;
  const storage = new WorkerIndexedDbStorage({ dbName, worker: startWorker });
  return {
    storage,
    reopen: async () => new WorkerIndexedDbStorage({ dbName, worker: startWorker }),
    teardown: async () => {
      await storage.close();
      await deleteDatabase(dbName);
    },
  };
});
