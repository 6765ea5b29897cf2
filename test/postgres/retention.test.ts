/** Deletion and retention on PostgreSQL: every row of a deleted session goes. */
import { describe } from "vitest";
import { runRetentionTests } from "../retention/suite.ts";
import { freshStorage, POSTGRES_URL } from "./support.ts";

describe.skipIf(!POSTGRES_URL)("PostgreSQL server", () => {
  runRetentionTests("PostgresStorage", async () => freshStorage());
});
