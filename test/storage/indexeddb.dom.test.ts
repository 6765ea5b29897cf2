import { runStorageTests } from "../../testing/storage-conformance.ts";
import { IndexedDbStorage } from "../../runtime-browser/indexeddb-storage.ts";

let next = 0;

/** Deletes a database once every connection to it is closed. */
function deleteDatabase(name: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const request = indexedDB.deleteDatabase(name);
    request.onsuccess = () => resolve();
    request.onerror = () => reject(request.error);
  });
}

runStorageTests("IndexedDbStorage (fake-indexeddb)", () => {
  const dbName = `conformance-${Date.now()}-${next++}`;
  const storage = new IndexedDbStorage({ dbName });
  return {
    storage,
    reopen: async () => new IndexedDbStorage({ dbName }),
    teardown: async () => {
      await storage.close();
      await deleteDatabase(dbName);
    },
  };
});
