/**
 * Every file under a folder of a {@linkcode StoragePort}, found through the port alone (no
 * backend has a recursive listing): what a whole-folder removal takes with it, listed so
 * that nothing is deleted without being named.
 *
 * @module
 */
import type { StoragePort } from "./port.ts";

/**
 * Every file under `dir`, sorted as the port lists them: a name that reads as a file is one,
 * any other is listed as a folder.
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 *
 * const storage = new MemoryStorage();
 * await storage.replace("a/b/c.json", new TextEncoder().encode("{}"));
 * await filesUnder(storage, "a"); // ["a/b/c.json"]
 * ```
 */
export async function filesUnder(storage: StoragePort, dir: string): Promise<string[]> {
  const found: string[] = [];
  for (const name of await storage.list(dir)) {
    const path = `${dir}/${name}`;
    // A backend may refuse to read a folder as a file (Node) or find no file there (a key-value store).
    if (await storage.readTail(path, 0).catch(() => undefined)) found.push(path);
    else found.push(...(await filesUnder(storage, path)));
  }
  return found;
}
