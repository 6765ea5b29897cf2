import { randomBytes } from "node:crypto";
import { closeSync, fchmodSync, fsyncSync, ftruncateSync, linkSync, lstatSync, openSync, readdirSync, readSync, renameSync, rmSync, unlinkSync, writeSync } from "node:fs";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import {
  assertStoragePath,
  formatBytes,
  InvalidInputError,
  MAX_FILE_BYTES,
  SessionfoldError,
  StorageError,
  StorageFullError,
  type FileTail,
  type StoragePort,
  type WriteOptions,
} from "../core/mod.ts";
import { parentPath } from "../core/internal.ts";
import { APPEND_FLAGS, entryError, errno, FOLDER_FLAGS, kindOf, READ_FLAGS, StoreBoundary, TRUNCATE_FLAGS } from "./fs-boundary.ts";

/** Options of {@linkcode NodeFileStorage}. */
export interface NodeFileStorageOptions {
  /** Absolute folder holding the store (docs/FORMAT.md's `<root>`); created `0700` on the first write if missing. */
  readonly root: string;
  /**
   * Whether writes are fsynced (files, then their folders) before they resolve. Default `true`.
   * `false` only for tests and benchmarks that measure without durability.
   */
  readonly fsync?: boolean;
  /**
   * The largest file `read` loads, in bytes; a larger one is refused as corrupt
   * (`StoreEntryError`) without being read. Default {@linkcode MAX_FILE_BYTES} (256 MiB).
   */
  readonly maxFileBytes?: number;
}

/** Names starting with this are this backend's temporary files: never listed, never a valid key. */
const TEMP_PREFIX = ".tmp-";

/** How many checked keys a store remembers before it forgets them all (see `#file`). */
const CHECKED_KEYS = 1024;

/** Errors of link() on a file system without hard links, where createExclusive writes in place. */
const NO_HARD_LINKS = ["EPERM", "ENOTSUP", "EOPNOTSUPP", "ENOSYS"];

/**
 * A {@linkcode StoragePort} over files in one folder, with real durability: `replace` is a
 * temp file + fsync + rename + folder fsync, `append` is write + fsync and leaves nothing
 * when it fails, folders are `0700` and files `0600`. Every error is a typed
 * `SessionfoldError` (`StorageFullError` for a full disk), always as a rejected promise.
 *
 * It does its file I/O with synchronous system calls on the calling thread: a few
 * microseconds each, where every `fs.promises` call costs a thread-pool round trip, but an
 * fsync blocks that thread until the disk confirms. That is why hosts normally reach it
 * through {@linkcode WorkerFileStorage} (a worker thread); running it on the host thread
 * (`openNodeSessions({ worker: false })`, the CLI) blocks that thread for each call.
 *
 * No key can name a path outside `root`: keys are checked (`assertStoragePath`, and the
 * `.tmp-` prefix is reserved) before any path is built, and the resolved path is checked to
 * stay under `root`. Nothing under the root is followed (docs/FORMAT.md "The store's
 * boundary", `fs-boundary.ts`): a symbolic link, a FIFO, a socket or a device where a file
 * or folder belongs, a file with other hard links that a write would change, and a file
 * over `maxFileBytes` are each a `StoreEntryError` (`corrupt`). The root itself may be a
 * symbolic link (the host chose it).
 *
 * @example
 * ```ts
 * const storage = new NodeFileStorage({ root: "/home/me/.sessionfold" });
 * await storage.append("log.jsonl", new TextEncoder().encode('{"a":1}\n'));
 * ```
 * @throws {InvalidInputError} from the constructor when `root` is not absolute.
 */
export class NodeFileStorage implements StoragePort {
  /** The absolute, normalized root folder. */
  readonly root: string;
  readonly #fsync: boolean;
  /** The largest file `read` returns (`NodeFileStorageOptions.maxFileBytes`); writers keep every file within it. */
  readonly maxFileBytes: number;
  readonly #boundary: StoreBoundary;
  /** Files kept open by {@linkcode NodeFileStorage.pinFile}: the handle (once opened) and the size this store wrote it to. */
  readonly #pinned = new Map<string, { fd: number | undefined; size: number }>();
  /** Keys already checked, with their files: a held session resolves the same few keys every commit. */
  readonly #files = new Map<string, string>();

