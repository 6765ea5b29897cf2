/**
 * The system calls of a Node file store, each with the care durability needs: whole reads
 * of a file that may still grow, tail reads, writes that may be short, fills of a fresh
 * temporary file, folder fsyncs. Synchronous on purpose (see `NodeFileStorage`), but for
 * {@linkcode flushTogether}: fsyncs the disk may confirm together.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { closeSync, fchmodSync, fsync, fsyncSync, lstatSync, openSync, readSync, readvSync, rmdirSync, writeSync } from "node:fs";
import { dirname, join } from "node:path";
import { concatBytes, type FileTail, type ReadRequest } from "../core/reader.ts";
import { FOLDER_FLAGS, kindOf } from "./fs-boundary.ts";
import { errno, missingAsUndefined } from "./fs-errors.ts";
import { TEMP_PREFIX } from "./fs-keys.ts";

/** How many bytes a whole read asks for at a time once the file has grown past its `fstat` size. */
const GROWTH_STEP = 64 * 1024;
const growthScratch = new Uint8Array(GROWTH_STEP);

/**
 * Every byte of the open file `fd`, whose `fstat` gave `size`: it may still grow while it is
 * read (an append), and is read to its end in steps, never past `max` bytes.
 *
 * @throws the result of `tooLarge(bytes)` once the file is over `max`.
 */
export function readWhole(fd: number, size: number, max: number, tooLarge: (bytes: number) => Error): Uint8Array {
  if (size > max) throw tooLarge(size);
  // Every byte is read over before it is returned: no zero-filling first (a buffer of its own, never pooled).
  const bytes = new Uint8Array(Buffer.allocUnsafeSlow(size).buffer, 0, size);
  // One system call for the usual case: the file's bytes, and in the same call the first
  // bytes appended since fstat, into one scratch buffer (the calls are synchronous, so it is
  // never shared). A read of a regular file that returns less than it asked for has reached
  // the file's end, so a file that did not grow costs this one read.
  const got = readvSync(fd, [bytes, growthScratch], 0);
  return got === size ? bytes : readRest(fd, bytes, got, max, tooLarge);
}

/**
 * {@linkcode readWhole} once its first read returned other than the `fstat` size: a short read (the file shrank, or
 * the read stopped early) or bytes appended since. Apart: a file that did not change while read never runs it.
 */
function readRest(fd: number, bytes: Uint8Array, got: number, max: number, tooLarge: (bytes: number) => Error): Uint8Array {
  const size = bytes.length;
  let grown = Math.max(0, got - size);
  if (got < size) {
    while (got < size) {
      const read = readSync(fd, bytes, got, size - got, got);
      if (read === 0) return bytes.slice(0, got); // it shrank since fstat (a copy: the rest of the buffer was never filled)
      got += read;
    }
    grown = readSync(fd, growthScratch, 0, GROWTH_STEP, got);
    got += grown;
  }
  if (grown === 0) return bytes;
  // Bytes appended since fstat are read too, as a whole-file read would, in steps up to the limit.
  const pieces = [bytes];
  for (;;) {
    if (got > max) throw tooLarge(got);
    pieces.push(growthScratch.slice(0, grown));
    if (grown < GROWTH_STEP) break;
    grown = readSync(fd, growthScratch, 0, GROWTH_STEP, got);
    if (grown === 0) break;
    got += grown;
  }
  return concatBytes(pieces, got);
}

/**
 * The last `maxBytes` bytes of the open file `fd` of `size` bytes (fewer when it shrank since `fstat`), read into `into`
 * when it is large enough (then a view of it), else into bytes of their own.
 */
export function readTailOf(fd: number, size: number, maxBytes: number, into?: Uint8Array): FileTail {
  const length = Math.min(size, Math.max(0, Math.floor(maxBytes)));
  // Every byte is read over before it is returned, as in readWhole: no zero-filling first (`show` reads 2,000 tails).
  const bytes = into && into.length >= length ? into.subarray(0, length) : new Uint8Array(Buffer.allocUnsafeSlow(length).buffer, 0, length);
  for (let got = 0; got < length;) {
    const bytesRead = readSync(fd, bytes, got, length - got, size - length + got);
    // The file shrank since fstat: return what was there (a copy: the rest of the buffer was never filled).
    if (bytesRead === 0) return { bytes: bytes.slice(0, got), size: size - length + got };
    got += bytesRead;
  }
  return { bytes, size };
}

/** The largest buffer the tails of one call share ({@linkcode TailSlab}); a longer tail gets bytes of its own. */
const TAIL_SLAB_BYTES = 256 * 1024;

/**
 * Buffers the tails one call reads share (`NodeFileStorage.readMany`): each tail is read into
 * the free end of a buffer of up to {@linkcode TAIL_SLAB_BYTES} and returned as a view of it, so
 * `show`'s 16 tails of 4 KiB per call cost one buffer, not 16 (each `ArrayBuffer` costs a
 * fresh process a few µs to make and its garbage collection more to free). A buffer is no larger
 * than what the call's tails still ask for, so a call of one tail gets one of that tail's size.
 */
export class TailSlab {
  #bytes = new Uint8Array(0);
  #used = 0;
  /** What the call's shared tails not yet read ask for. */
  #left = 0;

