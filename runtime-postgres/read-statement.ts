/**
 * The statement `PostgresStorage` sends a turn's reads with (`read`, `readTail`, `readMany`):
 * one prepared statement for any batch, its requests as three arrays.
 *
 * Why the arrays come in through a subquery (`OFFSET 0` keeps it one): after five runs a
 * prepared statement keeps its generic plan only if that plan's estimated cost is below the
 * custom plans' (planned with the parameters' values) plus an allowance for planning them. The
 * planner counts the elements of an array it is given as a value, and guesses ten for one it
 * is not: `unnest` of the parameters themselves made a custom plan of an open's five reads
 * cost half the generic plan, whose rows are all priced per request, so once the tables were
 * more than a few pages the server planned the statement again at every open (about 0.2 ms
 * an open at 10⁵ messages, docs/decisions.md "The open's statement keeps its generic plan").
 * Read as a subquery's columns, the arrays are ten elements to every plan, so a custom plan
 * costs what the generic one does and the generic one is kept; a batch of thousands of reads
 * is no longer costed high enough to be JIT-compiled either. Nothing else in the plan depends
 * on a parameter's value: every file and chunk is looked up by the batch's own rows.
 *
 * @module
 */
import type { ReadRequest } from "../core/mod.ts";
import type { NamedStatement } from "./lean-statement.ts";
import { quoteIdent } from "./schema.ts";

/**
 * The statement for every read of a batch in the store `schema`: each request's file (for
 * `lastIn`, the last file of the folder on the `(parent, name)` index), its stored size for
 * the read limit (`octet_length`, so a whole read over the limit sends no chunk), and only
 * the chunks a tail needs, the first one cut on the server. The files are materialised (each
 * stored size summed once, not once per chunk), their chunks a lateral lookup per file on the
 * primary key (`OFFSET 0` keeps it one), never a join the planner could turn into a scan of
 * every chunk. Its rows: `i` (the request's place in the batch, from 1), `path`, `size`,
 * `stored` (for a whole read) and `bytes` (one chunk, or none for a file over the limit),
 * ordered by request and offset.
 */
export function readStatement(schema: string): NamedStatement {
  const s = quoteIdent(schema);
  return {
    name: `${schema}.read_many`,
    text: `WITH r AS (
         SELECT r.* FROM (SELECT $1::text[] AS targets, $2::bigint[] AS tails, $3::boolean[] AS last_in OFFSET 0) a
         CROSS JOIN LATERAL unnest(a.targets, a.tails, a.last_in) WITH ORDINALITY AS r(target, tail, last_in, i)),
       f AS MATERIALIZED (
         SELECT r.i, e.path, e.file_id, e.size, coalesce(r.tail, e.size) AS tail,
                CASE WHEN r.tail IS NULL THEN (SELECT coalesce(sum(octet_length(k.bytes)), 0) FROM ${s}.chunks k WHERE k.file_id = e.file_id) END AS stored
         FROM r CROSS JOIN LATERAL (
           SELECT e.* FROM ${s}.entries e WHERE NOT r.last_in AND e.path = r.target AND e.file_id IS NOT NULL
           UNION ALL
           (SELECT e.* FROM ${s}.entries e WHERE r.last_in AND e.parent = r.target AND e.file_id IS NOT NULL ORDER BY e.name DESC LIMIT 1)
         ) e)
       SELECT f.i, f.path, f.size, f.stored,
              CASE WHEN c.end_offset - length(c.bytes) < f.size - f.tail
                THEN substring(c.bytes FROM (f.size - f.tail - (c.end_offset - length(c.bytes)) + 1)::int)
                ELSE c.bytes END AS bytes
       FROM f LEFT JOIN LATERAL (
         SELECT c.end_offset, c.bytes FROM ${s}.chunks c
         WHERE c.file_id = f.file_id AND c.end_offset > f.size - f.tail AND coalesce(f.stored <= $4, true) OFFSET 0) c ON true
       ORDER BY f.i, c.end_offset`,
  };
}

/** {@linkcode readStatement}'s parameters for `requests`, whole reads refused above `maxFileBytes`. */
export function readValues(requests: readonly ReadRequest[], maxFileBytes: number): unknown[] {
  const targets = requests.map((request) => ("lastIn" in request ? request.lastIn : request.path));
  const tails = requests.map((request) => (request.tailBytes === undefined ? null : Math.max(0, Math.floor(request.tailBytes))));
  const lastIn = requests.map((request) => "lastIn" in request);
  return [targets, tails, lastIn, maxFileBytes];
}