  constructor(options: NodeFileStorageOptions) {
    if (typeof options?.root !== "string" || !isAbsolute(options.root)) {
      throw new InvalidInputError(`NodeFileStorage root must be an absolute folder, got ${JSON.stringify(options?.root)}`, { root: options?.root });
    }
    const max = options.maxFileBytes ?? MAX_FILE_BYTES;
    if (!Number.isSafeInteger(max) || max < 0) throw new InvalidInputError(`NodeFileStorage maxFileBytes must be a non-negative integer, got ${String(max)}`);
    this.root = resolve(options.root);
    this.#fsync = options.fsync ?? true;
    this.maxFileBytes = max;
    this.#boundary = new StoreBoundary(this.root);
  }

  read(path: string): Promise<Uint8Array | undefined> {
    return this.#run("read", path, (file) => {
      const opened = this.#boundary.open(path, file, READ_FLAGS, "read");
      if (!opened) return undefined;
      try {
        return this.#readWhole(path, file, opened.fd, opened.info.size);
      } finally {
        closeSync(opened.fd);
      }
    });
  }

  /** Every byte of an opened file, which may still grow while it is read (an append): never more than the limit. */
  #readWhole(path: string, file: string, fd: number, size: number): Uint8Array {
    const max = this.maxFileBytes;
    const tooLarge = (bytes: number) => entryError(path, file, `a file of ${formatBytes(bytes)}`, `a file of at most ${formatBytes(max)}`, "it is not read");
    if (size > max) throw tooLarge(size);
    const bytes = new Uint8Array(size);
    let got = 0;
    while (got < size) {
      const read = readSync(fd, bytes, got, size - got, got);
      if (read === 0) return bytes.subarray(0, got); // it shrank since fstat
      got += read;
    }
    // Bytes appended since fstat are read too, as a whole-file read would, in steps up to the limit.
    const extra: Uint8Array[] = [];
    for (;;) {
      const chunk = new Uint8Array(64 * 1024);
      const read = readSync(fd, chunk, 0, chunk.length, got);
      if (read === 0) break;
      got += read;
      if (got > max) throw tooLarge(got);
      extra.push(chunk.subarray(0, read));
    }
    if (extra.length === 0) return bytes;
    const whole = new Uint8Array(got);
    whole.set(bytes);
    let at = size;
    for (const piece of extra) {
      whole.set(piece, at);
      at += piece.length;
    }
    return whole;
  }

  readTail(path: string, maxBytes: number): Promise<FileTail | undefined> {
    return this.#run("readTail", path, (file) => {
      if (typeof maxBytes !== "number" || Number.isNaN(maxBytes)) throw new InvalidInputError(`readTail maxBytes must be a number, got ${String(maxBytes)}`, { path });
      const opened = this.#boundary.open(path, file, READ_FLAGS, "read");
      if (!opened) return undefined;
      const { fd, info } = opened;
      try {
        const length = Math.min(info.size, Math.max(0, Math.floor(maxBytes)));
        const bytes = new Uint8Array(length);
        for (let got = 0; got < length; ) {
          const bytesRead = readSync(fd, bytes, got, length - got, info.size - length + got);
          // The file shrank since fstat: return what was there.
          if (bytesRead === 0) return { bytes: bytes.subarray(0, got), size: info.size - length + got };
          got += bytesRead;
        }
        return { bytes, size: info.size };
      } finally {
        closeSync(fd);
      }
    });
  }

  list(dir: string): Promise<string[]> {
    return this.#run("list", dir, (folder) => {
      if (this.#boundary.parents(dir, "read") === "missing") return [];
      const info = missingAsUndefined(() => lstatSync(folder));
      if (!info) return [];
      // The listed folder itself must be a real one: a file or a link there is not "empty".
      if (!info.isDirectory()) throw entryError(dir, folder, kindOfEntry(folder), "a folder");
      const names = missingAsUndefined(() => readdirSync(folder));
      return (names ?? []).filter((name) => !name.startsWith(TEMP_PREFIX)).sort();
    }, true);
  }

  /**
   * `options.durable === false` skips the fsyncs (of the temp file and of the folder): the
   * rename still makes the change atomic for every other process.
   */
  replace(path: string, bytes: Uint8Array, options?: WriteOptions): Promise<void> {
    const durable = this.#fsync && options?.durable !== false;
    return this.#run("replace", path, (file) => {
      this.#unpinBelow(path);
      const temp = tempBeside(file);
      const fd = this.#withParents(path, () => openSync(temp, "wx", 0o600));
      try {
        this.#boundary.replaceable(path, file);
      } catch (error) {
        closeSync(fd);
        bestEffort(() => unlinkSync(temp));
        throw error;
      }
      try {
        fill(fd, bytes, durable);
        renameSync(temp, file);
      } catch (error) {
        bestEffort(() => unlinkSync(temp));
        throw error;
      }
      if (durable) this.#syncFolder(dirname(file));
    });
  }

  append(path: string, bytes: Uint8Array): Promise<void> {
    return this.#run("append", path, (file) => {
      const pinned = this.#pinned.get(path);
      if (pinned?.fd !== undefined) return this.#appendTo(pinned.fd, pinned.size, bytes, file, pinned);
      const { fd, info } = this.#withParents(path, () => this.#boundary.open(path, file, APPEND_FLAGS, "write", 0o600) ?? missingParent(file));
      try {
        if ((info.mode & 0o777) !== 0o600) fchmodSync(fd, 0o600);
        this.#appendTo(fd, info.size, bytes, file, pinned);
        // A file this append may have created needs its folder entry to be durable too.
        if (info.size === 0) this.#syncFolder(dirname(file));
      } finally {
        if (pinned) pinned.fd = fd;
        else closeSync(fd);
      }
    });
  }

  /**
   * Keeps `path` open for appends until {@linkcode NodeFileStorage.unpinFile}: a session held
   * by a lease appends to its `active.jsonl` with one write and one fsync, no open, checks
   * or close. Any other change to the file (or a folder above it) through this store closes
   * the handle first; the next append opens the file again, with every check.
   */
  pinFile(path: string): Promise<void> {
    return this.#run("pinFile", path, () => {
      if (!this.#pinned.has(path)) this.#pinned.set(path, { fd: undefined, size: 0 });
    });
  }

  /** Closes what {@linkcode NodeFileStorage.pinFile} kept open. */
  unpinFile(path: string): Promise<void> {
    return this.#run("unpinFile", path, () => {
      this.#closePinned((pinned) => pinned === path, true);
    });
  }

  /** Writes `bytes` at the end of the open file `fd` of `size` bytes; on failure cuts back to `size`. */
  #appendTo(fd: number, size: number, bytes: Uint8Array, file: string, pinned: { fd: number | undefined; size: number } | undefined): void {
    try {
      writeAll(fd, bytes, null);
      if (this.#fsync) fsyncSync(fd);
      if (pinned) pinned.size = size + bytes.length;
    } catch (error) {
      // A failed append leaves nothing: cut back to where it started.
      bestEffort(() => {
        ftruncateSync(fd, size);
        fsyncSync(fd);
      });
      if (pinned) this.#closePinned((p) => this.#file(p) === file, false);
      throw error;
    }
  }

  /** Closes pinned handles whose path `matches` (forgetting the pins too when `forget`). */
  #closePinned(matches: (path: string) => boolean, forget: boolean): void {
    for (const [path, pinned] of this.#pinned) {
      if (!matches(path)) continue;
      if (pinned.fd !== undefined) bestEffort(() => closeSync(pinned.fd!));
      pinned.fd = undefined;
      if (forget) this.#pinned.delete(path);
    }
  }

  /** Before a change to `path` other than an append: a pinned handle on it or below it is closed. */
  #unpinBelow(path: string): void {
    if (this.#pinned.size > 0) this.#closePinned((pinned) => pinned === path || pinned.startsWith(`${path}/`) || path === "", false);
  }

  createExclusive(path: string, bytes: Uint8Array, options?: WriteOptions): Promise<boolean> {
    const durable = this.#fsync && options?.durable !== false;
    return this.#run("createExclusive", path, (file) => {
      // The bytes go to a synced temp file first, then link() publishes it: like open(…, "wx")
      // it fails with EEXIST when anything is there, but the file appears whole, so a crash
      // (SIGKILL) never leaves an empty writer.lock or meta.json behind.
      const temp = tempBeside(file);
      try {
        fill(this.#withParents(path, () => openSync(temp, "wx", 0o600)), bytes, durable);
        try {
          linkSync(temp, file);
        } catch (error) {
          if (errno(error) === "EEXIST") return false; // a file or a folder is there
          if (!NO_HARD_LINKS.includes(errno(error) ?? "")) throw error;
          return this.#createInPlace(file, bytes, durable);
        }
      } finally {
        bestEffort(() => unlinkSync(temp));
      }
      if (durable) this.#syncFolder(dirname(file));
      return true;
    });
  }

  /** createExclusive with open(…, "wx") and a write: for file systems that cannot link (a crash may leave it empty). */
  #createInPlace(file: string, bytes: Uint8Array, durable: boolean): boolean {
    let fd: number;
    try {
      fd = openSync(file, "wx", 0o600);
    } catch (error) {
      if (errno(error) === "EEXIST") return false;
      throw error;
    }
    try {
      fill(fd, bytes, durable);
    } catch (error) {
      bestEffort(() => unlinkSync(file)); // never leave half a lock
      throw error;
    }
    if (durable) this.#syncFolder(dirname(file));
    return true;
  }

  truncate(path: string, length: number): Promise<void> {
    return this.#run("truncate", path, (file) => {
      this.#unpinBelow(path);
      if (typeof length !== "number" || Number.isNaN(length)) throw new InvalidInputError(`truncate length must be a number, got ${String(length)}`, { path });
      const opened = this.#boundary.open(path, file, TRUNCATE_FLAGS, "write");
      if (!opened) return;
      const { fd, info } = opened;
      try {
        if (length < info.size) {
          ftruncateSync(fd, Math.max(0, Math.floor(length)));
          if (this.#fsync) fsyncSync(fd);
        }
      } finally {
        closeSync(fd);
      }
    });
  }

  remove(path: string, options?: WriteOptions): Promise<void> {
    return this.#run("remove", path, (file) => {
      this.#unpinBelow(path);
      // The entry itself may be a link (removing it follows nothing); the folders on the way may not.
      if (this.#boundary.parents(path, "read") === "missing") return;
      try {
        rmSync(file, { recursive: true, force: true });
      } catch (error) {
        if (errno(error) === "ENOTDIR") return; // a parent is a file: nothing is at `path`
        throw error;
      }
      if (options?.durable !== false) this.#syncFolder(dirname(file));
    });
  }

  move(from: string, to: string): Promise<boolean> {
    return this.#run("move", from, (source) => {
      this.#unpinBelow(from);
      this.#unpinBelow(to);
      const target = this.#file(to);
      if (from === to || to.startsWith(`${from}/`)) return false;
      if (this.#boundary.parents(from, "read") === "missing") return false;
      if (!missingAsUndefined(() => lstatSync(source))) return false;
      if (missingAsUndefined(() => lstatSync(target))) return false;
      this.#ensureFolder(parentPath(to));
      try {
        renameSync(source, target);
      } catch (error) {
        // The source vanished or the target appeared since the checks: nothing moved.
        if (["ENOENT", "EEXIST", "ENOTEMPTY"].includes(errno(error) ?? "")) return false;
        throw error;
      }
      this.#syncFolder(dirname(source));
      if (dirname(target) !== dirname(source)) this.#syncFolder(dirname(target));
      return true;
    });
  }

  /**
   * Validates `path`, resolves it under the root, runs `body` and settles with its result;
   * every failure becomes a rejected promise of a typed error, never a synchronous throw.
   * `body` runs to completion before the call returns, so calls cannot interleave and writes
   * to one file land in the order they were issued without any per-file queue.
   */
  #run<T>(operation: string, path: string, body: (file: string) => T, allowRoot = false): Promise<T> {
    let file = this.root;
    try {
      file = this.#file(path, allowRoot);
      return Promise.resolve(body(file));
    } catch (error) {
      return Promise.reject(storageErrorFromFs(error, operation, path, file));
    }
  }

  /** The absolute file of a key. @throws {InvalidInputError} for a hostile key, before any path is built. */
  #file(path: string, allowRoot = false): string {
    const known = allowRoot ? undefined : this.#files.get(path);
    if (known !== undefined) return known;
    assertStoragePath(path, allowRoot);
    if (path.split("/").some((segment) => segment.startsWith(TEMP_PREFIX))) {
      throw new InvalidInputError(`storage path ${JSON.stringify(path)} uses the reserved prefix "${TEMP_PREFIX}"`, { path });
    }
    const file = path === "" ? this.root : resolve(this.root, ...path.split("/"));
    const inside = relative(this.root, file);
    if (inside.startsWith(`..${sep}`) || inside === ".." || isAbsolute(inside)) {
      throw new InvalidInputError(`storage path ${JSON.stringify(path)} leaves the store's root`, { path });
    }
    if (!allowRoot) {
      // Bounded: a long-lived store touches many sessions; the checks are cheap to redo.
      if (this.#files.size >= CHECKED_KEYS) this.#files.clear();
      this.#files.set(path, file);
    }
    return file;
  }

  /**
   * Runs `create` once its folders are checked; when a parent folder is missing, creates the
   * parents and runs it again.
   */
  #withParents<T>(path: string, create: () => T): T {
    try {
      if (this.#boundary.parents(path, "write") === "missing") throw missingParent(path);
      return create();
    } catch (error) {
      if (errno(error) !== "ENOENT") throw error;
      this.#ensureFolder(parentPath(path));
      return create();
    }
  }

  /** Creates a folder and its missing parents `0700` (chmod too: the umask may strip bits), durably. */
  #ensureFolder(dir: string): void {
    this.#file(dir, true);
    const created = this.#boundary.ensureFolder(dir);
    if (created.length === 0) return;
    for (const folder of [dirname(created[0]!), ...created.slice(0, -1)]) this.#syncFolder(folder);
  }

  /** fsyncs a folder so a rename, a new or a removed entry in it survives a crash. */
  #syncFolder(folder: string): void {
    if (!this.#fsync) return;
    const fd = missingAsUndefined(() => openSync(folder, FOLDER_FLAGS));
    if (fd === undefined) return;
    try {
      fsyncSync(fd);
    } catch (error) {
      if (errno(error) !== "EINVAL") throw error; // some filesystems cannot fsync a folder
    } finally {
      closeSync(fd);
    }
  }
}

