/**
 * {@linkcode NodeFileStorage}: the storage port over files in one folder. This module holds
 * the port's methods; the boundary checks are in `fs-boundary.ts`, the keys and their files
 * in `fs-keys.ts`, the pinned handles in `fs-pins.ts`, the system calls in `fs-io.ts` and
 * the error mapping in `fs-errors.ts`.
 *
 * @module
 */
import {
  closeSync,
  fchmodSync,
  fsyncSync,
  ftruncateSync,
  linkSync,
  lstatSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  type Stats,
  unlinkSync,
} from "node:fs";
import { dirname, isAbsolute, resolve, sep } from "node:path";
import { InvalidInputError } from "../core/errors.ts";
import {
  applyCommitPlanByCalls,
  carriesLockId,
  type CatalogListing,
  type CatalogPage,
  cataloguedPath,
  type CommitPlan,
  type CommitPlanResult,
  type FileTail,
  formatBytes,
  hintedFile,
  isWithin,
  type LastFileRequest,
  MAX_FILE_BYTES,
  MAX_LOCK_BYTES,
  parentPath,
  type PlannedWrite,
  type ReadRequest,
  type ReadResult,
  type StoragePort,
  type WriteOptions,
} from "../core/reader.ts";
import { APPEND_FLAGS, entryError, folderStoreIdentity, READ_FLAGS, StoreBoundary, TRUNCATE_FLAGS } from "./fs-boundary.ts";
import { bestEffort, errno, missingAsUndefined, missingParent, storageErrorFromFs } from "./fs-errors.ts";
import { FileCatalog } from "./fs-catalog.ts";
import {
  fill,
  type FlushFailure,
  flushTogether,
  kindOfEntry,
  readTailOf,
  readWhole,
  removeEmptyFolders,
  syncFolder,
  TailSlab,
  tempBeside,
  writeAll,
} from "./fs-io.ts";
import { StoreKeys, TEMP_PREFIX } from "./fs-keys.ts";
import { type PinnedFile, PinnedFiles } from "./fs-pins.ts";

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
  readonly #keys: StoreKeys;
  /** Files kept open by {@linkcode NodeFileStorage.pinFile}. */
  readonly #pinned = new PinnedFiles();
  /** The catalog each write of a session's meta.json keeps (`fs-catalog.ts`). */
  readonly #catalog: FileCatalog;
  /** What {@linkcode NodeFileStorage.stage} staged, by the caller's id (or the error it failed with), until a plan or `unstage` takes it. */
  readonly #stagedFiles = new Map<string, StagedReplace | { readonly failed: unknown }>();
  /** Where a held commit's fence reads `writer.lock`: the check compares the bytes and forgets them, so one buffer serves every commit. */
  readonly #lockScratch = new Uint8Array(MAX_LOCK_BYTES);
  /**
   * Folders this store created whose entry in their parent may not be durable: the flush meant to make it so failed and
   * the folder could not be removed ({@linkcode NodeFileStorage.#dropFolders}). A write under one fsyncs its parent first.
   */
  readonly #unsyncedFolders = new Set<string>();

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
    this.#keys = new StoreKeys(this.root);
    this.#catalog = new FileCatalog(this.#boundary, this.#keys, (dir) => this.#ensureFolder(dir));
  }

  /**
   * Where this store's data is (`StoragePort.storeIdentity`): its root folder's device and
   * inode, so two handles on one folder by two paths (a link, a bind mount) answer the same and
   * `syncStores` refuses syncing the store with itself. Creates nothing.
   *
   * @example
   * ```ts
   * const a = new NodeFileStorage({ root: "/home/me/.sessionfold" });
   * const b = new NodeFileStorage({ root: "/home/me/link-to-home/.sessionfold" });
   * console.log((await a.storeIdentity()) === (await b.storeIdentity())); // true: one store
   * ```
   * @throws {StorageError} when the root cannot be looked at.
   */
  storeIdentity(): Promise<string> {
    return folderStoreIdentity(this.root);
  }

  read(path: string): Promise<Uint8Array | undefined> {
    return this.#withFile("read", path, (file) => this.#readWhole(path, file));
  }

  readTail(path: string, maxBytes: number): Promise<FileTail | undefined> {
    return this.#withFile("readTail", path, (file) => this.#readTail(path, file, maxBytes));
  }

  /**
   * Every read of `requests` in one call, each after the one before it, so that none sees an
   * older state of the store than one before it (a file store has no snapshot: what a reader
   * of `meta.json` before the lines needs is this order). The folders the files share are
   * checked once for the call. Through a worker, one round trip. A `lastIn` prefetch is
   * `undefined` when its folder is not there, else the tail of the file its `namedIn` hint
   * names, or `null` (not read) when there is none.
   */
  readMany(requests: readonly ReadRequest[]): Promise<(ReadResult | null | undefined)[]> {
    const checked = new Set<string>();
    const found: (ReadResult | null | undefined)[] = [];
    // Made at the call's first tail: an open of a session without segments reads none.
    let tails: TailSlab | undefined;
    const slab = () => (tails ??= new TailSlab(requests));
    for (let i = 0; i < requests.length; i++) {
      const request = requests[i]!;
      const read = "lastIn" in request
        ? this.#syncCall("readMany", request.lastIn, () => this.#lastIn(request, () => hintedFile(requests.slice(0, i), found, request), checked, slab), true)
        : this.#syncCall("readMany", request.path, (file) => this.#readRequest(request.path, file, request.tailBytes, checked, slab));
      if (!read.ok) return Promise.reject(read.error);
      found.push(read.value);
    }
    return Promise.resolve(found);
  }

  /** `slab()`: where the call's tails share their buffers (made at its first tail). */
  #readRequest(path: string, file: string, tailBytes: number | undefined, checked: Set<string>, slab: () => TailSlab): ReadResult | undefined {
    if (tailBytes !== undefined) return this.#readTailRequest(path, file, tailBytes, checked, slab);
    const bytes = this.#readWhole(path, file, checked);
    return bytes && { path, bytes, size: bytes.length };
  }

  /** {@linkcode NodeFileStorage.#readRequest} of a tail (apart: an open of a session without segments reads none). */
  #readTailRequest(path: string, file: string, tailBytes: number, checked: Set<string>, slab: () => TailSlab): ReadResult | undefined {
    const shared = slab();
    const tail = this.#readTail(path, file, tailBytes, checked, shared.room(tailBytes), true);
    if (!tail) return undefined;
    shared.took(tail.bytes);
    return { path, bytes: tail.bytes, size: tail.size };
  }

  /**
   * A `lastIn` prefetch: `undefined` when its folder is not there (it holds no file), else the
   * tail of the file its hint names (`hinted()`, `hintedFile`), or `null`, not read, when there
   * is no hint or no such file: finding the folder's last name means listing it whole, which
   * grows with it. A hinted file that is not a plain file is refused as `readTail` refuses it.
   */
  #lastIn(request: LastFileRequest, hint: () => string | undefined, checked: Set<string>, slab: () => TailSlab): ReadResult | null | undefined {
    return this.#boundary.folder(request.lastIn, "read", checked) === "missing" ? undefined : this.#hintedTail(request, hint, checked, slab);
  }

  /** {@linkcode NodeFileStorage.#lastIn} once its folder is there (apart: an open of a session without segments finds none). */
  #hintedTail(request: LastFileRequest, hint: () => string | undefined, checked: Set<string>, slab: () => TailSlab): ReadResult | null {
    const hinted = hint();
    if (hinted === undefined) return null;
    return this.#readRequest(hinted, this.#keys.file(hinted), request.tailBytes, checked, slab) ?? null;
  }

  #readWhole(path: string, file: string, checked?: Set<string>): Uint8Array | undefined {
    const opened = this.#boundary.open(path, file, READ_FLAGS, "read", { checked });
    if (!opened) return undefined;
    try {
      const max = this.maxFileBytes;
      const tooLarge = (bytes: number) => entryError(path, file, `a file of ${formatBytes(bytes)}`, `a file of at most ${formatBytes(max)}`, "it is not read");
      return readWhole(opened.fd, opened.info.size, max, tooLarge);
    } finally {
      closeSync(opened.fd);
    }
  }

  /**
   * `into`: bytes to read into when they are large enough (the tail is then a view of them, good until the next read into them).
   * `named`: the file was named by a listing or a hint (`StoreBoundary.open`).
   */
  #readTail(path: string, file: string, maxBytes: number, checked?: Set<string>, into?: Uint8Array, named = false): FileTail | undefined {
    if (typeof maxBytes !== "number" || Number.isNaN(maxBytes)) {
      throw new InvalidInputError(`readTail maxBytes must be a number, got ${String(maxBytes)}`, { path });
    }
    const pinned = this.#pinned.get(path);
    const kept = pinned && this.#pinnedTail(pinned, file, maxBytes, into);
    if (kept) return kept;
    const opened = this.#boundary.open(path, file, READ_FLAGS, "read", { checked, named });
    if (!opened) return undefined;
    // A pinned file keeps this handle for its next tail reads.
    if (pinned) pinned.reader = { fd: opened.fd, dev: opened.info.dev, ino: opened.info.ino };
    try {
      return readTailOf(opened.fd, opened.info.size, maxBytes, into);
    } finally {
      if (!pinned) closeSync(opened.fd);
    }
  }

  /**
   * A tail read through the read handle a pin kept: one `lstat` of the path, and the read,
   * when the path still names the file the handle was opened on (an open handle keeps its
   * inode from being reused, so device and inode prove it). `undefined` (the handle closed)
   * when there is no handle, or the path names another file or none: the caller then opens
   * the path with every check.
   */
  #pinnedTail(pinned: PinnedFile, file: string, maxBytes: number, into?: Uint8Array): FileTail | undefined {
    const reader = pinned.reader;
    if (!reader) return undefined;
    const info = lstatSync(file, { throwIfNoEntry: false });
    if (info?.isFile() && info.dev === reader.dev && info.ino === reader.ino) return readTailOf(reader.fd, info.size, maxBytes, into);
    this.#pinned.dropReader(pinned);
    return undefined;
  }

  list(dir: string): Promise<string[]> {
    return this.#withFile("list", dir, (folder) => {
      // Missing lists as empty; a file where a folder on the way belongs (ENOTDIR, or a walk that
      // stopped at it) is refused, not taken for an empty folder.
      const info = this.#boundary.parents(dir, "read") === "missing" ? undefined : lstatOf(folder);
      if (!info) {
        this.#boundary.listedFolder(dir);
        return [];
      }
      if (info === "missing") return [];
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
    return this.#replace(path, bytes, options);
  }

  /** {@linkcode NodeFileStorage.replace}; `checked`: the folders a commit plan already found real. */
  #replace(path: string, bytes: Uint8Array, options?: WriteOptions, checked?: Set<string>): Promise<void> {
    const durable = this.#fsync && options?.durable !== false;
    return this.#withFile("replace", path, (file) => {
      this.#pinned.closeBelow(path);
      const temp = tempBeside(file);
      const fd = this.#withParents(path, () => openSync(temp, "wx", 0o600), checked);
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
      this.#catalog.written(path, bytes, checked);
    });
  }

  append(path: string, bytes: Uint8Array): Promise<void> {
    return this.#append(path, bytes);
  }

  /** {@linkcode NodeFileStorage.append}; `checked`: the folders a commit plan already found real. */
  #append(path: string, bytes: Uint8Array, checked = new Set<string>()): Promise<void> {
    return this.#withFile("append", path, (file) => this.#appendFile(path, file, bytes, checked));
  }

  /** {@linkcode NodeFileStorage.append}'s work on `file`, the resolved `path`. */
  #appendFile(path: string, file: string, bytes: Uint8Array, checked?: Set<string>): void {
    const pinned = this.#pinned.get(path);
    if (pinned?.fd !== undefined) return this.#appendTo(pinned.fd, pinned.size, bytes, file, pinned);
    // One set for both walks: the parents' check and the open's own.
    const known = checked ?? new Set<string>();
    const open = () => this.#boundary.open(path, file, APPEND_FLAGS, "write", { mode: 0o600, checked: known }) ?? missingParent(file);
    const { fd, info } = this.#withParents(path, open, known);
    try {
      if ((info.mode & 0o777) !== 0o600) fchmodSync(fd, 0o600);
      this.#appendTo(fd, info.size, bytes, file, pinned);
      // A file this append may have created needs its folder entry to be durable too.
      if (info.size === 0) this.#syncFolder(dirname(file));
    } finally {
      if (pinned) pinned.fd = fd;
      else closeSync(fd);
    }
  }

  /**
   * Applies a commit plan by this store's calls (`applyCommitPlanByCalls`), the folders its files share checked once for
   * the plan, as {@linkcode NodeFileStorage.readMany} does for its reads: a compaction's writes and its lock's removal
   * lie in one session folder, where each call walked the folders from the root again (an `lstat` each). A plan of two
   * or more durable replaces (a compaction's, a reset's) has their files staged and flushed together at its first
   * replace ({@linkcode NodeFileStorage.#stageReplaces}), each then renamed into place in order.
   */
  applyCommitPlan(plan: CommitPlan): Promise<CommitPlanResult> {
    const [first] = plan.writes;
    if (!plan.lock && !plan.release && !plan.expect && plan.writes.length <= 1 && first?.staged === undefined) {
      // A held commit: its fence and one append, both through pinned handles (looked at before anything is allocated).
      if (plan.fence && first?.op === "append") return this.#fencedAppend(plan.fence, first.path, first.bytes);
      return applyCommitPlanByCalls(this, plan); // no folders to share
    }
    const named = plan.writes.filter((write) => write.staged !== undefined);
    if (named.some((write) => write.op !== "replace")) {
      return Promise.reject(new InvalidInputError("only a replace may name staged bytes", { path: named[0]!.path }));
    }
    const checked = new Set<string>();
    // Staged in one flush: the durable replaces, and any replace that names staged bytes (docs/FORMAT.md "Compaction").
    const durable = plan.writes.filter((write) => write.op === "replace" && (write.staged !== undefined || (this.#fsync && write.durable !== false)));
    const stages = named.length > 0 || (durable.length > 1 && new Set(durable.map((write) => write.path)).size === durable.length);
    let staging: Promise<Map<string, StagedReplace>> | undefined;
    const replace = (path: string, bytes: Uint8Array, options?: WriteOptions): Promise<void> => {
      if (!stages || !durable.some((write) => write.path === path && write.bytes === bytes)) return this.#replace(path, bytes, options, checked);
      staging ??= this.#stageReplaces(durable, checked);
      return staging.then((staged) => {
        const entry = staged.get(path);
        return entry
          ? this.#withFile("replace", path, (file) => this.#publishStaged(staged, entry, file, checked))
          : this.#replace(path, bytes, options, checked);
      });
    };
    const planned: StoragePort = {
      maxFileBytes: this.maxFileBytes,
      read: (path) => this.#withFile("read", path, (file) => this.#readWhole(path, file, checked)),
      readTail: (path, maxBytes) => this.#withFile("readTail", path, (file) => this.#readTail(path, file, maxBytes, checked)),
      replace,
      append: (path, bytes) => this.#append(path, bytes, checked),
      createExclusive: (path, bytes, options) => this.#createExclusive(path, bytes, options, checked),
      remove: (path, options) => this.#remove(path, options, checked),
      list: (dir) => this.list(dir),
      truncate: (path, length) => this.truncate(path, length),
      move: (from, to) => this.move(from, to),
    };
    // The staged bytes are this store's; the plan's calls see plain replaces.
    const byCalls = named.length > 0 ? { ...plan, writes: plan.writes.map(({ staged: _, ...write }) => write) } : plan;
    // A write that failed leaves the later files staged: their temp files go, and so do staged bytes no replace reached.
    return applyCommitPlanByCalls(planned, byCalls).finally(async () => {
      await staging?.then(dropStaged, () => undefined);
      for (const write of named) await this.unstage(write.staged!);
    });
  }

  /**
   * Writes `bytes` to a temp file beside `path`'s file (its missing folders created) and starts their fsync, with the
   * entries of the folders it made; resolves once the bytes are written. A plan's replace that names `id` appends what
   * follows them, awaits that fsync, and flushes the file again with the plan's other files only when it appended
   * something (a compaction's segment: its footer; Active, whole when staged, is not flushed twice), then renames it into
   * place ({@linkcode NodeFileStorage.#stageReplaces}). So a staged file's bytes are made durable while the caller works
   * out the rest (a compaction's summary), and the plan's flush covers only what follows them.
   */
  stage(path: string, bytes: Uint8Array, id: string): Promise<void> {
    if (this.#stagedFiles.has(id)) return Promise.reject(new InvalidInputError(`staged bytes ${JSON.stringify(id)} already exist`, { path }));
    const folders: string[] = [];
    let entry: StagedReplace | undefined;
    const done = this.#syncCall("stage", path, (file) => {
      const temp = tempBeside(file);
      const fd = this.#withParents(path, () => openSync(temp, "wx", 0o600), new Set(), folders);
      // Bytes a worker's host lends again once this call returned (`stageLines`' shared memory): the catalog, which reads a
      // `meta.json`'s bytes when its name is put in place, keeps a copy of its own.
      entry = { path, file, bytes: cataloguedPath(path) ? bytes.slice() : bytes, temp, fd, size: bytes.length };
      this.#boundary.replaceable(path, file);
      fchmodSync(fd, 0o600);
      writeAll(fd, bytes, 0);
    });
    if (!done.ok) {
      if (entry) dropStaged(new Map([[path, entry]]));
      this.#dropFolders(folders); // their entries were never flushed
      this.#stagedFiles.set(id, { failed: done.error });
      return Promise.reject(done.error);
    }
    const staged = entry!;
    // Flushed now, with the entries of folders made for it (a later plan takes a folder it finds as durable).
    if (this.#fsync) {
      staged.flushed = flushTogether([staged], folders.map(dirname)).catch(({ error, file }: FlushFailure<StagedReplace>) => {
        staged.folders = folders; // removed once the temp file is (unstage, or the plan that names it)
        throw storageErrorFromFs(error, "stage", path, file ? staged.file : folders.map(dirname).join(", "));
      });
      staged.flushed.catch(() => undefined); // the plan that names it (or unstage) takes the outcome
    }
    this.#stagedFiles.set(id, staged);
    return Promise.resolve();
  }

  /** Drops the temp file {@linkcode NodeFileStorage.stage} wrote under `id`, once its flush has ended. */
  async unstage(id: string): Promise<void> {
    const entry = this.#stagedFiles.get(id);
    this.#stagedFiles.delete(id);
    if (entry === undefined || "failed" in entry) return;
    await entry.flushed?.catch(() => undefined);
    dropStaged(new Map([[entry.path, entry]]));
    if (entry.folders) this.#dropFolders(entry.folders);
  }

  /** Takes the staged file a plan's replace of `path` names: it is the plan's now. */
  #takeStaged(id: string, path: string): StagedReplace {
    const entry = this.#stagedFiles.get(id);
    this.#stagedFiles.delete(id);
    if (entry === undefined) throw new InvalidInputError(`${path}: no bytes are staged as ${JSON.stringify(id)}`, { path });
    if ("failed" in entry) throw entry.failed;
    if (entry.path !== path) {
      this.#stagedFiles.set(id, entry); // not this plan's: unstage still drops it
      throw new InvalidInputError(`${path}: the bytes staged as ${JSON.stringify(id)} are for ${entry.path}`, { path });
    }
    return entry;
  }

  /**
   * Writes each of a plan's durable replaces (a compaction's or reset's `meta.json`, segment and Active) to a temp file
   * beside its name, then fsyncs them all at once ({@linkcode flushTogether}); their renames come later, one per
   * `replace` call, in the plan's order ({@linkcode NodeFileStorage.#publishStaged}). docs/FORMAT.md "Compaction" orders
   * what a crash can find by names: a file's bytes under a temp name are invisible to every reader, so writing and
   * flushing them before the previous name is durable changes nothing a crash can leave, and the disk confirms three
   * flushes together instead of one after another. A folder created on the way (a session's first `segments/`) is
   * made durable in the same flush, before any name is put in place. Nothing is left staged when it fails.
   */
  async #stageReplaces(writes: readonly PlannedWrite[], checked: Set<string>): Promise<Map<string, StagedReplace>> {
    const staged = new Map<string, StagedReplace>();
    /** The folders created for the files: their entries are flushed with them, before any name is put in place. */
    const folders: string[] = [];
    /** The files this flush makes durable: all but a staged file nothing was appended to, whose own fsync ({@linkcode NodeFileStorage.stage}) is awaited. */
    const files: StagedReplace[] = [];
    try {
      for (const { path, bytes, staged: id } of writes) {
        const done = this.#syncCall("replace", path, (file) => {
          if (id !== undefined) {
            // Staged earlier: what follows its bytes goes at their end.
            const entry = this.#takeStaged(id, path);
            staged.set(path, entry);
            if (bytes.length > 0) writeAll(entry.fd, bytes, entry.size ?? 0);
            if (bytes.length > 0 || entry.flushed === undefined) files.push(entry);
            return;
          }
          const temp = tempBeside(file);
          const fd = this.#withParents(path, () => openSync(temp, "wx", 0o600), checked, folders);
          const entry = { path, file, bytes, temp, fd };
          staged.set(path, entry);
          files.push(entry);
          this.#boundary.replaceable(path, file);
          fchmodSync(fd, 0o600);
          writeAll(fd, bytes, 0);
        });
        if (!done.ok) throw done.error;
      }
      await flushTogether(this.#fsync ? files : [], folders.map(dirname)).catch(({ error, file }: FlushFailure<StagedReplace>) => {
        const [path, at] = file ? [file.path, file.file] : [writes[0]!.path, folders.map(dirname).join(", ")];
        throw storageErrorFromFs(error, "replace", path, at);
      });
      for (const file of staged.values()) await file.flushed;
      closeStaged(staged);
      return staged;
    } catch (error) {
      // No descriptor is closed under a stage's fsync that still runs.
      for (const file of staged.values()) await file.flushed?.catch(() => undefined);
      for (const file of staged.values()) folders.push(...file.folders ?? []);
      dropStaged(staged);
      this.#dropFolders(folders);
      throw error;
    }
  }

  /** Puts a staged file in place of `file`: the rename, then its folder's fsync (what `replace` does after its fsync). */
  #publishStaged(staged: Map<string, StagedReplace>, entry: StagedReplace, file: string, checked: Set<string>): void {
    this.#pinned.closeBelow(entry.path);
    // The entry is checked again: it may have changed while the files were flushed.
    this.#boundary.replaceable(entry.path, file);
    renameSync(entry.temp, file);
    staged.delete(entry.path);
    this.#syncFolder(dirname(file));
    this.#catalog.written(entry.path, entry.bytes, checked);
  }

  /**
   * A held commit's plan (the fence, then one append) as `applyCommitPlanByCalls` runs it, the same two calls, in one
   * synchronous call: no promise and no turn between them (every held commit paid for two of each), and `writer.lock`
   * read into {@linkcode NodeFileStorage.#lockScratch}, not into bytes of its own (the check compares them and keeps a
   * copy only of a lock it has not seen).
   */
  #fencedAppend(fence: { readonly path: string; readonly lockId: string }, path: string, bytes: Uint8Array): Promise<CommitPlanResult> {
    const read = this.#syncCall("readTail", fence.path, (file) => this.#readTail(fence.path, file, MAX_LOCK_BYTES, undefined, this.#lockScratch));
    if (!read.ok) return Promise.reject(read.error);
    if (!carriesLockId(read.value, fence.lockId)) return Promise.resolve({ outcome: "locked" });
    const appended = this.#syncCall("append", path, (file) => this.#appendFile(path, file, bytes));
    return appended.ok ? Promise.resolve({ outcome: "committed" }) : Promise.reject(appended.error);
  }

  /**
   * Keeps `path` open until {@linkcode NodeFileStorage.unpinFile}: a session held by a lease
   * appends to its `active.jsonl` with one write and one fsync, no open, checks or close, and
   * reads its `writer.lock` before each commit (the fence) with one `lstat` and one read. Any
   * other change to the file (or a folder above it) through this store closes the handles
   * first; the next append or tail read opens the file again, with every check.
   */
  pinFile(path: string): Promise<void> {
    return this.#withFile("pinFile", path, () => this.#pinned.pin(path));
  }

  /** Closes what {@linkcode NodeFileStorage.pinFile} kept open. */
  unpinFile(path: string): Promise<void> {
    return this.#withFile("unpinFile", path, () => this.#pinned.unpin(path));
  }

  /** Writes `bytes` at the end of the open file `fd` of `size` bytes; on failure cuts back to `size`. */
  #appendTo(fd: number, size: number, bytes: Uint8Array, file: string, pinned: PinnedFile | undefined): void {
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
      if (pinned) this.#pinned.closeWhere((p) => this.#keys.file(p) === file);
      throw error;
    }
  }

  createExclusive(path: string, bytes: Uint8Array, options?: WriteOptions): Promise<boolean> {
    return this.#createExclusive(path, bytes, options);
  }

  /** {@linkcode NodeFileStorage.createExclusive}; `checked`: the folders a commit plan already found real. */
  #createExclusive(path: string, bytes: Uint8Array, options?: WriteOptions, checked?: Set<string>): Promise<boolean> {
    const durable = this.#fsync && options?.durable !== false;
    return this.#withFile("createExclusive", path, (file) => {
      // The bytes go to a synced temp file first, then link() publishes it: like open(…, "wx")
      // it fails with EEXIST when anything is there, but the file appears whole, so a crash
      // (SIGKILL) never leaves an empty writer.lock or meta.json behind.
      const temp = tempBeside(file);
      try {
        fill(this.#withParents(path, () => openSync(temp, "wx", 0o600), checked), bytes, durable);
        try {
          linkSync(temp, file);
        } catch (error) {
          if (errno(error) === "EEXIST") return false; // a file or a folder is there
          if (!NO_HARD_LINKS.includes(errno(error) ?? "")) throw error;
          const created = this.#createInPlace(file, bytes, durable);
          if (created) this.#catalog.written(path, bytes);
          return created;
        }
      } finally {
        bestEffort(() => unlinkSync(temp));
      }
      if (durable) this.#syncFolder(dirname(file));
      this.#catalog.written(path, bytes);
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
    return this.#withFile("truncate", path, (file) => {
      this.#pinned.closeBelow(path);
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
    return this.#remove(path, options);
  }

  /** {@linkcode NodeFileStorage.remove}; `checked`: the folders a commit plan already found real. */
  #remove(path: string, options?: WriteOptions, checked?: Set<string>): Promise<void> {
    return this.#withFile("remove", path, (file) => {
      this.#pinned.closeBelow(path);
      // The entry itself may be a link (removing it follows nothing); the folders on the way may not.
      if (this.#boundary.parents(path, "read", checked) === "missing") return;
      try {
        // A file (a lock, a draft: the usual case) is one unlink; a folder (EISDIR, EPERM on macOS) goes with all it holds.
        unlinkSync(file);
      } catch (error) {
        const code = errno(error);
        if (code === "ENOTDIR") return; // a parent is a file: nothing is at `path`
        if (code === "EISDIR" || code === "EPERM") rmSync(file, { recursive: true, force: true });
        else if (code !== "ENOENT") throw error;
      }
      if (options?.durable !== false) this.#syncFolder(dirname(file));
    });
  }

  move(from: string, to: string): Promise<boolean> {
    return this.#withFile("move", from, (source) => {
      this.#pinned.closeBelow(from);
      this.#pinned.closeBelow(to);
      const target = this.#keys.file(to);
      if (isWithin(to, from)) return false;
      if (this.#boundary.parents(from, "read") === "missing") return false;
      if (!missingAsUndefined(() => lstatSync(source))) return false;
      if (missingAsUndefined(() => lstatSync(target))) return false;
      if (this.#unsyncedFolders.size > 0) this.#syncUnsyncedAbove(target);
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
      this.#catalog.moved(to);
      return true;
    });
  }

  /** The catalog of a folder of sessions: a few files per workspace, never every meta.json; with `page`, that page's part of them (`fs-catalog.ts`). */
  readCatalog(dir: string, page?: CatalogPage): Promise<CatalogListing | undefined> {
    return this.#withFile("readCatalog", dir, () => this.#catalog.read(dir, page));
  }

  /** Rebuilds the catalog of a folder of sessions from every meta.json; writers meanwhile lose nothing. */
  rebuildCatalog(dir: string): Promise<number> {
    return this.#withFile("rebuildCatalog", dir, () => this.#catalog.rebuild(dir));
  }

  /**
   * Validates `path`, resolves it under the root, runs `body` and settles with its result;
   * every failure becomes a rejected promise of a typed error, never a synchronous throw.
   * `body` runs to completion before the call returns, so calls cannot interleave and writes
   * to one file land in the order they were issued without any per-file queue.
   */
  #withFile<T>(operation: string, path: string, body: (file: string) => T, allowRoot = false): Promise<T> {
    const done = this.#syncCall(operation, path, body, allowRoot);
    return done.ok ? Promise.resolve(done.value) : Promise.reject(done.error);
  }

  /** {@linkcode NodeFileStorage.#withFile}'s work, its outcome as a value (a `readMany` runs several). */
  #syncCall<T>(operation: string, path: string, body: (file: string) => T, allowRoot = false): { ok: true; value: T } | { ok: false; error: unknown } {
    let file = this.root;
    try {
      file = this.#keys.file(path, allowRoot);
      return { ok: true, value: body(file) };
    } catch (error) {
      return { ok: false, error: storageErrorFromFs(error, operation, path, file) };
    }
  }

  /**
   * Runs `create` once its folders are checked; when a parent folder is missing (or vanished
   * before `create` ran), creates the parents first. `created`: where the folders it creates go, for the caller to
   * flush their entries (else they are fsynced here).
   */
  #withParents<T>(path: string, create: () => T, checked?: Set<string>, created?: string[]): T {
    if (this.#unsyncedFolders.size > 0) this.#syncUnsyncedAbove(this.#keys.file(path));
    // A missing folder (a compaction's first segment) is no error to build, and the folders found real on the way are not walked again.
    let known = checked;
    try {
      if (this.#boundary.parents(path, "write", checked) !== "missing") return create();
    } catch (error) {
      if (errno(error) !== "ENOENT") throw error;
      known = undefined; // a folder vanished after its check: every folder is checked again
    }
    this.#ensureFolder(parentPath(path), known, created);
    return create();
  }

  /**
   * Creates a folder and its missing parents `0700` (chmod too: the umask may strip bits), durably; `checked` as for
   * `#walk`. `created`: where the folders it creates go, for the caller to flush their entries (each folder's parent)
   * and to give to {@linkcode NodeFileStorage.#dropFolders} when that fails; else they are fsynced here.
   */
  #ensureFolder(dir: string, checked?: Set<string>, created?: string[]): void {
    this.#keys.file(dir, true);
    const made = this.#boundary.ensureFolder(dir, checked);
    if (made.length === 0) return;
    if (created) {
      created.push(...made);
      return;
    }
    try {
      for (const folder of made) this.#syncFolder(dirname(folder));
    } catch (error) {
      this.#dropFolders(made);
      throw error;
    }
  }

  /**
   * After a flush of the entries of `folders` (created by the call that failed) did not succeed, or never ran: removes
   * each that is empty, deepest first, so the next write creates it again and flushes its entry (a later call takes a
   * folder it finds as durable, and an fsync that failed may have dropped the entry's change). One that stays (not
   * empty, or `rmdir` failed) is remembered: the next write under it fsyncs its parent first (docs/FORMAT.md, "New folders").
   */
  #dropFolders(folders: readonly string[]): void {
    for (const folder of removeEmptyFolders(folders)) this.#unsyncedFolders.add(folder);
  }

  /** fsyncs the parent of each folder of {@linkcode NodeFileStorage.#unsyncedFolders} that `file` lies under, before a write there. */
  #syncUnsyncedAbove(file: string): void {
    for (const folder of this.#unsyncedFolders) {
      if (!file.startsWith(folder + sep)) continue;
      this.#syncFolder(dirname(folder));
      this.#unsyncedFolders.delete(folder);
    }
  }

  /** fsyncs a folder so a rename, a new or a removed entry in it survives a crash (unless this store does not fsync). */
  #syncFolder(folder: string): void {
    if (this.#fsync) syncFolder(folder);
  }
}

