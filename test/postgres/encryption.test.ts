/** The encrypted-store attack suite on PostgreSQL: the no-plaintext check reads every row of the store's schema. */
import { describe } from "vitest";
import { nodeAesGcm } from "../../runtime-node/mod.ts";
import { runEncryptionAttackTests } from "../../testing/encryption-attacks.ts";
import { everyRow, freshStorage, POSTGRES_URL } from "./support.ts";

describe.skipIf(!POSTGRES_URL)("PostgreSQL server", () => {
  runEncryptionAttackTests("PostgresStorage", async () => {
    const { storage, schema, teardown } = freshStorage();
    return { storage, dump: () => everyRow(schema), teardown };
  });
});

describe.skipIf(!POSTGRES_URL)("PostgreSQL server, the Node runtime's cipher", () => {
  runEncryptionAttackTests("PostgresStorage, node:crypto AES-GCM", async () => {
    const { storage, schema, teardown } = freshStorage();
    return { storage, cipher: nodeAesGcm, dump: () => everyRow(schema), teardown };
  });
});
