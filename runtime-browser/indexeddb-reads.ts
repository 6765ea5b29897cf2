/**
 * The reads of `IndexedDbStorage` as steps of a transaction it already holds: a whole file,
 * a file's tail and a folder's last file. `read` and `readTail` run one each in a
 * transaction of their own; `readMany` runs all of its requests in one `readonly`
 * transaction, so they see one state of the store (one snapshot).
 *
 * @module
 */
import { promisifyRequest } from "idb-keyval";
import { type FileTail, formatBytes, type ReadRequest, type ReadResult, StoreEntryError } from "../core/mod.ts";
import { concatBytes } from "../core/internal.ts";
import { allHeaders, checked, chunksOf, headersBelow } from "./indexeddb-records.ts";
import { readHeader, walk } from "./indexeddb-requests.ts";

/**
 * The whole file at `path`, `undefined` when there is none. Its header first: a file over
 * `maxFileBytes` is refused (`StoreEntryError`) before any of its chunks is loaded.
 */
export async function readWhole(store: IDBObjectStore, path: string, maxFileBytes: number): Promise<Uint8Array | undefined> {
  const header = await readHeader(store, path);
  if (!header) return undefined;
  if (!(header.size <= maxFileBytes)) {
    const max = formatBytes(maxFileBytes);
    const found = `a file of ${Number.isFinite(header.size) ? formatBytes(header.size) : String(header.size)}`;
    throw new StoreEntryError(`store entry "${path}": found ${found} where a file of at most ${max} belongs; it is not read`, {
      path,
      found,
      expected: `a file of at most ${max}`,
    });
  }
  const chunks = await promisifyRequest(store.getAll(chunksOf(path)) as IDBRequest<Uint8Array[]>);
  return checked(concatBytes(chunks, header.size), header, path);
}

/** The last `maxBytes` of the file at `path` and its size: a reverse cursor over its chunks, stopping at the first that covers the tail. */
export async function readTail(store: IDBObjectStore, path: string, maxBytes: number): Promise<FileTail | undefined> {
  const wanted = Number.isFinite(maxBytes) ? Math.max(0, Math.floor(maxBytes)) : maxBytes > 0 ? Number.MAX_SAFE_INTEGER : 0;
  const parts: Uint8Array[] = [];
  let have = 0;
  const [header] = await Promise.all([
    readHeader(store, path),
    wanted === 0 ? undefined : walk(store.openCursor(chunksOf(path), "prev"), (cursor) => {
      const chunk = cursor.value as Uint8Array;
      parts.unshift(chunk);
      have += chunk.length;
      return have < wanted;
    }),
  ]);
  if (!header) return undefined;
  const take = Math.min(wanted, header.size);
  if (take === 0) return { bytes: new Uint8Array(0), size: header.size };
  const joined = concatBytes(parts, have);
  if (have < take) checked(joined, header, path);
  return { bytes: joined.slice(have - take), size: header.size };
}

/**
 * The path of the file whose name sorts last in the folder `dir` (files in folders below it
 * skipped), `undefined` when it holds none: a reverse cursor over its header keys that stops
 * at the first file, so it costs the same however many files the folder holds (a step more
 * only for each file of a folder below it that sorts after that file).
 */
async function lastFileIn(store: IDBObjectStore, dir: string): Promise<string | undefined> {
  const prefix = dir === "" ? "" : `${dir}/`;
  let last: string | undefined;
  await walk(store.openKeyCursor(dir === "" ? allHeaders() : headersBelow(dir), "prev"), (cursor) => {
    const key = cursor.primaryKey as string;
    if (key.includes("/", prefix.length)) return true;
    last = key;
    return false;
  });
  return last;
}

/**
 * One request of `readMany` in the transaction of `store`. A `lastIn` prefetch reads the
 * folder's last file itself (found from the index of keys, `lastFileIn`): its hint is not needed.
 */
export async function readRequest(store: IDBObjectStore, request: ReadRequest, maxFileBytes: number): Promise<ReadResult | undefined> {
  const path = "lastIn" in request ? await lastFileIn(store, request.lastIn) : request.path;
  if (path === undefined) return undefined;
  if (!("lastIn" in request) && request.tailBytes === undefined) {
    const bytes = await readWhole(store, path, maxFileBytes);
    return bytes && { path, bytes, size: bytes.length };
  }
  const tail = await readTail(store, path, request.tailBytes!);
  return tail && { path, bytes: tail.bytes, size: tail.size };
}
