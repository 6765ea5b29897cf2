/** The encrypted-store attack suite on PostgreSQL: the no-plaintext check reads every row of the store's schema. */
import pg from "pg";
import { describe } from "vitest";
import { runEncryptionAttackTests } from "../../testing/encryption-attacks.ts";
import { freshStorage, POSTGRES_URL } from "./support.ts";

/** Every row of every table of `schema`, as the server returns it (bytea as its bytes). */
async function everyRow(schema: string): Promise<Uint8Array> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    const tables = await client.query<{ table_name: string }>("SELECT table_name FROM information_schema.tables WHERE table_schema = $1", [schema]);
    const chunks: Buffer[] = [];
    for (const { table_name } of tables.rows) {
      const rows = await client.query(`SELECT * FROM "${schema}"."${table_name}"`);
      for (const row of rows.rows as Record<string, unknown>[]) {
        for (const value of Object.values(row)) chunks.push(Buffer.isBuffer(value) ? value : Buffer.from(String(value)));
      }
    }
    return Buffer.concat(chunks);
  } finally {
    await client.end();
  }
}

describe.skipIf(!POSTGRES_URL)("PostgreSQL server", () => {
  runEncryptionAttackTests("PostgresStorage", async () => {
    const { storage, schema, teardown } = freshStorage();
    return { storage, dump: () => everyRow(schema), teardown };
  });
});
