/**
 * {@linkcode IndexedDbStorage}: the storage port over IndexedDB, on `idb-keyval`'s
 * custom store (`createStore(dbName, storeName)` opens the database and creates the
 * object store; the store then runs its own multi-key transactions on it).
 *
 * The record layout (a header and chunk records per file) is in `indexeddb-records.ts`;
 * the connection and its transactions in `indexeddb-connection.ts`, the reads in
 * `indexeddb-reads.ts`, the Web Locks in `web-locks.ts`.
 *
 * ## Costs
 *
 * - `append`: one transaction that reads the header, adds the new chunk(s) and rewrites
 *   the small header: O(new bytes), earlier chunks are never touched.
 * - `replace`: one transaction that deletes the chunk range and writes the new content
 *   as fresh chunks (so a file's chunk list is compacted whenever it is replaced; the
 *   core replaces `active.jsonl` at every compaction).
 * - `readTail`: a reverse cursor over the chunk range, stopping at the first chunk that
 *   covers the requested tail: O(tail + one chunk). Every write ends its bytes in a chunk of
 *   at most `LAST_CHUNK_BYTES` (the tail an open reads), so that tail is one small record.
 * - `readMany`: every read in one `readonly` transaction (one snapshot); a folder's last file
 *   from a reverse cursor over its header keys, whatever the folder's size.
 * - `truncate`: drops the chunks past the cut and cuts the straddling one.
 * - `move`: one transaction copying every record under the source (file, descendants,
 *   their chunks) to the target keys and deleting the source ranges. IndexedDB has no
 *   rename, so this is O(tree size); it is used by archive and fork only.
 *
 * Every write is one `readwrite` transaction with `durability: "strict"`: IndexedDB
 * commits it as a whole or not at all, so a failure (a quota error included) leaves the
 * previous content intact.
 *
 * @module
 */
import { promisifyRequest } from "idb-keyval";
import {
  assertStoragePath,
  type CatalogListing,
  cataloguedFolder,
  type FileTail,
  MAX_FILE_BYTES,
  type ReadRequest,
  type ReadResult,
  type StoragePort,
  type WriteOptions,
} from "../core/mod.ts";
import { catalogListingText, type CatalogText, type CatalogTextStore, isWithin } from "../core/internal.ts";
import {
  catalogComplete,
  catalogMoved,
  catalogRemoved,
  catalogWritten,
  foldCatalogRecords,
  readCatalogRecords,
  readCatalogText,
  rebuildCatalogRecords,
} from "./indexeddb-catalog.ts";
import { IndexedDbConnection } from "./indexeddb-connection.ts";
import { readRequest, readTail, readWhole } from "./indexeddb-reads.ts";
import { allHeaders, chunkKey, chunksBelow, chunksOf, type FileHeader, headersBelow, movedChunk, movedHeader, split } from "./indexeddb-records.ts";
import { addOrConflict, moveRange, readHeader, walk } from "./indexeddb-requests.ts";
import { HeldWebLocks, webLocks } from "./web-locks.ts";

/** Options of {@linkcode IndexedDbStorage}. */
export interface IndexedDbStorageOptions {
  /**
   * Name of the IndexedDB database. Default `"sessionfold"`. It also namespaces the Web
   * Locks this store takes, so two databases of one origin never share a lock.
   */
  readonly dbName?: string;
  /**
   * Name of the object store inside the database. Default `"files"`. `idb-keyval`
   * creates it when it creates the database, so one database holds one store: use
   * another `dbName` rather than another `storeName` on an existing database.
   */
  readonly storeName?: string;
  /**
   * The largest file `read` loads, in bytes: a larger one is refused as corrupt
   * (`StoreEntryError`) from its header, before a chunk is loaded. Default
   * {@linkcode MAX_FILE_BYTES} (256 MiB), as on Node.
   */
  readonly maxFileBytes?: number;
}

