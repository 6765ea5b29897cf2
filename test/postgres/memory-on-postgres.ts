/**
 * The session engine's suites on PostgreSQL: the vitest project `postgres-engine` resolves
 * `core/storage/memory.ts` to this file, so every `new MemoryStorage()` in test/session and
 * test/run is a {@linkcode PostgresStorage} in a schema of its own on the test server. The
 * suites then run unchanged, each store a real database store. Not a test file itself.
 */
import { randomBytes } from "node:crypto";
import { PostgresStorage } from "../../runtime-postgres/postgres-storage.ts";

/** Every store made in this test file, closed and dropped by engine-setup.ts after it. */
export const createdStores: PostgresStorage[] = [];

/** A fresh store in a new schema. */
export class MemoryStorage extends PostgresStorage {
  constructor() {
    const url = process.env.SESSIONFOLD_ENGINE_POSTGRES_URL;
    if (!url) throw new Error("the postgres-engine project runs with SESSIONFOLD_ENGINE_POSTGRES_URL set by its setup file");
    // Many stores live in one test file: few connections each, given back to the server quickly.
    super({ connectionString: url, schema: `e_${randomBytes(6).toString("hex")}`, maxConnections: 2, maxLockConnections: 4, pool: { idleTimeoutMillis: 200 } });
    createdStores.push(this);
  }
}
