/**
 * A large file written whole is stored as bounded chunks on PostgreSQL (docs/POSTGRES.md
 * "Tables"): a `replace` of more than `CHUNK_BYTES`, alone or in a commit plan, is rows of at
 * most that size, so a tail read fetches and decompresses only the chunks its tail overlaps.
 * Reads across the chunks' boundaries return the file's bytes; `meta.json` stays one chunk
 * (its revision and catalog columns); a file stored as one large chunk, as stores before this
 * layout wrote it, reads, cuts and grows the same.
 */
import { describe, expect, it } from "vitest";
import { CHUNK_BYTES } from "../../runtime-postgres/bounded-chunks.ts";
import { PostgresStorage } from "../../runtime-postgres/mod.ts";
import { POSTGRES_URL, schemasDroppedAfterAll, withClient } from "./support.ts";

const newSchema = schemasDroppedAfterAll();
const SESSION = "agents/a1/workspaces/w1/sessions/s1";

/** `n` bytes that differ from chunk to chunk (a misplaced chunk reads wrong). */
function bytesOf(n: number, seed = 0): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = (i * 31 + (i >> 8) * 7 + seed) & 0xff;
  return out;
}

/** `path`'s chunks in the store `schema`: where each ends and its length. */
async function chunksOf(schema: string, path: string): Promise<{ end: number; length: number }[]> {
  return withClient(async (client) => {
    const rows = await client.query<{ end: string; length: number }>(
      `SELECT c.end_offset AS end, length(c.bytes) AS length FROM "${schema}".chunks c JOIN "${schema}".entries e ON e.file_id = c.file_id
       WHERE e.path = $1 ORDER BY c.end_offset`,
      [path],
    );
    return rows.rows.map((row) => ({ end: Number(row.end), length: row.length }));
  });
}

/** Every tail read of `path` across its chunks' boundaries gives the last bytes of `bytes`. */
async function expectTails(storage: PostgresStorage, path: string, bytes: Uint8Array): Promise<void> {
  const size = bytes.length;
  for (const tail of [1, 10, CHUNK_BYTES - 1, CHUNK_BYTES, CHUNK_BYTES + 1, CHUNK_BYTES + 3, 2 * CHUNK_BYTES + 5, size - 1, size, size + 100]) {
    const found = await storage.readTail(path, tail);
    expect(found?.size).toBe(size);
    expect(Buffer.from(found!.bytes).equals(Buffer.from(bytes.subarray(Math.max(0, size - tail))))).toBe(true);
  }
  const [many] = await storage.readMany([{ path, tailBytes: CHUNK_BYTES + 7 }]);
  expect(Buffer.from(many!.bytes).equals(Buffer.from(bytes.subarray(Math.max(0, size - CHUNK_BYTES - 7))))).toBe(true);
  expect(Buffer.from((await storage.read(path))!).equals(Buffer.from(bytes))).toBe(true);
}

/** Runs `body` on a store of its own (a fresh schema, dropped after the file), closed after. */
async function inStore(body: (storage: PostgresStorage, schema: string) => Promise<void>): Promise<void> {
  const schema = newSchema("chunks");
  const storage = new PostgresStorage({ connectionString: POSTGRES_URL, schema });
  try {
    await body(storage, schema);
  } finally {
    await storage.close();
  }
}

