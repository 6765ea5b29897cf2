/**
 * Case 10: sessionfold on PostgreSQL (`sessionfold/postgres`), on a server this case starts
 * for itself (test/support/postgres-server.ts: initdb into a temp folder, a Unix socket,
 * PostgreSQL's defaults, so `fsync` and `synchronous_commit` are on).
 *
 * - turn cost: a warm `sessions.open` + `compose` of a session of 10² and of 10⁵ messages
 *   (written as the files 10⁵ commits and their compactions leave), round-robin; the ratio is
 *   the flatness (target ≤ 1.2).
 * - one writer: `Session.append` of one ~500-byte message, each a commit plan (lock, revision
 *   check, append, `meta.json`) in one statement, against the floor: a bare `INSERT` of the
 *   same bytes (the JSONL line and the new `meta.json`) and its `COMMIT`, one per round trip,
 *   with `synchronous_commit = on`. Alternating batches; target ≥ 0.6 of the floor. The same
 *   writer holding a lease (no lock or revision check per commit, `meta.json` lazily) in the
 *   same alternation, without a target. Both are fenced (docs/POSTGRES.md "Fencing"): the
 *   per-operation commit holds the session's lock in its own transaction, the held commit runs
 *   on the lease's own connection, so it lands only while the lease's lock is held.
 * - 8 writers on 8 sessions at once (one process, one store handle): aggregate commits/s,
 *   against 8 bare INSERT loops at once.
 * - listing 10⁴ sessions of one workspace: `storage.list` of the sessions folder (one
 *   indexed query; target ≤ 100 ms), and `sessions.list`, which also reads each `meta.json`.
 *
 * @module
 */
import pg from "pg";
import { encodeJsonlLine, Sessions, sessionPaths, type Session } from "../../../core/mod.ts";
import { PostgresStorage } from "../../../runtime-postgres/mod.ts";
import { startTestServer } from "../../support/postgres-server.ts";
import type { CaseContext } from "../lib/result.ts";
import { median } from "../lib/stats.ts";
import { BENCH_PROVIDER, BENCH_REF, sizeLabel, writeSyntheticSession } from "../lib/synth.ts";
import { appendMessage } from "./append.ts";

const encoder = new TextEncoder();

export async function postgresCase(ctx: CaseContext): Promise<void> {
  const server = startTestServer({ durable: true, maxConnections: 100 });
  try {
    await turnCost(ctx, server.url);
    await oneWriter(ctx, server.url);
    await eightWriters(ctx, server.url);
    await listing(ctx, server.url);
  } finally {
    server.stop();
  }
}

/** A store for loading fixtures fast: its commits need not wait for the disk. */
function loader(url: string, schema: string): PostgresStorage {
  return new PostgresStorage({ connectionString: url, schema, maxConnections: 8, pool: { options: "-c synchronous_commit=off" } });
}

async function turnCost(ctx: CaseContext, url: string): Promise<void> {
  const sizes = [100, 100_000];
  const stores: { n: number; storage: PostgresStorage; sessions: Sessions; times: number[] }[] = [];
  for (const n of sizes) {
    const schema = `turn_${n}`;
    const load = loader(url, schema);
    await writeSyntheticSession((path, bytes) => load.replace(path, bytes), n);
    await load.close();
    const storage = new PostgresStorage({ connectionString: url, schema });
    stores.push({ n, storage, sessions: new Sessions({ storage }), times: [] });
    ctx.log(`postgres: session of ${sizeLabel(n)} messages written`);
  }
  const rounds = ctx.quick ? 20 : 60;
  for (let round = -3; round < rounds; round++) {
    for (const store of stores) {
      const t0 = performance.now();
      (await store.sessions.open(BENCH_REF)).compose(BENCH_PROVIDER);
      if (round >= 0) store.times.push(performance.now() - t0);
    }
  }
  const [small, large] = stores.map((s) => median(s.times)) as [number, number];
  ctx.emit({
    case: 10,
    name: `postgres.turn.n=${sizeLabel(100_000)}`,
    value: large,
    unit: "ms",
    baseline: small,
    baselineName: `the same on n=${sizeLabel(100)}`,
    ratio: large / small,
    ratioMeaning: "n=1e5 / n=1e2 (flatness)",
    target: { op: "<=", limit: 1.2, text: "≤ 1.2 (flat)" },
    runs: rounds,
    note: "warm open + compose in this process, one PostgresStorage, the server on a Unix socket",
  });
  for (const store of stores) await store.storage.close();
}

