/**
 * The catalog of `IndexedDbStorage` (docs/FORMAT.md "The catalog"): one record per session
 * folder (`indexeddb-records.ts`), kept by the steps here inside the transaction of the
 * write that changes it, so a record and its `meta.json` never disagree; a listing is one
 * `getAll` over the records of a folder of sessions.
 *
 * @module
 */
import { promisifyRequest } from "idb-keyval";
import { catalogDocument, type CatalogEntry, type CatalogListing, cataloguedPath } from "../core/mod.ts";
import { concatBytes, parentPath } from "../core/internal.ts";
import {
  allHeaders,
  CATALOG_COMPLETE,
  catalogBelow,
  catalogKey,
  type CatalogRecord,
  chunksOf,
  type FileHeader,
  headersBelow,
  movedCatalog,
} from "./indexeddb-records.ts";
import { moveRange, readHeader } from "./indexeddb-requests.ts";

/** After `path` was written with `bytes` (same transaction): a session's `meta.json` gets its folder's record. */
export function catalogWritten(store: IDBObjectStore, path: string, bytes: Uint8Array): void {
  if (cataloguedPath(path)) store.put({ meta: catalogDocument(bytes) ?? null } satisfies CatalogRecord, catalogKey(parentPath(path)));
}

/** With the removal of `path` (same transaction): the records of the session folders at or below it go too. */
export function catalogRemoved(store: IDBObjectStore, path: string): void {
  store.delete(catalogKey(path));
  store.delete(catalogBelow(path));
}

/** With the move of `from` to `to` (same transaction): the records of the session folders at or below it move too. */
export async function catalogMoved(store: IDBObjectStore, from: string, to: string): Promise<void> {
  const rename = movedCatalog(from, to);
  await moveRange(store, catalogKey(from), rename);
  await moveRange(store, catalogBelow(from), rename);
}

/** Whether every session of the store has its record (a store written before the catalog does not, until {@linkcode catchUpCatalog}). */
export async function catalogComplete(store: IDBObjectStore): Promise<boolean> {
  return (await promisifyRequest(store.getKey(CATALOG_COMPLETE))) !== undefined;
}

/** The records of the folder of sessions `dir`: one request for the keys, one for the values. */
export async function readCatalogRecords(store: IDBObjectStore, dir: string): Promise<CatalogListing> {
  const range = catalogBelow(dir);
  const [keys, records] = await Promise.all([
    promisifyRequest(store.getAllKeys(range)),
    promisifyRequest(store.getAll(range) as IDBRequest<CatalogRecord[]>),
  ]);
  const skip = 1 + dir.length + 1;
  const entries: CatalogEntry[] = [];
  keys.forEach((key, i) => {
    const name = (key as string).slice(skip);
    if (!name.includes("/")) entries.push({ name, meta: records[i]!.meta ?? undefined });
  });
  return { entries, unlisted: [] };
}

/**
 * Writes the record of every session `meta.json` at or below `dir` (`""`: the whole store)
 * from the file itself, after dropping the records there; with `dir` `""`, marks the store
 * complete. Resolves how many it wrote.
 */
export async function rebuildCatalogRecords(store: IDBObjectStore, dir: string): Promise<number> {
  if (dir !== "") catalogRemoved(store, dir);
  const keys = (await promisifyRequest(store.getAllKeys(dir === "" ? allHeaders() : headersBelow(dir)))) as string[];
  let written = 0;
  for (const path of keys) {
    const at = cataloguedPath(path);
    if (!at || (dir !== "" && at.dir !== dir)) continue;
    const header = await readHeader(store, path);
    if (!header) continue;
    const chunks = await promisifyRequest(store.getAll(chunksOf(path)) as IDBRequest<Uint8Array[]>);
    catalogWritten(store, path, concatBytes(chunks, (header satisfies FileHeader).size));
    written++;
  }
  if (dir === "") store.put({ complete: true }, CATALOG_COMPLETE);
  return written;
}
