/**
 * Case 14 in chromium: `list.indexeddb.n=1e4`, `Sessions.list` of one workspace of 10⁴
 * sessions through `openBrowserSessions` (IndexedDB in its Web Worker, a persistent profile
 * on disk), against the same listing from every `meta.json`. The page is
 * `test/bench/browser/main.ts` (`seedList`, `list`).
 *
 * @module
 */
import { withBenchPage } from "../lib/bench-page.ts";
import { emitListAll } from "../lib/list-rows.ts";
import type { CaseContext } from "../lib/result.ts";

interface Listed {
  ms: number;
  listed: number;
  /** With the catalog: what bounds the listing (the page's `startCatalogFloor`), medians over the same runs. */
  floor?: { ms: number; getMs: number };
}

export async function listInChromium(
  ctx: CaseContext,
  runs: number,
): Promise<void> {
  const n = 10_000;
  const db = "bench-list";
  const { all, baseline, floor } = await withBenchPage(ctx, "list", async (inPage) => {
    const seeded = await inPage<{ ms: number }>("seedList", db, n);
    ctx.log(
      `list (indexeddb): ${n} sessions written in ${(seeded.ms / 1000).toFixed(1)} s`,
    );
    const all = await inPage<Listed>("list", db, 0, true, runs);
    const baseline = await inPage<Listed>("list", db, 0, false, 1);
    for (const found of [all, baseline]) {
      if (found.listed !== n) {
        throw new Error(`listed ${found.listed} sessions, expected ${n}`);
      }
    }
    await inPage("deleteDb", db);
    if (!all.floor) throw new Error("the listing came back without its floor");
    return { all: all.ms, baseline: baseline.ms, floor: all.floor };
  });
  emitListAll(
    ctx,
    "indexeddb",
    all,
    baseline,
    runs,
    `Sessions.list of one workspace's 10⁴ sessions in chromium (openBrowserSessions: IndexedDB in its Web Worker): one get of the catalog snapshot (its entries by columns) and a getAll of the records changed since, the snapshot's JSON text across the worker as stored, parsed once in the page; bounded by the same snapshot record's bare get in a worker of its own, posted to the page and parsed there as JSON (same runs, each after a listing): ${
      floor.ms.toFixed(1)
    } ms, of which the get ${floor.getMs.toFixed(1)} ms`,
  );
}
