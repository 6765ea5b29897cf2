/**
 * How `export --out` writes its file: the way the target system writes its own. A temporary
 * file beside the target (created exclusively, `0600`), then one rename, so a reader (or the
 * target system itself) never sees half a file. A DeepCode stream written into a folder as
 * `<id>.v1.jsonl` is written under DeepCode's writer lock, `<id>.writer.lock` in the same
 * folder, as DeepCode's `writeCanonical` does (`open(…, "wx")`, `{"pid","createdAt"}`), so
 * a running DeepCode never writes that session at the same time. The command checks the target
 * first (`checkOutTarget` in `user-paths.ts`: never inside the store); a write the system still
 * refuses is a typed error naming the target.
 *
 * @module
 */
import { open, rename, rm, writeFile } from "node:fs/promises";
import { basename, dirname, sep } from "node:path";
import { WriterLockedError } from "../../core/mod.ts";
import { outWriteError } from "./user-paths.ts";

const DEEPCODE_STREAM = /^(.+)\.v1\.jsonl$/;

/**
 * Writes `bytes` to `path` by temp file + rename; for a DeepCode stream, under its lock.
 *
 * @example
 * ```ts
 * await writeExportFile("/tmp/abc.v1.jsonl", new Uint8Array(), "deepcode");
 * ```
 * @throws {WriterLockedError} when DeepCode's `<id>.writer.lock` exists (a DeepCode writer holds the session); nothing is written.
 * @throws {InvalidInputError} naming `path` and its folder when the system refuses the write for lack of permission.
 * @throws {StorageError} (or `StorageFullError`) naming `path`, never the temporary file, when the write fails otherwise.
 */
export async function writeExportFile(path: string, bytes: Uint8Array, format: string): Promise<void> {
  const id = format === "deepcode" ? DEEPCODE_STREAM.exec(basename(path))?.[1] : undefined;
  // Beside the stream as the system opens it: `join` would fold a `link/..` in `path` as text (absoluteAsOpened).
  const lockPath = id !== undefined ? `${dirname(path)}${sep}${id}.writer.lock` : undefined;
  const lock = lockPath !== undefined ? await takeDeepCodeLock(lockPath, id!).catch((error) => failed(path, error)) : undefined;
  const temp = `${path}.${process.pid}.${Date.now()}.tmp`;
  try {
    await writeFile(temp, bytes, { mode: 0o600, flag: "wx" });
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true });
    failed(path, error);
  } finally {
    if (lock) {
      await lock.close();
      await rm(lockPath!, { force: true });
    }
  }
}

/**
 * Throws what a failed write of `path` was as a typed error naming `path` (the user's `--out`),
 * not the temporary file beside it: what `checkOutTarget` looked at can change before the write.
 */
function failed(path: string, error: unknown): never {
  throw outWriteError(path, error);
}

async function takeDeepCodeLock(lockPath: string, id: string) {
  try {
    const handle = await open(lockPath, "wx", 0o600);
    await handle.writeFile(JSON.stringify({ pid: process.pid, createdAt: new Date().toISOString() }));
    return handle;
  } catch (error) {
    if ((error as { code?: string }).code === "EEXIST") {
      throw new WriterLockedError(`${lockPath}: DeepCode session ${id} already has an active writer; nothing was written`, { path: lockPath });
    }
    throw error;
  }
}
