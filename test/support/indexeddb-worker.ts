/**
 * For tests that run in real Chromium (the `browser` project): the browser runtime's storage
 * worker, started as a page starts it, and the deletion of a test's database afterwards.
 */

/** A module Web Worker running runtime-browser/storage-worker.ts. */
export const startStorageWorker = (): Worker => new Worker(new URL("../../runtime-browser/storage-worker.ts", import.meta.url), { type: "module" });

/** Deletes a database; resolves on `blocked` too (a terminated worker's connection goes away on its own). */
export function deleteDatabase(name: string): Promise<void> {
  return new Promise((resolve) => {
    const request = indexedDB.deleteDatabase(name);
    request.onsuccess = request.onerror = request.onblocked = () => resolve();
  });
}
