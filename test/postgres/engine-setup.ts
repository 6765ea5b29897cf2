/**
 * setupFiles of the `postgres-engine` project: hands the server's URL (from the globalSetup)
 * to memory-on-postgres.ts, which is constructed where `inject` cannot be called, and after
 * each test file closes its stores and drops their schemas (the server may be one's own).
 */
import { afterAll, inject } from "vitest";
import { createdStores } from "./memory-on-postgres.ts";
import { dropSchemas } from "./support.ts";

process.env.SESSIONFOLD_ENGINE_POSTGRES_URL = inject("postgresUrl");

afterAll(async () => {
  const stores = createdStores.splice(0);
  await Promise.all(stores.map((store) => store.close().catch(() => undefined)));
  for (let i = 0; i < stores.length; i += 50) await dropSchemas(...stores.slice(i, i + 50).map((store) => store.schema));
});