/** The bytes one commit writes: the appended JSONL line and the new meta.json. */
async function commitBytes(storage: PostgresStorage, session: Session): Promise<number> {
  const record = session.active.at(-1)!;
  const meta = await storage.read(sessionPaths(session.ref).meta);
  return encodeJsonlLine(record).length + (meta?.length ?? 0);
}

async function floorTable(url: string): Promise<pg.Pool> {
  const pool = new pg.Pool({ connectionString: url, max: 8 });
  await pool.query("CREATE TABLE IF NOT EXISTS bench_floor (id bigserial PRIMARY KEY, bytes bytea NOT NULL)");
  return pool;
}

async function oneWriter(ctx: CaseContext, url: string): Promise<void> {
  const storage = new PostgresStorage({ connectionString: url, schema: "one_writer" });
  const sessions = new Sessions({ storage });
  const session = await sessions.create({ ...BENCH_REF, title: "one writer" });
  await session.append(appendMessage(0));
  const held = await sessions.create({ ...BENCH_REF, sessionId: "held", title: "one writer, held" }, { hold: true });
  await held.append(appendMessage(0));
  const bytes = Buffer.alloc(await commitBytes(storage, session), 0x61);
  const pool = await floorTable(url);
  const floorClient = await pool.connect();
  const batches = ctx.quick ? 5 : 15;
  const perBatch = 100;
  const ours: number[] = [];
  const ourHeld: number[] = [];
  const floor: number[] = [];
  let i = 1;
  /** Commits/s of `perBatch` calls of `commit`, kept once the warm-up batch is done. */
  const batch = async (into: number[], b: number, commit: () => Promise<unknown>) => {
    const t0 = performance.now();
    for (let k = 0; k < perBatch; k++) await commit();
    if (b >= 0) into.push((perBatch * 1000) / (performance.now() - t0));
  };
  for (let b = -1; b < batches; b++) {
    await batch(ours, b, () => session.append(appendMessage(i++)));
    await batch(ourHeld, b, () => held.append(appendMessage(i++)));
    await batch(floor, b, () => floorClient.query("INSERT INTO bench_floor (bytes) VALUES ($1)", [bytes]));
  }
  floorClient.release();
  await pool.end();
  await held.close();
  await storage.close();
  const value = median(ours);
  const baseline = median(floor);
  const heldValue = median(ourHeld);
  ctx.emit({
    case: 10,
    name: "postgres.commits-per-s.one-writer",
    value,
    unit: "commits/s",
    baseline,
    baselineName: `bare INSERT + COMMIT of the same ${bytes.length} bytes (synchronous_commit = on)`,
    ratio: value / baseline,
    ratioMeaning: "sessionfold / floor",
    target: { op: ">=", limit: 0.6, text: "≥ 0.6 of the floor" },
    runs: batches,
    note: "per operation: each commit takes the session's advisory lock, checks meta.json's revision, appends and replaces meta.json, in one statement (fenced: the lock is the commit's own transaction's)",
  });
  ctx.emit({
    case: 10,
    name: "postgres.commits-per-s.one-writer.held",
    value: heldValue,
    unit: "commits/s",
    baseline,
    baselineName: `the same bare INSERT + COMMIT of ${bytes.length} bytes`,
    ratio: heldValue / baseline,
    ratioMeaning: "sessionfold / floor",
    runs: batches,
    note: "a lease (create with { hold: true }), fenced: each commit runs on the connection that holds the lease's advisory lock (no lock and no revision check per commit, the line appended alone and meta.json replaced every 64th commit); batches alternate with the row above and the floor",
  });
}

