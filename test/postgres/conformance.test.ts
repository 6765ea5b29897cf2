import { describe, it } from "vitest";
import { runStorageTests } from "../../testing/storage-conformance.ts";
import { PostgresStorage } from "../../runtime-postgres/mod.ts";
import { POSTGRES_URL, freshStorage } from "./support.ts";

if (POSTGRES_URL) {
  runStorageTests("PostgresStorage", () => {
    const { storage, schema, teardown } = freshStorage();
    return { storage, teardown, reopen: async () => new PostgresStorage({ connectionString: POSTGRES_URL, schema }) };
  });
} else {
  describe("storage conformance: PostgresStorage", () => it.skip("SESSIONFOLD_TEST_POSTGRES_SKIP=1: no PostgreSQL server", () => {}));
}
