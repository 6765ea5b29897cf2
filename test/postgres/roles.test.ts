/**
 * The store as a least-privileged role sees it (docs/POSTGRES.md "Roles and privileges"): a
 * role that owns its schema, created beforehand by an administrator, but may not create
 * schemas in the database opens, writes and lists its store; a role that may not create the
 * missing schema is told so, with what to do, and nothing is created. Each test makes a role
 * of its own on the test server and drops it.
 */
import { randomBytes } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { Sessions, StorageError } from "../../core/mod.ts";
import { PostgresStorage } from "../../runtime-postgres/mod.ts";
import { POSTGRES_URL, schemasDroppedAfterAll, withClient } from "./support.ts";

const REF = { agentId: "a1", workspaceId: "w1", sessionId: "s1" };
const newSchema = schemasDroppedAfterAll();
const roles: string[] = [];

afterAll(async () => {
  if (!POSTGRES_URL) return;
  await withClient(async (admin) => {
    for (const role of roles) {
      await admin.query(`DROP OWNED BY "${role}" CASCADE`);
      await admin.query(`DROP ROLE "${role}"`);
    }
  });
});

/** A login role of its own (no right but to connect), and the test server's URL as that role. */
async function newRole(): Promise<{ role: string; url: string }> {
  const role = `sf_role_${randomBytes(4).toString("hex")}`;
  const password = randomBytes(8).toString("hex");
  await withClient((admin) => admin.query(`CREATE ROLE "${role}" LOGIN PASSWORD '${password}'`));
  roles.push(role);
  const url = new URL(POSTGRES_URL);
  url.username = role;
  url.password = password;
  return { role, url: url.href };
}

describe.skipIf(!POSTGRES_URL)("a role with only the privileges it needs", () => {
  it("a role that owns its schema but may not create schemas opens, writes and lists its store", async () => {
    const { role, url } = await newRole();
    const schema = newSchema("owned");
    await withClient((admin) => admin.query(`CREATE SCHEMA "${schema}" AUTHORIZATION "${role}"`));
    const storage = new PostgresStorage({ connectionString: url, schema });
    try {
      const sessions = new Sessions({ storage });
      const session = await sessions.create(REF);
      await session.append({ role: "user", parts: [{ type: "text", text: "hello" }] });
      expect((await sessions.list({ agentId: REF.agentId, workspaceId: REF.workspaceId })).map((meta) => meta.session_id)).toEqual([REF.sessionId]);
    } finally {
      await storage.close();
    }
  });

  it("a role that may not create the missing schema is told what to do, and nothing is created", async () => {
    const { role, url } = await newRole();
    const schema = newSchema("missing");
    const storage = new PostgresStorage({ connectionString: url, schema });
    try {
      const refused = await new Sessions({ storage }).create(REF).then(() => undefined, (error: unknown) => error);
      expect(refused).toBeInstanceOf(StorageError);
      expect((refused as StorageError).details).toMatchObject({ sqlstate: "42501" });
      expect((refused as StorageError).message).toContain(`schema ${schema} does not exist and role ${role} may not create it`);
      expect((refused as StorageError).message).toContain(`CREATE SCHEMA "${schema}" AUTHORIZATION "${role}"`);
    } finally {
      await storage.close();
    }
    const found = await withClient((admin) => admin.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema]));
    expect(found.rowCount).toBe(0);
  });
});
