/**
 * Schema migrations on a store that already holds sessions (docs/POSTGRES.md "Migrations"):
 * a version-1 store, written with version 1's own functions, is upgraded in place by the
 * first handle of the current code, and nothing of it changes. Version 2 keeps each
 * `meta.json`'s revision beside it (`entries.revision`): the tests check that a commit's
 * revision check still refuses a stale writer, and that no other write leaves the column stale.
 * Version 4's `run_plan` does the writes itself: a commit over files of several chunks, and
 * over files it must create, stores exactly each write's bytes. Version 5 writes a commit's
 * usual pair (its lines, `meta.json`) in one statement, and the three-statement replace when
 * `meta.json`'s row changed under it. Version 6 runs an append's per-operation commit through
 * `run_append` (scalar arguments, one statement after the lock), and `run_plan` for whatever
 * that statement did not write.
 */
import pg from "pg";
import { describe, expect, it } from "vitest";
import { MemoryStorage, RevisionConflictError, sessionPaths, Sessions } from "../../core/mod.ts";
import { PostgresStorage } from "../../runtime-postgres/mod.ts";
import { migrate, SCHEMA_VERSION } from "../../runtime-postgres/schema.ts";
import { until } from "../support/until.ts";
import { POSTGRES_URL, schemasDroppedAfterAll, withClient } from "./support.ts";

const REF = { agentId: "a1", workspaceId: "w1", sessionId: "s1" };
/** What `list` filters by: REF's agent and workspace. */
const WORKSPACE = { agentId: REF.agentId, workspaceId: REF.workspaceId };
const PATHS = sessionPaths(REF);
const text = (t: string) => ({ role: "user" as const, parts: [{ type: "text" as const, text: t }] });
const newSchema = schemasDroppedAfterAll();

/** The stored revision column of `path`, and the schema's version. */
async function stored(schema: string, path: string): Promise<{ revision: string | null; version: number }> {
  return withClient(async (admin) => {
    const revision = await admin.query(`SELECT revision FROM "${schema}".entries WHERE path = $1`, [path]);
    const version = await admin.query(`SELECT version FROM "${schema}".schema_version`);
    return { revision: revision.rows[0]!.revision as string | null, version: version.rows[0]!.version as number };
  });
}

/**
 * A fresh schema holding a session of one message ("one") as version `version` left it (its
 * `meta.json` one chunk with its revision), for the test to upgrade in place.
 */
async function sessionAtVersion(version: number): Promise<string> {
  const schema = newSchema("migrate");
  const source = new MemoryStorage();
  const original = await new Sessions({ storage: source }).create({ ...REF, title: `from version ${version}` });
  await original.append(text("one"));
  await withClient(async (admin) => {
    await migrate(admin, schema, "1", version);
    await admin.query(`SELECT "${schema}".replace($1, $2, $3)`, [PATHS.meta, Buffer.from((await source.read(PATHS.meta))!), original.meta.revision]);
    await admin.query(`SELECT "${schema}".replace($1, $2)`, [PATHS.active, Buffer.from((await source.read(PATHS.active))!)]);
  });
  return schema;
}

/** The end offsets of `path`'s chunks, in order. */
function chunkEnds(schema: string, path: string): Promise<number[]> {
  return withClient(async (admin) =>
    (await admin.query(`SELECT c.end_offset FROM "${schema}".entries e JOIN "${schema}".chunks c USING (file_id) WHERE e.path = $1 ORDER BY 1`, [path]))
      .rows.map((row) => Number(row.end_offset))
  );
}