  constructor(requests: readonly ReadRequest[]) {
    for (const request of requests) this.#left += shared(request.tailBytes);
  }

  /** The bytes to read a tail of at most `maxBytes` into ({@linkcode readTailOf}'s `into`), or `undefined` for one too long to share. */
  room(maxBytes: number): Uint8Array | undefined {
    const wanted = shared(maxBytes);
    if (wanted === 0) return undefined;
    if (this.#bytes.length - this.#used < wanted) {
      this.#bytes = new Uint8Array(Buffer.allocUnsafeSlow(Math.min(TAIL_SLAB_BYTES, Math.max(wanted, this.#left))).buffer);
      this.#used = 0;
    }
    this.#left -= wanted;
    return this.#bytes.subarray(this.#used);
  }

  /** Keeps `bytes`, a tail just read into {@linkcode TailSlab.room}'s bytes (or into bytes of its own), from the next tail. */
  took(bytes: Uint8Array): void {
    if (bytes.buffer === this.#bytes.buffer) this.#used = bytes.byteOffset + bytes.length;
  }
}

/** The bytes a tail of at most `maxBytes` takes of a {@linkcode TailSlab}: 0 for none (no tail, or one too long to share). */
function shared(maxBytes: number | undefined): number {
  return typeof maxBytes === "number" && maxBytes >= 1 && maxBytes <= TAIL_SLAB_BYTES ? Math.floor(maxBytes) : 0;
}

/**
 * A temp file beside `file`: same folder, so the rename is atomic; the prefix never parses as an id or a segment.
 * 16 hex digits of a `randomUUID` (60 random bits; it is created with `wx`, so a clash fails, never overwrites): Node
 * draws those from a cached batch, where `randomBytes(8)` runs a job of its own, about 5 µs for each file a commit writes.
 * The global `crypto`'s, not `node:crypto`'s (the same function): a process that never writes never loads either.
 */
export function tempBeside(file: string): string {
  return join(dirname(file), `${TEMP_PREFIX}${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`);
}

/** Fills a file just created with `wx`: mode 0600 whatever the umask, every byte, fsync when `sync`, close. */
export function fill(fd: number, bytes: Uint8Array, sync: boolean): void {
  try {
    fchmodSync(fd, 0o600);
    writeAll(fd, bytes, 0);
    if (sync) fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** The first fsync of {@linkcode flushTogether} that failed: its error and its file (`undefined`: one of the folders). */
export interface FlushFailure<T> {
  readonly error: unknown;
  readonly file: T | undefined;
}

/**
 * fsyncs every open file of `files` and every folder of `folders` at once, each in the thread pool, and resolves when
 * all are durable: the disk confirms them together instead of one after the other (a folder that cannot be fsynced is
 * skipped, as by {@linkcode syncFolder}). Rejects with the first failure ({@linkcode FlushFailure}) once every fsync
 * has ended, so no descriptor is closed under a running one.
 */
export async function flushTogether<T extends { readonly fd: number }>(files: readonly T[], folders: readonly string[]): Promise<void> {
  const opened: number[] = [];
  const flush = (fd: number, folder: boolean) =>
    new Promise<void>((done, fail) => fsync(fd, (error) => error && !(folder && errno(error) === "EINVAL") ? fail(error) : done()));
  try {
    for (const folder of folders) {
      const fd = missingAsUndefined(() => openSync(folder, FOLDER_FLAGS));
      if (fd !== undefined) opened.push(fd);
    }
    const flushed = await Promise.allSettled([...files.map((file) => flush(file.fd, false)), ...opened.map((fd) => flush(fd, true))]);
    const index = flushed.findIndex((result) => result.status === "rejected");
    if (index >= 0) throw { error: (flushed[index] as PromiseRejectedResult).reason, file: files[index] } satisfies FlushFailure<T>;
  } catch (error) {
    throw isFlushFailure<T>(error) ? error : { error, file: undefined } satisfies FlushFailure<T>;
  } finally {
    for (const fd of opened) closeSync(fd);
  }
}

function isFlushFailure<T>(value: unknown): value is FlushFailure<T> {
  return typeof value === "object" && value !== null && "error" in value && "file" in value;
}

/** Writes every byte of `bytes` (a write may be short), at `position` or at the end for `null`. */
export function writeAll(fd: number, bytes: Uint8Array, position: number | null): void {
  for (let done = 0; done < bytes.length;) {
    done += writeSync(fd, bytes, done, bytes.length - done, position === null ? null : position + done);
  }
}

/** fsyncs a folder so a rename, a new or a removed entry in it survives a crash. */
export function syncFolder(folder: string): void {
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

/** Removes each of `folders` that is empty, deepest first (a folder's path is longer than its parent's); returns those that stay (not empty, or `rmdir` failed). */
export function removeEmptyFolders(folders: readonly string[]): string[] {
  const kept: string[] = [];
  for (const folder of [...folders].sort((a, b) => b.length - a.length)) {
    try {
      rmdirSync(folder);
    } catch (error) {
      if (errno(error) !== "ENOENT") kept.push(folder);
    }
  }
  return kept;
}

/** What stands at `file`, for a message (its entry is not followed). */
export function kindOfEntry(file: string): string {
  try {
    return kindOf(lstatSync(file));
  } catch {
    return "an entry that vanished";
  }
}
