/**
 * vitest globalSetup of the `postgres` project: hands the tests a server's URL through
 * `inject("postgresUrl")`. SESSIONFOLD_TEST_POSTGRES_URL names one of one's own; without
 * it a throwaway server starts from the local binaries (.ci/run starts one and sets the
 * variable). With neither, the run fails, unless SESSIONFOLD_TEST_POSTGRES_SKIP=1 says to
 * skip the PostgreSQL tests.
 */
import type { TestProject } from "vitest/node";
import { findPostgresBin, POSTGRES_OPT_OUT_VARIABLE, POSTGRES_URL_VARIABLE, startTestServer } from "../support/postgres-server.ts";

declare module "vitest" {
  export interface ProvidedContext {
    /** The server the PostgreSQL tests use; `""` when they were told to skip. */
    postgresUrl: string;
  }
}

export default function setup(project: TestProject): (() => void) | undefined {
  const given = process.env[POSTGRES_URL_VARIABLE];
  if (given) {
    project.provide("postgresUrl", given);
    return undefined;
  }
  if (!findPostgresBin()) {
    if (process.env[POSTGRES_OPT_OUT_VARIABLE] === "1") {
      project.provide("postgresUrl", "");
      return undefined;
    }
    throw new Error(
      `The PostgreSQL tests need a server: set ${POSTGRES_URL_VARIABLE}=postgres://… (README, "Tests on PostgreSQL"), ` +
        `or install the PostgreSQL server binaries (initdb, pg_ctl), or set ${POSTGRES_OPT_OUT_VARIABLE}=1 to skip them.`,
    );
  }
  const server = startTestServer({ durable: false });
  project.provide("postgresUrl", server.url);
  return () => server.stop();
}
