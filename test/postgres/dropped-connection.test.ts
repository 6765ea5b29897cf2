/**
 * Connections dropped under a statement (docs/POSTGRES.md "Lost connections, timeouts and
 * limits"), forced through a proxy on loopback (dropping-proxy.ts) at a point the test
 * chooses: a socket reset (`ECONNRESET`) and the server's end of an idle session (`57P05`,
 * `idle_session_timeout`) are a lost connection like a terminated backend. A read that met one
 * is sent once more on a new connection and answers; a commit is never sent twice: one the
 * server answered before the reset stays committed once, and one under a held lock whose
 * connection the server had ended is refused with `LeaseLostError`, its outcome unknown.
 */
import { afterEach, describe, expect, it } from "vitest";
import { LeaseLostError, Sessions, StorageError } from "../../core/mod.ts";
import { PostgresStorage } from "../../runtime-postgres/mod.ts";
import { readStatement } from "../../runtime-postgres/read-statement.ts";
import { type DroppingProxy, startDroppingProxy } from "./dropping-proxy.ts";
import { POSTGRES_URL, schemasDroppedAfterAll } from "./support.ts";

const REF = { agentId: "a1", workspaceId: "w1", sessionId: "s1" };
const FILE = "agents/a1/workspaces/w1/notes.txt";
const BYTES = new TextEncoder().encode("kept across a dropped connection");
const text = (t: string, id: string) => ({ role: "user" as const, parts: [{ type: "text" as const, text: t }], message_id: id });
const newSchema = schemasDroppedAfterAll();

let open: { proxy?: DroppingProxy; stores: PostgresStorage[] } = { stores: [] };
afterEach(async () => {
  for (const store of open.stores) await store.close();
  await open.proxy?.close();
  open = { stores: [] };
});

/** A schema holding {@linkcode FILE}, a proxy to the server, and a handle of one shared connection through it. */
async function throughProxy(): Promise<{ proxy: DroppingProxy; storage: PostgresStorage; schema: string }> {
  const schema = newSchema("dropped");
  const direct = new PostgresStorage({ connectionString: POSTGRES_URL, schema });
  open.stores.push(direct);
  await direct.replace(FILE, BYTES);
  const proxy = await startDroppingProxy(POSTGRES_URL);
  open.proxy = proxy;
  const storage = new PostgresStorage({ connectionString: proxy.url, schema, maxConnections: 1 });
  open.stores.push(storage);
  return { proxy, storage, schema };
}

describe.skipIf(!POSTGRES_URL)("a connection dropped under a statement", () => {
  it("a read whose connection is reset (ECONNRESET) is sent once more on a new one", async () => {
    const { proxy, storage, schema } = await throughProxy();
    expect(await storage.read(FILE)).toEqual(BYTES);
    // The read statement's name goes in every Bind of it: the connection is reset once the client sent it.
    const reset = proxy.resetOn(readStatement(schema).name, "sent");
    expect(await storage.read(FILE)).toEqual(BYTES);
    await reset;
  });

  it("a read that meets the server's end of its idle session (57P05) is sent once more on a new one", async () => {
    const { proxy, storage } = await throughProxy();
    expect(await storage.read(FILE)).toEqual(BYTES);
    // The server ends the idle connection; the proxy gives its FATAL to the client only when the next read comes.
    await proxy.endIdleSessions();
    expect(await storage.read(FILE)).toEqual(BYTES);
  });

  it("a commit whose answer is lost to a reset is not sent again: refused, and committed once", async () => {
    const { proxy, storage, schema } = await throughProxy();
    const session = await new Sessions({ storage }).create(REF);
    await session.append(text("one", "m1"));
    const reset = proxy.resetOn(`${schema}.run_append`, "answered");
    const refused = await session.append(text("two", "m2")).then(() => undefined, (error: unknown) => error);
    await reset;
    expect(refused).toBeInstanceOf(StorageError);
    expect((refused as StorageError).details).toMatchObject({ errno: "ECONNRESET" });
    const reader = new PostgresStorage({ connectionString: POSTGRES_URL, schema });
    open.stores.push(reader);
    const reopened = await new Sessions({ storage: reader }).open(REF);
    expect(reopened.active.map((m) => m.message_id)).toEqual(["m1", "m2"]);
  });

  it("a commit under a held lock whose connection the server ended (57P05) is refused as a lost lease, outcome unknown", async () => {
    const { proxy, storage, schema } = await throughProxy();
    const sessions = new Sessions({ storage });
    await sessions.create(REF);
    const held = await sessions.open(REF, { hold: true });
    // Both connections of the handle (the shared one, the lock's) ended while idle.
    await proxy.endIdleSessions();
    const refused = await held.append(text("lost", "m1")).then(() => undefined, (error: unknown) => error);
    expect(refused).toBeInstanceOf(LeaseLostError);
    expect((refused as LeaseLostError).details).toMatchObject({ outcome: "unknown", sqlstate: "57P05" });
    const reader = new PostgresStorage({ connectionString: POSTGRES_URL, schema });
    open.stores.push(reader);
    expect((await new Sessions({ storage: reader }).open(REF)).active).toEqual([]);
  });
});
