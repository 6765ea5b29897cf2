/**
 * Which sessions a folder of sessions holds, remembered between listings of one store handle
 * (docs/FORMAT.md "The catalog": membership comes from the folder). A page of a listing must
 * not read a folder of 10⁵ names each time, so the names are kept with the folder's identity
 * and times, and read again when those change. As git does for its index ("racy git"), a
 * reading is trusted only if it was taken well after the folder last changed: a change made
 * in the same clock tick as the one before it would leave the times as they were, and is
 * then caught because the reading is taken again. The margin is 100 ms where the file system
 * keeps sub-second times (kernel ticks are at most 10 ms), 3 s where it keeps whole seconds
 * (FAT's are 2 s).
 *
 * The names of a snapshot's lines are kept the same way, by the snapshot file's identity (a
 * snapshot is never changed in place: a new one is renamed over it), so the sessions without
 * an entry in it are found without reading it again.
 *
 * @module
 */
import { type BigIntStats, lstatSync, readdirSync } from "node:fs";
import { isListedName } from "../core/reader.ts";
import { missingAsUndefined } from "./fs-errors.ts";

const FINE_MARGIN_NS = 100_000_000n;
const COARSE_MARGIN_NS = 3_000_000_000n;
const SECOND_NS = 1_000_000_000n;
/** How many folders a handle remembers (the least recently listed is forgotten first). */
const REMEMBERED_FOLDERS = 32;

/** What one handle remembers of one folder of sessions. */
interface Folder {
  /** The folder's device, inode, modification and change times when `names` was read. */
  readonly key: string;
  /** Whether the reading may be reused while `key` is unchanged. */
  readonly trusted: boolean;
  readonly names: ReadonlySet<string>;
  /** The names of the lines of the snapshot last read with it, by the snapshot file's identity. */
  snapshot?: { readonly key: string; readonly names: ReadonlySet<string> };
  /** The folder's names without a line in that snapshot. */
  unlisted?: readonly string[];
}

/** The identity of a file or folder as `lstat` gives it: a new one whenever it is replaced or changed. */
export function identityOf(info: BigIntStats): string {
  return `${info.dev}:${info.ino}:${info.size}:${info.mtimeNs}:${info.ctimeNs}`;
}

/** The folders of sessions one store handle listed (see the module doc). */
export class FolderMembers {
  readonly #folders = new Map<string, Folder>();

  /** The listed names of the folder of sessions `dir` (the real folder `file`, already checked; `undefined` when it is missing). */
  names(dir: string, file: string | undefined): ReadonlySet<string> {
    return this.#folder(dir, file)?.names ?? new Set();
  }

  /**
   * The listed names of `dir` that have no line in its snapshot (identity `snapshotKey`,
   * whose names `readNames` reads); {@linkcode FolderMembers.names} is called first.
   */
  withoutLine(dir: string, snapshotKey: string, readNames: () => ReadonlySet<string>): readonly string[] {
    const folder = this.#folders.get(dir);
    if (!folder) return [];
    if (folder.snapshot?.key !== snapshotKey) {
      folder.snapshot = { key: snapshotKey, names: readNames() };
      folder.unlisted = undefined;
    }
    const inSnapshot = folder.snapshot.names;
    folder.unlisted ??= [...folder.names].filter((name) => !inSnapshot.has(name));
    return folder.unlisted;
  }

  #folder(dir: string, file: string | undefined): Folder | undefined {
    const info = file === undefined ? undefined : missingAsUndefined(() => lstatSync(file, { bigint: true }));
    const known = this.#folders.get(dir);
    this.#folders.delete(dir);
    if (!info) return undefined;
    const key = identityOf(info);
    if (known?.trusted && known.key === key) {
      this.#folders.set(dir, known);
      return known;
    }
    const readAt = BigInt(Date.now()) * 1_000_000n;
    const listed = missingAsUndefined(() => readdirSync(file!));
    if (!listed) return undefined;
    const names = new Set(listed.filter(isListedName));
    const changed = info.mtimeNs > info.ctimeNs ? info.mtimeNs : info.ctimeNs;
    const margin = changed % SECOND_NS === 0n ? COARSE_MARGIN_NS : FINE_MARGIN_NS;
    const folder: Folder = { key, trusted: readAt - changed > margin, names, ...(known?.snapshot ? { snapshot: known.snapshot } : {}) };
    this.#folders.set(dir, folder);
    if (this.#folders.size > REMEMBERED_FOLDERS) this.#folders.delete(this.#folders.keys().next().value!);
    return folder;
  }
}
