/**
 * Case 14: listing sessions at scale (docs/FORMAT.md "The catalog"), side by side on files,
 * IndexedDB (in chromium, `list-browser.ts`) and PostgreSQL.
 *
 * - `list.<backend>.n=1e4`: `Sessions.list` of one workspace of 10⁴ sessions, every session
 *   (what a resume picker that shows everything reads), against the same listing without the
 *   catalog (every `meta.json` read, as before the catalog). Target ≤ 50 ms.
 * - `list.<backend>.flatness`: the first page (`limit: 50`, newest first) at 10⁵ sessions
 *   against 10² sessions. Target ≤ 1.5. The three sizes' stores are built first, then their
 *   pages are timed in turn, one of each size per round, so that a stall of this shared machine
 *   (or the server's own background work) falls on every size alike.
 *
 * Fixtures are written directly as the format's files (each session's `meta.json`, and on
 * files the workspace's compacted catalog, `catalog/sessions.jsonl`, sorted under its header
 * as a compaction leaves it), not through 10⁵ commits: building is not what is measured. Files are read on the
 * calling thread (as the CLI's `ls` does); PostgreSQL on a server this case starts.
 *
 * @module
 */
import { readdirSync, readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import pg from "pg";
import { catalogDocument, Sessions, type StoragePort } from "../../../core/mod.ts";
import { NodeFileStorage } from "../../../runtime-node/mod.ts";
import { SNAPSHOT_HEADER } from "../../../runtime-node/fs-catalog-snapshot.ts";
import { PostgresStorage } from "../../../runtime-postgres/mod.ts";
import { catalogStatement } from "../../../runtime-postgres/catalog-statement.ts";
import { startTestServer } from "../../support/postgres-server.ts";
import type { CaseContext } from "../lib/result.ts";
import { median } from "../lib/stats.ts";
import { LIST_AGENT, LIST_PAGE as PAGE, LIST_WORKSPACE, listFixtureMeta, withoutCatalog } from "../lib/list-fixture.ts";
import { emitFlatness, emitListAll } from "../lib/list-rows.ts";
import { vacuumAnalyze } from "../lib/vacuum-analyze.ts";
import { listInChromium } from "./list-browser.ts";

/** Times `list` once untimed, then `runs` times; the median in ms. Checks the count each time. */
export async function timeListing(
  runs: number,
  expected: number,
  list: () => Promise<readonly unknown[]>,
): Promise<number> {
  return (await timeListingsInTurn(runs, expected, [list]))[0]!;
}

/**
 * Times each of `listings` in turn, one round untimed, then `runs` rounds of one call each, so
 * that a stall of this shared machine falls on each alike; each one's median in ms, in order.
 * Checks the count each time.
 */
async function timeListingsInTurn(
  runs: number,
  expected: number,
  listings: readonly (() => Promise<readonly unknown[]>)[],
): Promise<number[]> {
  const times = listings.map(() => [] as number[]);
  for (let r = -1; r < runs; r++) {
    for (const [i, list] of listings.entries()) {
      const t0 = performance.now();
      const found = await list();
      const ms = performance.now() - t0;
      if (found.length !== expected) {
        throw new Error(
          `listed ${found.length} sessions, expected ${expected}`,
        );
      }
      if (r >= 0) times[i]!.push(ms);
    }
  }
  return times.map(median);
}

const filter = { agentId: LIST_AGENT, workspaceId: LIST_WORKSPACE };

/** A page costs little: more runs, so that one stall of this shared machine does not make the median. */
const PAGE_RUNS_PER_RUN = 4;

export async function listCase(ctx: CaseContext): Promise<void> {
  const runs = ctx.quick ? 5 : 15;
  const sizes = [100, 10_000, 100_000];
  await filesListing(ctx, runs, sizes);
  await postgresListing(ctx, runs, sizes);
  await listInChromium(ctx, runs);
}

/** Writes `n` sessions' meta.json and the workspace's compacted catalog under `root`. */
async function writeFilesFixture(root: string, n: number): Promise<void> {
  const workspace = join(
    root,
    "agents",
    LIST_AGENT,
    "workspaces",
    LIST_WORKSPACE,
  );
  const lines: string[] = [];
  for (let i = n - 1; i >= 0; i--) {
    const folder = join(workspace, "sessions", `s${i}`);
    await mkdir(folder, { recursive: true, mode: 0o700 });
    const bytes = listFixtureMeta(i);
    await writeFile(join(folder, "meta.json"), bytes, { mode: 0o600 });
    lines.push(
      `${JSON.stringify({ name: `s${i}`, meta: catalogDocument(bytes) })}\n`,
    );
  }
  await mkdir(join(workspace, "catalog"), { recursive: true, mode: 0o700 });
  // What a compaction leaves: the sorted snapshot of catalog version 2, its header, then newest
  // activity first (docs/FORMAT.md "The catalog").
  await writeFile(
    join(workspace, "catalog", "sessions.jsonl"),
    `${SNAPSHOT_HEADER}\n${lines.join("")}`,
    { mode: 0o600 },
  );
}

/**
 * The first page of one workspace's sessions in each of `stores` (by size), timed in turn: one
 * untimed round, then `runs` rounds of one page per store. Each store's median in ms.
 */
async function timePagesInTurn(
  stores: ReadonlyMap<number, StoragePort>,
  runs: number,
): Promise<Map<number, number>> {
  const listings = [...stores].map(([n, storage]) => ({
    n,
    sessions: new Sessions({ storage }),
    times: [] as number[],
  }));
  for (let r = -1; r < runs; r++) {
    for (const listing of listings) {
      const t0 = performance.now();
      const found = await listing.sessions.list({ ...filter, limit: PAGE });
      const ms = performance.now() - t0;
      if (found.length !== Math.min(PAGE, listing.n)) {
        throw new Error(
          `listed ${found.length} sessions, expected ${Math.min(PAGE, listing.n)}`,
        );
      }
      if (r >= 0) listing.times.push(ms);
    }
  }
  return new Map(listings.map(({ n, times }) => [n, median(times)]));
}

/**
 * Every session of one workspace of `n` sessions on `storage`, against the same listing without
 * the catalog, as a row. With `bound`, that listing is timed in turn with it (the same rounds, the
 * same stalls) and its median handed to `note`.
 */
async function measureListAll(
  ctx: CaseContext,
  backend: string,
  n: number,
  storage: StoragePort,
  runs: number,
  note: (boundMs: number | undefined) => string,
  bound?: () => Promise<readonly unknown[]>,
): Promise<void> {
  const sessions = new Sessions({ storage });
  const [all, boundMs] = await timeListingsInTurn(runs, n, [() => sessions.list(filter), ...(bound ? [bound] : [])]);
  const before = new Sessions({ storage: withoutCatalog(storage) });
  const baseline = await timeListing(1, n, () => before.list(filter));
  emitListAll(ctx, backend, all!, baseline, runs, note(boundMs));
}

async function filesListing(
  ctx: CaseContext,
  runs: number,
  sizes: readonly number[],
): Promise<void> {
  const stores = new Map<number, StoragePort>();
  for (const n of sizes) {
    const root = join(ctx.tmp, `list-files-${n}`);
    const t0 = performance.now();
    await writeFilesFixture(root, n);
    ctx.log(
      `list (files): ${n} sessions written in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
    stores.set(n, new NodeFileStorage({ root }));
  }
  const pageRuns = runs * PAGE_RUNS_PER_RUN;
  const page = await timePagesInTurn(stores, pageRuns);
  const floor = filesFloor(join(ctx.tmp, "list-files-10000"), runs);
  await measureListAll(
    ctx,
    "files",
    10_000,
    stores.get(10_000)!,
    runs,
    () =>
      `Sessions.list of one workspace's 10⁴ sessions on NodeFileStorage (the calling thread, as sessionfold ls): its catalog read whole, the folder's names as the handle last read them unless the folder changed; floor in this run: JSON.parse of the catalog's lines, each document kept ${
        floor.parse.toFixed(1)
      } ms, reading its ${(floor.bytes / 1e6).toFixed(1)} MB ${floor.read.toFixed(1)} ms, readdir of the sessions folder ${
        floor.readdir.toFixed(1)
      } ms (what a new handle, one sessionfold ls, adds)`,
  );
  emitFlatness(
    ctx,
    "files",
    page,
    pageRuns,
    "first page (limit 50) of Sessions.list on NodeFileStorage, the sizes timed in turn",
  );
}

/**
 * What bounds a whole listing on files, in this process (medians of `runs`): `JSON.parse` of
 * each line of the catalog of the 10⁴-session store under `root`, every document kept until
 * the clock stops (a listing returns them all, so the collections they cost while it runs are
 * its too; its lines split once, untimed), reading the catalog's bytes, and `readdir` of its
 * sessions folder.
 */
function filesFloor(root: string, runs: number): { bytes: number; parse: number; read: number; readdir: number } {
  const workspace = join(root, "agents", LIST_AGENT, "workspaces", LIST_WORKSPACE);
  const catalog = join(workspace, "catalog", "sessions.jsonl");
  const lines = readFileSync(catalog, "latin1").split("\n").filter((line) => line !== "");
  const times = { parse: [] as number[], read: [] as number[], readdir: [] as number[] };
  let bytes = 0;
  for (let r = -1; r < runs; r++) {
    const t0 = performance.now();
    const kept: unknown[] = [];
    for (const line of lines) kept.push(JSON.parse(line));
    const t1 = performance.now();
    bytes = readFileSync(catalog).length;
    const t2 = performance.now();
    const names = readdirSync(join(workspace, "sessions"));
    const t3 = performance.now();
    if (kept.length !== names.length + 1) throw new Error(`${kept.length} catalog lines for ${names.length} sessions`);
    if (r >= 0) {
      times.parse.push(t1 - t0);
      times.read.push(t2 - t1);
      times.readdir.push(t3 - t2);
    }
  }
  return { bytes, parse: median(times.parse), read: median(times.read), readdir: median(times.readdir) };
}

/**
 * What bounds a whole listing on PostgreSQL: the statement `PostgresStorage.readCatalog` sends
 * for the workspace in `schema`, prepared, through the bare `pg` client `client`, each row's
 * document parsed (`JSON.parse`) and kept until the clock stops.
 */
function postgresBound(client: pg.Client, schema: string): () => Promise<readonly unknown[]> {
  const dir = `agents/${LIST_AGENT}/workspaces/${LIST_WORKSPACE}/sessions`;
  const { name, text, values } = catalogStatement(schema, dir);
  return async () => {
    const { rows } = await client.query<{ listing: string }>({ name, text, values });
    return rows.map((row) => JSON.parse(row.listing) as unknown);
  };
}

async function postgresListing(
  ctx: CaseContext,
  runs: number,
  sizes: readonly number[],
): Promise<void> {
  const server = startTestServer({ durable: true, maxConnections: 50 });
  const stores = new Map<number, PostgresStorage>();
  const pageRuns = runs * PAGE_RUNS_PER_RUN;
  let page: Map<number, number>;
  try {
    for (const n of sizes) {
      const schema = `list_${n}`;
      const t0 = performance.now();
      const load = new PostgresStorage({
        connectionString: server.url,
        schema,
        maxConnections: 8,
        pool: { options: "-c synchronous_commit=off" },
      });
      for (let i = 0; i < n; i += 16) {
        await Promise.all(
          Array.from(
            { length: Math.min(16, n - i) },
            (_, k) =>
              load.replace(
                `agents/${LIST_AGENT}/workspaces/${LIST_WORKSPACE}/sessions/s${i + k}/meta.json`,
                listFixtureMeta(i + k),
              ),
          ),
        );
      }
      await load.close();
      ctx.log(
        `list (postgres): ${n} sessions written in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
      );
      stores.set(
        n,
        new PostgresStorage({ connectionString: server.url, schema }),
      );
    }
    await vacuumAnalyze(server.url);
    page = await timePagesInTurn(stores, pageRuns);
    const client = new pg.Client({ connectionString: server.url });
    await client.connect();
    try {
      await measureListAll(
        ctx,
        "postgres",
        10_000,
        stores.get(10_000)!,
        runs,
        (bound) =>
          `Sessions.list of one workspace's 10⁴ sessions on PostgresStorage: one statement; bound in this run, timed in turn with it: the same statement through a bare pg client, each row's document parsed and kept, ${
            bound!.toFixed(1)
          } ms`,
        postgresBound(client, "list_10000"),
      );
    } finally {
      await client.end();
    }
  } finally {
    for (const storage of stores.values()) await storage.close();
    server.stop();
  }
  emitFlatness(
    ctx,
    "postgres",
    page,
    pageRuns,
    "first page (limit 50) of Sessions.list on PostgresStorage, the sizes timed in turn, the tables vacuumed and analyzed after the load",
  );
}