/** A replace of a commit plan, written and flushed to its temp file, waiting for its rename. */
interface StagedReplace {
  readonly path: string;
  readonly file: string;
  readonly bytes: Uint8Array;
  readonly temp: string;
  /** Open until the flush; -1 once closed. */
  fd: number;
  /** Staged by `stage`: how many bytes it wrote, and the stage's own fsync of them (none when the store does not fsync). */
  readonly size?: number;
  flushed?: Promise<void>;
  /** The folders `stage` created for it when its flush failed: removed once it is dropped ({@linkcode NodeFileStorage.#dropFolders}). */
  folders?: readonly string[];
}

/** Closes the staged files' descriptors. */
function closeStaged(staged: Map<string, StagedReplace>): void {
  for (const entry of staged.values()) {
    if (entry.fd >= 0) bestEffort(() => closeSync(entry.fd));
    entry.fd = -1;
  }
}

/** Closes and removes every temp file still staged: nothing of a plan that stopped is left behind. */
function dropStaged(staged: Map<string, StagedReplace>): void {
  closeStaged(staged);
  for (const entry of staged.values()) bestEffort(() => unlinkSync(entry.temp));
  staged.clear();
}

/** The entry's `lstat`; `"missing"` when nothing is there, `undefined` when a file stands where a folder above it belongs. */
function lstatOf(file: string): Stats | "missing" | undefined {
  try {
    return lstatSync(file);
  } catch (error) {
    if (errno(error) === "ENOENT") return "missing";
    if (errno(error) === "ENOTDIR") return undefined;
    throw error;
  }
}
