/**
 * The tables of a bench's freshly loaded PostgreSQL server as a running server keeps them.
 *
 * @module
 */
import pg from "pg";

/**
 * `VACUUM ANALYZE` of every table of the database at `url`: autovacuum would otherwise start on
 * a freshly loaded table while its reads are timed, and the planner's statistics stay stale
 * until it does.
 */
export async function vacuumAnalyze(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query("VACUUM ANALYZE");
  } finally {
    await client.end();
  }
}
