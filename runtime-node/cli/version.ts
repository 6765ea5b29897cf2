/**
 * The package's version for `sessionfold --version`, read from its own `package.json`:
 * the nearest one above this module that is sessionfold's (the same file from the sources
 * and from the compiled `dist/`, where this module sits one folder deeper).
 *
 * @module
 */
import { readFileSync } from "node:fs";

/**
 * The `version` of the `sessionfold` package this module belongs to.
 *
 * @example
 * ```ts
 * console.log(`sessionfold ${packageVersion()}`); // "sessionfold 0.1.0"
 * ```
 *
 * @throws {Error} when no sessionfold `package.json` is found above this module.
 */
export function packageVersion(): string {
  for (let folder = new URL("./", import.meta.url);; folder = new URL("../", folder)) {
    const manifest = readManifest(new URL("package.json", folder));
    if (manifest?.name === "sessionfold" && typeof manifest.version === "string") return manifest.version;
    if (new URL("../", folder).href === folder.href) throw new Error(`no package.json of sessionfold above ${import.meta.url}`);
  }
}

function readManifest(file: URL): { name?: unknown; version?: unknown } | undefined {
  try {
    return JSON.parse(readFileSync(file, "utf8")) as { name?: unknown; version?: unknown };
  } catch {
    // Missing or not JSON: not the package's manifest, look further up.
    return undefined;
  }
}
