/**
 * What bounds the chromium flatness row's open from below in this browser: the reads that
 * `openBrowserSessions`' open makes for its one `readMany` (`meta.json`, `active.jsonl`,
 * `assistant_message.json`, `instruction.md` read whole, and the last file of `segments/`
 * found by a reverse key cursor and read by its last 16 KiB), made with raw IndexedDB in a
 * worker of the page's own, in one `readonly` transaction, the bytes posted back transferred.
 * No sessionfold code runs in the worker; the keys and ranges are the store's own, computed
 * on the page before the clock with the store's layout (runtime-browser/indexeddb-records.ts),
 * so the floor reads exactly the records the open reads. The open then parses, checks and
 * composes; the floor does none of it.
 *
 * @module
 */
import { FOOTER_PREFETCH_BYTES } from "../../../core/internal.ts";
import { sessionPaths, type SessionRef } from "../../../core/mod.ts";
import { allHeaders, chunksOf, headersBelow } from "../../../runtime-browser/indexeddb-records.ts";

/** One floor read: its time on the page's clock, the files it found and their bytes. */
export interface OpenFloorTiming {
  ms: number;
  files: number;
  bytes: number;
}

/**
 * The worker: `open` opens the database and reads every header key, as `openBrowserSessions`
 * does before the row's clock (`list("")`); `read` reads as `IndexedDbStorage.readMany` reads
 * (a whole file: its header, then its chunks with one `getAll`; the last file of a folder: a
 * reverse key cursor over the folder's headers, then its header and a reverse cursor over its
 * chunks until the tail is covered), every request at once in one transaction.
 */
const FLOOR_WORKER = `
let db;
let storeName;
const done = (request) => new Promise((resolve, reject) => { request.onsuccess = () => resolve(request.result); request.onerror = () => reject(request.error); });
const walk = (request, step) => new Promise((resolve, reject) => {
  request.onsuccess = () => { const cursor = request.result; if (!cursor || step(cursor) === false) resolve(); else cursor.continue(); };
  request.onerror = () => reject(request.error);
});
const range = ([lower, upper]) => IDBKeyRange.bound(lower, upper, false, true);
const joined = (parts, size) => { const out = new Uint8Array(size); let at = 0; for (const part of parts) { out.set(part, at); at += part.length; } return out; };
onmessage = async ({ data }) => {
  if (data.open) {
    storeName = data.storeName;
    db = await done(indexedDB.open(data.dbName));
    await done(db.transaction(storeName, "readonly").objectStore(storeName).getAllKeys(IDBKeyRange.lowerBound(data.headersFrom)));
    postMessage(null);
    return;
  }
  const store = db.transaction(storeName, "readonly").objectStore(storeName);
  const whole = async ({ path, chunks }) => {
    const header = await done(store.get(path));
    return header && joined(await done(store.getAll(range(chunks))), header.size);
  };
  const tailOfLast = async ({ headers, prefix, tailBytes }) => {
    let path;
    await walk(store.openKeyCursor(range(headers), "prev"), (cursor) => {
      if (cursor.primaryKey.includes("/", prefix.length)) return true;
      path = cursor.primaryKey;
      return false;
    });
    if (path === undefined) return undefined;
    const parts = [];
    let have = 0;
    const [header] = await Promise.all([
      done(store.get(path)),
      walk(store.openCursor(range(["\\u0000" + path + "\\u0000", "\\u0000" + path + "\\u0001"]), "prev"), (cursor) => {
        parts.unshift(cursor.value);
        have += cursor.value.length;
        return have < tailBytes;
      }),
    ]);
    return header && joined(parts, have).slice(have - Math.min(tailBytes, header.size));
  };
  const found = (await Promise.all([...data.whole.map(whole), tailOfLast(data.last)])).filter((bytes) => bytes !== undefined);
  postMessage(found, found.map((bytes) => bytes.buffer));
};`;

/** The bounds of a key range, which a worker is posted (an `IDBKeyRange` is not cloneable). */
const bounds = (range: IDBKeyRange): [string, string] => [range.lower as string, range.upper as string];

/**
 * Times the floor of an open of `ref` in `dbName`: the worker is started and the database
 * opened before the clock; the clock runs from the post to the bytes' arrival on the page.
 *
 * @example
 * ```ts
 * const floor = await timeOpenFloor("bench-100", { agentId: "bench", workspaceId: "w1", sessionId: "s1-compacted" });
 * floor.files; // 4: meta.json, active.jsonl, instruction.md and the newest segment's tail
 * ```
 */
export async function timeOpenFloor(dbName: string, ref: SessionRef, storeName = "files"): Promise<OpenFloorTiming> {
  const worker = new Worker(URL.createObjectURL(new Blob([FLOOR_WORKER], { type: "text/javascript" })));
  const answer = () =>
    new Promise<Uint8Array[] | null>((resolve, reject) => {
      worker.onmessage = (event) => resolve(event.data);
      worker.onerror = (event) => reject(new Error(event.message));
    });
  try {
    const paths = sessionPaths(ref);
    const opened = answer();
    worker.postMessage({ open: true, dbName, storeName, headersFrom: allHeaders().lower });
    await opened;
    const request = {
      whole: [paths.meta, paths.active, paths.draft, paths.instruction].map((path) => ({ path, chunks: bounds(chunksOf(path)) })),
      last: { headers: bounds(headersBelow(paths.segmentsDir)), prefix: `${paths.segmentsDir}/`, tailBytes: FOOTER_PREFETCH_BYTES },
    };
    const read = answer();
    const t0 = performance.now();
    worker.postMessage(request);
    const found = (await read)!;
    const ms = performance.now() - t0;
    return { ms, files: found.length, bytes: found.reduce((sum, bytes) => sum + bytes.length, 0) };
  } finally {
    worker.terminate();
  }
}
