/**
 * Case 1 in Chromium: open + compose on the browser runtime (`openBrowserSessions`:
 * IndexedDB in a module Web Worker) for each history size, against reading the same
 * history as one plain JSONL file whole through the same storage.
 *
 * Debian's chromium is driven by playwright-core with a persistent profile in a temp
 * folder (so IndexedDB lives on disk, as for a user), against `browser/index.html` served
 * by a Vite dev server. Each timing is a freshly loaded page (new JS realm, new storage
 * worker); the store is opened before the clock starts, as on Node. All sizes are seeded
 * first and then measured round-robin.
 *
 * @module
 */
import { withBenchPage } from "../lib/bench-page.ts";
import type { CaseContext } from "../lib/result.ts";
import { median } from "../lib/stats.ts";
import { sizeLabel } from "../lib/synth.ts";

interface OpenTiming {
  ms: number;
  /** Whether the page was cross-origin isolated (its timer then resolves to 5 µs). */
  isolated: boolean;
  contextMessages: number;
  summaryChars: number;
}

type BenchApi = {
  seed(
    dbName: string,
    n: number,
  ): Promise<{ ms: number; historyBytes: number; plainBytes: number }>;
  open(dbName: string): Promise<OpenTiming>;
  openPlain(dbName: string): Promise<OpenTiming>;
  deleteDb(dbName: string): Promise<null>;
  openBreakdown(dbName: string): Promise<string>;
};

export async function browserCase(ctx: CaseContext): Promise<void> {
  const sizes = ctx.quick ? [100, 10_000, 100_000] : [100, 10_000, 1_000_000];
  const reps = ctx.quick ? 3 : 7;
  const plainReps = ctx.quick ? 2 : 5;
  let isolated = true;
  const results = new Map<
    string,
    {
      sf: number;
      plain: number;
      runs: number;
      plainRuns: number;
      breakdown: string;
    }
  >();
  await withBenchPage(ctx, "case 1", async (page) => {
    const inPage = <T>(method: keyof BenchApi, db: string, n: number) => page<T>(method, db, n);
    // Every size is seeded first, then measured round-robin: IndexedDB's own background work
    // after a large write, and drift in the load of this shared machine, fall on every size alike.
    const dbOf = (n: number) => `bench-${n}`;
    for (const n of sizes) {
      const seeded = await inPage<Awaited<ReturnType<BenchApi["seed"]>>>(
        "seed",
        dbOf(n),
        n,
      );
      ctx.log(
        `case 1 (chromium): seeded ${n} messages (${(seeded.historyBytes / 1e6).toFixed(1)} MB) in ${(seeded.ms / 1000).toFixed(1)} s`,
      );
    }
    const sf = new Map<number, OpenTiming[]>(sizes.map((n) => [n, []]));
    const plain = new Map<number, OpenTiming[]>(sizes.map((n) => [n, []]));
    for (let rep = 0; rep < reps; rep++) {
      for (const n of sizes) {
        sf.get(n)!.push(await inPage<OpenTiming>("open", dbOf(n), n));
        if (rep < plainReps) {
          plain.get(n)!.push(await inPage<OpenTiming>("openPlain", dbOf(n), n));
        }
      }
    }
    for (const n of sizes) {
      const breakdown = n === sizes[0] || n === sizes.at(-1) ? await inPage<string>("openBreakdown", dbOf(n), n) : "";
      const timings = [...sf.get(n)!, ...plain.get(n)!];
      if (timings.some((t) => !t.isolated)) isolated = false;
      const shapes = new Set(
        timings.map((t) => `${t.contextMessages}/${t.summaryChars}`),
      );
      if (shapes.size > 1) {
        throw new Error(
          `case 1 (chromium) at ${n}: model inputs differ: ${[...shapes].join(", ")}`,
        );
      }
      const r = {
        sf: median(sf.get(n)!.map((t) => t.ms)),
        plain: median(plain.get(n)!.map((t) => t.ms)),
        runs: sf.get(n)!.length,
        plainRuns: plain.get(n)!.length,
        breakdown,
      };
      results.set(String(n), r);
      ctx.log(
        `case 1 (chromium): n=${n}: sessionfold ${r.sf.toFixed(1)} ms, plain JSONL ${r.plain.toFixed(1)} ms`,
      );
    }
    for (const n of sizes) await inPage("deleteDb", dbOf(n), n);
  });
  for (const n of sizes) {
    const r = results.get(String(n))!;
    ctx.emit({
      case: 1,
      name: `turn.chromium.sessionfold.n=${sizeLabel(n)}`,
      value: r.sf,
      unit: "ms",
      baseline: r.plain,
      baselineName: `plain JSONL read whole from the same IndexedDB storage (page thread, entry limit raised), n=${sizeLabel(n)}`,
      ratio: r.sf / r.plain,
      ratioMeaning: "value / baseline",
      runs: r.runs,
    });
  }
  const lo = results.get(String(sizes[0]))!;
  const hi = results.get(String(sizes.at(-1)))!;
  const range = `n=${sizeLabel(sizes.at(-1)!)}/n=${sizeLabel(sizes[0]!)}`;
  ctx.emit({
    case: 1,
    name: `turn.chromium.sessionfold.flatness(${range})`,
    value: hi.sf,
    unit: "ms",
    baseline: lo.sf,
    baselineName: `sessionfold in chromium itself at n=${sizeLabel(sizes[0]!)}`,
    ratio: hi.sf / lo.sf,
    ratioMeaning: `time at ${sizeLabel(sizes.at(-1)!)} / time at ${sizeLabel(sizes[0]!)} messages`,
    runs: hi.runs,
    target: { op: "<=", limit: 1.1, text: "≤ 1.1 (flat)" },
    note: `timer: performance.now() in ${
      isolated ? "cross-origin isolated pages (5 µs resolution)" : "pages not cross-origin isolated (100 µs resolution)"
    }; n=${sizeLabel(sizes.at(-1)!)}: ${hi.breakdown}; n=${sizeLabel(sizes[0]!)}: ${lo.breakdown}`,
  });
  ctx.emit({
    case: 1,
    name: `turn.chromium.jsonl.flatness(${range})`,
    value: hi.plain,
    unit: "ms",
    baseline: lo.plain,
    baselineName: `plain JSONL in chromium itself at n=${sizeLabel(sizes[0]!)}`,
    ratio: hi.plain / lo.plain,
    ratioMeaning: `time at ${sizeLabel(sizes.at(-1)!)} / time at ${sizeLabel(sizes[0]!)} messages`,
    runs: hi.plainRuns,
  });
}
