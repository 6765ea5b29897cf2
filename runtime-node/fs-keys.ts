/**
 * Storage keys as files under a Node store's root: a key is checked before any path is
 * built (`assertStoragePath`, and the reserved prefix of temporary files), the resolved file
 * must stay under the root, and the keys already checked are remembered, since a held
 * session resolves the same few keys every commit.
 *
 * @module
 */
import { resolve, sep } from "node:path";
import { InvalidInputError } from "../core/errors.ts";
import { assertStoragePath } from "../core/reader.ts";

/** Names starting with this are a file store's temporary files: never listed, never a valid key. */
export const TEMP_PREFIX = ".tmp-";

/** How many checked keys a store remembers before it forgets them all. */
const CHECKED_KEYS = 1024;

/** The files of the keys of one root (see the module doc). */
export class StoreKeys {
  readonly #root: string;
  /** The root with a separator at its end: every file under it starts with it. */
  readonly #rootPrefix: string;
  /** Keys already checked, with their files. */
  readonly #files = new Map<string, string>();

  /** `root`: absolute and normalized. */
  constructor(root: string) {
    this.#root = root;
    this.#rootPrefix = root.endsWith(sep) ? root : `${root}${sep}`;
  }

  /**
   * The file of a checked key. With `/` as the separator, a key (no empty, `.` or `..`
   * segment, no backslash) after the resolved root is already resolved: the two strings
   * joined, not two path resolutions per key (a `show` of a long session asks thousands).
   * Elsewhere the path module resolves it (a drive in a segment would leave the root).
   */
  #under(path: string): string {
    return sep === "/" ? this.#rootPrefix + path : resolve(this.#root, ...path.split("/"));
  }

  /**
   * The absolute file of a key (`allowRoot`: `""` names the root, for a folder).
   *
   * @throws {InvalidInputError} for a hostile key, before any path is built.
   */
  file(path: string, allowRoot = false): string {
    // A key other than "" is checked the same with or without `allowRoot`: a folder's key (an open's `segments/`) is remembered too.
    const known = path === "" ? undefined : this.#files.get(path);
    if (known !== undefined) return known;
    assertStoragePath(path, allowRoot);
    if (path.startsWith(TEMP_PREFIX) || path.includes(`/${TEMP_PREFIX}`)) {
      throw new InvalidInputError(`storage path ${JSON.stringify(path)} uses the reserved prefix "${TEMP_PREFIX}"`, { path });
    }
    const file = path === "" ? this.#root : this.#under(path);
    if (file !== this.#root && !file.startsWith(this.#rootPrefix)) {
      throw new InvalidInputError(`storage path ${JSON.stringify(path)} leaves the store's root`, { path });
    }
    if (path !== "") {
      // Bounded: a long-lived store touches many sessions; the checks are cheap to redo.
      if (this.#files.size >= CHECKED_KEYS) this.#files.clear();
      this.#files.set(path, file);
    }
    return file;
  }
}