/**
 * A {@linkcode StoragePort} over IndexedDB (see the module doc for the record layout).
 * Works on a page and in a Web Worker; the browser runtime runs it in a worker
 * ({@linkcode WorkerIndexedDbStorage}).
 *
 * **Held lock.** Where the Web Locks API exists (`navigator.locks`, pages and workers of
 * every current browser), the constructor defines `acquireLock` / `releaseLock` as own
 * properties: the core then takes writer ownership with a Web Lock, which the browser
 * frees when the holding tab or worker dies, and `writer.lock` only records the owner.
 * Where it is missing (happy-dom, fake-indexeddb under Node) the methods are absent, and
 * the core falls back to creating `writer.lock` exclusively.
 *
 * **Errors.** Every method rejects (never throws synchronously) with
 * `InvalidInputError` for a path that `assertStoragePath` refuses, `StorageFullError`
 * when the origin's quota is exhausted (the transaction was aborted: nothing was
 * written), and `StorageError` (code `internal`, `details.path`, `details.operation`,
 * `details.dom_error`) for any other IndexedDB failure.
 *
 * @example
 * ```ts
 * const storage = new IndexedDbStorage({ dbName: "my-app" });
 * await storage.append("log.jsonl", new TextEncoder().encode('{"a":1}\n'));
 * await storage.readTail("log.jsonl", 4); // { bytes: …, size: 8 }
 * await storage.close();
 * ```
 */
export class IndexedDbStorage implements StoragePort, CatalogTextStore {
  /** The database name. */
  readonly dbName: string;
  /** The object store name. */
  readonly storeName: string;
  /**
   * Takes the Web Lock `sessionfold:<dbName>:<name>` if it is free, resolving `false` at
   * once otherwise. Defined only where `navigator.locks` exists. Until the next `replace` of
   * `name` (the owner's record) its record lock is held too (`webLockRecordName`).
   */
  declare readonly acquireLock?: (name: string) => Promise<boolean>;
  /** Releases a Web Lock taken with `acquireLock`. Defined only with `acquireLock`. */
  declare readonly releaseLock?: (name: string) => Promise<void>;
  /** The largest file `read` returns (`IndexedDbStorageOptions.maxFileBytes`); writers keep every file within it. */
  readonly maxFileBytes: number;
  readonly #connection: IndexedDbConnection;
  readonly #locks: HeldWebLocks | undefined;
  #closed = false;

  constructor(options: IndexedDbStorageOptions = {}) {
    this.dbName = options.dbName ?? "sessionfold";
    this.storeName = options.storeName ?? "files";
    this.maxFileBytes = options.maxFileBytes ?? MAX_FILE_BYTES;
    this.#connection = new IndexedDbConnection(this.dbName, this.storeName);
    const locks = webLocks();
    this.#locks = locks && new HeldWebLocks(locks, this.dbName);
    if (this.#locks) {
      const held = this.#locks;
      Object.defineProperty(this, "acquireLock", { value: (name: string) => held.acquire(name) });
      Object.defineProperty(this, "releaseLock", { value: (name: string) => held.release(name) });
    }
  }

  async read(path: string): Promise<Uint8Array | undefined> {
    assertStoragePath(path);
    return this.#connection.transaction("readonly", "read", path, (store) => readWhole(store, path, this.maxFileBytes));
  }

  async readTail(path: string, maxBytes: number): Promise<FileTail | undefined> {
    assertStoragePath(path);
    return this.#connection.transaction("readonly", "readTail", path, (store) => readTail(store, path, maxBytes));
  }

