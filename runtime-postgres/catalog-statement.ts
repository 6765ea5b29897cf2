/**
 * The statements `PostgresStorage.readCatalog` reads a folder of sessions' catalog with
 * (docs/POSTGRES.md "Tables"): one prepared statement per shape of listing (every session,
 * a first page, a page after a cursor), each with conditions the index `entries_by_activity`
 * answers whatever its parameters.
 *
 * Why one per shape: a prepared statement gets a generic plan after five runs, planned without
 * its parameters. One statement with `$n IS NULL OR …` branches then bounds the index scan by
 * the folder alone and filters the rest row by row: a first page steps over every row of the
 * folder without `updated_at` (dead ones included, until a vacuum), a later page over every
 * row newer than its cursor, so a page's cost grows with the workspace.
 *
 * @module
 */
import type { CatalogPage } from "../core/mod.ts";
import { quoteIdent } from "./schema.ts";

/** A named statement (prepared once per connection) and its parameters. */
export interface CatalogStatement {
  readonly name: string;
  readonly text: string;
  readonly values: unknown[];
}

/**
 * The statement that reads the catalog of the folder of sessions `dir` in the store `schema`:
 * with `page`, that page's rows, newest activity first (`listed_at` descending, then the
 * session folder); a row whose listing is not known brings its bytes instead.
 */
export function catalogStatement(schema: string, dir: string, page?: CatalogPage): CatalogStatement {
  const s = quoteIdent(schema);
  const select = `SELECT e.parent, e.listing,
    CASE WHEN e.listing IS NULL THEN (SELECT string_agg(c.bytes, ''::bytea ORDER BY c.end_offset) FROM ${s}.chunks c WHERE c.file_id = e.file_id) END AS bytes
  FROM ${s}.entries e
  WHERE ${s}.parent_of(e.parent) = $1 AND e.name = 'meta.json' AND e.file_id IS NOT NULL`;
  const order = "ORDER BY e.listed_at DESC, e.parent";
  // Every session in the listing's order too: the index gives it, and the core's sort of a sorted list is one pass.
  if (!page) return { name: `${schema}.read_catalog`, text: `${select} ${order}`, values: [dir] };
  // A page lists only sessions with an `updated_at`: the index condition skips the others.
  if (!page.after) return { name: `${schema}.read_catalog_page`, text: `${select} AND e.listed_at IS NOT NULL ${order} LIMIT $2`, values: [dir, page.limit] };
  // `listed_at <= $2` bounds the scan at the cursor; only the rows as recent as it are filtered by folder.
  return {
    name: `${schema}.read_catalog_after`,
    text: `${select} AND e.listed_at <= $2 AND (e.listed_at < $2 OR e.parent > $3) ${order} LIMIT $4`,
    values: [dir, page.after.updatedAt, `${dir}/${page.after.name}`, page.limit],
  };
}
