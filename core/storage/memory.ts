import { InvalidInputError, StoreEntryError } from "../errors.ts";
import { formatBytes, MAX_FILE_BYTES } from "./limits.ts";
import type { FileTail, StoragePort } from "./port.ts";
import { catalogDocument, type CatalogEntry, type CatalogListing, isListedName } from "./catalog.ts";
import { assertStoragePath, isWithin } from "./path.ts";
import { concatBytes } from "./bytes.ts";

/** Options of {@linkcode MemoryStorage}. */
export interface MemoryStorageOptions {
  /**
   * The largest file `read` returns: a larger one is a `StoreEntryError` (`corrupt`) from its
   * size, as on the other backends. Default {@linkcode MAX_FILE_BYTES} (256 MiB).
   */
  readonly maxFileBytes?: number;
}

/** One file held as the chunks it was appended in, so an append costs O(new bytes). */
interface MemoryFile {
  chunks: Uint8Array[];
  size: number;
}

/**
 * A {@linkcode StoragePort} in the process's memory: for tests, examples and
 * short-lived hosts. Folders exist implicitly while a file lies below them.
 *
 * @example
 * ```ts
 * const storage = new MemoryStorage();
 * await storage.replace("a/b.json", new TextEncoder().encode("{}"));
 * await storage.list("a"); // ["b.json"]
 * ```
 */
export class MemoryStorage implements StoragePort {
  readonly #files = new Map<string, MemoryFile>();
  /** The largest file `read` returns ({@linkcode MemoryStorageOptions.maxFileBytes}); writers keep every file within it. */
  readonly maxFileBytes: number;

  constructor(options: MemoryStorageOptions = {}) {
    const max = options.maxFileBytes ?? MAX_FILE_BYTES;
    if (!Number.isSafeInteger(max) || max < 0) throw new InvalidInputError(`MemoryStorage maxFileBytes must be a non-negative integer, got ${String(max)}`);
    this.maxFileBytes = max;
  }

  async read(path: string): Promise<Uint8Array | undefined> {
    assertStoragePath(path);
    const file = this.#files.get(path);
    if (!file) return undefined;
    // From the stored size, before the chunks are joined: as every backend does.
    if (file.size > this.maxFileBytes) {
      const max = formatBytes(this.maxFileBytes);
      throw new StoreEntryError(`store entry "${path}": found a file of ${formatBytes(file.size)} where a file of at most ${max} belongs; it is not read`, {
        path,
        found: `a file of ${formatBytes(file.size)}`,
        expected: `a file of at most ${max}`,
      });
    }
    return concat(file);
  }

  async readTail(path: string, maxBytes: number): Promise<FileTail | undefined> {
    assertStoragePath(path);
    const file = this.#files.get(path);
    if (!file) return undefined;
    const whole = concat(file);
    const start = Math.max(0, whole.length - Math.max(0, maxBytes));
    return { bytes: whole.slice(start), size: whole.length };
  }

  async list(dir: string): Promise<string[]> {
    assertStoragePath(dir, true);
    const prefix = dir === "" ? "" : `${dir}/`;
    const names = new Set<string>();
    for (const key of this.#files.keys()) {
      if (key.startsWith(prefix)) names.add(key.slice(prefix.length).split("/")[0]!);
    }
    return [...names].sort();
  }

  async replace(path: string, bytes: Uint8Array): Promise<void> {
    assertStoragePath(path);
    this.#files.set(path, { chunks: [bytes.slice()], size: bytes.length });
  }

  async append(path: string, bytes: Uint8Array): Promise<void> {
    assertStoragePath(path);
    const file = this.#files.get(path);
    if (file) {
      file.chunks.push(bytes.slice());
      file.size += bytes.length;
    } else {
      this.#files.set(path, { chunks: [bytes.slice()], size: bytes.length });
    }
  }

  async createExclusive(path: string, bytes: Uint8Array): Promise<boolean> {
    assertStoragePath(path);
    if (this.#exists(path)) return false;
    this.#files.set(path, { chunks: [bytes.slice()], size: bytes.length });
    return true;
  }

  async truncate(path: string, length: number): Promise<void> {
    assertStoragePath(path);
    const file = this.#files.get(path);
    if (file && length < file.size) {
      const kept = concat(file).slice(0, Math.max(0, length));
      this.#files.set(path, { chunks: [kept], size: kept.length });
    }
  }

  async remove(path: string): Promise<void> {
    assertStoragePath(path);
    for (const key of this.#keysUnder(path)) this.#files.delete(key);
  }

  async move(from: string, to: string): Promise<boolean> {
    assertStoragePath(from);
    assertStoragePath(to);
    const keys = this.#keysUnder(from);
    if (keys.length === 0 || this.#exists(to) || isWithin(to, from)) return false;
    for (const key of keys) {
      this.#files.set(to + key.slice(from.length), this.#files.get(key)!);
      this.#files.delete(key);
    }
    return true;
  }

  /**
   * The catalog of `dir`, answered from the `meta.json` documents themselves: in memory a
   * copy would only be a second place to get wrong, and every write is already whole.
   */
  async readCatalog(dir: string): Promise<CatalogListing> {
    assertStoragePath(dir);
    const entries: CatalogEntry[] = [];
    const unlisted: string[] = [];
    for (const name of await this.list(dir)) {
      if (!isListedName(name)) continue;
      const file = this.#files.get(`${dir}/${name}/meta.json`);
      if (file) entries.push({ name, meta: catalogDocument(concat(file)) });
      else unlisted.push(name);
    }
    return { entries, unlisted };
  }

  /** Nothing to rebuild: the catalog is read from the `meta.json` documents (see {@linkcode MemoryStorage.readCatalog}). */
  async rebuildCatalog(dir: string): Promise<number> {
    return (await this.readCatalog(dir)).entries.length;
  }

  #exists(path: string): boolean {
    return this.#keysUnder(path).length > 0;
  }

  #keysUnder(path: string): string[] {
    return [...this.#files.keys()].filter((key) => isWithin(key, path));
  }
}

/** A copy of the whole file; its chunks are joined once, so the next read copies one array. */
function concat(file: MemoryFile): Uint8Array {
  if (file.chunks.length !== 1) file.chunks = [concatBytes(file.chunks, file.size)];
  return file.chunks[0]!.slice();
}
