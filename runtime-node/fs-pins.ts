/**
 * The files a Node store keeps open (`NodeFileStorage.pinFile`): for appends, the handle
 * once opened and the size this store wrote the file to, so the next append is one write
 * and one fsync; for tail reads (a held lease's `writer.lock`, read before every commit),
 * a read handle and the identity (device, inode) of the file it was opened on, so the next
 * tail read is one `lstat` of the path and one read. Any other change to a pinned file, or
 * to a folder above it, through this store closes its handles first; the next use opens it
 * again, with every check.
 *
 * @module
 */
import { closeSync } from "node:fs";
import { bestEffort } from "./fs-errors.ts";
import { isWithin } from "../core/reader.ts";

/** A read handle of a pinned file and the file it was opened on. */
export interface PinnedReader {
  readonly fd: number;
  readonly dev: number;
  readonly ino: number;
}

/** One pinned file: its append handle (once an append opened it), the size this store wrote it to, and its read handle (once a tail read opened it). */
export interface PinnedFile {
  fd: number | undefined;
  size: number;
  reader: PinnedReader | undefined;
}

/** The pinned files of one store, by key. */
export class PinnedFiles {
  readonly #pinned = new Map<string, PinnedFile>();

  /** The pin of `path`, if it is pinned. */
  get(path: string): PinnedFile | undefined {
    return this.#pinned.get(path);
  }

  /** Pins `path` (its handles are opened by the next append or tail read). */
  pin(path: string): void {
    if (!this.#pinned.has(path)) this.#pinned.set(path, { fd: undefined, size: 0, reader: undefined });
  }

  /** Closes and forgets the pin of `path`. */
  unpin(path: string): void {
    this.#close((pinned) => pinned === path, true);
  }

  /** Before a change to `path` other than an append: a pinned handle on it or below it is closed. */
  closeBelow(path: string): void {
    if (this.#pinned.size > 0) this.#close((pinned) => isWithin(pinned, path), false);
  }

  /** Closes the handles whose key `matches`, keeping the pins (after a failed append). */
  closeWhere(matches: (path: string) => boolean): void {
    this.#close(matches, false);
  }

  /** Closes the read handle of `pinned` (the path names another file now), keeping the pin. */
  dropReader(pinned: PinnedFile): void {
    const reader = pinned.reader;
    pinned.reader = undefined;
    if (reader) bestEffort(() => closeSync(reader.fd));
  }

  #close(matches: (path: string) => boolean, forget: boolean): void {
    for (const [path, pinned] of this.#pinned) {
      if (!matches(path)) continue;
      const fd = pinned.fd;
      if (fd !== undefined) bestEffort(() => closeSync(fd));
      pinned.fd = undefined;
      this.dropReader(pinned);
      if (forget) this.#pinned.delete(path);
    }
  }
}
