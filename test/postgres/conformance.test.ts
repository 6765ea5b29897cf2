import { describe } from "vitest";
import { runStorageTests } from "../../testing/storage-conformance.ts";
import { PostgresStorage } from "../../runtime-postgres/mod.ts";
import { freshStorage, POSTGRES_URL } from "./support.ts";

// Without a server (SESSIONFOLD_TEST_POSTGRES_SKIP=1) every case shows as skipped, by name.
describe.skipIf(!POSTGRES_URL)("PostgreSQL server", () => {
  runStorageTests("PostgresStorage", () => {
    const { storage, schema, teardown } = freshStorage();
    return { storage, teardown, reopen: async () => new PostgresStorage({ connectionString: POSTGRES_URL, schema }) };
  });
});
