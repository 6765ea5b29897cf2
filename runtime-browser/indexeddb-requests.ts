/**
 * IndexedDB requests as promises, for the steps of one transaction that `idb-keyval`'s
 * `promisifyRequest` does not cover: an `add` that may meet an existing key, a cursor
 * walk, and moving a key range.
 *
 * @module
 */
import { promisifyRequest } from "idb-keyval";
import type { FileHeader } from "./indexeddb-records.ts";

/** The header record of the file at `path`, `undefined` when there is none. */
export function readHeader(store: IDBObjectStore, path: string): Promise<FileHeader | undefined> {
  return promisifyRequest(store.get(path) as IDBRequest<FileHeader | undefined>);
}

/** Resolves `false` (and keeps the transaction alive) when an `add` meets an existing key. */
export function addOrConflict(store: IDBObjectStore, value: unknown, key: string): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const request = store.add(value, key);
    request.onsuccess = () => resolve(true);
    request.onerror = (event) => {
      if (request.error?.name === "ConstraintError") {
        event.preventDefault();
        resolve(false);
      } else {
        reject(request.error);
      }
    };
  });
}

/** Walks a cursor (of records or of keys only) to its end (or until `step` returns `false`), one record at a time. */
export function walk<C extends IDBCursor>(request: IDBRequest<C | null>, step: (cursor: C) => boolean | void): Promise<void> {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => {
      try {
        const cursor = request.result;
        if (!cursor || step(cursor) === false) resolve();
        else cursor.continue();
      } catch (error) {
        reject(error); // the transaction aborts too: an exception in a request's handler aborts it
      }
    };
    request.onerror = () => reject(request.error);
  });
}

/** Copies every record of `range` to the key `rename(key)`, then deletes the range. */
export async function moveRange(store: IDBObjectStore, range: IDBKeyRange | string, rename: (key: string) => string): Promise<void> {
  await walk(store.openCursor(range), (cursor) => {
    store.put(cursor.value, rename(cursor.primaryKey as string));
  });
  store.delete(range);
}
