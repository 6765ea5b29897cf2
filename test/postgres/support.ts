/**
 * What the PostgreSQL tests share: the server's URL (from the project's globalSetup), a
 * fresh store per call (a schema of its own, dropped by `teardown`). Not a test file itself.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { inject } from "vitest";
import { PostgresStorage } from "../../runtime-postgres/mod.ts";

/** The URL of the test server; `""` when the run opted out (the tests then skip). */
export const POSTGRES_URL = inject("postgresUrl");

/** A schema name no other test uses. */
export function freshSchema(prefix = "t"): string {
  return `${prefix}_${randomBytes(6).toString("hex")}`;
}

/** Drops test schemas (one connection, closed after). */
export async function dropSchemas(...schemas: string[]): Promise<void> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
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
