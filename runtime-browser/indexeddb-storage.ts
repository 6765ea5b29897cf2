/**
 * {@linkcode IndexedDbStorage}: the storage port over IndexedDB, on `idb-keyval`'s
 * custom store (`createStore(dbName, storeName)` opens the database and creates the
 * object store; this module then runs its own multi-key transactions on it).
 *
 * ## Record layout (one object store, out-of-line string keys)
 *
 * - **File header**, key = the docs/FORMAT.md path itself (`agents/a1/…/meta.json`),
 *   value `{ size, chunks }`: the file's length in bytes and how many chunk records
 *   hold it. A header exists for every file, an empty one included.
 * - **Chunk record**, key = `"\0" + path + "\0" + <12-digit zero-padded index>`, value
 *   a `Uint8Array` of at most {@linkcode MAX_CHUNK_BYTES}. Chunks `0 … chunks-1` in
 *   order are the file's bytes.
 *
 * Paths never contain `\0` (`assertStoragePath`), so every chunk key sorts before every
 * header key, and the chunks of one file form the exact key range
 * `["\0" + path + "\0", "\0" + path + "\u0001")`. A folder's descendants are the header
 * range `[dir + "/", dir + "0")` (`"0"` is the code unit after `"/"`), which holds no
 * chunk keys: `list` reads header keys only, whatever the number of appends.
 *
 * ## Costs
 *
 * - `append`: one transaction that reads the header, adds the new chunk(s) and rewrites
 *   the small header: O(new bytes), earlier chunks are never touched.
 * - `replace`: one transaction that deletes the chunk range and writes the new content
 *   as fresh chunks (so a file's chunk list is compacted whenever it is replaced; the
 *   core replaces `active.jsonl` at every compaction).
 * - `readTail`: a reverse cursor over the chunk range, stopping at the first chunk that
 *   covers the requested tail: O(tail + one chunk).
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
import { createStore, promisifyRequest, type UseStore } from "idb-keyval";
import {
  SessionfoldError,
  StorageError,
  StorageFullError,
  StoreEntryError,
  assertStoragePath,
  formatBytes,
  MAX_FILE_BYTES,
  type FileTail,
  type StoragePort,
  type WriteOptions,
} from "../core/mod.ts";

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

/** Largest chunk record; bigger writes are split, so a tail read never loads a whole large file. */
export const MAX_CHUNK_BYTES = 256 * 1024;

/** The header record of one file. */
export interface FileHeader {
  /** Length of the file in bytes. */
  readonly size: number;
  /** Number of chunk records (`0 … chunks-1`) holding the bytes. */
  readonly chunks: number;
}

/** Key of chunk `index` of the file at `path`. */
export function chunkKey(path: string, index: number): string {
  return `\u0000${path}\u0000${String(index).padStart(12, "0")}`;
}

/** Every key that starts with `prefix` (the code unit after its last one is the exclusive upper bound). */
function prefixRange(prefix: string): IDBKeyRange {
  const last = prefix.charCodeAt(prefix.length - 1);
  return IDBKeyRange.bound(prefix, prefix.slice(0, -1) + String.fromCharCode(last + 1), false, true);
}

/** The chunk records of the file at `path`. */
const chunksOf = (path: string): IDBKeyRange => prefixRange(`\u0000${path}\u0000`);
/** The headers of every file below the folder `dir`. */
const headersBelow = (dir: string): IDBKeyRange => prefixRange(`${dir}/`);
/** The chunk records of every file below the folder `dir`. */
const chunksBelow = (dir: string): IDBKeyRange => prefixRange(`\u0000${dir}/`);
/** Every header key (they are paths; chunk keys start with `\0`). */
const allHeaders = (): IDBKeyRange => IDBKeyRange.lowerBound("\u0001");

/** `true` for a quota failure, however the platform reports it. */
function isQuotaError(error: unknown): boolean {
  const e = error as { name?: unknown; code?: unknown } | null;
  return !!e && (e.name === "QuotaExceededError" || e.code === 22);
}

/** A typed error for a failed operation: `StorageFullError` on quota, else `StorageError` with the path. */
function failure(error: unknown, operation: string, path: string): SessionfoldError {
  if (error instanceof SessionfoldError) return error;
  if (isQuotaError(error)) {
    return new StorageFullError(`IndexedDB ${operation} of "${path}" failed: the origin's storage quota is exhausted; nothing was written`, {
      path,
      operation,
    });
  }
  const name = (error as { name?: unknown } | null)?.name;
  const message = error instanceof Error || (error && typeof (error as { message?: unknown }).message === "string")
    ? (error as { message: string }).message
    : String(error);
  return new StorageError(
    `IndexedDB ${operation} of "${path}" failed: ${typeof name === "string" ? `${name}: ` : ""}${message}`,
    { path, operation, ...(typeof name === "string" ? { dom_error: name } : {}) },
    { cause: error },
  );
}

