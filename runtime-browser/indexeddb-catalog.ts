/**
 * The catalog of `IndexedDbStorage` (docs/FORMAT.md "The catalog"): per folder of sessions,
 * a snapshot record and one record per session changed since it, in numbered generations
 * (`indexeddb-records.ts`), kept by the steps here inside the transaction of the write that
 * changes them, so a record and its `meta.json` never disagree. A listing reads the snapshot
 * and its generation's session records. IndexedDB costs per record far more than per byte
 * (10⁴ records of 300 bytes take ten times as long to read as one of 3 MB), so a listing
 * that finds many session records folds them into the next generation's snapshot, in a
 * transaction of its own.
 *
 * @module
 */
import { promisifyRequest } from "idb-keyval";
import { catalogDocument, type CatalogEntry, type CatalogListing, cataloguedFolder, cataloguedPath, StorageError } from "../core/mod.ts";
import { catalogSnapshotEntries, catalogSnapshotText, type CatalogText, catalogTextOfSnapshot, concatBytes, damagedSnapshotError } from "../core/internal.ts";
import {
  allCatalog,
  allHeaders,
  CATALOG_COMPLETE,
  CATALOG_COMPLETE_BEFORE_SNAPSHOTS,
  catalogBelow,
  catalogChanges,
  type CatalogRecord,
  catalogRecordKey,
  catalogSnapshotKey,
  catalogSnapshots,
  chunksOf,
  generationOf,
  headersBelow,
  movedCatalog,
} from "./indexeddb-records.ts";
import { moveRange, readHeader } from "./indexeddb-requests.ts";

/** The record of a session folder removed or moved away: its folder's snapshot may still hold it. */
const GONE: CatalogRecord = { gone: true };

/**
 * A listing folds the session records into the snapshot once there are this many, and at
 * least an eighth as many as the snapshot's entries: reading them then costs about what
 * reading the snapshot does, and a fold (a listing and a write of the snapshot) is paid once
 * per that many changes.
 */
const FOLD_AFTER = 128;

/** After `path` was written with `bytes` (same transaction): a session's `meta.json` gets its record. */
export async function catalogWritten(store: IDBObjectStore, path: string, bytes: Uint8Array): Promise<void> {
  const at = cataloguedPath(path);
  if (at) await putRecord(store, at.dir, at.name, { meta: catalogDocument(bytes) ?? null });
}

/** With the removal of `path` (same transaction): a session folder is gone from its catalog; the catalogs below `path` go too. */
export async function catalogRemoved(store: IDBObjectStore, path: string): Promise<void> {
  store.delete(catalogBelow(path));
  const at = cataloguedFolder(path);
  if (at) await putRecord(store, at.dir, at.name, GONE);
}

/**
 * With the move of `from` to `to` (same transaction, after the files moved): the catalogs
 * below `from` move as they are; a session folder is gone from its old catalog, and its
 * record at `to` is read from its `meta.json` (the snapshot that may hold it is not parsed).
 */
export async function catalogMoved(store: IDBObjectStore, from: string, to: string): Promise<void> {
  await moveRange(store, catalogBelow(from), movedCatalog(from, to));
  const old = cataloguedFolder(from);
  if (old) await putRecord(store, old.dir, old.name, GONE);
  if (cataloguedFolder(to)) await catalogFromFile(store, `${to}/meta.json`);
}

/** Whether every session of the store is catalogued in this layout (not before {@linkcode rebuildCatalogRecords} of `""`). */
export async function catalogComplete(store: IDBObjectStore): Promise<boolean> {
  const [complete, before] = await Promise.all([
    promisifyRequest(store.getKey(CATALOG_COMPLETE)),
    promisifyRequest(store.getKey(CATALOG_COMPLETE_BEFORE_SNAPSHOTS)),
  ]);
  // A version before the snapshots that caught the store up wrote records this one does not read.
  return complete !== undefined && before === undefined;
}

/** The catalog of a folder of sessions as read: its listing, and whether a listing should fold it. */
export interface CatalogRead {
  readonly listing: CatalogListing;
  readonly foldDue: boolean;
}

/** The catalog of a folder of sessions as the storage worker's hop carries it (`catalogTextOfSnapshot`), and whether a listing should fold it. */
export interface CatalogTextRead {
  readonly text: CatalogText;
  readonly foldDue: boolean;
}

