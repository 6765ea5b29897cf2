/**
 * The catalog of a Node file store (docs/FORMAT.md "The catalog"): per workspace and place,
 * `catalog/<place>.jsonl` (a compacted snapshot, one line per session, sorted as a listing
 * is: `fs-catalog-snapshot.ts`) and `catalog/<place>.log.jsonl`, where every write of a
 * session's `meta.json` appends one line (`{"name", "meta"}`), so a listing of 10⁴ sessions
 * reads a few files, not 10⁴, and a page of one reads the log and the snapshot's first lines.
 *
 * - **No flush, no read before the write.** A line is one `write` on an `O_APPEND` file, so
 *   writers of different sessions (other processes included) never lose each other's lines;
 *   it is not fsynced: the catalog is rebuilt from `meta.json`, which stays the truth.
 * - **Newest line wins.** The snapshot, then the logs being merged (by name: they are named
 *   by the time they were set aside), then the log, each in file order. One session's
 *   writes are ordered by its writer lock, so its last line is its newest.
 * - **Membership from the folder.** A line of a session whose folder is gone (deleted,
 *   archived) is ignored; a folder without a line is reported `unlisted` (its `meta.json` is read).
 * - **Pages** (`CatalogPage`): the log (kept small) is read whole, the snapshot from its start
 *   or from the cursor's place, found by bisection; membership from the folder's names, which
 *   a handle reads again only when the folder changed (`fs-catalog-members.ts`).
 * - **Compaction** once the log passes 64 KiB: under
 *   `catalog/<place>.compacting` (created exclusively; taken over after a minute), the log is
 *   renamed aside first, then merged into a new snapshot, then removed. A writer that
 *   appended to the renamed log after it was read sees, right after its write, that the
 *   log's name no longer leads to the file it wrote, and writes its line again.
 *
 * @module
 */
import { closeSync, fstatSync, lstatSync, openSync, readdirSync, renameSync, unlinkSync } from "node:fs";
import { StorageError, StoreEntryError } from "../core/errors.ts";
import {
  catalogDocument,
  type CatalogEntry,
  type CatalogListing,
  type CatalogPage,
  cataloguedFolder,
  cataloguedPath,
  isListedName,
  parentPath,
} from "../core/reader.ts";
import { APPEND_FLAGS, READ_FLAGS, type StoreBoundary } from "./fs-boundary.ts";
import { FolderMembers, identityOf } from "./fs-catalog-members.ts";
import { applyFileLines, applyLines, lineNames, mergedSnapshot, snapshotBytes, SortedSnapshot } from "./fs-catalog-snapshot.ts";
import { bestEffort, errno, missingAsUndefined } from "./fs-errors.ts";
import { fill, readWhole, tempBeside, writeAll } from "./fs-io.ts";
import type { StoreKeys } from "./fs-keys.ts";

/**
 * The log is compacted once it is larger than this: a page reads the whole log, so it stays
 * small (a few hundred lines); a compaction copies the snapshot's lines without parsing them.
 */
const LOG_LIMIT = 64 * 1024;
/** How often (in log bytes) a writer looks at whether the log is due for compaction. */
const COMPACT_CHECK_STEP = 16 * 1024;
/** A compaction lock older than this was left by a compactor that died. */
const STALE_COMPACTION_MS = 60_000;
/** How long a rebuild waits for a running compaction of the same catalog. */
const WAIT_FOR_COMPACTION_MS = 10_000;
/** The largest catalog file read (the store's file limit applies to each). */
const MAX_CATALOG_FILE = 256 * 1024 * 1024;

/** The files of one catalog: the folder of sessions `dir` catalogued. */
interface CatalogFiles {
  /** `agents/<a>/workspaces/<w>/catalog` */
  readonly folder: string;
  /** `sessions` or `archived-sessions`. */
  readonly place: string;
  readonly snapshot: string;
  readonly log: string;
  readonly lock: string;
}

function catalogFiles(dir: string): CatalogFiles {
  const place = dir.slice(dir.lastIndexOf("/") + 1);
  const folder = `${parentPath(dir)}/catalog`;
  return { folder, place, snapshot: `${folder}/${place}.jsonl`, log: `${folder}/${place}.log.jsonl`, lock: `${folder}/${place}.compacting` };
}

const encoder = new TextEncoder();

