import { randomBytes } from "node:crypto";
import { chmod, link, lstat, mkdir, open, readdir, readFile, rename, rm, unlink, type FileHandle } from "node:fs/promises";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { InvalidInputError, SessionfoldError, StorageError, StorageFullError } from "../core/errors.ts";
import { assertStoragePath, parentPath, type FileTail, type StorageCapabilities, type StoragePort, type WriteOptions } from "../core/storage/mod.ts";

/** Options of {@linkcode NodeFileStorage}. */
export interface NodeFileStorageOptions {
  /** Absolute folder holding the store (FORMAT.md's `<root>`); created `0700` on the first write if missing. */
  readonly root: string;
  /**
   * Whether writes are fsynced (files, then their folders) before they resolve. Default `true`.
   * `false` only for tests and benchmarks that measure without durability; `capabilities.durable`
   * then says `false`.
   */
  readonly fsync?: boolean;
}

/** Names starting with this are this backend's temporary files: never listed, never a valid key. */
const TEMP_PREFIX = ".tmp-";

/**
 * A {@linkcode StoragePort} over files in one folder, with real durability: `replace` is a
 * temp file + fsync + rename + folder fsync, `append` is write + fsync and leaves nothing
 * when it fails, folders are `0700` and files `0600`. Every error is a typed
 * `SessionfoldError` (`StorageFullError` for a full disk). It blocks nothing but does
 * file I/O on the calling thread's libuv pool; hosts normally reach it through
 * {@linkcode WorkerStorage}.
 *
 * No key can name a path outside `root`: keys are checked (`assertStoragePath`, and the
 * `.tmp-` prefix is reserved) before any path is built, and the resolved path is checked to
 * stay under `root`. Symlinks that someone placed inside the root are followed, like a
 * symlinked root itself: the store never creates one.
 *
 * @example
 * ```ts
 * const storage = new NodeFileStorage({ root: "/home/me/.sessionfold" });
 * await storage.append("log.jsonl", new TextEncoder().encode('{"a":1}\n'));
 * ```
 * @throws {InvalidInputError} from the constructor when `root` is not absolute.
 */
export class NodeFileStorage implements StoragePort {
  readonly capabilities: StorageCapabilities;
  /** The absolute, normalized root folder. */
  readonly root: string;
  readonly #fsync: boolean;
  /** Per-file chains so writes to one file land in the order they were issued. */
  readonly #queues = new Map<string, Promise<unknown>>();