/** The records of a folder's catalog as stored: its snapshot record (JSON text, unparsed) and the session records of its generation by name. */
interface CatalogRecords {
  readonly snapshot: unknown;
  readonly changed: ReadonlyMap<string, unknown>;
}

/** The catalog of the folder of sessions `dir`: its snapshot, and the session records of its generation, which win. */
export async function readCatalogRecords(store: IDBObjectStore, dir: string): Promise<CatalogRead> {
  const { snapshot, changed } = await catalogRecords(store, dir);
  const parsed = snapshot === undefined ? [] : parsedSnapshot(snapshot, dir);
  const entries = changed.size === 0 ? parsed : parsed.filter((entry) => !changed.has(entry.name));
  entries.push(...changedEntries(changed).changed);
  return { listing: { entries, unlisted: [] }, foldDue: foldDue(changed.size, () => parsed.length) };
}

/**
 * The same catalog as the storage worker's hop carries it: the snapshot's text as it is, the
 * session records beside it (the page applies them). Only once there are enough records to
 * fold does the snapshot's length count, and it is parsed for it.
 */
export async function readCatalogText(store: IDBObjectStore, dir: string): Promise<CatalogTextRead> {
  const { snapshot, changed } = await catalogRecords(store, dir);
  if (snapshot !== undefined && typeof snapshot !== "string") throw notASnapshot(dir);
  const { changed: entries, gone } = changedEntries(changed);
  return {
    text: catalogTextOfSnapshot(snapshot ?? "[]", entries, gone),
    foldDue: foldDue(changed.size, () => snapshot === undefined ? 0 : parsedSnapshot(snapshot, dir).length),
  };
}

/**
 * Whether `changed` session records beside a snapshot of `snapshotEntries()` are due to be
 * folded into the next one. The count is asked for only once enough records are there: for
 * the hop's text, it means parsing the snapshot.
 */
function foldDue(changed: number, snapshotEntries: () => number): boolean {
  return changed >= FOLD_AFTER && changed * 8 >= snapshotEntries();
}

/** The snapshot record and the session records of the current generation of `dir`. */
async function catalogRecords(store: IDBObjectStore, dir: string): Promise<CatalogRecords> {
  const snapshotKey = await promisifyRequest(store.getKey(catalogSnapshots(dir))) as string | undefined;
  const gen = snapshotKey === undefined ? 0 : generationOf(snapshotKey);
  const changes = catalogChanges(dir, gen);
  const [snapshot, keys, values] = await Promise.all([
    snapshotKey === undefined ? undefined : promisifyRequest(store.get(snapshotKey)),
    promisifyRequest(store.getAllKeys(changes)),
    promisifyRequest(store.getAll(changes) as IDBRequest<unknown[]>),
  ]);
  const skip = catalogRecordKey(dir, gen, "").length;
  const changed = new Map<string, unknown>();
  keys.forEach((key, i) => changed.set((key as string).slice(skip), values[i]));
  return { snapshot, changed };
}

/** The entries of the sessions changed since the snapshot, and the names of those gone. */
function changedEntries(changed: ReadonlyMap<string, unknown>): { changed: CatalogEntry[]; gone: string[] } {
  const entries: CatalogEntry[] = [];
  const gone: string[] = [];
  for (const [name, record] of changed) {
    // A record that is not one (not an object) has no document: the core reads the file.
    const value = record as Partial<{ meta: unknown; gone: boolean }> | null | undefined;
    if (value?.gone === true) gone.push(name);
    else entries.push({ name, meta: value?.meta ?? undefined });
  }
  return { changed: entries, gone };
}

/** Folds the session records of `dir` into the next generation's snapshot (a `readwrite` transaction); resolves the listing. */
export async function foldCatalogRecords(store: IDBObjectStore, dir: string): Promise<CatalogListing> {
  const { listing } = await readCatalogRecords(store, dir);
  return { entries: await writeSnapshot(store, dir, listing.entries), unlisted: [] };
}

/**
 * Writes the catalog of every folder of sessions at or below `dir` (`""`: the whole store,
 * then marked complete) from the `meta.json` files themselves, as one snapshot per folder.
 * Resolves how many sessions it catalogued.
 */
