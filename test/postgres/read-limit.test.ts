/**
 * The read limit from stored sizes on PostgreSQL (docs/FORMAT.md "Limits"): a file over
 * `maxFileBytes` (256 MiB by default) is refused with `StoreEntryError` from the sum of its
 * chunks' `octet_length`, on the server, before any chunk travels. The 275 MiB `active.jsonl`
 * of issue 27 is built on the server (five 55 MiB appends of one repeated byte, which TOAST
 * compresses to almost nothing), so the test moves no such bytes itself.
 */
import pg from "pg";
import { describe, expect, it } from "vitest";
import { Sessions, StoreEntryError } from "../../core/mod.ts";
import { PostgresStorage } from "../../runtime-postgres/mod.ts";
import { POSTGRES_URL, schemasDroppedAfterAll } from "./support.ts";

const newSchema = schemasDroppedAfterAll();

describe.skipIf(!POSTGRES_URL)("the read limit, from stored sizes", () => {
  it("a 275 MiB active.jsonl is refused before it is loaded, typed, naming the file and both sizes", async () => {
    const schema = newSchema("limit");
    const storage = new PostgresStorage({ connectionString: POSTGRES_URL, schema });
    const admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    try {
      const sessions = new Sessions({ storage });
      const session = await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1", title: "large" });
      const active = "agents/a1/workspaces/w1/sessions/s1/messages/active.jsonl";
      for (let i = 0; i < 5; i++) {
        await admin.query(`SELECT "${schema}".append($1, decode(repeat('61', 55 * 1024 * 1024), 'hex'))`, [active]);
      }
      const before = process.memoryUsage().rss;
      const error = await storage.read(active).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreEntryError);
      expect((error as StoreEntryError).details).toMatchObject({ path: active, found: "a file of 275 MiB", expected: "a file of at most 256 MiB" });
      // Nothing of the 275 MiB came over (the old read loaded all of it).
      expect(process.memoryUsage().rss - before).toBeLessThan(64 * 1024 * 1024);
      await expect(sessions.open(session.ref)).rejects.toBeInstanceOf(StoreEntryError);
    } finally {
      await admin.end();
      await storage.close();
    }
  }, 120_000);

  it("maxFileBytes sets the limit: a file at the limit is read, one byte more is refused", async () => {
    const schema = newSchema("limit");
    const storage = new PostgresStorage({ connectionString: POSTGRES_URL, schema, maxFileBytes: 1024 });
    try {
      await storage.append("f/at-limit", new Uint8Array(1000));
      await storage.append("f/at-limit", new Uint8Array(24));
      expect((await storage.read("f/at-limit"))?.length).toBe(1024);
      await storage.append("f/over", new Uint8Array(1025));
      const error = await storage.read("f/over").catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreEntryError);
      expect((error as StoreEntryError).details).toMatchObject({ path: "f/over", found: "a file of 1 KiB", expected: "a file of at most 1 KiB" });
      expect(await storage.read("f/missing")).toBeUndefined();
      // Empty files exist and read as empty.
      await storage.replace("f/empty", new Uint8Array(0));
      expect(await storage.read("f/empty")).toEqual(new Uint8Array(0));
    } finally {
      await storage.close();
    }
  });
});
