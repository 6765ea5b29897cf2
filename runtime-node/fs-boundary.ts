/**
 * The boundary of a Node file store (docs/FORMAT.md "The store's boundary"): nothing under
 * the root is followed if it is a symbolic link, every folder between the root and a file
 * must be a real folder, only regular files are read or written, no write reaches a file
 * with other hard links, and no read blocks (a FIFO or a device is refused after an
 * `O_NONBLOCK` open, before any byte is read). What breaks a rule is a
 * {@linkcode StoreEntryError} (`corrupt`) naming the key, the file and what was found.
 *
 * The checks are system calls on the calling thread: an `lstat` per folder under the root
 * and an `fstat` of every opened file, a few microseconds each.
 *
 * @module
 */
import {
  chmodSync,
  closeSync,
  constants,
  fstatSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readSync,
  realpathSync,
  renameSync,
  type Stats,
  statSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { type FileHandle, open as openHandle, stat } from "node:fs/promises";
import { basename, dirname, join, relative, sep } from "node:path";
import { InvalidInputError, NotFoundError, StoreEntryError } from "../core/errors.ts";
import { errno, missingAsUndefined, storageErrorFromFs } from "./fs-errors.ts";

/** `O_NOFOLLOW` where the platform has it (not on Windows, where the `lstat` checks remain). */
const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0;
/** Opening a FIFO without a writer, or a device, must not wait: the `fstat` then refuses it. */
const O_NONBLOCK = constants.O_NONBLOCK ?? 0;
const O_DIRECTORY = constants.O_DIRECTORY ?? 0;

/** Flags of a read: no link followed, no wait. */
export const READ_FLAGS: number = constants.O_RDONLY | O_NOFOLLOW | O_NONBLOCK;
/** Flags of an append: created `0600` when missing, no link followed, no wait. */
export const APPEND_FLAGS: number = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | O_NOFOLLOW | O_NONBLOCK;
/** Flags of a truncate: an existing file only. */
export const TRUNCATE_FLAGS: number = constants.O_RDWR | O_NOFOLLOW | O_NONBLOCK;
/** Flags of opening a folder to fsync it. */
export const FOLDER_FLAGS: number = constants.O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK;

/**
 * What an entry is, as messages name it: `"a symbolic link"`, `"a folder"`, `"a FIFO"`…
 *
 * @example
 * ```ts
 * import { lstatSync } from "node:fs";
 * kindOf(lstatSync("/dev/null")); // "a character device"
 * ```
 */
export function kindOf(info: Stats): string {
  if (info.isSymbolicLink()) return "a symbolic link";
  if (info.isDirectory()) return "a folder";
  if (info.isFile()) return "a regular file";
  if (info.isFIFO()) return "a FIFO";
  if (info.isSocket()) return "a socket";
  if (info.isCharacterDevice()) return "a character device";
  if (info.isBlockDevice()) return "a block device";
  return "an entry of unknown type";
}

/**
 * The error for an entry that breaks a rule of the boundary.
 *
 * @example
 * ```ts
 * throw entryError("agents/a1/x", "/store/agents/a1/x", "a symbolic link", "a regular file");
 * ```
 */
export function entryError(
  path: string,
  file: string,
  found: string,
  expected: string,
  why = found === "a symbolic link" ? "the store follows no links" : "",
): StoreEntryError {
  return new StoreEntryError(`store entry "${path}" (${file}): found ${found} where ${expected} belongs${why ? `; ${why}` : ""}`, {
    path,
    file,
    found,
    expected,
  });
}

/** An opened regular file with what `fstat` said about it. */
export interface OpenedFile {
  readonly fd: number;
  readonly info: Stats;
}

/** What a file is opened for: a write must also find it without other hard links. */
export type Access = "read" | "write";

/** How {@linkcode StoreBoundary.open} opens a file, beyond its flags. */
export interface OpenOptions {
  /** The permissions of a file the open creates. */
  readonly mode?: number;
  /** The folders one call already found real (the files of one `readMany`): each is checked once per call, not once per file. */
  readonly checked?: Set<string>;
  /**
   * A read of a file a listing or a hint has just named (a `readMany`'s tails: `show`'s
   * footers, an open's newest segment): opened without asking first whether it is there.
   */
  readonly named?: boolean;
}

/**
 * Walks and opens paths under one root by the rules of the module doc. Keys reach it
 * already validated (`assertStoragePath`), as absolute files under `root`.
 */
export class StoreBoundary {
  readonly #root: string;
  /** The root with a separator at its end. */
  readonly #rootPrefix: string;

  constructor(root: string) {
    this.#root = root;
    this.#rootPrefix = root.endsWith(sep) ? root : `${root}${sep}`;
  }

  /**
   * Checks the folders between the root and the entry `path` (not the entry itself).
   * Resolves `"missing"` when one of them does not exist, and, for a read, when a regular
   * file stands where a folder would be (then nothing is at `path`, as the port says).
   *
   * @throws {StoreEntryError} for a link or a special file in the way, or for a write, a regular file.
   */
  parents(path: string, access: Access, checked?: Set<string>): "present" | "missing" {
    // A file of a folder the call already found real (most of an open's files): no key split, no folder joined.
    const cut = path.lastIndexOf("/");
    if (checked && cut > 0 && sep === "/" && checked.has(`${this.#rootPrefix}${path.slice(0, cut)}`)) return "present";
    const segments = path.split("/");
    const folders = segments.slice(0, -1);
    if (access === "read" && this.#allReal(folders, checked)) return "present";
    return this.#walk(path, folders, access, checked);
  }

  /** {@linkcode StoreBoundary.parents} for a folder, the folder itself included. */
  folder(path: string, access: Access, checked?: Set<string>): "present" | "missing" {
    return path === "" ? "present" : this.#walk(path, path.split("/"), access, checked);
  }

  /**
   * {@linkcode StoreBoundary.folder} for a listing: a missing folder lists as empty, but a
   * regular file where it or a folder above it belongs (the root's own folder included) is
   * refused as a write refuses it, not taken for an empty folder (docs/FORMAT.md "The store's boundary").
   *
   * @throws {StoreEntryError} for a link, a special file or a regular file in the way.
   */
  listedFolder(path: string): "present" | "missing" {
    return this.folder(path, "read") === "present" ? "present" : this.folder(path, "write");
  }

  /**
   * Opens the regular file `file` (the key `path`) with `flags`, after checking its folders
   * ({@linkcode OpenOptions}). `undefined` when it (or a folder) is missing.
   *
   * @throws {StoreEntryError} when it is a link, a folder, a FIFO, a socket or a device, or for
   * a write when it has other hard links; nothing was read or written.
   */
  open(path: string, file: string, flags: number, access: Access, { mode, checked, named = false }: OpenOptions = {}): OpenedFile | undefined {
    if (this.parents(path, access, checked) === "missing") return undefined;
    // A missing file is an ordinary answer to a read (an open reads the draft and instruction.md, most
    // often absent): asked by an `lstat` that does not throw (about 1 µs), not by an `open` whose failure
    // Node makes into an error with its stack (8–10 µs, 35–50 µs the first time in a thread). A named file
    // is there but for a race, and the `lstat` would be a fifth system call for each of `show`'s 2,000
    // footers (docs/decisions.md "show's footers in batches of 16").
    if (access === "read" && !named && !lstatOrUndefined(file)) return undefined;
    let fd: number;
    try {
      fd = mode === undefined ? openSync(file, flags) : openSync(file, flags, mode);
    } catch (error) {
      const code = errno(error);
      if (code === "ENOENT" || code === "ENOTDIR") return undefined; // ENOTDIR: the root itself lies under a file
      // ELOOP (EMLINK on the BSDs): the entry is a link; ENXIO: a socket, or a FIFO nobody reads; EISDIR: a folder.
      if (code === "ELOOP" || code === "EMLINK" || code === "ENXIO" || code === "EISDIR" || code === "EOPNOTSUPP") this.#refuseEntry(path, file, error);
      throw error;
    }
    try {
      const info = fstatSync(fd);
      if (!info.isFile()) throw entryError(path, file, kindOf(info), "a regular file");
      if (access === "write" && info.nlink > 1) throw hardLinked(path, file, info);
      return { fd, info };
    } catch (error) {
      closeSync(fd);
      throw error;
    }
  }

  /**
   * Checks what a write that replaces the entry itself (a rename onto it) would replace:
   * nothing, or a regular file without other hard links.
   *
   * @throws {StoreEntryError} otherwise.
   */
  replaceable(path: string, file: string): void {
    const info = lstatOrUndefined(file);
    if (!info) return;
    if (!info.isFile()) throw entryError(path, file, kindOf(info), "a regular file");
    if (info.nlink > 1) throw hardLinked(path, file, info);
  }

  /**
   * Creates the folder `path` and its missing parents `0700` (whatever the umask), checking
   * every folder on the way (but those in `checked`, found real by the same call); returns the
   * folders it created, outermost first.
   *
   * @throws {StoreEntryError} when something other than a real folder is in the way.
   */
  ensureFolder(path: string, checked?: Set<string>): string[] {
    const segments = path === "" ? [] : path.split("/");
    // A folder under the root that this call found real: the root is there (a compaction's first `segments/`).
    const created = checked?.has(join(this.#root, segments[0] ?? "")) ? [] : this.#ensureRoot(path);
    let folder = this.#root;
    for (const segment of segments) {
      const parent = folder;
      folder = join(folder, segment);
      if (checked?.has(folder)) continue;
      // In a folder found real, the missing one is created at once (its `lstat` said it is not there); else checked first.
      const info = checked?.has(parent) ? undefined : lstatOrUndefined(folder);
      if (info?.isDirectory()) continue;
      if (info) throw entryError(path, folder, kindOf(info), "a folder");
      try {
        mkdirSync(folder, { mode: 0o700 });
      } catch (error) {
        if (errno(error) !== "EEXIST") throw error;
        // Created by someone else meanwhile: it must still be a real folder.
        const now = lstatSync(folder);
        if (!now.isDirectory()) throw entryError(path, folder, kindOf(now), "a folder");
        continue;
      }
      chmodSync(folder, 0o700);
      created.push(folder);
    }
    return created;
  }

  /**
   * Refuses a root that is there but not a folder (followed: the root may be a link), naming the entry `path` was
   * reached for (docs/FORMAT.md "The store's boundary").
   *
   * @throws {StoreEntryError} for a regular file or a special file where the root folder belongs.
   */
  #assertRootFolder(path: string): void {
    const info = missingAsUndefined(() => statSync(this.#root, { throwIfNoEntry: false }));
    if (info && !info.isDirectory()) throw entryError(path, this.#root, kindOf(info), "the store's root folder");
  }

  /** The root and its missing parents (outside the store: followed like any path the host gives), created `0700`. */
  #ensureRoot(path: string): string[] {
    let first: string | undefined;
    try {
      first = mkdirSync(this.#root, { recursive: true, mode: 0o700 });
    } catch (error) {
      // EEXIST: a file is where the root belongs (a file above it fails with ENOTDIR, outside the store).
      if (errno(error) === "EEXIST") this.#assertRootFolder(path);
      throw error;
    }
    if (first === undefined) return [];
    const created = [first];
    for (const segment of relative(first, this.#root).split(sep).filter(Boolean)) created.push(join(created.at(-1)!, segment));
    for (const folder of created) chmodSync(folder, 0o700);
    return created;
  }

  /**
   * `checked`, when given, holds the folders one call already found real (several reads of
   * one call, `NodeFileStorage.readMany`): each is checked once per call, not once per file.
   */
  #walk(path: string, folders: readonly string[], access: Access, checked?: Set<string>): "present" | "missing" {
    // The deepest folder already found real means every folder above it was too (files of
    // one folder, read in one call: one string per file, not one per folder).
    if (checked && folders.length > 0 && checked.has(this.#folderOf(folders))) return "present";
    let folder = this.#root;
    for (const segment of folders) {
      // Keys are checked (no empty, "." or ".." segment) and the root is resolved: joining is concatenation.
      folder = folder.endsWith(sep) ? folder + segment : `${folder}${sep}${segment}`;
      if (checked?.has(folder)) continue;
      const info = lstatOrUndefined(folder);
      if (!info) {
        // The root's own folder is not walked (it may be a link: the host chose it); a file there reads as
        // missing (ENOTDIR), and is refused for a write or a listing like a file anywhere a folder belongs.
        if (access === "write" && folder === this.#rootPrefix + segment) this.#assertRootFolder(path);
        return "missing";
      }
      if (info.isDirectory()) {
        checked?.add(folder);
        continue;
      }
      if (access === "read" && info.isFile()) return "missing";
      throw entryError(path, folder, kindOf(info), "a folder");
    }
    return "present";
  }

  /**
   * Whether every one of `folders` (the root's folders down to a file's) is a real folder, by one `realpath` of the
   * deepest (the kernel's walk, not one `lstat` and its `Stats` per folder): it names the same path only when no folder
   * on the way is a link, and fails when one is missing or not a folder. `false` sends the caller to the walk, which
   * says what is wrong (a root reached through a link always walks).
   */
  #allReal(folders: readonly string[], checked?: Set<string>): boolean {
    if (folders.length < 2) return false;
    // The folder above it already found real in this call (Active's folder after meta.json's): the walk's one `lstat`
    // costs less than the kernel resolving every folder again.
    if (checked?.has(this.#folderOf(folders.slice(0, -1)))) return false;
    const deepest = this.#folderOf(folders);
    let real: string;
    try {
      real = realpathSync.native(deepest);
    } catch {
      return false;
    }
    if (real !== deepest) return false;
    if (checked) {
      let folder = this.#root;
      for (const segment of folders) checked.add(folder = folder.endsWith(sep) ? folder + segment : `${folder}${sep}${segment}`);
    }
    return true;
  }

  /** The absolute folder of the key segments `folders`, as {@linkcode StoreBoundary.#walk} builds it. */
  #folderOf(folders: readonly string[]): string {
    return `${this.#rootPrefix}${folders.join(sep)}`;
  }

  /** Names what an open refused to open. @throws {StoreEntryError} always, when the entry is still there. */
  #refuseEntry(path: string, file: string, cause: unknown): void {
    const info = lstatOrUndefined(file);
    if (!info) throw cause;
    throw entryError(path, file, kindOf(info), "a regular file");
  }
}

function hardLinked(path: string, file: string, info: Stats): StoreEntryError {
  return entryError(path, file, `a file with ${info.nlink} hard links`, "a file of its own", "a write would change the other copies too");
}

function lstatOrUndefined(file: string): Stats | undefined {
  // throwIfNoEntry: a missing entry costs no exception (an open reads files that often are not there).
  return missingAsUndefined(() => lstatSync(file, { throwIfNoEntry: false }));
}

/** A file given to a command (an import's source), opened by {@linkcode openInputFile}. */
export interface InputFile {
  readonly handle: FileHandle;
  /** Its size when it was opened (`fstat`). */
  readonly size: number;
}

/**
 * Opens a file a command was given to read (an import's source, outside any store) so that
 * nothing can wait or read without end: opened `O_NONBLOCK` (a FIFO without a writer does not
 * block the open) and checked with `fstat` before a byte is read, so a FIFO, a socket, a
 * device (`/dev/zero`) or a folder is refused. Links are followed: the user named the path.
 *
 * @example
 * ```ts
 * const { handle, size } = await openInputFile("/tmp/rollout.jsonl");
 * try { console.log(size); } finally { await handle.close(); }
 * ```
 * @throws {NotFoundError} when there is no such file.
 * @throws {InvalidInputError} when it is not a regular file or cannot be opened (nothing was read).
 */
export async function openInputFile(file: string): Promise<InputFile> {
  let handle: FileHandle;
  try {
    handle = await openHandle(file, constants.O_RDONLY | O_NONBLOCK);
  } catch (error) {
    const code = errno(error);
    if (code === "ENOENT" || code === "ENOTDIR") throw new NotFoundError(`${file}: no such file`, { file });
    const found = code === "ENXIO" ? kindOf(statSync(file)) : undefined; // a socket (links followed, as the open did)
    if (found) throw notRegular(file, found);
    throw new InvalidInputError(`${file}: cannot be read (${code ?? (error as Error).message})`, { file });
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw notRegular(file, kindOf(info));
    return { handle, size: info.size };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

function notRegular(file: string, found: string): InvalidInputError {
  return new InvalidInputError(`${file}: found ${found} where a regular file belongs; only regular files are read (nothing was read from it)`, {
    file,
    found,
    expected: "a regular file",
  });
}

/** A file of the store that has other hard links, so every write to it is refused. */
export interface HardLinkedFile {
  /** The storage key. */
  readonly path: string;
  /** The absolute file. */
  readonly file: string;
  /** How many links it has. */
  readonly links: number;
}

/**
 * Which of the storage keys `paths` under `root` are regular files with other hard links:
 * the store reads them but refuses every write (docs/FORMAT.md "The store's boundary"), so
 * `repair` names them and gives the store its own copy ({@linkcode detachHardLink}).
 *
 * @example
 * ```ts
 * hardLinkedFiles("/store", ["agents/a1/workspaces/w1/sessions/s1/messages/active.jsonl"]); // [] or [{ path, file, links: 2 }]
 * ```
 * @throws {StoreEntryError} for a link or a special file on the way.
 */
export function hardLinkedFiles(root: string, paths: readonly string[]): HardLinkedFile[] {
  const boundary = new StoreBoundary(root);
  const found: HardLinkedFile[] = [];
  for (const path of paths) {
    const file = join(root, ...path.split("/"));
    const opened = boundary.open(path, file, READ_FLAGS, "read");
    if (!opened) continue;
    closeSync(opened.fd);
    if (opened.info.nlink > 1) found.push({ path, file, links: opened.info.nlink });
  }
  return found;
}

/**
 * Gives the store its own copy of a hard-linked file: its bytes are written to a new file
 * beside it (`0600`, synced) that is then renamed over it, so the store's name points at a
 * file of its own and the other copies stay exactly as they were. Nothing is lost: the bytes
 * are the same. Nothing of sessionfold writes to the file meanwhile (every write to a
 * hard-linked file is refused).
 *
 * @example
 * ```ts
 * const paths = ["agents/a1/workspaces/w1/sessions/s1/messages/active.jsonl"];
 * for (const linked of hardLinkedFiles("/store", paths)) detachHardLink("/store", linked);
 * ```
 * @throws {StoreEntryError} when the entry is no longer a regular file.
 */
export function detachHardLink(root: string, linked: HardLinkedFile): void {
  const opened = new StoreBoundary(root).open(linked.path, linked.file, READ_FLAGS, "read");
  if (!opened) return;
  const temp = `${linked.file}.own-copy-${process.pid}-${Date.now()}`;
  let out: number | undefined;
  try {
    const buffer = new Uint8Array(1 << 20);
    out = openSync(temp, "wx", 0o600);
    for (let read = readSync(opened.fd, buffer); read > 0; read = readSync(opened.fd, buffer)) {
      for (let written = 0; written < read;) written += writeSync(out, buffer, written, read - written);
    }
    fsyncSync(out);
    closeSync(out);
    out = undefined;
    renameSync(temp, linked.file);
  } catch (error) {
    if (out !== undefined) closeSync(out);
    try {
      unlinkSync(temp);
    } catch {
      // Never created, or already renamed.
    }
    throw error;
  } finally {
    closeSync(opened.fd);
  }
  const folder = openSync(join(linked.file, ".."), FOLDER_FLAGS);
  try {
    fsyncSync(folder);
  } finally {
    closeSync(folder);
  }
}

/**
 * Where a folder store's data is (`StoragePort.storeIdentity`): the device and inode of its
 * root, links followed, so every path to one folder (a symbolic link, a bind mount) answers the
 * same and another folder another. A root not created yet answers by its nearest folder that is
 * there, with the names below it. Creates nothing.
 *
 * @example
 * ```ts
 * console.log(await folderStoreIdentity("/home/me/.sessionfold")); // "folder device 2049 inode 1311"
 * ```
 * @throws {StorageError} when the root, or a folder above it, cannot be looked at (permission denied).
 */
export async function folderStoreIdentity(root: string): Promise<string> {
  const below: string[] = [];
  for (let path = root;;) {
    try {
      const info = await stat(path, { bigint: true });
      return `folder device ${info.dev} inode ${info.ino}${below.length > 0 ? ` then ${below.reverse().join("/")}` : ""}`;
    } catch (error) {
      if (errno(error) !== "ENOENT" || dirname(path) === path) throw storageErrorFromFs(error, "storeIdentity", ".", path);
      below.push(basename(path));
      path = dirname(path);
    }
  }
}
