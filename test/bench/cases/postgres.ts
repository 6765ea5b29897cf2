/**
 * Case 10: sessionfold on PostgreSQL (`sessionfold/postgres`), on a server this case starts
 * for itself (test/support/postgres-server.ts: initdb into a temp folder, a Unix socket,
 * PostgreSQL's defaults, so `fsync` and `synchronous_commit` are on).
 *
 * - turn cost: a warm `sessions.open` + `compose` of a session of 10² and of 10⁵ messages, each
 *   compacted as case 1's flatness rows' histories are (lib/synth.ts `COMPACTED_ACTIVE_SIZE`:
 *   Active 50 and a newest segment whose footer the open reads, so every size's open does the
 *   same work; the tables then vacuumed and analyzed, as a running server keeps them),
 *   round-robin; the ratio is the flatness (target ≤ 1.2). The statements one open sends
 *   (target 1: one round trip).
 * - one writer: `Session.append` of one ~500-byte message, each a commit plan (lock, revision
 *   check, append, `meta.json`) in one statement, against the floor: a bare `INSERT` of the
 *   same bytes (the JSONL line and the new `meta.json`) and its `COMMIT`, one per round trip,
 *   with `synchronous_commit = on`. Alternating batches; target ≥ 0.7 of the floor, and the
 *   bounds measured in the same batches (the CPU time per commit of the main thread and of the
 *   server's backend, from Linux's schedstat, against the floor's; the main thread's for one
 *   commit's plan sent again through the adapter alone and for its statement through `pg`
 *   alone; the server's time in `run_append` from `track_functions`). The same
 *   writer holding a lease (no lock or revision check per commit, `meta.json` lazily) in the
 *   same alternation, without a target. Both are fenced (docs/POSTGRES.md "Fencing"): the
 *   per-operation commit holds the session's lock in its own transaction, the held commit runs
 *   on the lease's own connection, so it lands only while the lease's lock is held.
 * - the contract bound (`postgres.commit-contract`): what docs/POSTGRES.md requires of the same
 *   per-operation commit (lock, revision check, the line appended, `meta.json`'s row and chunk
 *   replaced, one transaction, one round trip) with raw SQL through a bare `pg` client and no
 *   sessionfold code (postgres-contract.ts), in the same alternation: what any implementation
 *   of the contract could reach on this server.
 * - 8 writers on 8 sessions at once (one process, one store handle): aggregate commits/s,
 *   against 8 bare INSERT loops at once.
 * - listing 10⁴ sessions of one workspace: `storage.list` of the sessions folder (one
 *   indexed query; target ≤ 100 ms), and `sessions.list`, which also reads each `meta.json`.
 *
 * @module
 */
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import pg from "pg";
import { type CommitPlan, encodeJsonlLine, type Session, sessionPaths, Sessions } from "../../../core/mod.ts";
import { firstValue } from "../../../runtime-postgres/lean-statement.ts";
import { PostgresStorage } from "../../../runtime-postgres/mod.ts";
import { startTestServer } from "../../support/postgres-server.ts";
import type { CaseContext } from "../lib/result.ts";
import { median } from "../lib/stats.ts";
import { BENCH_PROVIDER, BENCH_REF, COMPACTED_ACTIVE_SIZE, sizeLabel, writeSyntheticSession } from "../lib/synth.ts";
import { vacuumAnalyze } from "../lib/vacuum-analyze.ts";
import { COMMIT_WARMUP, WARMED_NOTE } from "../lib/warmup.ts";
import { appendMessage } from "./append.ts";
import { commitContract, contractCommitOf } from "./postgres-contract.ts";

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
    await writeSyntheticSession((path, bytes) => load.replace(path, bytes), n, BENCH_REF, COMPACTED_ACTIVE_SIZE);
    await load.close();
    const storage = new PostgresStorage({ connectionString: url, schema });
    const sessions = new Sessions({ storage });
    const { input } = (await sessions.open(BENCH_REF)).compose(BENCH_PROVIDER);
    if (input.messages.length !== COMPACTED_ACTIVE_SIZE || !input.summary) {
      throw new Error(`case 10 at ${n}: the compacted history did not give ${COMPACTED_ACTIVE_SIZE} messages and a summary`);
    }
    stores.push({ n, storage, sessions, times: [] });
    ctx.log(`postgres: session of ${sizeLabel(n)} messages written`);
  }
  await vacuumAnalyze(url);
  const rounds = ctx.quick ? 20 : 60;
  for (let round = -3; round < rounds; round++) {
    for (const store of stores) {
      const t0 = performance.now();
      (await store.sessions.open(BENCH_REF)).compose(BENCH_PROVIDER);
      if (round >= 0) store.times.push(performance.now() - t0);
    }
  }
  // Statements an open sends, counted where every query of `pg` goes out: each is one round
  // trip (an open's reads are one statement, so this is also the depth of its waits).
  const statements: number[] = [];
  for (const store of stores) {
    const sent = await countStatements(async () => (await store.sessions.open(BENCH_REF)).compose(BENCH_PROVIDER));
    statements.push(sent);
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
    note:
      `warm open + compose in this process, one PostgresStorage, the server on a Unix socket; every size compacted (Active ${COMPACTED_ACTIVE_SIZE} messages, a segment whose footer the open reads), the tables vacuumed and analyzed after the load`,
  });
  ctx.emit({
    case: 10,
    name: "postgres.open.round-trips",
    value: statements[1]!,
    unit: "statements",
    baseline: statements[0]!,
    baselineName: `the same on n=${sizeLabel(100)}`,
    ratio: null,
    ratioMeaning: "",
    target: { on: "value", op: "<=", limit: 1, text: "1" },
    runs: 1,
    note:
      "statements sent by one warm open + compose of the n=1e5 session (counted at pg.Client#query): meta.json, active.jsonl, the draft, instruction.md, the newest segment's tail and the existence check in one statement, one snapshot (readMany)",
  });
  for (const store of stores) await store.storage.close();
}

