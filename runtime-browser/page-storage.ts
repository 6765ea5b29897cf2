import type { CatalogListing, CatalogPage, CommitPlan, CommitPlanResult, FileTail, ReadRequest, ReadResult, StoragePort, WriteOptions } from "../core/mod.ts";

/** Options of {@linkcode PageStorage}. */
export interface PageStorageOptions {
  /** Called once, before the first write goes out (to ask for persistent storage). */
  readonly onFirstWrite?: () => void;
}

/**
 * A thin page-side wrapper over the storage a tab uses: it forwards every call unchanged
 * and runs `onFirstWrite` once before the first mutating call. It adds no rule of its own;
 * `acquireLock` / `releaseLock`, `applyCommitPlan` and `readMany` exist exactly when the inner
 * storage has them. (Commits are announced by the core's `SessionsOptions.onCommit`, not here.)
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 * const storage = new PageStorage(new MemoryStorage(), { onFirstWrite: () => void navigator.storage?.persist() });
 * await storage.append("log.jsonl", new TextEncoder().encode('{"a":1}\n'));
 * ```
 */
export class PageStorage implements StoragePort {
  readonly inner: StoragePort;
  declare readonly acquireLock?: (name: string) => Promise<boolean>;
  declare readonly releaseLock?: (name: string) => Promise<void>;
  declare readonly applyCommitPlan?: (plan: CommitPlan) => Promise<CommitPlanResult>;
  declare readonly readMany?: (requests: readonly ReadRequest[]) => Promise<(ReadResult | null | undefined)[]>;
  readonly #options: PageStorageOptions;
  #wrote = false;

  constructor(inner: StoragePort, options: PageStorageOptions = {}) {
    this.inner = inner;
    this.#options = options;
    // Configurable, so that a Proxy over this storage (a timing wrapper) may answer them wrapped.
    if (inner.acquireLock && inner.releaseLock) {
      const acquire = inner.acquireLock.bind(inner);
      const release = inner.releaseLock.bind(inner);
      Object.defineProperty(this, "acquireLock", { value: (name: string) => (this.#write(), acquire(name)), configurable: true });
      Object.defineProperty(this, "releaseLock", { value: (name: string) => release(name), configurable: true });
    }
    if (inner.applyCommitPlan) {
      const apply = inner.applyCommitPlan.bind(inner);
      Object.defineProperty(this, "applyCommitPlan", { value: (plan: CommitPlan) => (this.#write(), apply(plan)), configurable: true });
    }
    // An open's reads in one call (one round trip to the storage worker), where the inner storage has it.
    if (inner.readMany) Object.defineProperty(this, "readMany", { value: inner.readMany.bind(inner), configurable: true });
  }

  /** The inner storage's catalog (with `page`, that page's part where it answers pages), `undefined` when it keeps none. */
  readCatalog(dir: string, page?: CatalogPage): Promise<CatalogListing | undefined> {
    return this.inner.readCatalog ? this.inner.readCatalog(dir, page) : Promise.resolve(undefined);
  }

  /** Rebuilds the inner storage's catalog of `dir` (`0` when it keeps none). */
  rebuildCatalog(dir: string): Promise<number> {
    this.#write();
    return this.inner.rebuildCatalog ? this.inner.rebuildCatalog(dir) : Promise.resolve(0);
  }

  read(path: string): Promise<Uint8Array | undefined> {
    return this.inner.read(path);
  }

  readTail(path: string, maxBytes: number): Promise<FileTail | undefined> {
    return this.inner.readTail(path, maxBytes);
  }

  list(dir: string): Promise<string[]> {
    return this.inner.list(dir);
  }

  replace(path: string, bytes: Uint8Array, options?: WriteOptions): Promise<void> {
    this.#write();
    return this.inner.replace(path, bytes, options);
  }

  append(path: string, bytes: Uint8Array): Promise<void> {
    this.#write();
    return this.inner.append(path, bytes);
  }

  createExclusive(path: string, bytes: Uint8Array, options?: WriteOptions): Promise<boolean> {
    this.#write();
    return this.inner.createExclusive(path, bytes, options);
  }

  truncate(path: string, length: number): Promise<void> {
    this.#write();
    return this.inner.truncate(path, length);
  }

  remove(path: string, options?: WriteOptions): Promise<void> {
    this.#write();
    return this.inner.remove(path, options);
  }

  move(from: string, to: string): Promise<boolean> {
    this.#write();
    return this.inner.move(from, to);
  }

  async close(): Promise<void> {
    await this.inner.close?.();
  }

  #write(): void {
    if (this.#wrote) return;
    this.#wrote = true;
    this.#options.onFirstWrite?.();
  }
}
