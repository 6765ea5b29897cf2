import { runStorageTests } from "../../testing/storage-conformance.ts";
import { WorkerIndexedDbStorage } from "../../runtime-browser/storage-worker-client.ts";
import { deleteDatabase, startStorageWorker } from "../support/indexeddb-worker.ts";

let next = 0;

runStorageTests("IndexedDbStorage via WorkerIndexedDbStorage (Chromium, module Web Worker)", () => {
  const dbName = `conformance-${Date.now()}-${next++}`;
  const storage = new WorkerIndexedDbStorage({ dbName, worker: startStorageWorker });
  return {
    storage,
    reopen: async () => new WorkerIndexedDbStorage({ dbName, worker: startStorageWorker }),
    teardown: async () => {
      await storage.close();
      await deleteDatabase(dbName);
    },
  };
});
