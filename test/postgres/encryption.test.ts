/** The encrypted-store attack suite on PostgreSQL: the no-plaintext check reads every row of the store's schema. */
import { describe } from "vitest";
import { runEncryptionAttackTests } from "../../testing/encryption-attacks.ts";
import { everyRow, freshStorage, POSTGRES_URL } from "./support.ts";

describe.skipIf(!POSTGRES_URL)("PostgreSQL server", () => {
  runEncryptionAttackTests("PostgresStorage", async () => {
    const { storage, schema, teardown } = freshStorage();
    return { storage, dump: () => everyRow(schema), teardown };
  });
});
