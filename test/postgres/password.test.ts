/**
 * A server that asks for a password when none was given (docs/POSTGRES.md "Lost connections,
 * timeouts and limits"): the user is told so by a `StorageError` naming the user and the
 * server, and where a password goes, not `pg`'s `SASL: SCRAM-SERVER-FIRST-MESSAGE: client
 * password must be a string`. It needs the test server over loopback TCP, where every role
 * gives its password (scram-sha-256): SESSIONFOLD_TEST_POSTGRES_TCP_URL, which .ci/run sets;
 * without it the test skips, saying so.
 */
import { randomBytes } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { Sessions, StorageError } from "../../core/mod.ts";
import { PostgresStorage } from "../../runtime-postgres/mod.ts";
import { POSTGRES_URL, schemasDroppedAfterAll, withClient } from "./support.ts";

/** The test server over TCP, where it asks every role for its password (.ci/run). */
const TCP_URL = process.env.SESSIONFOLD_TEST_POSTGRES_TCP_URL ?? "";
const REF = { agentId: "a1", workspaceId: "w1", sessionId: "s1" };
const newSchema = schemasDroppedAfterAll();
const role = `sf_password_${randomBytes(4).toString("hex")}`;
const password = randomBytes(12).toString("hex");

afterAll(async () => {
  if (!POSTGRES_URL || !TCP_URL) return;
  await withClient(async (admin) => {
    await admin.query(`DROP OWNED BY "${role}" CASCADE`);
    await admin.query(`DROP ROLE IF EXISTS "${role}"`);
  });
});

describe.skipIf(!POSTGRES_URL)("a server that asks for a password", () => {
  it.skipIf(!TCP_URL)(
    "a URL without one is told the server asked for the user's password and where to give it (needs SESSIONFOLD_TEST_POSTGRES_TCP_URL)",
    async () => {
      await withClient((admin) => admin.query(`CREATE ROLE "${role}" LOGIN CREATEDB PASSWORD '${password}'`));
      const url = new URL(TCP_URL);
      url.username = role;
      const schema = newSchema("password");
      const storage = new PostgresStorage({ connectionString: url.href, schema });
      try {
        const refused = await storage.read("agents/a1/workspaces/w1/notes.txt").then(() => undefined, (error: unknown) => error);
        expect(refused).toBeInstanceOf(StorageError);
        const { message, details } = refused as StorageError;
        expect(details).toMatchObject({ user: role, host: url.hostname, port: Number(url.port) });
        expect(message).toContain(`asked for the password of user ${role}`);
        expect(message).toContain(`${url.hostname}:${url.port}`);
        expect(message).toContain("PGPASSWORD");
        expect(message).not.toContain("SASL");
        expect(message).not.toContain(password);
      } finally {
        await storage.close();
      }
      // The same URL with the password opens the store: it was the password alone that was missing.
      url.password = password;
      const given = new PostgresStorage({ connectionString: url.href, schema });
      try {
        await withClient((admin) => admin.query(`CREATE SCHEMA "${schema}" AUTHORIZATION "${role}"`));
        expect((await new Sessions({ storage: given }).create(REF)).meta.session_id).toBe(REF.sessionId);
      } finally {
        await given.close();
      }
    },
  );
});
