/**
 * A folder's catalog as it crosses the storage worker's hop: JSON text, strings to copy where
 * a structured clone walks each of 10⁴ entries on both sides (docs/decisions.md "Listing at
 * the constant factor: IndexedDB reads one snapshot, …"). A store that keeps its catalog as
 * snapshot text (IndexedDB's, `storage/catalog-snapshot.ts`) hands that text over as it is,
 * with the entries changed since beside it, so the worker neither parses nor writes it again:
 * the page parses it once and applies the changes (docs/decisions.md "`list.indexeddb.n=1e4`:
 * the snapshot's text crosses the worker as it is"). The entries' text and the rest are two
 * strings, each parsed alone: stored text is never spliced into text of the worker's own, so
 * it can be nothing but the entries.
 *
 * @module
 */
import { StorageError } from "../errors.ts";
import type { CatalogEntry, CatalogListing, CatalogPage } from "../storage/catalog.ts";
import { catalogSnapshotEntries, damagedSnapshotError } from "../storage/catalog-snapshot.ts";

/**
 * A catalog as the hop carries it: the JSON text of its entries (a snapshot's text as stored),
 * and the JSON text of the rest of its listing, with the entries that replace some of those
 * by name.
 */
export type CatalogText = readonly [entries: string, rest: string];

/** A store that gives its catalog as the hop's text itself ({@linkcode catalogTextOfSnapshot}). */
export interface CatalogTextStore {
  /** The catalog of `dir` as the hop's text (see {@linkcode catalogListingOfText}), `undefined` when the store keeps none. */
  readCatalogText(dir: string, page?: CatalogPage): Promise<CatalogText | undefined>;
}

/** What the rest's text holds: a listing without its entries, and the entries that replace some of them by name. */
interface CatalogTextRest extends Omit<CatalogListing, "entries"> {
  /** Sessions whose entry is replaced by the one here. */
  readonly changed?: readonly CatalogEntry[];
  /** Sessions whose entry is dropped (removed or moved away since). */
  readonly gone?: readonly string[];
}

/** Whether `store` gives its catalog as the hop's text itself. */
export function givesCatalogText(store: object): store is CatalogTextStore {
  return typeof (store as Partial<CatalogTextStore>).readCatalogText === "function";
}

/** The hop's text of a listing. */
export function catalogListingText(listing: CatalogListing): CatalogText {
  const { entries, ...rest } = listing;
  return [JSON.stringify(entries), JSON.stringify(rest)];
}

/**
 * The hop's text of a catalog kept as a snapshot (`snapshotText`, as `storage/catalog-snapshot.ts`
 * writes it, not parsed here) and the sessions changed since: their entries, and the names of
 * those gone. The page checks the snapshot's text when it parses it.
 */
export function catalogTextOfSnapshot(snapshotText: string, changed: readonly CatalogEntry[], gone: readonly string[]): CatalogText {
  const rest: CatalogTextRest = changed.length === 0 && gone.length === 0 ? { unlisted: [] } : { unlisted: [], changed, gone };
  return [snapshotText, JSON.stringify(rest)];
}

/**
 * The listing the hop's `text` carries for `dir`, the changed entries applied (newest write
 * per session, as `StoragePort.readCatalog` answers).
 *
 * @throws {StorageError} when the entries' text is not a snapshot's (a damaged snapshot) or the rest is not a listing's.
 */
export function catalogListingOfText(text: CatalogText, dir: string): CatalogListing {
  const entries = catalogSnapshotEntries(text[0]);
  let rest: Partial<CatalogTextRest> | null | undefined;
  try {
    rest = JSON.parse(text[1]);
  } catch {
    // Reported below: the text that did not parse leaves its value undefined.
  }
  if (!entries) throw damagedSnapshotError(`catalog of "${dir}"`, dir);
  if (!Array.isArray(rest?.unlisted) || !optionalArray(rest.changed) || !optionalArray(rest.gone)) {
    throw new StorageError(`catalog of "${dir}" came from the storage worker without its listing's fields`, { path: dir });
  }
  const { changed, gone, ...listing } = rest as CatalogTextRest;
  if (!changed || !gone) return { ...listing, entries };
  const replaced = new Set([...gone, ...changed.map((entry) => entry.name)]);
  return { ...listing, entries: [...entries.filter((entry) => !replaced.has(entry?.name)), ...changed] };
}

function optionalArray(value: unknown): boolean {
  return value === undefined || Array.isArray(value);
}
