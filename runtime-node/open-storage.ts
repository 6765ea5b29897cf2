/**
 * The storage of a Node store, without its session registry: the file store on the calling
 * thread or in its worker, under the encryption its keys open. {@linkcode openNodeSessions}
 * builds the registry over it; the CLI's `show`, which only reads, stops here and so loads
 * none of the session handle's writers (docs/decisions.md "show reads without the writers").
 * The storage worker's client (and comlink with it) is loaded only when a worker is asked for.
 *
 * @example
 * ```ts
 * const storage = await openNodeStorage({ root: "/tmp/my-store", worker: false, fsync: true });
 * await storage.list("");
 * ```
 * @module
 */
import { type KeyProvider, storageForKeys, type StoragePort } from "../core/reader.ts";
import { nodeAesGcm } from "./aes-gcm.ts";
import { NodeFileStorage } from "./fs-storage.ts";

/** Where and how {@linkcode openNodeStorage} opens a store. */
export interface NodeStorageOptions {
  /** The store's folder, absolute. */
  readonly root: string;
  /** Run file I/O in a worker thread; `false` does it on the calling thread. */
  readonly worker: boolean;
  /** fsync every write before it resolves. */
  readonly fsync: boolean;
  /** The keys of an encrypted store (without them an encrypted store is refused with `KeyRequiredError`). */
  readonly keys?: KeyProvider | undefined;
}

/**
 * The storage of the store at `options.root`, sealed by its keys when it is encrypted.
 *
 * @example
 * ```ts
 * const storage = await openNodeStorage({ root: "/tmp/my-store", worker: false, fsync: true });
 * await storage.close?.();
 * ```
 * @throws {KeyRequiredError} for an encrypted store opened without its keys.
 * @throws {StorageError} when the worker cannot be started (TypeScript sources without tsx).
 */
export async function openNodeStorage(options: NodeStorageOptions): Promise<StoragePort> {
  const { root, fsync } = options;
  const files: StoragePort = options.worker
    ? new (await import("./storage-worker-client.ts")).WorkerFileStorage({ root, fsync })
    : new NodeFileStorage({ root, fsync });
  try {
    return await storageForKeys(files, options.keys, { cipher: nodeAesGcm });
  } catch (error) {
    await files.close?.();
    throw error;
  }
}