  /**
   * Every read of `requests` in one `readonly` transaction: one state of the store, as one
   * PostgreSQL statement reads it. A `lastIn` prefetch reads the folder's last file, found
   * from the keys' order whatever the folder's size (its hint is not needed).
   */
  async readMany(requests: readonly ReadRequest[]): Promise<(ReadResult | undefined)[]> {
    for (const request of requests) {
      if ("lastIn" in request) assertStoragePath(request.lastIn, true);
      else assertStoragePath(request.path);
    }
    const first = requests[0];
    if (!first) return [];
    return this.#connection.transaction(
      "readonly",
      "readMany",
      "lastIn" in first ? first.lastIn : first.path,
      (store) => Promise.all(requests.map((request) => readRequest(store, request, this.maxFileBytes))),
    );
  }

  async list(dir: string): Promise<string[]> {
    assertStoragePath(dir, true);
    const prefix = dir === "" ? "" : `${dir}/`;
    return this.#connection.transaction("readonly", "list", dir, async (store) => {
      const keys = await promisifyRequest(store.getAllKeys(dir === "" ? allHeaders() : headersBelow(dir)));
      const names = new Set<string>();
      for (const key of keys) {
        const rest = (key as string).slice(prefix.length);
        const slash = rest.indexOf("/");
        names.add(slash < 0 ? rest : rest.slice(0, slash));
      }
      return [...names].sort();
    });
  }

  async replace(path: string, bytes: Uint8Array): Promise<void> {
    assertStoragePath(path);
    const pieces = split(bytes);
    await this.#connection.transaction("readwrite", "replace", path, async (store) => {
      store.delete(chunksOf(path));
      store.put({ size: bytes.length, chunks: pieces.length } satisfies FileHeader, path);
      pieces.forEach((piece, index) => store.put(piece, chunkKey(path, index)));
      await catalogWritten(store, path, bytes);
    });
    // A held lock's owner record is written: readers waiting for it may read it now (web-locks.ts).
    // (A failed write keeps the record lock until the lock is given back, as the core then does.)
    await this.#locks?.recorded(path);
  }

  async append(path: string, bytes: Uint8Array): Promise<void> {
    assertStoragePath(path);
    const pieces = split(bytes);
    return this.#connection.transaction("readwrite", "append", path, async (store) => {
      const header = await readHeader(store, path);
      if (header && pieces.length === 0) return;
      const first = header?.chunks ?? 0;
      pieces.forEach((piece, index) => store.put(piece, chunkKey(path, first + index)));
      store.put({ size: (header?.size ?? 0) + bytes.length, chunks: first + pieces.length } satisfies FileHeader, path);
    });
  }

  async createExclusive(path: string, bytes: Uint8Array, options?: WriteOptions): Promise<boolean> {
    assertStoragePath(path);
    const pieces = split(bytes);
    return this.#connection.transaction("readwrite", "createExclusive", path, async (store) => {
      // A folder is "something at path" too; `add` alone only sees a file.
      if ((await promisifyRequest(store.count(headersBelow(path)))) > 0) return false;
      if (!(await addOrConflict(store, { size: bytes.length, chunks: pieces.length } satisfies FileHeader, path))) return false;
      pieces.forEach((piece, index) => store.put(piece, chunkKey(path, index)));
      await catalogWritten(store, path, bytes);
      return true;
    }, options);
  }

  async truncate(path: string, length: number): Promise<void> {
    assertStoragePath(path);
    const cut = Math.max(0, Math.floor(length) || 0);
    return this.#connection.transaction("readwrite", "truncate", path, async (store) => {
      const header = await readHeader(store, path);
      if (!header || cut >= header.size) return;
      let end = header.size;
      let chunks = header.chunks;
      await walk(store.openCursor(chunksOf(path), "prev"), (cursor) => {
        const chunk = cursor.value as Uint8Array;
        const start = end - chunk.length;
        if (start >= cut) {
          store.delete(cursor.primaryKey);
          chunks--;
          end = start;
          return start > cut;
        }
        store.put(chunk.slice(0, cut - start), cursor.primaryKey);
        return false;
      });
      store.put({ size: cut, chunks } satisfies FileHeader, path);
    });
  }

  async remove(path: string, options?: WriteOptions): Promise<void> {
    assertStoragePath(path);
    // A held lock's owner record goes before the lock does: readers wait until both are gone (web-locks.ts).
    await this.#locks?.unrecording(path);
    return this.#connection.transaction("readwrite", "remove", path, async (store) => {
      store.delete(path);
      store.delete(chunksOf(path));
      store.delete(headersBelow(path));
      store.delete(chunksBelow(path));
      await catalogRemoved(store, path);
    }, options);
  }

  async move(from: string, to: string): Promise<boolean> {
    assertStoragePath(from);
    assertStoragePath(to);
    if (isWithin(to, from)) return false;
    return this.#connection.transaction("readwrite", "move", from, async (store) => {
      const [file, below, target, targetBelow] = await Promise.all([
        promisifyRequest(store.getKey(from)),
        promisifyRequest(store.count(headersBelow(from))),
        promisifyRequest(store.getKey(to)),
        promisifyRequest(store.count(headersBelow(to))),
      ]);
      if ((file === undefined && below === 0) || target !== undefined || targetBelow > 0) return false;
      const header = movedHeader(from, to);
      const chunk = movedChunk(from, to);
      await moveRange(store, from, header);
      await moveRange(store, headersBelow(from), header);
      await moveRange(store, chunksOf(from), chunk);
      await moveRange(store, chunksBelow(from), chunk);
      await catalogMoved(store, from, to);
      return true;
    });
  }

  /**
   * The catalog of a folder of sessions: its snapshot and the session records changed since,
   * kept by every write of a `meta.json` in that write's transaction (`indexeddb-catalog.ts`),
   * read in one `readonly` transaction. A listing that finds many session records folds them
   * into the next snapshot, in one `readwrite` transaction. A store written before this layout
   * is caught up from its files once, on its first listing.
   */
  async readCatalog(dir: string): Promise<CatalogListing | undefined> {
    const found = await this.#readCatalogAs(dir, readCatalogRecords);
    if (!found?.foldDue) return found?.listing;
    return this.#foldCatalog(dir);
  }

  /**
   * The same catalog as the storage worker's hop carries it (`CatalogTextStore`): the
   * snapshot's JSON text as stored, not parsed and written again, with the session records
   * changed since beside it.
   */
  async readCatalogText(dir: string): Promise<CatalogText | undefined> {
    const found = await this.#readCatalogAs(dir, readCatalogText);
    if (!found?.foldDue) return found?.text;
    return catalogListingText(await this.#foldCatalog(dir));
  }

  /** The catalog of `dir` read by `read` in one `readonly` transaction, the store caught up first if it must be; `undefined` where no catalog is kept. */
  async #readCatalogAs<T>(dir: string, read: (store: IDBObjectStore, dir: string) => Promise<T>): Promise<T | undefined> {
    assertStoragePath(dir);
    if (!cataloguedFolder(`${dir}/x`)) return undefined;
    const readIfComplete = () =>
      this.#connection.transaction("readonly", "readCatalog", dir, async (store) => (await catalogComplete(store)) ? read(store, dir) : undefined);
    const found = await readIfComplete();
    if (found !== undefined) return found;
    await this.#connection.transaction("readwrite", "readCatalog", dir, (store) => rebuildCatalogRecords(store, ""));
    return (await readIfComplete())!;
  }

  /** Folds the session records of `dir` into its next snapshot, in one `readwrite` transaction; resolves the listing. */
  #foldCatalog(dir: string): Promise<CatalogListing> {
    return this.#connection.transaction("readwrite", "readCatalog", dir, (store) => foldCatalogRecords(store, dir));
  }

  /** Rebuilds the records of a folder of sessions from every `meta.json` in it, in one transaction. */
  async rebuildCatalog(dir: string): Promise<number> {
    assertStoragePath(dir);
    if (!cataloguedFolder(`${dir}/x`)) return 0;
    return this.#connection.transaction("readwrite", "rebuildCatalog", dir, (store) => rebuildCatalogRecords(store, dir));
  }

  /** Closes the database connection and releases every Web Lock this store holds. Later calls reject. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const closing = this.#connection.close();
    await this.#locks?.releaseAll();
    await closing;
  }
}