describe.skipIf(!POSTGRES_URL)("schema migrations", () => {
  it("a version-1 store with a session is upgraded in place: same files, and commits go on", async () => {
    const schema = newSchema("migrate");
    // A session of 3 messages as version 1 stored it: its files written by version 1's functions.
    const source = new MemoryStorage();
    const original = await new Sessions({ storage: source }).create({ ...REF, title: "from version 1" });
    await original.append([text("one"), text("two")]);
    await original.append(text("three"));
    const files = [PATHS.meta, PATHS.active];
    await withClient(async (admin) => {
      await migrate(admin, schema, "1", 1);
      for (const path of files) await admin.query(`SELECT "${schema}".replace($1, $2)`, [path, Buffer.from((await source.read(path))!)]);
      const columns = await admin.query(`SELECT 1 FROM information_schema.columns WHERE table_schema = $1 AND column_name = 'revision'`, [schema]);
      expect(columns.rows).toEqual([]);
    });

    const storage = new PostgresStorage({ connectionString: POSTGRES_URL, schema });
    try {
      const session = await new Sessions({ storage }).open(REF);
      expect(await stored(schema, PATHS.meta)).toEqual({ revision: null, version: SCHEMA_VERSION });
      for (const path of files) expect(await storage.read(path)).toEqual(await source.read(path));
      expect(session.diagnostics).toEqual([]);
      expect(session.active.map((m) => m.sequence)).toEqual([1, 2, 3]);
      // The first commit reads the revision from the document (the column is not known yet)
      // and leaves the new one beside the new meta.json.
      await session.append(text("four"));
      expect((await stored(schema, PATHS.meta)).revision).toBe(String(session.meta.revision));
      await session.append(text("five"));
      const reopened = await new Sessions({ storage }).open(REF);
      expect(reopened.diagnostics).toEqual([]);
      expect(reopened.active.map((m) => m.sequence)).toEqual([1, 2, 3, 4, 5]);
      expect(reopened.meta.revision).toBe(session.meta.revision);
    } finally {
      await storage.close();
    }
  });

  it("the revision column refuses a stale writer, and a write that is not a commit's leaves it unknown", async () => {
    const schema = newSchema("migrate");
    const storage = new PostgresStorage({ connectionString: POSTGRES_URL, schema });
    try {
      const sessions = new Sessions({ storage });
      const a = await sessions.create(REF);
      await a.append(text("1"));
      const b = await sessions.open(REF);
      await a.append(text("2 from a"));
      expect((await stored(schema, PATHS.meta)).revision).toBe(String(a.meta.revision));
      await expect(b.append(text("2 from b"))).rejects.toBeInstanceOf(RevisionConflictError);

      // A meta.json written outside a commit (a repair, another tool) is never checked
      // against the column's old figure: the column becomes unknown.
      const meta = (await storage.read(PATHS.meta))!;
      const rewritten = new TextEncoder().encode(new TextDecoder().decode(meta).replace(/"revision": \d+/, '"revision": 40'));
      await storage.replace(PATHS.meta, rewritten);
      expect((await stored(schema, PATHS.meta)).revision).toBeNull();
      await expect(a.append(text("3 from a, stale"))).rejects.toBeInstanceOf(RevisionConflictError);
      await a.reload();
      expect(a.meta.revision).toBe(40);
      await a.append(text("3 from a"));
      expect((await stored(schema, PATHS.meta)).revision).toBe("41");
      await storage.append(PATHS.meta, new Uint8Array(0));
      expect((await stored(schema, PATHS.meta)).revision).toBe("41");
      await storage.append(PATHS.meta, new TextEncoder().encode(" "));
      expect((await stored(schema, PATHS.meta)).revision).toBeNull();
      await storage.replace(PATHS.meta, rewritten);
      await a.reload();
      await a.append(text("4 from a"));
      await storage.truncate(PATHS.meta, 10);
      expect((await stored(schema, PATHS.meta)).revision).toBeNull();
    } finally {
      await storage.close();
    }
  });

  it("a version-2 store is catalogued in place: each meta.json's updated_at filled in, pages listed on the index, commits keep it", async () => {
    const schema = newSchema("migrate");
    const source = new MemoryStorage();
    const sources = new Sessions({
      storage: source,
      clock: (() => {
        let t = Date.parse("2026-12-02T13:00:00.000Z");
        return () => (t += 1000);
      })(),
    });
    for (const id of ["s1", "s2", "s3"]) await sources.create({ ...REF, sessionId: id, title: id });
    await withClient(async (admin) => {
      await migrate(admin, schema, "1", 2);
      for (const id of ["s1", "s2", "s3"]) {
        const path = sessionPaths({ ...REF, sessionId: id }).meta;
        await admin.query(`SELECT "${schema}".replace($1, $2)`, [path, Buffer.from((await source.read(path))!)]);
      }
    });
    const storage = new PostgresStorage({ connectionString: POSTGRES_URL, schema });
    try {
      const sessions = new Sessions({ storage });
      const first = await sessions.list({ ...WORKSPACE, limit: 2 });
      expect(first.map((m) => m.session_id)).toEqual(["s3", "s2"]);
      expect((await sessions.list({ ...WORKSPACE, limit: 2, cursor: first.cursor! })).map((m) => m.title)).toEqual(["s1"]);
      const listed = await withClient((admin) => admin.query(`SELECT listed_at, listing FROM "${schema}".entries WHERE path = $1`, [PATHS.meta]));
      expect(listed.rows[0]).toMatchObject({ listed_at: "2026-12-02T13:00:01.000Z", listing: null });
      await (await sessions.open(REF)).append(text("one"));
      const after = await withClient((admin) => admin.query(`SELECT listed_at, listing FROM "${schema}".entries WHERE path = $1`, [PATHS.meta]));
      expect(JSON.parse(after.rows[0].listing as string)).toMatchObject({ session_id: "s1", message_count: 1 });
      expect((await sessions.list({ ...WORKSPACE, limit: 1 })).map((m) => m.session_id)).toEqual(["s1"]);
    } finally {
      await storage.close();
    }
  });

  it("a version-3 store commits through version 4's run_plan: each write's bytes exactly, whatever chunks the file had", async () => {
    const schema = newSchema("migrate");
    const dir = "agents/a1/workspaces/w1/sessions/s9";
    await withClient(async (admin) => {
      await migrate(admin, schema, "1", 3);
      // Files of several chunks, written with version 3's own functions.
      for (const chunk of ["ab", "cd", "ef"]) await admin.query(`SELECT "${schema}".append($1, $2)`, [`${dir}/same-end.txt`, Buffer.from(chunk)]);
      for (const chunk of ["ab", "cd"]) await admin.query(`SELECT "${schema}".append($1, $2)`, [`${dir}/same-size.txt`, Buffer.from(chunk)]);
      await admin.query(`SELECT "${schema}".append($1, $2)`, [`${dir}/emptied.txt`, Buffer.from("xyz")]);
      await admin.query(`SELECT "${schema}".append($1, $2)`, [`${dir}/grown.txt`, Buffer.from("1")]);
    });
    const storage = new PostgresStorage({ connectionString: POSTGRES_URL, schema });
    const bytes = (t: string) => new TextEncoder().encode(t);
    try {
      const plan = await storage.applyCommitPlan({
        writes: [
          // The new size is the end of the file's first chunk: that chunk is the one kept, with the new bytes.
          { op: "replace", path: `${dir}/same-end.txt`, bytes: bytes("zz") },
          { op: "replace", path: `${dir}/same-size.txt`, bytes: bytes("WXYZ") },
          { op: "replace", path: `${dir}/emptied.txt`, bytes: new Uint8Array(0) },
          { op: "append", path: `${dir}/grown.txt`, bytes: bytes("23") },
          // Files (and a folder) that do not exist yet: created as version 3 did.
          { op: "append", path: `${dir}/new/appended.txt`, bytes: bytes("a") },
          { op: "append", path: `${dir}/new/empty.txt`, bytes: new Uint8Array(0) },
          { op: "replace", path: `${dir}/new/replaced.txt`, bytes: bytes("r") },
        ],
      });
      expect(plan).toEqual({ outcome: "committed" });
      const read = async (name: string) => new TextDecoder().decode(await storage.read(`${dir}/${name}`));
      expect(await read("same-end.txt")).toBe("zz");
      expect(await read("same-size.txt")).toBe("WXYZ");
      expect(await read("emptied.txt")).toBe("");
      expect(await read("grown.txt")).toBe("123");
      expect(await read("new/appended.txt")).toBe("a");
      expect(await read("new/empty.txt")).toBe("");
      expect(await read("new/replaced.txt")).toBe("r");
      expect(await storage.list(`${dir}/new`)).toEqual(["appended.txt", "empty.txt", "replaced.txt"]);
      const chunks = await withClient((admin) =>
        admin.query(
          `SELECT e.name, e.size, count(c.*)::int AS chunks FROM "${schema}".entries e LEFT JOIN "${schema}".chunks c USING (file_id)
           WHERE e.parent = $1 AND e.file_id IS NOT NULL GROUP BY e.name, e.size ORDER BY e.name`,
          [dir],
        )
      );
      expect(chunks.rows).toEqual([
        { name: "emptied.txt", size: "0", chunks: 0 },
        { name: "grown.txt", size: "3", chunks: 2 },
        { name: "same-end.txt", size: "2", chunks: 1 },
        { name: "same-size.txt", size: "4", chunks: 1 },
      ]);
      // A write where a folder is still refused, and the plan leaves nothing.
      await expect(
        storage.applyCommitPlan({
          writes: [{ op: "append", path: `${dir}/grown.txt`, bytes: bytes("4") }, { op: "replace", path: `${dir}/new`, bytes: bytes("x") }],
        }),
      )
        .rejects.toThrow(/is a folder, not a file/);
      expect(await read("grown.txt")).toBe("123");
    } finally {
      await storage.close();
    }
  });

  it("version 5 replaces a commit's meta.json in the statement of its append, and falls back when the row changed under it", async () => {
    // A session as version 4 left it (its meta.json one chunk with its revision), upgraded in place.
    const schema = await sessionAtVersion(4);
    const storage = new PostgresStorage({ connectionString: POSTGRES_URL, schema, maxConnections: 1 });
    const chunksOf = (path: string) => chunkEnds(schema, path);
    try {
      const session = await new Sessions({ storage }).open(REF);
      for (const t of ["two", "three", "four"]) await session.append(text(t));
      expect(await stored(schema, PATHS.meta)).toEqual({ revision: String(session.meta.revision), version: SCHEMA_VERSION });
      const meta = (await storage.read(PATHS.meta))!;
      expect(await chunksOf(PATHS.meta)).toEqual([meta.length]);
      expect(await chunksOf(PATHS.active)).toHaveLength(4);

      // Another writer appends to meta.json (outside any commit) between the commit's read of the
      // row and its update: the commit waits for that row, finds it changed, and writes it whole.
      // A dead holder's lock record sends this commit through run_plan (version 6's run_append
      // hands a commit that must drop one to it), whose one statement is the one tested here.
      await storage.replace(PATHS.lock, new TextEncoder().encode('{"lock_id":"dead","pid":1}'));
      await withClient(async (other) => {
        await other.query("BEGIN");
        await other.query(`SELECT "${schema}".append($1, $2)`, [PATHS.meta, Buffer.from(" ")]);
        const commit = session.append(text("five"));
        await withClient((watcher) =>
          until("the commit to wait on the meta.json row", async () => {
            const waiting = await watcher.query(
              "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1",
              [`%"${schema}".run_%`],
            );
            return waiting.rows.length > 0;
          })
        );
        await other.query("COMMIT");
        await commit;
      });
      expect(await storage.read(PATHS.lock)).toBeUndefined();
      const written = (await storage.read(PATHS.meta))!;
      expect(JSON.parse(new TextDecoder().decode(written)).revision).toBe(session.meta.revision);
      expect(await chunksOf(PATHS.meta)).toEqual([written.length]);
      expect(await stored(schema, PATHS.meta)).toEqual({ revision: String(session.meta.revision), version: SCHEMA_VERSION });
      const reopened = await new Sessions({ storage }).open(REF);
      expect(reopened.diagnostics).toEqual([]);
      expect(reopened.active.map((m) => (m.parts[0] as { text: string }).text)).toEqual(["one", "two", "three", "four", "five"]);
    } finally {
      await storage.close();
    }
  });
  it("version 6 runs an append's commit in run_append's one statement, and the general way what it did not write", async () => {
    // A session as version 5 left it, upgraded in place.
    const schema = await sessionAtVersion(5);
    const storage = new PostgresStorage({ connectionString: POSTGRES_URL, schema, maxConnections: 1 });
    // The statements the handle sends, by name (its commits are named prepared statements).
    const sent: string[] = [];
    const query = pg.Client.prototype.query;
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      const name = (args[0] as { name?: unknown } | undefined)?.name;
      if (typeof name === "string") sent.push(name.slice(schema.length + 1));
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof query;
    const chunksOf = (path: string) => chunkEnds(schema, path);
    const texts = async () => (await new Sessions({ storage }).open(REF)).active.map((m) => (m.parts[0] as { text: string }).text);
    try {
      const sessions = new Sessions({ storage });
      const session = await sessions.open(REF);
      sent.length = 0;
      for (const t of ["two", "three"]) await session.append(text(t));
      expect(sent).toEqual(["run_append", "run_append"]);
      expect(await stored(schema, PATHS.meta)).toEqual({ revision: String(session.meta.revision), version: SCHEMA_VERSION });
      expect(await chunksOf(PATHS.meta)).toEqual([(await storage.read(PATHS.meta))!.length]);
      const listed = await withClient((admin) => admin.query(`SELECT listed_at, listing FROM "${schema}".entries WHERE path = $1`, [PATHS.meta]));
      expect(listed.rows[0].listed_at).toBe(session.meta.updated_at);
      expect(JSON.parse(listed.rows[0].listing as string)).toMatchObject({ message_count: 3, revision: session.meta.revision });

      // Another writer appends to meta.json (outside any commit) while run_append waits for its
      // row: the lines land, and meta.json is written whole, one chunk again.
      await withClient(async (other) => {
        await other.query("BEGIN");
        await other.query(`SELECT "${schema}".append($1, $2)`, [PATHS.meta, Buffer.from(" ")]);
        sent.length = 0;
        const commit = session.append(text("four"));
        await withClient((watcher) =>
          until("the commit to wait on the meta.json row", async () => {
            const waiting = await watcher.query("SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1", [
              `%"${schema}".run_append%`,
            ]);
            return waiting.rows.length > 0;
          })
        );
        await other.query("COMMIT");
        await commit;
      });
      expect(sent).toEqual(["run_append"]);
      const written = (await storage.read(PATHS.meta))!;
      expect(JSON.parse(new TextDecoder().decode(written)).revision).toBe(session.meta.revision);
      expect(await chunksOf(PATHS.meta)).toEqual([written.length]);
      expect(await stored(schema, PATHS.meta)).toEqual({ revision: String(session.meta.revision), version: SCHEMA_VERSION });

      // A stale writer: refused, nothing written.
      const stale = await sessions.open(REF);
      await session.append(text("five"));
      await expect(stale.append(text("five, stale"))).rejects.toBeInstanceOf(RevisionConflictError);
      // A dead holder's lock record: dropped by the general way, and the commit lands.
      await storage.replace(PATHS.lock, new TextEncoder().encode('{"lock_id":"dead","pid":1}'));
      await session.append(text("six"));
      expect(await storage.read(PATHS.lock)).toBeUndefined();
      // A meta.json written outside a commit (its revision not known): read from the document.
      await storage.replace(PATHS.meta, (await storage.read(PATHS.meta))!);
      expect((await stored(schema, PATHS.meta)).revision).toBeNull();
      await session.append(text("seven"));
      expect((await stored(schema, PATHS.meta)).revision).toBe(String(session.meta.revision));
      expect(await texts()).toEqual(["one", "two", "three", "four", "five", "six", "seven"]);
    } finally {
      pg.Client.prototype.query = query;
      await storage.close();
    }
  });
});
