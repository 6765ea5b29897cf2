/**
 * setupFiles of the `postgres-engine` project: hands the server's URL (from the globalSetup)
 * to memory-on-postgres.ts, which is constructed where `inject` cannot be called.
 */
import { inject } from "vitest";

process.env.SESSIONFOLD_ENGINE_POSTGRES_URL = inject("postgresUrl");
