/**
 * The record layout of `IndexedDbStorage` in its one object store (out-of-line
 * string keys):
 *
 * - **File header**, key = the docs/FORMAT.md path itself (`agents/a1/…/meta.json`),
 *   value `{ size, chunks }`: the file's length in bytes and how many chunk records
 *   hold it. A header exists for every file, an empty one included.
 * - **Chunk record**, key = `"\0" + path + "\0" + <12-digit zero-padded index>`, value
 *   a `Uint8Array` of at most {@linkcode MAX_CHUNK_BYTES}. Chunks `0 … chunks-1` in
 *   order are the file's bytes. Readers accept any chunk sizes; writes of this version
 *   cut what they write so that its last chunk holds at most {@linkcode LAST_CHUNK_BYTES}
 *   (`split`), so the tail an open reads is one small record (older records stay as written).
 *
 * - **Catalog** (docs/FORMAT.md "The catalog"), per folder of sessions, like the files'
 *   snapshot and log, in numbered generations (`<gen>`: 12 digits, zero-padded):
 *   - the **snapshot**, key = `"\u0001" + <folder of sessions> + "/\u0000" + <gen>`, value
 *     the JSON text of its entries (`[{"name", "meta"}, …]`, newest activity first): one
 *     record, so a listing of 10⁴ sessions reads one value, not 10⁴. At most one per folder;
 *     none is generation 0, empty;
 *   - a **session record**, key = `"\u0001" + <folder of sessions> + "/\u0001" + <gen> + "/"
 *     + <session folder name>`, value `{ meta }` (the listing fields of the folder's
 *     `meta.json`, written in the same transaction as the file) or `{ gone: true }` (the
 *     folder was removed or moved away): what changed since the snapshot of its generation,
 *     which it overrides.
 *
 *   A listing folds many session records into the next generation's snapshot and deletes
 *   the old generation (`indexeddb-catalog.ts`): the deleted keys lie outside the range
 *   every later read asks for, so nobody steps over them before the database compacts them.
 *   The key `"\u0001\u0000"` marks a store whose every session is catalogued (older stores,
 *   and one a version before the snapshots wrote its own catalog into, marked `"\u0001"`,
 *   are caught up once).
 *
 * Paths never contain `\0` or `\u0001` (`assertStoragePath`), so every chunk and catalog
 * key sorts before every header key, and the chunks of one file form the exact key range
 * `["\0" + path + "\0", "\0" + path + "\u0001")`. A folder's descendants are the header
 * range `[dir + "/", dir + "0")` (`"0"` is the code unit after `"/"`), which holds no
 * chunk keys: `list` reads header keys only, whatever the number of appends.
 *
 * @module
 */
import { StorageError } from "../core/mod.ts";
import { FOOTER_PREFETCH_BYTES } from "../core/internal.ts";

/**
 * Largest chunk record; bigger writes are split, so a tail read never loads a whole large file.
 *
 * @example
 * ```ts
 * import { MAX_CHUNK_BYTES } from "sessionfold/browser";
 * Math.ceil(1_000_000 / MAX_CHUNK_BYTES); // 4: the chunk records of a 1 MB file
 * ```
 */
export const MAX_CHUNK_BYTES = 256 * 1024;

/** The header record of one file. */
export interface FileHeader {
  /** Length of the file in bytes. */
  readonly size: number;
  /** Number of chunk records (`0 … chunks-1`) holding the bytes. */
  readonly chunks: number;
}

/**
 * Key of chunk `index` of the file at `path`.
 *
 * @example
 * ```ts
 * chunkKey("a/log.jsonl", 3); // "\u0000a/log.jsonl\u0000000000000003"
 * ```
 */
export function chunkKey(path: string, index: number): string {
  return `\u0000${path}\u0000${String(index).padStart(12, "0")}`;
}

/** Every key that starts with `prefix` (the code unit after its last one is the exclusive upper bound). */
function prefixRange(prefix: string): IDBKeyRange {
  const last = prefix.charCodeAt(prefix.length - 1);
  return IDBKeyRange.bound(prefix, prefix.slice(0, -1) + String.fromCharCode(last + 1), false, true);
}

/** The chunk records of the file at `path`. */
export const chunksOf = (path: string): IDBKeyRange => prefixRange(`\u0000${path}\u0000`);
/** The headers of every file below the folder `dir`. */
export const headersBelow = (dir: string): IDBKeyRange => prefixRange(`${dir}/`);
/** The chunk records of every file below the folder `dir`. */
export const chunksBelow = (dir: string): IDBKeyRange => prefixRange(`\u0000${dir}/`);
/** Every header key (they are paths; chunk keys start with `\0`, catalog keys with `\u0001`). */
export const allHeaders = (): IDBKeyRange => IDBKeyRange.lowerBound("\u0002");