export async function rebuildCatalogRecords(store: IDBObjectStore, dir: string): Promise<number> {
  const folders = new Map<string, CatalogEntry[]>(dir === "" ? [] : [[dir, []]]);
  const keys = (await promisifyRequest(store.getAllKeys(dir === "" ? allHeaders() : headersBelow(dir)))) as string[];
  let written = 0;
  for (const path of keys) {
    const at = cataloguedPath(path);
    if (!at || (dir !== "" && at.dir !== dir)) continue;
    const bytes = await readFile(store, path);
    if (!bytes) continue;
    const entries = folders.get(at.dir) ?? [];
    entries.push({ name: at.name, meta: catalogDocument(bytes) });
    folders.set(at.dir, entries);
    written++;
  }
  // What was catalogued there goes first (another generation, another layout's records).
  store.delete(dir === "" ? allCatalog() : catalogBelow(dir));
  if (dir === "") store.put({ complete: true }, CATALOG_COMPLETE);
  for (const [folder, entries] of folders) await writeSnapshot(store, folder, entries);
  return written;
}

/** Puts the record of session folder `name` in the current generation of the folder of sessions `dir`. */
async function putRecord(store: IDBObjectStore, dir: string, name: string, record: CatalogRecord): Promise<void> {
  const snapshotKey = await promisifyRequest(store.getKey(catalogSnapshots(dir))) as string | undefined;
  store.put(record, catalogRecordKey(dir, snapshotKey === undefined ? 0 : generationOf(snapshotKey), name));
}

/**
 * Makes `entries` the snapshot of the next generation of `dir` and deletes the current one
 * (its snapshot and session records); resolves them in the snapshot's order.
 */
async function writeSnapshot(store: IDBObjectStore, dir: string, entries: readonly CatalogEntry[]): Promise<CatalogEntry[]> {
  const snapshotKey = await promisifyRequest(store.getKey(catalogSnapshots(dir))) as string | undefined;
  const gen = snapshotKey === undefined ? 0 : generationOf(snapshotKey);
  // Newest activity first, the listing's order: the core's sort of a sorted list is one pass.
  const sorted = [...entries].sort((a, b) => {
    const [x, y] = [activityOf(a), activityOf(b)];
    return x === y ? (a.name < b.name ? -1 : a.name > b.name ? 1 : 0) : x > y ? -1 : 1;
  });
  if (snapshotKey !== undefined) store.delete(snapshotKey);
  store.delete(catalogChanges(dir, gen));
  store.put(catalogSnapshotText(sorted), catalogSnapshotKey(dir, gen + 1));
  return sorted;
}

/** The record of the session whose `meta.json` is `path`, from the file (`gone` when there is none). */
async function catalogFromFile(store: IDBObjectStore, path: string): Promise<void> {
  const at = cataloguedPath(path);
  if (!at) return;
  const bytes = await readFile(store, path);
  await putRecord(store, at.dir, at.name, bytes ? { meta: catalogDocument(bytes) ?? null } : GONE);
}

/** The bytes of the file at `path`, `undefined` when there is none. */
async function readFile(store: IDBObjectStore, path: string): Promise<Uint8Array | undefined> {
  const header = await readHeader(store, path);
  if (!header) return undefined;
  const chunks = await promisifyRequest(store.getAll(chunksOf(path)) as IDBRequest<Uint8Array[]>);
  return concatBytes(chunks, header.size);
}

/** The entries of a snapshot record; a record that is not one is a `StorageError` (the core then reads every `meta.json`). */
function parsedSnapshot(value: unknown, dir: string): CatalogEntry[] {
  const entries = typeof value === "string" ? catalogSnapshotEntries(value) : undefined;
  if (!entries) throw notASnapshot(dir);
  return entries;
}

function notASnapshot(dir: string): StorageError {
  return damagedSnapshotError(`IndexedDB catalog snapshot of "${dir}"`, dir);
}

/** An entry's `updated_at` for the snapshot's order (`""`, last, when it has none). */
function activityOf(entry: CatalogEntry): string {
  const at = (entry.meta as { updated_at?: unknown } | undefined)?.updated_at;
  return typeof at === "string" ? at : "";
}
