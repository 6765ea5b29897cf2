/**
 * Case 14: listing sessions at scale (docs/FORMAT.md "The catalog"), side by side on files,
 * IndexedDB (in chromium, `list-browser.ts`) and PostgreSQL.
 *
 * - `list.<backend>.n=1e4`: `Sessions.list` of one workspace of 10⁴ sessions, every session
 *   (what a resume picker that shows everything reads), against the same listing without the
 *   catalog (every `meta.json` read, as before the catalog). Target ≤ 50 ms.
 * - `list.<backend>.flatness`: the first page (`limit: 50`, newest first) at 10⁵ sessions
 *   against 10² sessions. Target ≤ 1.5.
 *
 * Fixtures are written directly as the format's files (each session's `meta.json`, and on
 * files the workspace's compacted catalog, `catalog/sessions.jsonl`, sorted under its header
 * as a compaction leaves it), not through 10⁵ commits: building is not what is measured. Files are read on the
 * calling thread (as the CLI's `ls` does); PostgreSQL on a server this case starts.
 *
 * @module
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { catalogDocument, Sessions, type StoragePort } from "../../../core/mod.ts";
import { NodeFileStorage } from "../../../runtime-node/mod.ts";
import { SNAPSHOT_HEADER } from "../../../runtime-node/fs-catalog-snapshot.ts";
import { PostgresStorage } from "../../../runtime-postgres/mod.ts";
import { startTestServer } from "../../support/postgres-server.ts";
import type { CaseContext } from "../lib/result.ts";
import { median } from "../lib/stats.ts";
import { LIST_AGENT, LIST_PAGE as PAGE, LIST_WORKSPACE, listFixtureMeta, withoutCatalog } from "../lib/list-fixture.ts";
import { emitFlatness, emitListAll } from "../lib/list-rows.ts";
import { listInChromium } from "./list-browser.ts";

/** Times `list` once untimed, then `runs` times; the median in ms. Checks the count each time. */
export async function timeListing(
  runs: number,
  expected: number,
  list: () => Promise<readonly unknown[]>,
): Promise<number> {
  const times: number[] = [];
  for (let r = -1; r < runs; r++) {
    const t0 = performance.now();
    const found = await list();
    const ms = performance.now() - t0;
    if (found.length !== expected) {
      throw new Error(`listed ${found.length} sessions, expected ${expected}`);
    }
    if (r >= 0) times.push(ms);
  }
  return median(times);
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
 * Times the first page of one workspace's `n` sessions on `storage` into `page`; at 10⁴
 * sessions also the whole listing against the same listing without the catalog, as a row.
 */
async function measureStore(
  ctx: CaseContext,
  m: {
    backend: string;
    n: number;
    storage: StoragePort;
    page: Map<number, number>;
    runs: number;
    pageRuns: number;
  },
  note: string,
): Promise<void> {
  const sessions = new Sessions({ storage: m.storage });
  m.page.set(
    m.n,
    await timeListing(
      m.pageRuns,
      Math.min(PAGE, m.n),
      () => sessions.list({ ...filter, limit: PAGE }),
    ),
  );
  if (m.n !== 10_000) return;
  const all = await timeListing(m.runs, m.n, () => sessions.list(filter));
  const before = new Sessions({ storage: withoutCatalog(m.storage) });
  const baseline = await timeListing(1, m.n, () => before.list(filter));
  emitListAll(ctx, m.backend, all, baseline, m.runs, note);
}

async function filesListing(
  ctx: CaseContext,
  runs: number,
  sizes: readonly number[],
): Promise<void> {
  const page = new Map<number, number>();
  const pageRuns = runs * PAGE_RUNS_PER_RUN;
  for (const n of sizes) {
    const root = join(ctx.tmp, `list-files-${n}`);
    const t0 = performance.now();
    await writeFilesFixture(root, n);
    ctx.log(
      `list (files): ${n} sessions written in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
    await measureStore(
      ctx,
      { backend: "files", n, storage: new NodeFileStorage({ root }), page, runs, pageRuns },
      "Sessions.list of one workspace's 10⁴ sessions on NodeFileStorage (the calling thread, as sessionfold ls): its catalog read whole",
    );
  }
  emitFlatness(
    ctx,
    "files",
    page,
    pageRuns,
    "first page (limit 50) of Sessions.list on NodeFileStorage",
  );
}

async function postgresListing(
  ctx: CaseContext,
  runs: number,
  sizes: readonly number[],
): Promise<void> {
  const server = startTestServer({ durable: true, maxConnections: 50 });
  const page = new Map<number, number>();
  const pageRuns = runs * PAGE_RUNS_PER_RUN;
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
      const storage = new PostgresStorage({
        connectionString: server.url,
        schema,
      });
      try {
        await measureStore(
          ctx,
          { backend: "postgres", n, storage, page, runs, pageRuns },
          "Sessions.list of one workspace's 10⁴ sessions on PostgresStorage: one statement",
        );
      } finally {
        await storage.close();
      }
    }
  } finally {
    server.stop();
  }
  emitFlatness(
    ctx,
    "postgres",
    page,
    pageRuns,
    "first page (limit 50) of Sessions.list on PostgresStorage",
  );
}
