/**
 * The paths a user gives the CLI, checked before anything is read or written there, so that a
 * mistake is a typed error naming the path given and what was found (docs/CLI.md "Files the
 * CLI writes"): the store's folder (`--root`, `SESSIONFOLD_HOME`) and a file to write
 * (`--out`), which may never lie inside the store. Links are followed, as for any path a user
 * names; the store's own entries are checked by its boundary (`runtime-node/fs-boundary.ts`).
 *
 * @module
 */
import { constants } from "node:fs";
import { access, lstat, realpath, stat } from "node:fs/promises";
import { basename, dirname, join, resolve, sep } from "node:path";
import { InvalidInputError, NotFoundError, type SessionfoldError } from "../../core/errors.ts";
import { kindOf } from "../fs-boundary.ts";
import { errno, storageErrorFromFs } from "../fs-errors.ts";

/**
 * The errno codes of a write refused for lack of permission on the path (a read-only file
 * system included): the user's choice of path, bad input, not a failure of the store
 * (docs/CLI.md "Files the CLI writes").
 */
const PERMISSION_DENIED: Readonly<Record<string, string>> = {
  EACCES: "permission denied",
  EPERM: "permission denied",
  EROFS: "a read-only file system",
};

/** A folder that is not there: the outermost one missing, under folders that are. */
interface MissingFolder {
  readonly missing: string;
}

/**
 * Whether the folder `path` is there (`true`) or missing (a {@linkcode MissingFolder}).
 *
 * @throws {InvalidInputError} (from `notAFolder(at, found)`) when `path`, or a folder on the
 * way to it, is something else: a regular file, a device…
 */
async function folderAt(path: string, notAFolder: (at: string, found: string) => SessionfoldError): Promise<true | MissingFolder> {
  let info;
  try {
    info = await stat(path);
  } catch (error) {
    const code = errno(error);
    if (code === "ENOENT") {
      // The outermost missing folder is the one the user must create (or mistyped).
      const parent = dirname(path);
      const above = parent === path ? true : await folderAt(parent, notAFolder);
      return above === true ? { missing: path } : above;
    }
    // Something on the way is no folder: the first such ancestor is what to name.
    if (code === "ENOTDIR") return await folderAt(dirname(path), notAFolder);
    throw new InvalidInputError(`${path}: cannot be looked at (${code ?? (error as Error).message})`, { path });
  }
  if (!info.isDirectory()) throw notAFolder(path, kindOf(info));
  return true;
}

/**
 * Whether the store's folder exists: `false` when nothing is there yet (a writer creates it).
 *
 * @example
 * ```ts
 * if (!(await storeFolderExists("/tmp/store"))) console.log("an empty store");
 * ```
 * @throws {InvalidInputError} when a file (or anything but a folder) is where the store's folder, or a folder above it, belongs; nothing was read or written.
 */
export async function storeFolderExists(root: string): Promise<boolean> {
  const found = await folderAt(root, (at, kind) => {
    const where = at === root ? `${kind} where the store's folder belongs` : `${kind} at ${at} where a folder belongs`;
    return new InvalidInputError(`the store ${root}: found ${where}; nothing was read or written`, { root, path: at, found: kind, expected: "a folder" });
  });
  return found === true;
}

/**
 * Checks the file a command was told to write (`--out`, already absolute) before anything is
 * written: never inside the store's folder `store` (the target's folder resolved through its
 * links and `..` as the system opens it, so no spelling reaches in), in a folder that exists
 * and this user may write in, and not itself a folder. `out` keeps its `..`
 * ({@linkcode absoluteAsOpened}): folded as text, it names another file than the one written.
 *
 * @example
 * ```ts
 * await checkOutTarget("/tmp/s1.json", "/home/me/.sessionfold");
 * ```
 * @throws {InvalidInputError} when the target is inside the store, is a folder, a file stands where its folder belongs,
 * or its folder may not be written in by this user (permission denied, a read-only file system).
 * @throws {NotFoundError} when its folder does not exist.
 */
export async function checkOutTarget(out: string, store: string | undefined): Promise<void> {
  const nothing = "nothing was written";
  if (store !== undefined) {
    // The target itself is not resolved: the rename that writes it replaces a link there, never what it points to.
    const resolved = entryOf(await canonicalPath(dirname(out)), basename(out));
    const storeFolder = await canonicalPath(store);
    if (resolved === storeFolder || resolved.startsWith(storeFolder.endsWith(sep) ? storeFolder : `${storeFolder}${sep}`)) {
      const via = resolved === out ? "" : ` (it is ${resolved})`;
      throw new InvalidInputError(`--out ${out}: inside the store ${store}${via}; a command never writes its output under the store; ${nothing}`, {
        out,
        store,
        resolved,
      });
    }
  }
  const folder = await folderAt(
    dirname(out),
    (at, found) =>
      new InvalidInputError(`--out ${out}: found ${found} at ${at} where a folder belongs; ${nothing}`, { out, path: at, found, expected: "a folder" }),
  );
  if (folder !== true) throw new NotFoundError(`--out ${out}: no such folder ${folder.missing}; ${nothing}`, { out, missing: folder.missing });
  const target = await lstat(out).catch(() => undefined);
  if (target?.isDirectory()) {
    throw new InvalidInputError(`--out ${out}: found a folder where a file belongs; ${nothing}`, { out, found: "a folder", expected: "a file" });
  }
  // The file is written beside itself and renamed (or created) in its folder: that folder must let us.
  const refused = await access(dirname(out), constants.W_OK | constants.X_OK).then(() => undefined, errno);
  if (refused !== undefined && refused in PERMISSION_DENIED) throw permissionDenied(out, refused);
}