/** The catalog of one Node store (see the module doc). Every method is synchronous, as the store's I/O is. */
export class FileCatalog {
  readonly #boundary: StoreBoundary;
  readonly #keys: StoreKeys;
  readonly #ensureFolder: (dir: string) => void;
  readonly #members = new FolderMembers();

  constructor(boundary: StoreBoundary, keys: StoreKeys, ensureFolder: (dir: string) => void) {
    this.#boundary = boundary;
    this.#keys = keys;
    this.#ensureFolder = ensureFolder;
  }

  /**
   * After `path` was written with `bytes`: a session's `meta.json` gets its line. Best effort: the catalog is rebuilt from
   * `meta.json`. `checked`: the folders the write's call (a commit plan) already found real.
   */
  written(path: string, bytes: Uint8Array, checked?: Set<string>): void {
    const at = cataloguedPath(path);
    if (!at || !isListedName(at.name)) return;
    bestEffort(() => this.#append(at.dir, { name: at.name, meta: catalogDocument(bytes) ?? null }, checked));
  }

  /** After a folder moved to `to`: a session folder moved into place (an archive, a staged fork or import) gets its line. */
  moved(to: string): void {
    const at = cataloguedFolder(to);
    if (!at || !isListedName(at.name)) return;
    bestEffort(() => {
      const bytes = this.#readFile(`${to}/meta.json`);
      if (bytes) this.#append(at.dir, { name: at.name, meta: catalogDocument(bytes) ?? null });
    });
  }

  /**
   * The catalog of the folder of sessions `dir`; `undefined` when `dir` is not one. With
   * `page`, the entries that page needs (`paged`) where the snapshot is sorted: the log's, and
   * the snapshot's first ones after the cursor.
   */
  read(dir: string, page?: CatalogPage): CatalogListing | undefined {
    if (!cataloguedFolder(`${dir}/x`)) return undefined;
    // A compaction may set a file aside or remove it between the folder listing and its read:
    // read again once, then let whatever is still missing be read from its meta.json.
    if (page) return this.#readPage(dir, page, false) ?? this.#readPage(dir, page, true)!;
    return this.#readOnce(dir, false) ?? this.#readOnce(dir, true)!;
  }

  /**
   * Rebuilds the catalog of `dir` from every session's `meta.json`, under the compaction lock:
   * the log is set aside first, so a line written meanwhile lands in a new log and survives.
   *
   * @throws {StorageError}-mapped file errors; a compaction in progress is waited for only by retrying later.
   */
  rebuild(dir: string): number {
    const files = catalogFiles(dir);
    const rebuilt = this.#underLock(files, () => {
      const merged = this.#setLogAside(files);
      const latest = new Map<string, unknown>();
      for (const name of this.#names(dir)) {
        const bytes = this.#readRefused(`${dir}/${name}/meta.json`);
        if (bytes) latest.set(name, catalogDocument(bytes) ?? null);
      }
      // A place without sessions keeps no catalog files.
      if (latest.size > 0) this.#writeSnapshot(files, snapshotBytes(latest));
      else missingAsUndefined(() => unlinkSync(this.#keys.file(files.snapshot)));
      for (const file of merged) bestEffort(() => unlinkSync(this.#keys.file(file)));
      return latest.size;
    }, WAIT_FOR_COMPACTION_MS);
    if (rebuilt === undefined) throw new StorageError(`${files.lock}: a compaction of this catalog is running; try again`, { path: files.lock });
    return rebuilt;
  }

  #readOnce(dir: string, last: boolean): CatalogListing | undefined {
    const files = catalogFiles(dir);
    const latest = new Map<string, unknown>();
    for (const file of this.#catalogFiles(files)) {
      if (!this.#applyFile(file, latest) && !last) return undefined;
    }
    const present = this.#present(dir);
    // In the lines' order, which is the listing's for a sorted snapshot: the caller's sort of
    // 10⁴ entries then costs 0.4 ms, against 4.8 ms in the folder's order (docs/decisions.md
    // "Listing 10⁴ sessions on files").
    const entries: CatalogEntry[] = [];
    for (const [name, meta] of latest) if (present.has(name)) entries.push({ name, meta: meta ?? undefined });
    // As many entries as names only when every name has one: then none is unlisted.
    const unlisted = entries.length === present.size ? [] : [...present].filter((name) => !latest.has(name));
    return { entries, unlisted };
  }

  /** {@linkcode FileCatalog.read} of a page from a sorted snapshot; `undefined` to read again (see `read`). */
  #readPage(dir: string, page: CatalogPage, last: boolean): CatalogListing | undefined {
    const files = catalogFiles(dir);
    const paths = this.#catalogFiles(files);
    const opened = paths[0] === files.snapshot ? this.#boundary.open(files.snapshot, this.#keys.file(files.snapshot), READ_FLAGS, "read") : undefined;
    if (!opened) return this.#readOnce(dir, last);
    try {
      const snapshot = SortedSnapshot.of(opened.fd, opened.info.size);
      // A snapshot a version before catalog version 2 wrote is read whole, until the next compaction sorts it.
      if (!snapshot) return this.#readOnce(dir, last);
      const latest = new Map<string, unknown>();
      for (const file of paths.slice(1)) {
        const bytes = this.#readFile(file);
        if (!bytes && !last) return undefined;
        if (bytes) applyLines(bytes, latest);
      }
      const present = this.#present(dir);
      const entries: CatalogEntry[] = [];
      for (const [name, meta] of latest) if (present.has(name)) entries.push({ name, meta: meta ?? undefined });
      for (const { name, meta } of snapshot.page(page, (name) => present.has(name) && !latest.has(name))) entries.push({ name, meta });
      const readNames = () => lineNames(readWhole(opened.fd, opened.info.size, MAX_CATALOG_FILE, (size) => tooLarge(files.snapshot, size)));
      const unlisted = this.#members.withoutLine(dir, identityOf(fstatSync(opened.fd, { bigint: true })), readNames).filter((name) => !latest.has(name));
      return { entries, unlisted, paged: true };
    } finally {
      closeSync(opened.fd);
    }
  }

  /** The catalog's files of one place, in the order their lines apply: snapshot, logs set aside (oldest first), log. */
  #catalogFiles(files: CatalogFiles): string[] {
    const names = this.#list(files.folder);
    const aside = names.filter((name) => name.startsWith(`${files.place}.merging-`) && name.endsWith(".jsonl")).sort();
    return [
      ...(names.includes(`${files.place}.jsonl`) ? [files.snapshot] : []),
      ...aside.map((name) => `${files.folder}/${name}`),
      ...(names.includes(`${files.place}.log.jsonl`) ? [files.log] : []),
    ];
  }

  /** The session folders of `dir` that can be listed, as this handle last read them unless the folder changed since (`fs-catalog-members.ts`). */
  #present(dir: string): ReadonlySet<string> {
    return this.#members.names(dir, this.#boundary.listedFolder(dir) === "missing" ? undefined : this.#keys.file(dir));
  }