/** `bytes` cut into copies of at most {@linkcode MAX_CHUNK_BYTES} (none for an empty array). */
function split(bytes: Uint8Array): Uint8Array[] {
  const pieces: Uint8Array[] = [];
  for (let offset = 0; offset < bytes.length; offset += MAX_CHUNK_BYTES) {
    pieces.push(bytes.slice(offset, offset + MAX_CHUNK_BYTES));
  }
  return pieces;
}

function concat(parts: readonly Uint8Array[], size: number): Uint8Array {
  if (parts.length === 1 && parts[0]!.length === size) return parts[0]!;
  const out = new Uint8Array(size);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/** Resolves `false` (and keeps the transaction alive) when an `add` meets an existing key. */
function addOrConflict(store: IDBObjectStore, value: unknown, key: string): Promise<boolean> {
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

/** Walks a cursor to its end (or until `step` returns `false`), one record at a time. */
function walk(request: IDBRequest<IDBCursorWithValue | null>, step: (cursor: IDBCursorWithValue) => boolean | void): Promise<void> {
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
async function moveRange(store: IDBObjectStore, range: IDBKeyRange | string, rename: (key: string) => string): Promise<void> {
  await walk(store.openCursor(range), (cursor) => {
    store.put(cursor.value, rename(cursor.primaryKey as string));
  });
  store.delete(range);
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
export class IndexedDbStorage implements StoragePort {
  /** The database name. */
  readonly dbName: string;
  /** The object store name. */
  readonly storeName: string;
  /**
   * Takes the Web Lock `sessionfold:<dbName>:<name>` if it is free, resolving `false` at
   * once otherwise. Defined only where `navigator.locks` exists.
   */
  declare readonly acquireLock?: (name: string) => Promise<boolean>;
  /** Releases a Web Lock taken with `acquireLock`. Defined only with `acquireLock`. */
  declare readonly releaseLock?: (name: string) => Promise<void>;
  #useStore: UseStore;
  /** The largest file `read` returns (`IndexedDbStorageOptions.maxFileBytes`); writers keep every file within it. */
  readonly maxFileBytes: number;
  #db: Promise<IDBDatabase> | undefined;
  #closed = false;
  readonly #held = new Map<string, { release: () => void; done: Promise<unknown> }>();

  constructor(options: IndexedDbStorageOptions = {}) {
    this.dbName = options.dbName ?? "sessionfold";
    this.storeName = options.storeName ?? "files";
    this.maxFileBytes = options.maxFileBytes ?? MAX_FILE_BYTES;
    this.#useStore = createStore(this.dbName, this.storeName);
    const locks = (globalThis as { navigator?: { locks?: LockManager | null } }).navigator?.locks;
    if (locks && typeof locks.request === "function") {
      Object.defineProperty(this, "acquireLock", { value: (name: string) => this.#acquire(locks, name) });
      Object.defineProperty(this, "releaseLock", { value: (name: string) => this.#release(name) });
    }
  }

  async read(path: string): Promise<Uint8Array | undefined> {
    assertStoragePath(path);
    return this.#transaction("readonly", "read", path, async (store) => {
      // The header first: a file over the limit is refused before any of its chunks is loaded.
      const header = await promisifyRequest(store.get(path) as IDBRequest<FileHeader | undefined>);
      if (!header) return undefined;
      if (!(header.size <= this.maxFileBytes)) {
        const max = formatBytes(this.maxFileBytes);
        const found = `a file of ${Number.isFinite(header.size) ? formatBytes(header.size) : String(header.size)}`;
        throw new StoreEntryError(`store entry "${path}": found ${found} where a file of at most ${max} belongs; it is not read`, { path, found, expected: `a file of at most ${max}` });
      }
      const chunks = await promisifyRequest(store.getAll(chunksOf(path)) as IDBRequest<Uint8Array[]>);
      return checked(concat(chunks, header.size), header, path);
    });
  }

  async readTail(path: string, maxBytes: number): Promise<FileTail | undefined> {
    assertStoragePath(path);
    const wanted = Number.isFinite(maxBytes) ? Math.max(0, Math.floor(maxBytes)) : maxBytes > 0 ? Number.MAX_SAFE_INTEGER : 0;
    return this.#transaction("readonly", "readTail", path, async (store) => {
      const parts: Uint8Array[] = [];
      let have = 0;
      const [header] = await Promise.all([
        promisifyRequest(store.get(path) as IDBRequest<FileHeader | undefined>),
        wanted === 0
          ? undefined
          : walk(store.openCursor(chunksOf(path), "prev"), (cursor) => {
              const chunk = cursor.value as Uint8Array;
              parts.unshift(chunk);
              have += chunk.length;
              return have < wanted;
            }),
      ]);
      if (!header) return undefined;
      const take = Math.min(wanted, header.size);
      if (take === 0) return { bytes: new Uint8Array(0), size: header.size };
      const joined = concat(parts, have);
      if (have < take) checked(joined, header, path);
      return { bytes: joined.slice(have - take), size: header.size };
    });
  }

  async list(dir: string): Promise<string[]> {
    assertStoragePath(dir, true);
    const prefix = dir === "" ? "" : `${dir}/`;
    return this.#transaction("readonly", "list", dir, async (store) => {
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
    return this.#transaction("readwrite", "replace", path, (store) => {
      store.delete(chunksOf(path));
      store.put({ size: bytes.length, chunks: pieces.length } satisfies FileHeader, path);
      pieces.forEach((piece, index) => store.put(piece, chunkKey(path, index)));
    });
  }

  async append(path: string, bytes: Uint8Array): Promise<void> {
    assertStoragePath(path);
    const pieces = split(bytes);
    return this.#transaction("readwrite", "append", path, async (store) => {
      const header = await promisifyRequest(store.get(path) as IDBRequest<FileHeader | undefined>);
      if (header && pieces.length === 0) return;
      const first = header?.chunks ?? 0;
      pieces.forEach((piece, index) => store.put(piece, chunkKey(path, first + index)));
      store.put({ size: (header?.size ?? 0) + bytes.length, chunks: first + pieces.length } satisfies FileHeader, path);
    });
  }

  async createExclusive(path: string, bytes: Uint8Array, options?: WriteOptions): Promise<boolean> {
    assertStoragePath(path);
    const pieces = split(bytes);
    return this.#transaction("readwrite", "createExclusive", path, async (store) => {
      // A folder is "something at path" too; `add` alone only sees a file.
      if ((await promisifyRequest(store.count(headersBelow(path)))) > 0) return false;
      if (!(await addOrConflict(store, { size: bytes.length, chunks: pieces.length } satisfies FileHeader, path))) return false;
      pieces.forEach((piece, index) => store.put(piece, chunkKey(path, index)));
      return true;
    }, options);
  }

  async truncate(path: string, length: number): Promise<void> {
    assertStoragePath(path);
    const cut = Math.max(0, Math.floor(length) || 0);
    return this.#transaction("readwrite", "truncate", path, async (store) => {
      const header = await promisifyRequest(store.get(path) as IDBRequest<FileHeader | undefined>);
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
    return this.#transaction("readwrite", "remove", path, (store) => {
      store.delete(path);
      store.delete(chunksOf(path));
      store.delete(headersBelow(path));
      store.delete(chunksBelow(path));
    }, options);
  }

  async move(from: string, to: string): Promise<boolean> {
    assertStoragePath(from);
    assertStoragePath(to);
    if (to === from || to.startsWith(`${from}/`)) return false;
    return this.#transaction("readwrite", "move", from, async (store) => {
      const [file, below, target, targetBelow] = await Promise.all([
        promisifyRequest(store.getKey(from)),
        promisifyRequest(store.count(headersBelow(from))),
        promisifyRequest(store.getKey(to)),
        promisifyRequest(store.count(headersBelow(to))),
      ]);
      if ((file === undefined && below === 0) || target !== undefined || targetBelow > 0) return false;
      const header = (key: string) => to + key.slice(from.length);
      const chunk = (key: string) => `\u0000${to}${key.slice(1 + from.length)}`;
      await moveRange(store, from, header);
      await moveRange(store, headersBelow(from), header);
      await moveRange(store, chunksOf(from), chunk);
      await moveRange(store, chunksBelow(from), chunk);
      return true;
    });
  }

  /** Closes the database connection and releases every Web Lock this store holds. Later calls reject. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const name of [...this.#held.keys()]) await this.#release(name);
    const db = this.#db;
    this.#db = undefined;
    if (db) (await db.catch(() => undefined))?.close();
  }

  /** The open connection, taken from `idb-keyval`'s store so that it creates the database. */
  #database(): Promise<IDBDatabase> {
    if (this.#closed) return Promise.reject(new StorageError(`IndexedDbStorage "${this.dbName}" is closed`, { db: this.dbName }));
    if (!this.#db) {
      const opening = this.#useStore("readonly", (store) => store.transaction.db);
      this.#db = opening;
      opening.then(
        (db) => {
          const forget = () => {
            if (this.#db === opening) {
              this.#db = undefined;
              // idb-keyval keeps its own handle to this connection: start over with a fresh store.
              this.#useStore = createStore(this.dbName, this.storeName);
            }
          };
          db.addEventListener("close", forget);
          // Another connection wants to upgrade or delete the database: step aside, reopen on next use.
          db.addEventListener("versionchange", () => {
            forget();
            db.close();
          });
        },
        () => {
          if (this.#db === opening) this.#db = undefined;
        },
      );
    }
    return this.#db;
  }

  /**
   * Runs `body` in one transaction (`durability: "strict"` when writing) and resolves
   * with its result once the transaction has committed. When `body` throws, the
   * transaction is aborted: nothing it did is kept.
   */
  async #transaction<T>(
    mode: IDBTransactionMode,
    operation: string,
    path: string,
    body: (store: IDBObjectStore) => Promise<T> | T,
    options?: WriteOptions,
  ): Promise<T> {
    let tx: IDBTransaction;
    try {
      const db = await this.#database();
      const durability = options?.durable === false ? "relaxed" : "strict";
      tx = db.transaction(this.storeName, mode, mode === "readwrite" ? { durability } : undefined);
    } catch (error) {
      throw failure(error, operation, path);
    }
    let aborted!: (reason: unknown) => void;
    const abort = new Promise<never>((_, reject) => (aborted = reject));
    const committed = new Promise<void>((resolve, reject) => {
      tx.oncomplete = () => resolve();
      tx.onabort = () => {
        const reason = tx.error ?? new DOMException("the transaction was aborted", "AbortError");
        reject(reason);
        aborted(reason);
      };
    });
    committed.catch(() => undefined);
    abort.catch(() => undefined);
    let result: T;
    try {
      // An abort ends the body's wait too: a request it awaits may never settle.
      result = await Promise.race([body(tx.objectStore(this.storeName)), abort]);
    } catch (error) {
      try {
        tx.abort();
      } catch {
        // Already aborted by the failed request, or finished.
      }
      const reason = await committed.then(() => undefined, (abort: unknown) => abort);
      // A quota failure may show up in the body only as a symptom; the transaction knows the cause.
      throw failure(isQuotaError(reason) ? reason : error, operation, path);
    }
    try {
      await committed;
    } catch (error) {
      throw failure(error, operation, path);
    }
    return result;
  }

  #acquire(locks: LockManager, name: string): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      // The entry object is shared with the callback, so `done` is set whenever the grant comes.
      const entry = { release: () => {}, done: Promise.resolve() as Promise<unknown> };
      entry.done = locks.request(webLockName(this.dbName, name), { ifAvailable: true }, (lock) => {
        if (!lock) {
          resolve(false);
          return undefined;
        }
        // Held until `releaseLock` resolves this promise, or until this context dies.
        return new Promise<void>((release) => {
          entry.release = release;
          this.#held.set(name, entry);
          resolve(true);
        });
      });
      entry.done.catch((error: unknown) => reject(failure(error, "acquireLock", name)));
    });
  }

  async #release(name: string): Promise<void> {
    const held = this.#held.get(name);
    if (!held) return;
    this.#held.delete(name);
    held.release();
    await held.done.catch(() => undefined);
  }
}

/**
 * The Web Lock that guards the lock path `path` of database `dbName`: tabs and workers of
 * one origin that name the same lock exclude each other.
 *
 * @example
 * ```ts
 * webLockName("sessionfold", "agents/a/workspaces/w/sessions/s/writer.lock");
 * // "sessionfold:sessionfold:agents/a/workspaces/w/sessions/s/writer.lock"
 * ```
 */
export function webLockName(dbName: string, path: string): string {
  return `sessionfold:${dbName}:${path}`;
}

/** The bytes when they add up to the header's size, else a `StorageError` (records out of step). */
function checked(bytes: Uint8Array, header: FileHeader, path: string): Uint8Array {
  if (bytes.length !== header.size) {
    throw new StorageError(`IndexedDB file "${path}" is inconsistent: its header says ${header.size} bytes, its chunks hold ${bytes.length}`, {
      path,
      size: header.size,
      found: bytes.length,
    });
  }
  return bytes;
}
