/**
 * sessionfold on PostgreSQL: {@linkcode PostgresStorage}, a `StoragePort` whose store lives
 * in one schema of a PostgreSQL database, so several processes and hosts share sessions with
 * the same format, engine and guarantees as the file store. Writer ownership is a
 * session-level advisory lock that the server frees when its holder's connection dies; a
 * commit is one statement. It uses the `pg` client (a peer dependency: `npm install pg`).
 * docs/POSTGRES.md: the tables, migrations, and running several hosts on one database.
 *
 * @example
 * ```ts
 * import { Sessions } from "sessionfold";
 * import { PostgresStorage } from "sessionfold/postgres";
 *
 * const storage = new PostgresStorage({ connectionString: process.env.DATABASE_URL });
 * const sessions = new Sessions({ storage });
 * ```
 * @module
 */
export { type LeaseLost, PostgresStorage, type PostgresStorageOptions } from "./postgres-storage.ts";
export { SCHEMA_VERSION } from "./schema.ts";
