/**
 * The files a Node store keeps open for appends (`NodeFileStorage.pinFile`): the
 * handle once opened and the size this store wrote the file to, so the next append is one
 * write and one fsync. Any other change to a pinned file, or to a folder above it, closes
 * its handle first; the next append opens it again, with every check.
 *
 * @module
 */
import { closeSync } from "node:fs";
import { bestEffort } from "./fs-errors.ts";
import { isWithin } from "../core/internal.ts";

/** One pinned file: its handle (once an append opened it) and the size this store wrote it to. */
export interface PinnedFile {
  fd: number | undefined;
  size: number;
}

/** The pinned files of one store, by key. */
export class PinnedFiles {
  readonly #pinned = new Map<string, PinnedFile>();

  /** The pin of `path`, if it is pinned. */
  get(path: string): PinnedFile | undefined {
    return this.#pinned.get(path);
  }

  /** Pins `path` (its handle is opened by the next append). */
  pin(path: string): void {
    if (!this.#pinned.has(path)) this.#pinned.set(path, { fd: undefined, size: 0 });
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

  #close(matches: (path: string) => boolean, forget: boolean): void {
    for (const [path, pinned] of this.#pinned) {
      if (!matches(path)) continue;
      const fd = pinned.fd;
      if (fd !== undefined) bestEffort(() => closeSync(fd));
      pinned.fd = undefined;
      if (forget) this.#pinned.delete(path);
    }
  }
}
