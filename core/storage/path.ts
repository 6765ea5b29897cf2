import { InvalidInputError } from "../errors.ts";

/**
 * Checks a storage key: relative, `/`-separated, no empty, `.` or `..` segment.
 * Every backend calls it so that no key can leave the store's root.
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
  if (typeof path !== "string" || path.length === 0 || path.includes("\0") || path.includes("\\")) {
    throw new InvalidInputError(`storage path ${JSON.stringify(path)} is not a relative '/'-separated path`, { path });
  }
  for (const segment of path.split("/")) {
    if (segment === "" || segment === "." || segment === "..") {
      throw new InvalidInputError(`storage path ${JSON.stringify(path)} has an empty, '.' or '..' segment`, { path });
    }
  }
}

/** The parent folder of a storage path (`""` for a top-level entry). */
export function parentPath(path: string): string {
  const i = path.lastIndexOf("/");
  return i < 0 ? "" : path.slice(0, i);
}
