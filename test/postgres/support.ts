/**
 * What the PostgreSQL tests share: the server's URL (from the project's globalSetup), a
 * fresh store per call (a schema of its own, dropped by `teardown`). Not a test file itself.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, inject } from "vitest";
import { PostgresStorage } from "../../runtime-postgres/mod.ts";
import { advisoryLockKey } from "../../runtime-postgres/schema.ts";

/** The URL of the test server; `""` when the run opted out (the tests then skip). */
export const POSTGRES_URL = inject("postgresUrl");

/** A schema name no other test uses. */
export function freshSchema(prefix = "t"): string {
  return `${prefix}_${randomBytes(6).toString("hex")}`;
}

/** Drops test schemas (one connection, closed after). */
export async function dropSchemas(...schemas: string[]): Promise<void> {
  await withClient(async (client) => {
    for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  });
}

/** Runs `body` on a connection of its own to the test server (what another host or an administrator would do), closed after. */
export async function withClient<T>(body: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    return await body(client);
  } finally {
    await client.end();
  }
}

/**
 * For a test file whose tests each make schemas of their own: call once at the file's top level; each call of the
 * returned function is a fresh schema, all of them dropped after the file's last test.
 */
export function schemasDroppedAfterAll(): (prefix: string) => string {
  const schemas: string[] = [];
  afterAll(async () => {
    if (POSTGRES_URL && schemas.length > 0) await dropSchemas(...schemas);
  });
  return (prefix) => {
    const schema = freshSchema(prefix);
    schemas.push(schema);
    return schema;
  };
}

/** A store in a new schema, with a teardown that closes it and drops the schema. */
export function freshStorage(schema = freshSchema()): { storage: PostgresStorage; schema: string; teardown: () => Promise<void> } {
  const storage = new PostgresStorage({ connectionString: POSTGRES_URL, schema });
  return {
    storage,
    schema,
    teardown: async () => {
      await storage.close();
      await dropSchemas(schema);
    },
  };
}

/** Every row of every table of `schema`, as the server returns it (bytea as its bytes). */
export async function everyRow(schema: string): Promise<Uint8Array> {
  return withClient(async (client) => {
    const tables = await client.query<{ table_name: string }>("SELECT table_name FROM information_schema.tables WHERE table_schema = $1", [schema]);
    const chunks: Buffer[] = [];
    for (const { table_name } of tables.rows) {
      const rows = await client.query(`SELECT * FROM "${schema}"."${table_name}"`);
      for (const row of rows.rows as Record<string, unknown>[]) {
        for (const value of Object.values(row)) chunks.push(Buffer.isBuffer(value) ? value : Buffer.from(String(value)));
      }
    }
    return Buffer.concat(chunks);
  });
}

/**
 * Ends, from an admin connection (`pg_terminate_backend`), the backend that holds the store
 * `schema`'s advisory lock `name` (a session's `writer.lock` path), as a pooler, a failover
 * or an idle timeout would. Resolves how many backends it ended (0: nobody held it).
 */
export async function terminateLockHolder(schema: string, name: string): Promise<number> {
  return adminQuery(
    `SELECT pg_terminate_backend(pid) FROM pg_locks
     WHERE locktype = 'advisory' AND objsubid = 1 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
       AND ((classid::bigint << 32) | objid::bigint) = $1::bigint`,
    [advisoryLockKey(schema, name)],
  );
}

/** Ends every backend whose `application_name` is `name` (what a server restart does to a client). Resolves how many. */
export async function terminateApplication(name: string): Promise<number> {
  return adminQuery("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()", [name]);
}

async function adminQuery(text: string, values: unknown[]): Promise<number> {
  return withClient(async (client) => (await client.query(text, values)).rowCount ?? 0);
}
