/**
 * The module Web Worker of {@linkcode WorkerStorage}: one {@linkcode IndexedDbStorage}
 * exposed over Comlink. The page sends `open(options)` first; every later call goes to
 * that store. Web Locks taken through it are held by this worker, so they die with it
 * (and with the tab that owns it).
 *
 * Start it as `new Worker(new URL("./storage-worker.ts", import.meta.url), { type: "module" })`.
 *
 * @module
 */
import * as Comlink from "comlink";
import { InvalidInputError, StorageError, type FileTail, type WriteOptions } from "../core/mod.ts";
import { IndexedDbStorage, type IndexedDbStorageOptions } from "./indexeddb-storage.ts";
import { registerErrorTransfer, withTransfer } from "../core/internal.ts";

/** What the page calls through Comlink. */
export interface StorageWorkerApi {
  /** Opens the store every later call uses; resolves whether Web Locks are available here. */
  open(options: IndexedDbStorageOptions): boolean;
  read(path: string): Promise<Uint8Array | undefined>;
  readTail(path: string, maxBytes: number): Promise<FileTail | undefined>;
  list(dir: string): Promise<string[]>;
  replace(path: string, bytes: Uint8Array, options?: WriteOptions): Promise<void>;
  append(path: string, bytes: Uint8Array): Promise<void>;
  createExclusive(path: string, bytes: Uint8Array, options?: WriteOptions): Promise<boolean>;
  truncate(path: string, length: number): Promise<void>;
  remove(path: string, options?: WriteOptions): Promise<void>;
  move(from: string, to: string): Promise<boolean>;
  acquireLock(name: string): Promise<boolean>;
  releaseLock(name: string): Promise<void>;
  close(): Promise<void>;
}

registerErrorTransfer(Comlink);
let storage: IndexedDbStorage | undefined;

function opened(): IndexedDbStorage {
  if (!storage) throw new StorageError("the storage worker was not opened (call open() first)");
  return storage;
}

const api: StorageWorkerApi = {
  open(options) {
    if (storage) throw new InvalidInputError(`this storage worker already serves "${storage.dbName}"`, { db: storage.dbName });
    storage = new IndexedDbStorage(options);
    return typeof storage.acquireLock === "function";
  },
  read: async (path) => {
    const bytes = await opened().read(path);
    return bytes && withTransfer(Comlink, bytes, bytes);
  },
  readTail: async (path, maxBytes) => {
    const tail = await opened().readTail(path, maxBytes);
    return tail && withTransfer(Comlink, { bytes: tail.bytes, size: tail.size }, tail.bytes);
  },
  list: (dir) => opened().list(dir),
  replace: (path, bytes) => opened().replace(path, bytes),
  append: (path, bytes) => opened().append(path, bytes),
  createExclusive: (path, bytes, options) => opened().createExclusive(path, bytes, options),
  truncate: (path, length) => opened().truncate(path, length),
  remove: (path, options) => opened().remove(path, options),
  move: (from, to) => opened().move(from, to),
  acquireLock: async (name) => {
    const store = opened();
    if (!store.acquireLock) throw new StorageError("Web Locks are not available in this worker", { lock: name });
    return store.acquireLock(name);
  },
  releaseLock: async (name) => {
    await opened().releaseLock?.(name);
  },
  close: async () => {
    await storage?.close();
  },
};

Comlink.expose(api);