/** A temp file beside `file`: same folder, so the rename is atomic; the prefix never parses as an id or a segment. */
function tempBeside(file: string): string {
  return join(dirname(file), `${TEMP_PREFIX}${randomBytes(8).toString("hex")}`);
}

/** Fills a file just created with `wx`: mode 0600 whatever the umask, every byte, fsync when `sync`, close. */
function fill(fd: number, bytes: Uint8Array, sync: boolean): void {
  try {
    fchmodSync(fd, 0o600);
    writeAll(fd, bytes, 0);
    if (sync) fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Writes every byte of `bytes` (a write may be short), at `position` or at the end for `null`. */
function writeAll(fd: number, bytes: Uint8Array, position: number | null): void {
  for (let done = 0; done < bytes.length; ) {
    done += writeSync(fd, bytes, done, bytes.length - done, position === null ? null : position + done);
  }
}

/** Runs `action`, turning "nothing there" (ENOENT, or a parent that is a file) into `undefined`. */
function missingAsUndefined<T>(action: () => T): T | undefined {
  try {
    return action();
  } catch (error) {
    if (errno(error) === "ENOENT" || errno(error) === "ENOTDIR") return undefined;
    throw error;
  }
}

/** Runs a cleanup whose own failure must not hide the error being handled. */
function bestEffort(cleanup: () => void): void {
  try {
    cleanup();
  } catch {
    // the original error is what the caller needs to see
  }
}

/** The error `#withParents` retries on: a folder on the way is missing. */
function missingParent(file: string): never {
  throw Object.assign(new Error(`a folder on the way to ${file} is missing`), { code: "ENOENT" });
}

/** What stands at `file`, for a message (its entry is not followed). */
function kindOfEntry(file: string): string {
  try {
    return kindOf(lstatSync(file));
  } catch {
    return "an entry that vanished";
  }
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

/** Reasons of errors that the boundary checks leave to the system: permissions, and the root's own path (outside the store). */
const FS_REASONS: Record<string, string> = {
  EACCES: "permission denied",
  EPERM: "permission denied",
  EISDIR: "a folder is where a file was expected",
  ENOTDIR: "a file is where a folder was expected",
  EEXIST: "a file is where a folder was expected",
};
