/**
 * The worker side of a storage hop: any {@linkcode StoragePort} offered to a host as the
 * methods Comlink exposes. The host's {@linkcode WorkerStorageClient} opens it with the
 * backend's options first, then every call goes to that store; a commit plan runs here,
 * next to the store, so it costs the host one round trip.
 *
 * @module
 */
import { InvalidInputError, StorageError } from "../errors.ts";
import { applyCommitPlanByCalls } from "../storage/commit-plan.ts";
import type { CatalogPage } from "../storage/catalog.ts";
import type { StoragePort } from "../storage/port.ts";
import { readManyByCalls } from "../storage/read-many.ts";
import { catalogListingText, type CatalogText, givesCatalogText } from "./catalog-text.ts";
import { ANSWER_TRANSFER_BYTES, type ComlinkLike, ownsBuffer, withTransfer } from "./transfer.ts";

/**
 * What the host calls through the hop: open once, then the port's methods, every optional
 * one included (the worker answers for what its store lacks), derived from the port so the
 * two never drift apart. `readMany` is answered in the worker (the store's own, else over its
 * other calls), so a session's open costs the host one round trip. `storeIdentity` does not
 * cross: a store behind a hop that names its data (a folder: its root's device and inode) is
 * named on the host's side. `stageLines` does not cross either: the host's client joins the lines and posts a `stage`.
 */
export type StorageWorkerApi<Options> = Required<Omit<StoragePort, "maxFileBytes" | "readCatalog" | "storeIdentity" | "stageLines">> & {
  /** Opens the store every later call uses. Resolves whether it has platform locks (`acquireLock`). */
  open(options: Options): Promise<boolean>;
  /** The store's catalog of `dir` (with `page`, that page's part where the store answers pages) as the hop's JSON text (`catalog-text.ts`); `undefined` when it keeps none. */
  readCatalog(dir: string, page?: CatalogPage): Promise<CatalogText | undefined>;
};

/**
 * The API a storage worker exposes: `open(options)` builds the store with `create`, and
 * the other methods forward to it, read results transferred where that saves a copy.
 *
 * @example
 * ```ts
 * import * as Comlink from "comlink";
 * import { MemoryStorage } from "sessionfold";
 *
 * // A storage worker's module (the runtimes serve it through `serveComlinkCalls`, which also registers the typed errors' transfer).
 * Comlink.expose(storageWorkerApi(Comlink, () => new MemoryStorage()));
 * ```
 */
export function storageWorkerApi<Options>(comlink: ComlinkLike, create: (options: Options) => StoragePort): StorageWorkerApi<Options> {
  let storage: StoragePort | undefined;
  const opened = (): StoragePort => {
    if (!storage) throw new StorageError("the storage worker was not opened (call open() first)");
    return storage;
  };
  return {
    open: async (options) => {
      if (storage) throw new InvalidInputError("this storage worker already serves a store", {});
      storage = create(options);
      return typeof storage.acquireLock === "function" && typeof storage.releaseLock === "function";
    },
    read: async (path) => {
      const bytes = await opened().read(path);
      return bytes && withTransfer(comlink, bytes, bytes);
    },
    readTail: async (path, maxBytes) => {
      const tail = await opened().readTail(path, maxBytes);
      return tail && withTransfer(comlink, { bytes: tail.bytes, size: tail.size }, tail.bytes);
    },
    readMany: async (requests) => {
      const store = opened();
      const found = await (store.readMany ? store.readMany(requests) : readManyByCalls(store, requests));
      // Each whole buffer a result owns is transferred (a buffer once), the rest copied.
      const buffers: ArrayBufferLike[] = [];
      for (let i = 0; i < found.length; i++) {
        const result = found[i];
        if (result && ownsBuffer(result.bytes, ANSWER_TRANSFER_BYTES) && !buffers.includes(result.bytes.buffer)) buffers.push(result.bytes.buffer);
      }
      return buffers.length > 0 ? comlink.transfer(found, buffers as never[]) : found;
    },
    list: (dir) => opened().list(dir),
    replace: (path, bytes, options) => opened().replace(path, bytes, options),
    append: (path, bytes) => opened().append(path, bytes),
    createExclusive: (path, bytes, options) => opened().createExclusive(path, bytes, options),
    truncate: (path, length) => opened().truncate(path, length),
    remove: (path, options) => opened().remove(path, options),
    move: (from, to) => opened().move(from, to),
    stage: async (path, bytes, id) => {
      const store = opened();
      if (!store.stage) throw new StorageError("this storage stages no files", { path });
      await store.stage(path, bytes, id);
    },
    unstage: async (id) => {
      await opened().unstage?.(id);
    },
    applyCommitPlan: (plan) => {
      const store = opened();
      return store.applyCommitPlan ? store.applyCommitPlan(plan) : applyCommitPlanByCalls(store, plan);
    },
    // `undefined` / 0 where the store keeps no catalog: the host then reads every meta.json.
    // The listing crosses as JSON text (`catalog-text.ts`); its documents were parsed from JSON,
    // so the text loses nothing. A store that keeps its catalog as text gives that text itself.
    readCatalog: async (dir, page) => {
      const store = opened();
      if (givesCatalogText(store)) return store.readCatalogText(dir, page);
      const listing = await store.readCatalog?.(dir, page);
      return listing && catalogListingText(listing);
    },
    rebuildCatalog: async (dir) => (await opened().rebuildCatalog?.(dir)) ?? 0,
    pinFile: async (path) => {
      await opened().pinFile?.(path);
    },
    unpinFile: async (path) => {
      await opened().unpinFile?.(path);
    },
    acquireLock: async (name) => {
      const store = opened();
      if (!store.acquireLock) throw new StorageError("this storage has no platform locks", { lock: name });
      return store.acquireLock(name);
    },
    releaseLock: async (name) => {
      await opened().releaseLock?.(name);
    },
    close: async () => {
      await storage?.close?.();
    },
  };
}