  constructor(options: NodeFileStorageOptions) {
    if (typeof options?.root !== "string" || !isAbsolute(options.root)) {
      throw new InvalidInputError(`NodeFileStorage root must be an absolute folder, got ${JSON.stringify(options?.root)}`, { root: options?.root });
    }
    this.root = resolve(options.root);
    this.#fsync = options.fsync ?? true;
    this.capabilities = { durable: this.#fsync, backend: "node-fs" };
  }

  read(path: string): Promise<Uint8Array | undefined> {
    return this.#run("read", path, async (file) => {
      const bytes = await missingAsUndefined(() => readFile(file));
      return bytes && new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    });
  }

  readTail(path: string, maxBytes: number): Promise<FileTail | undefined> {
    return this.#run("readTail", path, async (file) => {
      if (typeof maxBytes !== "number" || Number.isNaN(maxBytes)) throw new InvalidInputError(`readTail maxBytes must be a number, got ${String(maxBytes)}`, { path });
      const handle = await missingAsUndefined(() => open(file, "r"));
      if (!handle) return undefined;
      try {
        const info = await handle.stat();
        if (!info.isFile()) throw Object.assign(new Error("not a file"), { code: "EISDIR" });
        const length = Math.min(info.size, Math.max(0, Math.floor(maxBytes)));
        const bytes = new Uint8Array(length);
        for (let got = 0; got < length; ) {
          const { bytesRead } = await handle.read(bytes, got, length - got, info.size - length + got);
          if (bytesRead === 0) return { bytes: bytes.subarray(0, got), size: info.size - length + got };
          got += bytesRead;
        }
        return { bytes, size: info.size };
      } finally {
        await handle.close();
      }
    });
  }

  list(dir: string): Promise<string[]> {
    return this.#run("list", dir, async (folder) => {
      const names = await missingAsUndefined(() => readdir(folder));
      return (names ?? []).filter((name) => !name.startsWith(TEMP_PREFIX)).sort();
    }, true);
  }

  replace(path: string, bytes: Uint8Array): Promise<void> {
    return this.#run("replace", path, (file) =>
      this.#serial(file, async () => {
        // Same folder, so the rename is atomic; the prefix never parses as an id or a segment.
        const temp = join(dirname(file), `${TEMP_PREFIX}${randomBytes(8).toString("hex")}`);
        const handle = await this.#withParents(path, () => open(temp, "wx", 0o600));
        try {
          await this.#fill(handle, bytes);
          await rename(temp, file);
        } catch (error) {
          await unlink(temp).catch(() => undefined);
          throw error;
        }
        await this.#syncFolder(dirname(file));
      }),
    );
  }

  append(path: string, bytes: Uint8Array): Promise<void> {
    return this.#run("append", path, (file) =>
      this.#serial(file, async () => {
        const handle = await this.#withParents(path, () => open(file, "a", 0o600));
        let before: number | undefined;
        try {
          const info = await handle.stat();
          before = info.size;
          if ((info.mode & 0o777) !== 0o600) await handle.chmod(0o600);
          await writeAll(handle, bytes, null);
          if (this.#fsync) await handle.sync();
          // A file this append may have created needs its folder entry to be durable too.
          if (before === 0) await this.#syncFolder(dirname(file));
        } catch (error) {
          // A failed append leaves nothing: cut back to where it started.
          if (before !== undefined) await handle.truncate(before).then(() => handle.sync()).catch(() => undefined);
          throw error;
        } finally {
          await handle.close();
        }
      }),
    );
  }

  createExclusive(path: string, bytes: Uint8Array, options?: WriteOptions): Promise<boolean> {
    const durable = this.#fsync && options?.durable !== false;
    return this.#run("createExclusive", path, (file) =>
      this.#serial(file, async () => {
        // The bytes go to a synced temp file first, then link() publishes it: like open(…, "wx")
        // it fails with EEXIST when anything is there, but the file appears whole, so a crash
        // (SIGKILL) never leaves an empty writer.lock or meta.json behind.
        const temp = join(dirname(file), `${TEMP_PREFIX}${randomBytes(8).toString("hex")}`);
        await this.#fill(await this.#withParents(path, () => open(temp, "wx", 0o600)), bytes, durable).catch(async (error: unknown) => {
          await unlink(temp).catch(() => undefined);
          throw error;
        });
        try {
          await link(temp, file);
        } catch (error) {
          if (errno(error) === "EEXIST") return false; // a file or a folder is there
          if (!["EPERM", "ENOTSUP", "EOPNOTSUPP", "ENOSYS"].includes(errno(error) ?? "")) throw error;
          return await this.#createInPlace(file, bytes, durable); // a file system without hard links
        } finally {
          await unlink(temp).catch(() => undefined);
        }
        if (durable) await this.#syncFolder(dirname(file));
        return true;
      }),
    );
  }

  /** createExclusive with open(…, "wx") and a write: for file systems that cannot link (a crash may leave it empty). */
  async #createInPlace(file: string, bytes: Uint8Array, durable: boolean): Promise<boolean> {
    const handle = await open(file, "wx", 0o600).catch((error: unknown) => {
      if (errno(error) === "EEXIST") return undefined;
      throw error;
    });
    if (!handle) return false;
    try {
      await this.#fill(handle, bytes, durable);
    } catch (error) {
      await unlink(file).catch(() => undefined); // never leave half a lock
      throw error;
    }
    if (durable) await this.#syncFolder(dirname(file));
    return true;
  }

  truncate(path: string, length: number): Promise<void> {
    return this.#run("truncate", path, (file) =>
      this.#serial(file, async () => {
        if (typeof length !== "number" || Number.isNaN(length)) throw new InvalidInputError(`truncate length must be a number, got ${String(length)}`, { path });
        const handle = await missingAsUndefined(() => open(file, "r+"));
        if (!handle) return;
        try {
          if (length < (await handle.stat()).size) {
            await handle.truncate(Math.max(0, Math.floor(length)));
            if (this.#fsync) await handle.sync();
          }
        } finally {
          await handle.close();
        }
      }),
    );
  }

  remove(path: string, options?: WriteOptions): Promise<void> {
    return this.#run("remove", path, async (file) => {
      try {
        await rm(file, { recursive: true, force: true });
      } catch (error) {
        if (errno(error) === "ENOTDIR") return; // a parent is a file: nothing is at `path`
        throw error;
      }
      if (options?.durable !== false) await this.#syncFolder(dirname(file));
    });
  }

  move(from: string, to: string): Promise<boolean> {
    return this.#run("move", from, async (source) => {
      const target = this.#file(to);
      if (from === to || to.startsWith(`${from}/`)) return false;
      if (!(await missingAsUndefined(() => lstat(source)))) return false;
      if (await missingAsUndefined(() => lstat(target))) return false;
      await this.#ensureFolder(parentPath(to));
      try {
        await rename(source, target);
      } catch (error) {
        // The source vanished or the target appeared since the checks: nothing moved.
        if (["ENOENT", "EEXIST", "ENOTEMPTY"].includes(errno(error) ?? "")) return false;
        throw error;
      }
      await this.#syncFolder(dirname(source));
      if (dirname(target) !== dirname(source)) await this.#syncFolder(dirname(target));
      return true;
    });
  }

  /** Validates `path`, resolves it under the root and maps every failure to a typed error. */
  async #run<T>(operation: string, path: string, body: (file: string) => Promise<T>, allowRoot = false): Promise<T> {
    let file = this.root;
    try {
      file = this.#file(path, allowRoot);
      return await body(file);
    } catch (error) {
      throw storageErrorFromFs(error, operation, path, file);
    }
  }

  /** The absolute file of a key. @throws {InvalidInputError} for a hostile key, before any path is built. */
  #file(path: string, allowRoot = false): string {
    assertStoragePath(path, allowRoot);
    if (path.split("/").some((segment) => segment.startsWith(TEMP_PREFIX))) {
      throw new InvalidInputError(`storage path ${JSON.stringify(path)} uses the reserved prefix "${TEMP_PREFIX}"`, { path });
    }
    const file = path === "" ? this.root : resolve(this.root, ...path.split("/"));
    const inside = relative(this.root, file);
    if (inside.startsWith(`..${sep}`) || inside === ".." || isAbsolute(inside)) {
      throw new InvalidInputError(`storage path ${JSON.stringify(path)} leaves the store's root`, { path });
    }
    return file;
  }

  /** Fills a file just created with `wx`: mode 0600 whatever the umask, every byte, fsync, close. */
  async #fill(handle: FileHandle, bytes: Uint8Array, sync = this.#fsync): Promise<void> {
    try {
      await handle.chmod(0o600);
      await writeAll(handle, bytes, 0);
      if (sync) await handle.sync();
    } finally {
      await handle.close();
    }
  }

  /** Runs `create`; when a parent folder is missing, creates the parents and runs it again. */
  async #withParents<T>(path: string, create: () => Promise<T>): Promise<T> {
    try {
      return await create();
    } catch (error) {
      if (errno(error) !== "ENOENT") throw error;
      await this.#ensureFolder(parentPath(path));
      return await create();
    }
  }

  /** Creates a folder and its missing parents `0700` (chmod too: the umask may strip bits), durably. */
  async #ensureFolder(dir: string): Promise<void> {
    const target = this.#file(dir, true);
    const first = await mkdir(target, { recursive: true, mode: 0o700 });
    if (first === undefined) return;
    const created = [first];
    for (const segment of relative(first, target).split(sep).filter(Boolean)) created.push(join(created.at(-1)!, segment));
    for (const folder of created) await chmod(folder, 0o700);
    for (const folder of [dirname(first), ...created.slice(0, -1)]) await this.#syncFolder(folder);
  }

  /** fsyncs a folder so a rename, a new or a removed entry in it survives a crash. */
  async #syncFolder(folder: string): Promise<void> {
    if (!this.#fsync) return;
    const handle = await missingAsUndefined(() => open(folder, "r"));
    if (!handle) return;
    try {
      await handle.sync().catch((error: unknown) => {
        if (errno(error) !== "EINVAL") throw error; // some filesystems cannot fsync a folder
      });
    } finally {
      await handle.close();
    }
  }

  /** Chains `body` after the previous write to the same file, so issue order is kept. */
  #serial<T>(file: string, body: () => Promise<T>): Promise<T> {
    const previous = this.#queues.get(file) ?? Promise.resolve();
    const result = previous.then(body, body);
    const settled = result.then(() => undefined, () => undefined);
    this.#queues.set(file, settled);
    void settled.then(() => {
      if (this.#queues.get(file) === settled) this.#queues.delete(file);
    });
    return result;
  }
}

