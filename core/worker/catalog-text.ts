/**
 * A folder's catalog as it crosses the storage worker's hop: JSON text, one string to copy
 * where a structured clone walks each of 10⁴ entries on both sides (docs/decisions.md
 * "Listing at the constant factor: IndexedDB reads one snapshot, …"). A store that keeps its
 * catalog as JSON text (IndexedDB's snapshot) hands that text over as it is, with the entries
 * changed since beside it, so the worker neither parses nor writes it again: the page parses
 * it once and applies the changes (docs/decisions.md "`list.indexeddb.n=1e4`: the snapshot's
 * text crosses the worker as it is").
 *
 * @module
 */
import { StorageError } from "../errors.ts";
import type { CatalogEntry, CatalogListing, CatalogPage } from "../storage/catalog.ts";

/** A store that gives its catalog as the hop's text itself ({@linkcode catalogTextOfSnapshot}). */
export interface CatalogTextStore {
  /** The catalog of `dir` as the hop's JSON text (see {@linkcode catalogListingOfText}), `undefined` when the store keeps none. */
  readCatalogText(dir: string, page?: CatalogPage): Promise<string | undefined>;
}

/** What the hop's text holds: a listing, and the entries that replace some of its `entries` by name. */
interface CatalogText extends CatalogListing {
  /** Sessions whose entry in `entries` is replaced by the one here. */
  readonly changed?: readonly CatalogEntry[];
  /** Sessions whose entry in `entries` is dropped (removed or moved away since). */
  readonly gone?: readonly string[];
}

/** Whether `store` gives its catalog as the hop's text itself. */
export function givesCatalogText(store: object): store is CatalogTextStore {
  return typeof (store as Partial<CatalogTextStore>).readCatalogText === "function";
}

/** The hop's text of a listing. */
export function catalogListingText(listing: CatalogListing): string {
  return JSON.stringify(listing);
}

/**
 * The hop's text of a catalog kept as a snapshot (`snapshotText`, the JSON text of an array of
 * entries, not parsed here) and the sessions changed since: their entries, and the names of
 * those gone. The page checks the snapshot's text when it parses it.
 */
export function catalogTextOfSnapshot(snapshotText: string, changed: readonly CatalogEntry[], gone: readonly string[]): string {
  const replacing = changed.length === 0 && gone.length === 0 ? "" : `,"changed":${JSON.stringify(changed)},"gone":${JSON.stringify(gone)}`;
  return `{"entries":${snapshotText},"unlisted":[]${replacing}}`;
}

/**
 * The listing the hop's `text` carries for `dir`, the changed entries applied (newest write
 * per session, as `StoragePort.readCatalog` answers).
 *
 * @throws {StorageError} when the text is not such a listing (a snapshot that is not a JSON array of entries).
 */
export function catalogListingOfText(text: string, dir: string): CatalogListing {
  let parsed: Partial<CatalogText> | undefined;
  try {
    parsed = JSON.parse(text) as Partial<CatalogText>;
  } catch {
    // Reported below.
  }
  if (!Array.isArray(parsed?.entries) || !Array.isArray(parsed.unlisted)) {
    throw new StorageError(`catalog of "${dir}" is not a JSON array of entries; rebuild the catalog`, { path: dir });
  }
  const { changed, gone, ...listing } = parsed as CatalogText;
  if (!changed || !gone) return listing;
  const replaced = new Set([...gone, ...changed.map((entry) => entry.name)]);
  return { ...listing, entries: [...listing.entries.filter((entry) => !replaced.has(entry.name)), ...changed] };
}