  /** The session folders of `dir` that can be listed. */
  #names(dir: string): string[] {
    return this.#list(dir).filter(isListedName);
  }

  #list(dir: string): string[] {
    const folder = this.#keys.file(dir);
    if (this.#boundary.listedFolder(dir) === "missing") return [];
    return missingAsUndefined(() => readdirSync(folder)) ?? [];
  }

  /**
   * {@linkcode FileCatalog.#readFile}, with an entry the store refuses (a link, a FIFO, a folder
   * for the file or the session) read as no file: that session gets no entry, a listing reads
   * its `meta.json` and reports it, and `verify` reports it as `unsafe_entry`.
   */
  #readRefused(path: string): Uint8Array | undefined {
    try {
      return this.#readFile(path);
    } catch (error) {
      if (error instanceof StoreEntryError) return undefined;
      throw error;
    }
  }

  #readFile(path: string): Uint8Array | undefined {
    const file = this.#keys.file(path);
    const opened = this.#boundary.open(path, file, READ_FLAGS, "read");
    if (!opened) return undefined;
    try {
      return readWhole(opened.fd, opened.info.size, MAX_CATALOG_FILE, (size) => tooLarge(path, size));
    } finally {
      closeSync(opened.fd);
    }
  }

  /** Applies the lines of the catalog file `path` to `latest`; `false` when it is missing. */
  #applyFile(path: string, latest: Map<string, unknown>): boolean {
    const opened = this.#boundary.open(path, this.#keys.file(path), READ_FLAGS, "read");
    if (!opened) return false;
    try {
      if (opened.info.size > MAX_CATALOG_FILE) throw tooLarge(path, opened.info.size);
      applyFileLines(opened.fd, latest, MAX_CATALOG_FILE, (size) => tooLarge(path, size));
      return true;
    } finally {
      closeSync(opened.fd);
    }
  }

  /** Appends one line to the log of `dir`, again if a compaction set the file aside meanwhile; then compacts when due. */
  #append(dir: string, line: { name: string; meta: unknown }, checked?: Set<string>): void {
    const files = catalogFiles(dir);
    const bytes = encoder.encode(`${JSON.stringify(line)}\n`);
    const file = this.#keys.file(files.log);
    for (let attempt = 0; attempt < 8; attempt++) {
      let opened = this.#boundary.open(files.log, file, APPEND_FLAGS, "write", { mode: 0o600, checked });
      if (!opened) {
        this.#ensureFolder(files.folder);
        opened = this.#boundary.open(files.log, file, APPEND_FLAGS, "write", { mode: 0o600 });
        if (!opened) continue;
      }
      let written;
      try {
        writeAll(opened.fd, bytes, null);
        written = fstatSync(opened.fd);
      } finally {
        closeSync(opened.fd);
      }
      // Still the log? Else a compaction renamed it aside, maybe after reading it: write the line again.
      const now = missingAsUndefined(() => lstatSync(file));
      if (!now || now.ino !== written.ino || now.dev !== written.dev) continue;
      if (Math.floor((written.size - bytes.length) / COMPACT_CHECK_STEP) !== Math.floor(written.size / COMPACT_CHECK_STEP)) {
        this.#compactIfDue(dir, files, written.size);
      }
      return;
    }
  }

  #compactIfDue(dir: string, files: CatalogFiles, logSize: number): void {
    if (logSize <= LOG_LIMIT) return;
    this.#underLock(files, () => {
      const merged = this.#setLogAside(files);
      const updates = new Map<string, unknown>();
      for (const file of merged) {
        const bytes = this.#readFile(file);
        if (bytes) applyLines(bytes, updates);
      }
      this.#writeSnapshot(files, mergedSnapshot(this.#readFile(files.snapshot), updates, new Set(this.#names(dir))));
      for (const file of merged) bestEffort(() => unlinkSync(this.#keys.file(file)));
    });
  }

  /** Renames the log aside (so new lines start a new one); returns every log set aside, older ones left by a crash included. */
  #setLogAside(files: CatalogFiles): string[] {
    const aside = `${files.folder}/${files.place}.merging-${String(Date.now()).padStart(13, "0")}-${crypto.randomUUID().slice(0, 8)}.jsonl`;
    missingAsUndefined(() => renameSync(this.#keys.file(files.log), this.#keys.file(aside)));
    return this.#catalogFiles(files).filter((file) => file !== files.snapshot && file !== files.log);
  }

  /** Writes the snapshot whole (temp file, rename; no flush). */
  #writeSnapshot(files: CatalogFiles, bytes: Uint8Array): void {
    this.#ensureFolder(files.folder);
    const target = this.#keys.file(files.snapshot);
    const temp = tempBeside(target);
    fill(openSync(temp, "wx", 0o600), bytes, false);
    try {
      renameSync(temp, target);
    } catch (error) {
      bestEffort(() => unlinkSync(temp));
      throw error;
    }
  }

  /** Runs `body` holding `<place>.compacting` (created exclusively; a lock older than a minute is taken over); `undefined` when another holds it. */
  #underLock<T>(files: CatalogFiles, body: () => T, waitMs = 0): T | undefined {
    this.#ensureFolder(files.folder);
    const lock = this.#keys.file(files.lock);
    const until = Date.now() + waitMs;
    let fd: number | undefined;
    while (fd === undefined) {
      try {
        fd = openSync(lock, "wx", 0o600);
      } catch (error) {
        if (errno(error) !== "EEXIST") throw error;
        const since = missingAsUndefined(() => lstatSync(lock))?.mtimeMs;
        if (since === undefined || Date.now() - since >= STALE_COMPACTION_MS) {
          bestEffort(() => unlinkSync(lock));
        } else if (Date.now() < until) {
          // The store's I/O is synchronous by design (NodeFileStorage): so is this wait.
          Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
        } else {
          return undefined;
        }
      }
    }
    if (fd === undefined) return undefined;
    try {
      writeAll(fd, encoder.encode(`${JSON.stringify({ pid: process.pid, at: new Date().toISOString() })}\n`), 0);
      closeSync(fd);
      return body();
    } finally {
      bestEffort(() => unlinkSync(lock));
    }
  }
}

const tooLarge = (path: string, size: number) => new Error(`${path}: a catalog file of ${size} bytes is over the limit`);
