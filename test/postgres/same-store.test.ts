/**
 * One PostgreSQL store named by two URLs spelled differently (`postgresql://` for
 * `postgres://`, the default port written out, the parameters in another order, another
 * host name where `?host=` decides) is still the store itself: `sessionfold sync --remote`
 * refuses it as it refuses the store's own URL (usage, exit 2), and `syncStores` refuses a
 * direct remote over it, both before anything is written; another schema of the same
 * database is another store. Sameness is the servers' answer (`storeIdentity`), not the text.
 */
import { describe, expect, it } from "vitest";
import { InvalidInputError } from "../../core/errors.ts";
import { Sessions } from "../../core/mod.ts";
import { directRemote, syncStores } from "../../core/sync/mod.ts";
import { PostgresStorage } from "../../runtime-postgres/mod.ts";
import { cliRaw } from "../cli/support.ts";
import { POSTGRES_URL, schemasDroppedAfterAll, withClient } from "./support.ts";

const newSchema = schemasDroppedAfterAll();

/** The test server's URL with `schema` added, and the other spellings of that URL, each naming the same database. */
async function spellings(schema: string): Promise<{ url: string; others: string[] }> {
  const port = await withClient(async (client) => String((await client.query("SHOW port")).rows[0]!.port));
  const base = new URL(POSTGRES_URL);
  const url = new URL(base);
  url.searchParams.set("schema", schema);
  const others: URL[] = [];
  const scheme = new URL(url);
  scheme.protocol = url.protocol === "postgres:" ? "postgresql:" : "postgres:";
  others.push(scheme);
  const withPort = new URL(url);
  withPort.port = port;
  if (withPort.href !== url.href) others.push(withPort);
  // The same parameters in the other order.
  const reordered = new URL(url);
  reordered.search = "";
  for (const [name, value] of [...url.searchParams].reverse()) reordered.searchParams.append(name, value);
  others.push(reordered);
  // Over a Unix socket (`?host=`), the URL's own host name is not what connects.
  if (url.searchParams.has("host")) {
    const host = new URL(url);
    host.hostname = url.hostname === "localhost" ? "127.0.0.1" : "localhost";
    others.push(host);
  }
  return { url: url.href, others: others.map((other) => other.href) };
}

describe.skipIf(!POSTGRES_URL)("one PostgreSQL store under two spellings of its URL", () => {
  it("sessionfold sync --remote refuses each other spelling as the store itself (exit 2) and writes nothing; another schema syncs", async () => {
    const schema = newSchema("same");
    const { url, others } = await spellings(schema);
    expect(others.length).toBeGreaterThanOrEqual(3);
    const created = await cliRaw(["--store", url, "new", "a1/w1/s1", "--title", "T"]);
    expect(created.status, created.stderr).toBe(0);
    const before = await withClient(async (client) => (await client.query(`SELECT count(*)::int AS n FROM "${schema}".entries`)).rows[0]!.n as number);
    for (const remote of others) {
      const result = await cliRaw(["--store", url, "sync", "--remote", remote]);
      expect(result.status, `${remote}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toMatch(/^error\[usage\]: sync: --remote .* is this store \(.*\), a folder inside it, or a folder that holds it;/);
    }
    expect(await withClient(async (client) => (await client.query(`SELECT count(*)::int AS n FROM "${schema}".entries`)).rows[0]!.n as number)).toBe(before);
    const other = newSchema("other");
    const synced = await cliRaw(["--json", "--store", url, "sync", "--remote", (await spellings(other)).others[0]!]);
    expect(synced.status, synced.stderr).toBe(0);
    expect(JSON.parse(synced.stdout)).toMatchObject({ pushed: 0, conflicts: [] });
  });

  it("syncStores refuses a direct remote over the same schema reached by another spelling, before anything is written", async () => {
    const schema = newSchema("direct");
    const { url, others } = await spellings(schema);
    const local = new PostgresStorage({ connectionString: url, schema });
    const remote = new PostgresStorage({ connectionString: others[0]!, schema });
    try {
      const refused = await syncStores({ local: new Sessions({ storage: local }), remote: directRemote(remote, { id: "same" }) }).catch((error: unknown) =>
        error
      );
      expect(refused).toBeInstanceOf(InvalidInputError);
      expect((refused as InvalidInputError).message).toContain("serves the local store itself");
      expect(await local.list("sync")).toEqual([]);
      expect(await local.storeIdentity()).toBe(await remote.storeIdentity());
      const elsewhere = new PostgresStorage({ connectionString: others[0]!, schema: newSchema("elsewhere") });
      try {
        expect(await elsewhere.storeIdentity()).not.toBe(await local.storeIdentity());
      } finally {
        await elsewhere.close();
      }
    } finally {
      await Promise.all([local.close(), remote.close()]);
    }
  });
});