/** Writes every byte of `bytes` (a write may be short), at `position` or at the end for `null`. */
async function writeAll(handle: FileHandle, bytes: Uint8Array, position: number | null): Promise<void> {
  for (let done = 0; done < bytes.length; ) {
    const { bytesWritten } = await handle.write(bytes, done, bytes.length - done, position === null ? null : position + done);
    done += bytesWritten;
  }
}

/** Runs `action`, turning "nothing there" (ENOENT, or a parent that is a file) into `undefined`. */
async function missingAsUndefined<T>(action: () => Promise<T>): Promise<T | undefined> {
  try {
    return await action();
  } catch (error) {
    if (errno(error) === "ENOENT" || errno(error) === "ENOTDIR") return undefined;
    throw error;
  }
}

function errno(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

/**
 * Maps a Node fs failure to a typed error: ENOSPC/EDQUOT become {@linkcode StorageFullError},
 * every other failure a {@linkcode StorageError} whose details carry the key, the file and
 * the errno code. A `SessionfoldError` passes through unchanged.
 *
 * @example
 * ```ts
 * storageErrorFromFs(Object.assign(new Error("full"), { code: "ENOSPC" }), "append", "log", "/r/log"); // StorageFullError
 * ```
 */
export function storageErrorFromFs(error: unknown, operation: string, path: string, file: string): SessionfoldError {
  if (error instanceof SessionfoldError) return error;
  const code = errno(error) ?? "UNKNOWN";
  const details = { path, file, errno: code, operation };
  const where = `${operation} "${path}" (${file})`;
  if (code === "ENOSPC" || code === "EDQUOT") return new StorageFullError(`${where}: no space left (${code}); nothing was written`, details);
  const reason = FS_REASONS[code] ?? `failed: ${error instanceof Error ? error.message : String(error)}`;
  return new StorageError(`${where}: ${reason} (${code})`, details, { cause: error });
}

const FS_REASONS: Record<string, string> = {
  EACCES: "permission denied",
  EPERM: "permission denied",
  EISDIR: "a folder is where a file was expected",
  ENOTDIR: "a file is where a folder was expected",
  EEXIST: "a file is where a folder was expected",
};
