import { InvalidInputError } from "../errors.ts";
import { escapedExcerpt } from "../schema/excerpt.ts";

/** The longest segment of a key, in UTF-8 bytes: the usual file-name limit (ids are at most 128 characters). */
const MAX_SEGMENT_BYTES = 255;
const utf8 = new TextEncoder();

/**
 * Checks a storage key: relative, `/`-separated, no empty, `.` or `..` segment, no control
 * character (`\0`, a newline, DEL…) or backslash, no segment over 255 UTF-8 bytes. Every
 * backend calls it so that no key can leave the store's root, and so that a key means the
 * same name on every backend: on Node it is a path under the root, in IndexedDB (and in a
 * database table) it is only a name, and neither may read more into it.
 *
 * @example
 * ```ts
 * assertStoragePath("agents/a1/agent.jsonc"); // ok
 * assertStoragePath("../etc/passwd"); // throws InvalidInputError
 * ```
 * @throws {InvalidInputError} when the path could escape the root or is malformed.
 */
export function assertStoragePath(path: string, allowRoot = false): void {
  if (allowRoot && path === "") return;
  if (typeof path !== "string" || path.length === 0 || hasRefusedCharacter(path)) {
    throw new InvalidInputError(
      `storage path ${typeof path === "string" ? escapedExcerpt(path, 80) : String(path)} is not a relative '/'-separated path of printable characters`,
      { path },
    );
  }
  // Segment by segment between the slashes, without the array and strings a split would make (every write of every commit checks its paths).
  for (let start = 0; start <= path.length;) {
    let end = path.indexOf("/", start);
    if (end < 0) end = path.length;
    const length = end - start;
    if (length === 0 || (path.charCodeAt(start) === 0x2e && (length === 1 || (length === 2 && path.charCodeAt(start + 1) === 0x2e)))) {
      throw new InvalidInputError(`storage path ${escapedExcerpt(path, 80)} has an empty, '.' or '..' segment`, { path });
    }
    if (length * 3 > MAX_SEGMENT_BYTES && utf8.encode(path.slice(start, end)).length > MAX_SEGMENT_BYTES) {
      throw new InvalidInputError(`storage path ${escapedExcerpt(path, 80)} has a segment of more than ${MAX_SEGMENT_BYTES} bytes`, { path });
    }
    start = end + 1;
  }
}

/**
 * Whether `path` holds a control character (`\0`…`\x1f`, DEL) or a backslash. A loop, not a
 * character-class pattern: a pattern is compiled on its first use, inside a process's first
 * storage call.
 */
function hasRefusedCharacter(path: string): boolean {
  for (let i = 0; i < path.length; i++) {
    const code = path.charCodeAt(i);
    if (code < 0x20 || code === 0x7f || code === 0x5c) return true;
  }
  return false;
}

/**
 * Whether the key `path` is the key `folder` or lies below it (every key lies below the
 * root, `""`). A move into itself, a change that reaches a pinned file and a folder's
 * removal all ask this.
 *
 * @example
 * ```ts
 * isWithin("agents/a1/agent.jsonc", "agents/a1"); // true
 * isWithin("agents/a10", "agents/a1"); // false
 * ```
 */
export function isWithin(path: string, folder: string): boolean {
  return folder === "" || path === folder || path.startsWith(`${folder}/`);
}

/** The parent folder of a storage path (`""` for a top-level entry). */
export function parentPath(path: string): string {
  const i = path.lastIndexOf("/");
  return i < 0 ? "" : path.slice(0, i);
}
