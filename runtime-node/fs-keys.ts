/**
 * Storage keys as files under a Node store's root: a key is checked before any path is
 * built (`assertStoragePath`, and the reserved prefix of temporary files), the resolved file
 * must stay under the root, and the keys already checked are remembered, since a held
 * session resolves the same few keys every commit.
 *
 * @module
 */
import { isAbsolute, relative, resolve, sep } from "node:path";
import { assertStoragePath, InvalidInputError } from "../core/mod.ts";

/** Names starting with this are a file store's temporary files: never listed, never a valid key. */
export const TEMP_PREFIX = ".tmp-";

/** How many checked keys a store remembers before it forgets them all. */
const CHECKED_KEYS = 1024;

/** The files of the keys of one root (see the module doc). */
export class StoreKeys {
  readonly #root: string;
  /** Keys already checked, with their files. */
  readonly #files = new Map<string, string>();

  /** `root`: absolute and normalized. */
  constructor(root: string) {
    this.#root = root;
  }

  /**
   * The absolute file of a key (`allowRoot`: `""` names the root, for a folder).
   *
   * @throws {InvalidInputError} for a hostile key, before any path is built.
   */
  file(path: string, allowRoot = false): string {
    const known = allowRoot ? undefined : this.#files.get(path);
    if (known !== undefined) return known;
    assertStoragePath(path, allowRoot);
    if (path.startsWith(TEMP_PREFIX) || path.includes(`/${TEMP_PREFIX}`)) {
      throw new InvalidInputError(`storage path ${JSON.stringify(path)} uses the reserved prefix "${TEMP_PREFIX}"`, { path });
    }
    const file = path === "" ? this.#root : this.#join(path);
    if (path !== "") this.#assertInside(path, file);
    if (!allowRoot) {
      // Bounded: a long-lived store touches many sessions; the checks are cheap to redo.
      if (this.#files.size >= CHECKED_KEYS) this.#files.clear();
      this.#files.set(path, file);
    }
    return file;
  }

  /**
   * The file of a checked key. Where the separator is `/`, the root (absolute, normalized)
   * joined to the key: a key of checked segments (none empty, `.` or `..`) names a path
   * below the root as it stands, so `resolve` would return the same string. Elsewhere
   * (Windows: a segment such as `C:` changes the drive) `resolve` builds it.
   */
  #join(path: string): string {
    if (sep !== "/") return resolve(this.#root, ...path.split("/"));
    return this.#root.endsWith("/") ? this.#root + path : `${this.#root}/${path}`;
  }

  /** Where `#join` resolved the path, that it stayed under the root. @throws {InvalidInputError} otherwise. */
  #assertInside(path: string, file: string): void {
    if (sep === "/") return;
    const inside = relative(this.#root, file);
    if (inside.startsWith(`..${sep}`) || inside === ".." || isAbsolute(inside)) {
      throw new InvalidInputError(`storage path ${JSON.stringify(path)} leaves the store's root`, { path });
    }
  }
}