describe.skipIf(!POSTGRES_URL)("a large write is stored as bounded chunks", () => {
  it("a replace of 3.5 chunks is four rows of at most CHUNK_BYTES; reads across their boundaries give its bytes", async () => {
    await inStore(async (storage, schema) => {
      const path = `${SESSION}/messages/segments/000000000001-000000000500.jsonl`;
      const bytes = bytesOf(3 * CHUNK_BYTES + CHUNK_BYTES / 2);
      await storage.replace(path, bytes);
      expect(await chunksOf(schema, path)).toEqual([
        { end: CHUNK_BYTES, length: CHUNK_BYTES },
        { end: 2 * CHUNK_BYTES, length: CHUNK_BYTES },
        { end: 3 * CHUNK_BYTES, length: CHUNK_BYTES },
        { end: bytes.length, length: CHUNK_BYTES / 2 },
      ]);
      await expectTails(storage, path, bytes);
      // The folder's last file, as an open reads the newest segment.
      const [last] = await storage.readMany([{ lastIn: `${SESSION}/messages/segments`, tailBytes: 100 }]);
      expect(Buffer.from(last!.bytes).equals(Buffer.from(bytes.subarray(bytes.length - 100)))).toBe(true);
      // Replaced again by fewer bytes: the old chunks are gone; appended to: one more row.
      const shorter = bytesOf(CHUNK_BYTES + 1, 9);
      await storage.replace(path, shorter);
      expect((await chunksOf(schema, path)).map((chunk) => chunk.length)).toEqual([CHUNK_BYTES, 1]);
      await storage.append(path, bytesOf(5, 3));
      const grown = Buffer.concat([shorter, bytesOf(5, 3)]);
      expect((await chunksOf(schema, path)).map((chunk) => chunk.length)).toEqual([CHUNK_BYTES, 1, 5]);
      await expectTails(storage, path, grown);
      // Cut inside the first chunk: one row left, the bytes before the cut.
      await storage.truncate(path, CHUNK_BYTES - 3);
      expect(await chunksOf(schema, path)).toEqual([{ end: CHUNK_BYTES - 3, length: CHUNK_BYTES - 3 }]);
      expect(Buffer.from((await storage.read(path))!).equals(grown.subarray(0, CHUNK_BYTES - 3))).toBe(true);
      // A replace of exactly CHUNK_BYTES stays one row.
      await storage.replace(path, bytesOf(CHUNK_BYTES));
      expect(await chunksOf(schema, path)).toEqual([{ end: CHUNK_BYTES, length: CHUNK_BYTES }]);
    });
  });

  it("a commit plan's large replaces are bounded chunks, meta.json one chunk with its revision and listing kept", async () => {
    await inStore(async (storage, schema) => {
      const meta = `${SESSION}/meta.json`;
      const segment = `${SESSION}/messages/segments/000000000001-000000000500.jsonl`;
      const active = `${SESSION}/messages/active.jsonl`;
      const document = (revision: number, pad: number) =>
        new TextEncoder().encode(JSON.stringify({ revision, updated_at: "2026-12-05T00:00:00.000Z", title: "x".repeat(pad) }));
      expect(await storage.applyCommitPlan({ expect: { path: meta, revision: null }, writes: [{ op: "replace", path: meta, bytes: document(1, 10) }] }))
        .toEqual({
          outcome: "committed",
        });
      // A segment close's shape: meta.json (itself larger than a chunk here), the segment, Active.
      const segmentBytes = bytesOf(2 * CHUNK_BYTES + 11, 1);
      const activeBytes = bytesOf(CHUNK_BYTES + 2, 2);
      const metaBytes = document(2, CHUNK_BYTES + 50);
      const outcome = await storage.applyCommitPlan({
        expect: { path: meta, revision: 1 },
        writes: [
          { op: "replace", path: meta, bytes: metaBytes },
          { op: "replace", path: segment, bytes: segmentBytes },
          { op: "replace", path: active, bytes: activeBytes },
        ],
      });
      expect(outcome).toEqual({ outcome: "committed" });
      expect((await chunksOf(schema, segment)).map((chunk) => chunk.length)).toEqual([CHUNK_BYTES, CHUNK_BYTES, 11]);
      expect((await chunksOf(schema, active)).map((chunk) => chunk.length)).toEqual([CHUNK_BYTES, 2]);
      expect(await chunksOf(schema, meta)).toEqual([{ end: metaBytes.length, length: metaBytes.length }]);
      const row = await withClient((client) => client.query(`SELECT revision, listing IS NOT NULL AS listed FROM "${schema}".entries WHERE path = $1`, [meta]));
      expect(row.rows[0]).toEqual({ revision: "2", listed: true });
      await expectTails(storage, segment, segmentBytes);
      await expectTails(storage, active, activeBytes);
      expect(Buffer.from((await storage.read(meta))!).equals(Buffer.from(metaBytes))).toBe(true);
      // The next commit still checks the revision from its column and updates meta.json's one chunk.
      const next = await storage.applyCommitPlan({
        expect: { path: meta, revision: 2 },
        writes: [{ op: "append", path: active, bytes: bytesOf(7, 4) }, { op: "replace", path: meta, bytes: document(3, 5) }],
      });
      expect(next).toEqual({ outcome: "committed" });
      expect(await storage.applyCommitPlan({ expect: { path: meta, revision: 2 }, writes: [] })).toEqual({ outcome: "conflict", revision: 3 });
    });
  });

  it("a file stored as one large chunk (as stores before bounded chunks wrote it) reads, cuts and grows the same", async () => {
    await inStore(async (storage, schema) => {
      const path = `${SESSION}/messages/segments/000000000001-000000000500.jsonl`;
      const bytes = bytesOf(5 * CHUNK_BYTES + 123, 5);
      expect(await storage.exists()).toBe(false);
      await storage.append("warm/up", new Uint8Array(1)); // creates the tables
      // The server's own replace(), as every replace wrote a file before: one chunk.
      await withClient((client) => client.query(`SELECT "${schema}".replace($1, $2)`, [path, Buffer.from(bytes)]));
      expect(await chunksOf(schema, path)).toEqual([{ end: bytes.length, length: bytes.length }]);
      await expectTails(storage, path, bytes);
      await storage.append(path, bytesOf(9, 6));
      const grown = Buffer.concat([bytes, bytesOf(9, 6)]);
      await expectTails(storage, path, grown);
      await storage.truncate(path, 2 * CHUNK_BYTES + 1);
      expect(Buffer.from((await storage.read(path))!).equals(grown.subarray(0, 2 * CHUNK_BYTES + 1))).toBe(true);
    });
  });
});