/** The catalog records below `dir` (of a folder of sessions: its snapshot and its session records). */
export const catalogBelow = (dir: string): IDBKeyRange => prefixRange(`\u0001${dir}/`);
/** Every catalog record of the store, the marks included. */
export const allCatalog = (): IDBKeyRange => prefixRange("\u0001");
/** The snapshot of the folder of sessions `dir`, whatever its generation. */
export const catalogSnapshots = (dir: string): IDBKeyRange => prefixRange(`\u0001${dir}/\u0000`);
/** The key of the snapshot of generation `gen` of the folder of sessions `dir`. */
export const catalogSnapshotKey = (dir: string, gen: number): string => `\u0001${dir}/\u0000${String(gen).padStart(12, "0")}`;
/** The generation of a snapshot's key. */
export const generationOf = (snapshotKey: string): number => Number(snapshotKey.slice(snapshotKey.lastIndexOf("\u0000") + 1));
/** The session records of generation `gen` of the folder of sessions `dir`. */
export const catalogChanges = (dir: string, gen: number): IDBKeyRange => prefixRange(`\u0001${dir}/\u0001${String(gen).padStart(12, "0")}/`);
/** The key of the record of session folder `name` in generation `gen` of the folder of sessions `dir`. */
export const catalogRecordKey = (dir: string, gen: number, name: string): string => `\u0001${dir}/\u0001${String(gen).padStart(12, "0")}/${name}`;
/** The record that says every session of the store is catalogued in this layout. */
export const CATALOG_COMPLETE = "\u0001\u0000";
/** The record by which a version before the snapshots marked its own catalog complete. */
export const CATALOG_COMPLETE_BEFORE_SNAPSHOTS = "\u0001";

/**
 * A session record: the listing fields of a session's `meta.json` (`null`: not a JSON
 * object), or `gone` when its folder was removed or moved away since the snapshot.
 */
export type CatalogRecord = { readonly meta: Record<string, unknown> | null } | { readonly gone: true };

/** The catalog record key a moved catalog record has once its folder moved from `from` to `to`. */
export const movedCatalog = (from: string, to: string) => (key: string): string => `\u0001${to}${key.slice(1 + from.length)}`;

/** The header key that `key` (a header at or below `from`) has once moved to `to`. */
export const movedHeader = (from: string, to: string) => (key: string): string => to + key.slice(from.length);
/** The chunk key that `key` (a chunk of a file at or below `from`) has once moved to `to`. */
export const movedChunk = (from: string, to: string) => (key: string): string => `\u0000${to}${key.slice(1 + from.length)}`;

/**
 * Largest last chunk of a write: the newest segment's tail an open reads with its other files
 * (`FOOTER_PREFETCH_BYTES`, the open in docs/ARCHITECTURE.md), so that tail read loads
 * one record of this size, not a whole chunk of up to {@linkcode MAX_CHUNK_BYTES} (a segment
 * of 500 messages, about 170 KB, was one record).
 */
export const LAST_CHUNK_BYTES = FOOTER_PREFETCH_BYTES;

/**
 * `bytes` cut into copies (none for an empty array): the last {@linkcode LAST_CHUNK_BYTES}
 * bytes, or all of them when fewer, in a chunk of their own, the bytes before it in chunks
 * of at most {@linkcode MAX_CHUNK_BYTES}.
 */
export function split(bytes: Uint8Array): Uint8Array[] {
  const last = Math.max(0, bytes.length - LAST_CHUNK_BYTES);
  const pieces: Uint8Array[] = [];
  for (let offset = 0; offset < last; offset += MAX_CHUNK_BYTES) {
    pieces.push(bytes.slice(offset, Math.min(offset + MAX_CHUNK_BYTES, last)));
  }
  if (bytes.length > 0) pieces.push(bytes.slice(last));
  return pieces;
}

/** The bytes when they add up to the header's size, else a `StorageError` (records out of step). */
export function checked(bytes: Uint8Array, header: FileHeader, path: string): Uint8Array {
  if (bytes.length !== header.size) {
    throw new StorageError(`IndexedDB file "${path}" is inconsistent: its header says ${header.size} bytes, its chunks hold ${bytes.length}`, {
      path,
      size: header.size,
      found: bytes.length,
    });
  }
  return bytes;
}
