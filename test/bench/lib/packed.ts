/**
 * The package as a user installs it: `npm pack` (its `prepack` is `npm run build`, tsc's
 * `dist/` and the CLI's bundle, a few seconds) into a folder, unpacked there, with the
 * repository's `node_modules` linked beside it for its dependencies. Case 9 times its CLI;
 * case 1 opens sessions through its `dist/runtime-node/mod.js`, what `sessionfold/node`
 * resolves to (docs/decisions.md "What the cold row loads").
 *
 * @module
 */
import { execFileSync } from "node:child_process";
import { mkdir, symlink } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));

/** What `npm pack --json` says of the tarball. */
export interface PackInfo {
  readonly filename: string;
  readonly size: number;
  readonly unpackedSize: number;
  readonly entryCount: number;
}

/** A packed and unpacked package: the tarball's figures and the unpacked package's folder. */
export interface PackedPackage {
  readonly info: PackInfo;
  /** The unpacked package (`<dir>/installed/package`), its dependencies linked from the repository. */
  readonly dir: string;
}

/** Packs the repository into `dir`, unpacks the tarball there and links its dependencies. */
export async function packPackage(dir: string): Promise<PackedPackage> {
  await mkdir(dir, { recursive: true });
  const out = execFileSync("npm", ["pack", "--json", "--pack-destination", dir], { cwd: ROOT, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  const [info] = JSON.parse(out.slice(out.indexOf("["))) as PackInfo[];
  if (!info) throw new Error(`npm pack printed no package: ${out}`);
  const unpacked = join(dir, "installed");
  await mkdir(unpacked);
  execFileSync("tar", ["-xzf", join(dir, info.filename), "-C", unpacked]);
  const pkg = join(unpacked, "package");
  await symlink(join(ROOT, "node_modules"), join(pkg, "node_modules"), "dir");
  return { info, dir: pkg };
}