/** How many statements `pg` sends while `body` runs. */
async function countStatements(body: () => Promise<unknown>): Promise<number> {
  let sent = 0;
  await watchStatements(body, () => sent++);
  return sent;
}

/** Runs `body`, telling `seen` every statement `pg` sends meanwhile, as `Client#query` was given it (every query goes through it). */
async function watchStatements(body: () => Promise<unknown>, seen: (statement: unknown, values: unknown) => void): Promise<void> {
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    seen(args[0], args[1]);
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
  try {
    await body();
  } finally {
    pg.Client.prototype.query = query;
  }
}

/**
 * One commit of a session of its own, kept as the plan the core hands the adapter and as the
 * statement the adapter sends for it, both to be sent again: the plan expects the revision it
 * writes, so each replay commits the same line and the same `meta.json` once more. Timed
 * beside the real commits, they split the client's time per commit into the core's path, the
 * adapter's and the statement's (as the adapter sends it, through `pg`).
 */
async function replayableCommit(storage: PostgresStorage, sessions: Sessions): Promise<{ plan: CommitPlan; statement: pg.QueryConfig }> {
  const session = await sessions.create({ ...BENCH_REF, sessionId: "replayed", title: "replayed" });
  await session.append(appendMessage(0));
  const apply = storage.applyCommitPlan.bind(storage);
  let planned: CommitPlan | undefined;
  storage.applyCommitPlan = (plan) => apply(planned = plan);
  try {
    await session.append(appendMessage(1));
  } finally {
    storage.applyCommitPlan = apply;
  }
  const meta = planned?.writes.find((write) => write.path === planned?.expect?.path);
  if (!planned || !meta) throw new Error("the replayed commit planned no meta.json");
  const { revision } = JSON.parse(new TextDecoder().decode(meta.bytes)) as { revision: number };
  const plan: CommitPlan = { ...planned, expect: { path: meta.path, revision } };
  let statement: pg.QueryConfig | undefined;
  await watchStatements(async () => {
    const result = await storage.applyCommitPlan(plan);
    if (result.outcome !== "committed") throw new Error(`the replayed commit ended ${result.outcome}`);
  }, (sent) => {
    // The adapter's commit statement carries its parameters (runtime-postgres/lean-statement.ts).
    const { name, text, values } = sent as { name?: string; text: string; values: unknown[] };
    if (name === "one_writer.run_append") statement = { name, text, values };
  });
  if (!statement) throw new Error("the replayed commit sent no run_append");
  return { plan, statement };
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
  // Its connections are named, so the measure below finds their backends.
  const storage = new PostgresStorage({ connectionString: url, schema: "one_writer", pool: { application_name: "one_writer" } });
  const sessions = new Sessions({ storage });
  const session = await sessions.create({ ...BENCH_REF, title: "one writer" });
  await session.append(appendMessage(0));
  const held = await sessions.create({ ...BENCH_REF, sessionId: "held", title: "one writer, held" }, { hold: true });
  await held.append(appendMessage(0));
  const replayed = await replayableCommit(storage, sessions);
  // docs/POSTGRES.md's own statements of the same commit, raw SQL through a bare client (postgres-contract.ts).
  const contract = await commitContract(url, "commit_contract", contractCommitOf(replayed.statement.values!));
  const bytes = Buffer.alloc(await commitBytes(storage, session), 0x61);
  const pool = await floorTable(url);
  const floorClient = await pool.connect();
  const backendsOf = async (where: string): Promise<number[]> =>
    (await floorClient.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE ${where}`)).rows.map((row) => row.pid);
  const batches = ctx.quick ? 5 : 15;
  const perBatch = 100;
  const ours: number[] = [];
  const ourHeld: number[] = [];
  const floor: number[] = [];
  const contractRates: number[] = [];
  let i = 1;
  /** CPU per commit (µs): this process's main thread (the commit's path, GC on it included) and the server's backends. */
  const ourCpu = { client: [] as number[], server: [] as number[] };
  const floorCpu = { client: [] as number[], server: [] as number[] };
  const contractCpu = { client: [] as number[], server: [] as number[] };
  /** The same, for one commit's plan through the adapter alone and for its statement through `pg` alone (the server's side not kept). */
  const adapterCpu = { client: [] as number[], server: [] as number[] };
  const statementCpu = { client: [] as number[], server: [] as number[] };
  /** Commits/s of `perBatch` calls of `commit`, kept once the warm-up batch (lib/warmup.ts: its code optimized) is done. */
  const batch = async (into: number[], b: number, commit: () => Promise<unknown>, cpu?: { client: number[]; server: number[]; backends: string }) => {
    if (b < 0) {
      for (let k = 0; k < COMMIT_WARMUP; k++) await commit();
      return;
    }
    const backends = cpu ? await backendsOf(cpu.backends) : [];
    const client0 = mainThreadCpuUs();
    const server0 = backendCpuUs(backends);
    const t0 = performance.now();
    for (let k = 0; k < perBatch; k++) await commit();
    into.push((perBatch * 1000) / (performance.now() - t0));
    cpu?.client.push((mainThreadCpuUs() - client0) / perBatch);
    cpu?.server.push(cpuSince(server0, backendCpuUs(backends)) / perBatch);
  };
  // Every connection is closed even when a batch fails: the case's failure is reported and the run goes on, where a
  // connection left open fails with an unhandled error once the server stops (which ended a full run).
  let serverUs: number;
  try {
    try {
      for (let b = -1; b < batches; b++) {
        await batch(ours, b, () => session.append(appendMessage(i++)), { ...ourCpu, backends: "application_name = 'one_writer'" });
        await batch(ourHeld, b, () => held.append(appendMessage(i++)));
        await batch(floor, b, () => floorClient.query("INSERT INTO bench_floor (bytes) VALUES ($1)", [bytes]), {
          ...floorCpu,
          backends: "pid = pg_backend_pid()",
        });
        await batch(contractRates, b, () => contract.commit(), { ...contractCpu, backends: `pid = ${contract.pid}` });
        await batch([], b, () => storage.applyCommitPlan(replayed.plan), { ...adapterCpu, backends: "false" });
        await batch([], b, () => firstValue(floorClient, replayed.statement as { name: string; text: string }, replayed.statement.values!), {
          ...statementCpu,
          backends: "false",
        });
      }
    } finally {
      floorClient.release();
      await pool.end();
      await contract.end();
      await held.close();
    }
    serverUs = await serverTimePerCommit(url, session, perBatch);
  } finally {
    await storage.close();
  }
  const value = median(ours);
  const baseline = median(floor);
  const heldValue = median(ourHeld);
  const contractValue = median(contractRates);
  // What ours adds to the floor's commit that is not waiting for the disk, each measured in
  // this run: the main thread's extra CPU and the server backend's. Either alone bounds the ratio.
  const floorMs = 1000 / baseline;
  const clientMs = (median(ourCpu.client) - median(floorCpu.client)) / 1000;
  const backendMs = (median(ourCpu.server) - median(floorCpu.server)) / 1000;
  const bound = (extraMs: number) => `${floorMs.toFixed(3)} / (${floorMs.toFixed(3)} + ${extraMs.toFixed(3)}) = ${(floorMs / (floorMs + extraMs)).toFixed(2)}`;
  ctx.emit({
    case: 10,
    name: "postgres.commits-per-s.one-writer",
    value,
    unit: "commits/s",
    baseline,
    baselineName: `bare INSERT + COMMIT of the same ${bytes.length} bytes (synchronous_commit = on)`,
    ratio: value / baseline,
    ratioMeaning: "sessionfold / floor",
    target: { op: ">=", limit: 0.7, text: "≥ 0.7 of the floor" },
    runs: batches,
    note:
      "per operation: each commit takes the session's advisory lock, checks meta.json's revision (entries.revision, no parse), appends and replaces meta.json, in one prepared statement (run_append: one statement after the lock; fenced: the lock is the commit's own transaction's); " +
      `each of the batches below ${WARMED_NOTE}; ` +
      `per commit, same run (CPU time from /proc schedstat): the main thread ${median(ourCpu.client).toFixed(0)} µs (the floor's ${
        median(floorCpu.client).toFixed(0)
      } µs; one commit's plan sent again through the adapter alone ${
        median(adapterCpu.client).toFixed(0)
      } µs, its statement alone, sent as the adapter sends it ${
        median(statementCpu.client).toFixed(0)
      } µs: the rest is the core's commit path), the server's backend ${median(ourCpu.server).toFixed(0)} µs (the floor's ${
        median(floorCpu.server).toFixed(0)
      } µs), of which run_append ${serverUs.toFixed(0)} µs (track_functions, a separate batch); ` +
      `bounds, floor / (floor + extra CPU): the client's alone ${bound(clientMs)}, the server's alone ${bound(backendMs)}, both ${
        bound(clientMs + backendMs)
      }; ` +
      `the contract's own statements (postgres.commit-contract, raw SQL through a bare pg client, same batches): ${
        (contractValue / baseline).toFixed(2)
      } of the floor`,
  });
  ctx.emit({
    case: 10,
    name: "postgres.commit-contract",
    value: contractValue,
    unit: "commits/s",
    baseline,
    baselineName: `the same bare INSERT + COMMIT of ${bytes.length} bytes`,
    ratio: contractValue / baseline,
    ratioMeaning: "contract / floor",
    runs: batches,
    note:
      "not sessionfold: what docs/POSTGRES.md requires of one per-operation commit, raw SQL through a bare pg client on the layout of its Tables (created by the case's own DDL): in one transaction and one round trip (two prepared statements pipelined, one Sync), the session's transaction-level advisory lock, then one statement checking meta.json's revision column and that no writer.lock record exists, moving the lines' row and inserting their chunk, updating meta.json's row (size, revision, catalog columns) and its one chunk; the same line and meta.json as the row above; " +
      `per commit, same batches: the client's main thread ${median(contractCpu.client).toFixed(0)} µs, the server's backend ${
        median(contractCpu.server).toFixed(0)
      } µs (the floor's ${median(floorCpu.client).toFixed(0)} and ${
        median(floorCpu.server).toFixed(0)
      } µs); what any implementation of the contract pays on this server`,
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
    note:
      "a lease (create with { hold: true }), fenced: each commit runs on the connection that holds the lease's advisory lock (no lock and no revision check per commit, the line appended alone and meta.json replaced every 1,024th commit or once a second); batches alternate with the row above and the floor",
  });
}

/**
 * CPU time this process's main thread has run (µs), from Linux's schedstat: the work on a
 * commit's path (GC on that thread included), without the time it waited for a core while
 * the server's backend or another process ran on it (which event-loop utilisation counts).
 */
function mainThreadCpuUs(): number {
  return cpuUsOf(`/proc/self/task/${process.pid}/schedstat`);
}

/**
 * CPU time each of the server's processes `pids` has run (µs), by pid: the benchmark's own server, on this machine. A
 * backend gone meanwhile (a pool closes a connection left idle for 10 s) is left out, not an error: a full run once
 * failed the case on such a backend's `/proc` entry.
 */
function backendCpuUs(pids: readonly number[]): Map<number, number> {
  const byPid = new Map<number, number>();
  for (const pid of pids) {
    try {
      byPid.set(pid, cpuUsOf(`/proc/${pid}/schedstat`));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
  }
  return byPid;
}

/** The CPU (µs) the backends of `after` ran since `before`, over those in both: a backend that went was idle, and ran nothing to count. */
function cpuSince(before: ReadonlyMap<number, number>, after: ReadonlyMap<number, number>): number {
  let sum = 0;
  for (const [pid, us] of after) sum += us - (before.get(pid) ?? us);
  return sum;
}

function cpuUsOf(file: string): number {
  return Number(readFileSync(file, "utf8").split(" ")[0]) / 1000;
}

/**
 * The server's time per commit inside `run_append` (an append's per-operation commit), from `pg_stat_user_functions` over
 * `commits` commits of `session`'s store sent with `track_functions = all` (a handle of its
 * own, so the timed batches above run without the instrumentation).
 */
async function serverTimePerCommit(url: string, session: Session, commits: number): Promise<number> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const stats = async () => {
    const found = await admin.query<{ calls: string; total: number }>(
      "SELECT calls, total_time AS total FROM pg_stat_user_functions WHERE schemaname = 'one_writer' AND funcname = 'run_append'",
    );
    return { calls: Number(found.rows[0]?.calls ?? 0), total: Number(found.rows[0]?.total ?? 0) };
  };
  try {
    const before = await stats();
    const storage = new PostgresStorage({ connectionString: url, schema: "one_writer", pool: { options: "-c track_functions=all" } });
    try {
      const timed = await new Sessions({ storage }).open(session.ref);
      for (let k = 1; k <= commits; k++) await timed.append(appendMessage(k));
    } finally {
      // A backend reports its function statistics when it exits (or idle, a second later).
      await storage.close();
    }
    for (let wait = 0; wait < 100; wait++) {
      const after = await stats();
      if (after.calls - before.calls >= commits) return ((after.total - before.total) * 1000) / (after.calls - before.calls);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return Number.NaN;
  } finally {
    await admin.end();
  }
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
  const meta = (i: number) =>
    encoder.encode(
      `${
        JSON.stringify(
          {
            schema_version: 1,
            session_id: `s${i}`,
            agent_id: "bench",
            workspace_id: "w1",
            title: `session ${i}`,
            created_at: "2026-01-01T00:00:00.000Z",
            updated_at: "2026-01-01T00:00:00.000Z",
            message_count: 0,
            history_bytes: 0,
            revision: 0,
          },
          null,
          2,
        )
      }\n`,
    );
  for (let i = 0; i < count; i += 8) {
    await Promise.all(
      Array.from({ length: Math.min(8, count - i) }, (_, k) => load.replace(`agents/bench/workspaces/w1/sessions/s${i + k}/meta.json`, meta(i + k))),
    );
  }
  // Another workspace as big, which the listing must not read.
  for (let i = 0; i < count; i += 8) {
    await Promise.all(
      Array.from({ length: Math.min(8, count - i) }, (_, k) => load.replace(`agents/bench/workspaces/w2/sessions/s${i + k}/meta.json`, meta(i + k))),
    );
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