async function eightWriters(ctx: CaseContext, url: string): Promise<void> {
  const writers = 8;
  const storage = new PostgresStorage({ connectionString: url, schema: "eight_writers", maxConnections: writers });
  const sessions = new Sessions({ storage });
  const handles: Session[] = [];
  for (let w = 0; w < writers; w++) handles.push(await sessions.create({ ...BENCH_REF, sessionId: `s${w}`, title: `writer ${w}` }));
  for (const session of handles) await session.append(appendMessage(0));
  const bytes = Buffer.alloc(await commitBytes(storage, handles[0]!), 0x61);
  const pool = await floorTable(url);
  const perWriter = ctx.quick ? 100 : 300;
  let t0 = performance.now();
  await Promise.all(
    handles.map(async (session) => {
      for (let k = 1; k <= perWriter; k++) await session.append(appendMessage(k));
    }),
  );
  const value = (writers * perWriter * 1000) / (performance.now() - t0);
  t0 = performance.now();
  await Promise.all(
    Array.from({ length: writers }, async () => {
      const client = await pool.connect();
      for (let k = 0; k < perWriter; k++) await client.query("INSERT INTO bench_floor (bytes) VALUES ($1)", [bytes]);
      client.release();
    }),
  );
  const baseline = (writers * perWriter * 1000) / (performance.now() - t0);
  await pool.end();
  await storage.close();
  ctx.emit({
    case: 10,
    name: "postgres.commits-per-s.8-writers",
    value,
    unit: "commits/s",
    baseline,
    baselineName: "8 bare INSERT + COMMIT loops at once",
    ratio: value / baseline,
    ratioMeaning: "sessionfold / floor (aggregate)",
    runs: 1,
    note: "8 sessions, one store handle, 8 connections; the server's group commit shares each fsync",
  });
}

async function listing(ctx: CaseContext, url: string): Promise<void> {
  const count = 10_000;
  const load = loader(url, "listing");
  const meta = (i: number) => encoder.encode(`${JSON.stringify({ schema_version: 1, session_id: `s${i}`, agent_id: "bench", workspace_id: "w1", title: `session ${i}`, created_at: "2026-01-01T00:00:00.000Z", updated_at: "2026-01-01T00:00:00.000Z", message_count: 0, history_bytes: 0, revision: 0 }, null, 2)}\n`);
  for (let i = 0; i < count; i += 8) {
    await Promise.all(Array.from({ length: Math.min(8, count - i) }, (_, k) => load.replace(`agents/bench/workspaces/w1/sessions/s${i + k}/meta.json`, meta(i + k))));
  }
  // Another workspace as big, which the listing must not read.
  for (let i = 0; i < count; i += 8) {
    await Promise.all(Array.from({ length: Math.min(8, count - i) }, (_, k) => load.replace(`agents/bench/workspaces/w2/sessions/s${i + k}/meta.json`, meta(i + k))));
  }
  await load.close();
  ctx.log(`postgres: ${count} sessions in each of two workspaces written`);
  const storage = new PostgresStorage({ connectionString: url, schema: "listing" });
  const sessions = new Sessions({ storage });
  const folder: number[] = [];
  const full: number[] = [];
  const runs = ctx.quick ? 5 : 15;
  for (let r = -1; r < runs; r++) {
    let t0 = performance.now();
    const names = await storage.list("agents/bench/workspaces/w1/sessions");
    if (names.length !== count) throw new Error(`listed ${names.length} sessions, expected ${count}`);
    if (r >= 0) folder.push(performance.now() - t0);
    if (r < 2) {
      t0 = performance.now();
      const metas = await sessions.list({ agentId: "bench", workspaceId: "w1" });
      if (metas.length !== count) throw new Error(`sessions.list found ${metas.length}, expected ${count}`);
      if (r >= 0) full.push(performance.now() - t0);
    }
  }
  await storage.close();
  ctx.emit({
    case: 10,
    name: `postgres.list.n=${sizeLabel(count)}`,
    value: median(folder),
    unit: "ms",
    baseline: median(full),
    baselineName: "sessions.list (also reads every meta.json, one query each)",
    ratio: null,
    ratioMeaning: "",
    target: { on: "value", op: "<=", limit: 100, text: "≤ 100 ms" },
    runs,
    note: "storage.list of one workspace's sessions folder (one indexed query) with another workspace of as many sessions beside it",
  });
}