/**
 * What a failed write of the user's `--out` file is: a permission the system refused (the check
 * before may pass where the write does not: root, an access control list, a change in between)
 * is the user's bad input, naming the path given; any other failure the store's typed error
 * naming it (`storageErrorFromFs`: a full disk is `storage-full`). A typed error passes unchanged.
 *
 * @example
 * ```ts
 * outWriteError("/srv/out.json", Object.assign(new Error("denied"), { code: "EACCES" })); // InvalidInputError
 * ```
 */
export function outWriteError(out: string, error: unknown): SessionfoldError {
  const code = errno(error);
  if (code !== undefined && code in PERMISSION_DENIED) return permissionDenied(out, code);
  return storageErrorFromFs(error, "write --out", out, out);
}

/** The error of an `--out` whose folder the system does not let this user write in. */
function permissionDenied(out: string, code: string): InvalidInputError {
  const folder = dirname(out);
  return new InvalidInputError(`--out ${out}: ${PERMISSION_DENIED[code]} (${code}) to write in ${folder}; nothing was written`, { out, folder, errno: code });
}

/**
 * `path` with every link and `..` of its existing part resolved as the system resolves them
 * (a `..` after a link goes up from the link's target); the missing rest appended as given,
 * its `..` kept, for no folder is there to go up from. What `--out` and `sync --remote` are
 * compared with the store by.
 *
 * @example
 * ```ts
 * await canonicalPath("/tmp/not-yet/file.json"); // "/tmp/not-yet/file.json", with /tmp's links resolved
 * ```
 */
export async function canonicalPath(path: string): Promise<string> {
  try {
    return await realpath(path);
  } catch {
    const parent = dirname(path);
    if (parent === path) return path;
    return entryOf(await canonicalPath(parent), basename(path));
  }
}

/** The entry `name` of `folder`, a `..` kept as it is: `path.join` would fold it as text. */
function entryOf(folder: string, name: string): string {
  return `${folder.endsWith(sep) ? folder : `${folder}${sep}`}${name}`;
}

/**
 * A path the user gave, made absolute from `cwd` as the system opens it: `.` and repeated
 * separators dropped, `..` kept. `path.resolve` folds `link/..` as text into the folder that
 * holds the link, where the system goes up from the link's target: a file would land, and be
 * checked, somewhere else than the path names (docs/CLI.md "Files the CLI writes, and the
 * store's folder"). Windows folds `..` as text itself, so there it is `path.resolve`.
 *
 * @example
 * ```ts
 * absoluteAsOpened("/home/me", "./out/link/../s1.json"); // "/home/me/out/link/../s1.json"
 * ```
 */
export function absoluteAsOpened(cwd: string, path: string): string {
  if (sep !== "/") return resolve(cwd, path);
  const parts = (path.startsWith("/") ? path : `${cwd}/${path}`).split("/").filter((part) => part !== "" && part !== ".");
  return `/${parts.join("/")}`;
}

/**
 * A folder the user gave for a store (`--root`, `SESSIONFOLD_HOME`, a folder `--remote`),
 * absolute and without `..`, naming the folder the system opens: each `..` goes up from where
 * the links before it lead ({@linkcode absoluteAsOpened}, then {@linkcode canonicalPath} of
 * the path up to its last `..`), and what follows is kept as given. A store joins its entries'
 * names to its root as text, so a `..` left in the root would be folded there into another
 * folder (docs/CLI.md "Files the CLI writes, and the store's folder").
 *
 * @example
 * ```ts
 * await folderAsOpened("/home/me", "link/../store"); // "/srv/store" when /home/me/link is a link to /srv/data
 * ```
 */
export async function folderAsOpened(cwd: string, path: string): Promise<string> {
  const given = absoluteAsOpened(cwd, path);
  const parts = given.split(sep);
  const last = parts.lastIndexOf("..");
  if (last < 0) return given;
  // A `..` under a missing folder stays and is folded as text: the system goes up from no folder there.
  return join(await canonicalPath(parts.slice(0, last + 1).join(sep)), ...parts.slice(last + 1));
}
