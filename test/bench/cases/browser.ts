/**
 * Case 1 in Chromium: open + compose on the browser runtime (`openBrowserSessions`:
 * IndexedDB in a module Web Worker) for each history size, against reading the same
 * history as one plain JSONL file whole through the same storage.
 *
 * Debian's chromium is driven by playwright-core with a persistent profile in a temp
 * folder (so IndexedDB lives on disk, as for a user), against `browser/index.html` served
 * by a Vite dev server. Each timing is a freshly loaded page (new JS realm, new storage
 * worker); the store is opened before the clock starts, as on Node. All sizes are seeded
 * first and then measured round-robin. The flatness row compares each size's compacted
 * history (lib/synth.ts `COMPACTED_ACTIVE_SIZE`, seeded in the same database), batch by
 * batch, as the Node rows do (cases/turn.ts), all its batches before the per-size histories
 * and the plain copies are read.
 *
 * @module
 */
import { withBenchPage } from "../lib/bench-page.ts";
import type { CaseContext } from "../lib/result.ts";
import { median, pairedRatio, spreadText } from "../lib/stats.ts";
import { COMPACTED_ACTIVE_SIZE, sizeLabel } from "../lib/synth.ts";

interface OpenTiming {
  ms: number;
  /** Whether the page was cross-origin isolated (its timer then resolves to 5 µs). */
  isolated: boolean;
  /** The step of the page's `performance.now()` measured after the timing, µs. */
  timerStepUs: number;
  contextMessages: number;
  summaryChars: number;
}

type BenchApi = {
  seed(
    dbName: string,
    n: number,
  ): Promise<{ ms: number; historyBytes: number; plainBytes: number }>;
  open(dbName: string, compacted: boolean): Promise<OpenTiming>;
  openPlain(dbName: string): Promise<OpenTiming>;
  deleteDb(dbName: string): Promise<null>;
  openBreakdown(dbName: string, compacted: boolean): Promise<string>;
};

export async function browserCase(ctx: CaseContext): Promise<void> {
  const sizes = ctx.quick ? [100, 10_000, 100_000] : [100, 10_000, 1_000_000];
  /** Batches: each opens every size's compacted history (the flatness row's) and the smallest size's own once. */
  const reps = ctx.quick ? 4 : 9;
  /** Of those batches, how many also open the larger sizes' own histories (only their rows against plain JSONL use them). */
  const perSizeReps = ctx.quick ? 2 : 3;
  const plainReps = ctx.quick ? 2 : 5;
  const dbOf = (n: number) => `bench-${n}`;
  const own = new Map<number, OpenTiming[]>(sizes.map((n) => [n, []]));
  const compacted = new Map<number, OpenTiming[]>(sizes.map((n) => [n, []]));
  const plain = new Map<number, OpenTiming[]>(sizes.map((n) => [n, []]));
  const breakdowns = new Map<number, string>();
  await withBenchPage(ctx, "case 1", async (page) => {
    // Every size is seeded first, then measured round-robin: IndexedDB's own background work
    // after a large write, and drift in the load of this shared machine, fall on every size alike.
    for (const n of sizes) {
      const seeded = await page<Awaited<ReturnType<BenchApi["seed"]>>>("seed", dbOf(n), n);
      ctx.log(`case 1 (chromium): seeded ${n} messages (${(seeded.historyBytes / 1e6).toFixed(1)} MB, twice) in ${(seeded.ms / 1000).toFixed(1)} s`);
    }
    // Each batch starts one size later, so no size always follows the same page.
    const batch = (rep: number) => sizes.map((_, k) => sizes[(k + rep) % sizes.length]!);
    // The flatness row's batches come first, with nothing else between its opens: a plain
    // copy's whole read (38 MB at 10⁵, 378 MB at 10⁶) leaves Chromium work that lands on the
    // pages after it (test/bench/notes.md, the chromium flatness row).
    for (let rep = 0; rep < reps; rep++) {
      for (const n of batch(rep)) compacted.get(n)!.push(await page<OpenTiming>("open", dbOf(n), true));
    }
    for (let rep = 0; rep < reps; rep++) {
      for (const n of batch(rep)) {
        if (n === sizes[0] || rep < perSizeReps) own.get(n)!.push(await page<OpenTiming>("open", dbOf(n), false));
        if (rep < plainReps) plain.get(n)!.push(await page<OpenTiming>("openPlain", dbOf(n)));
      }
    }
    for (const n of [sizes[0]!, sizes.at(-1)!]) breakdowns.set(n, await page<string>("openBreakdown", dbOf(n), true));
    for (const n of sizes) await page("deleteDb", dbOf(n));
  });
  const all = [...own.values(), ...compacted.values(), ...plain.values()].flat();
  const isolated = all.every((t) => t.isolated);
  const timerStep = median(all.map((t) => t.timerStepUs));
  for (const n of sizes) {
    const shapes = new Set([...own.get(n)!, ...plain.get(n)!].map((t) => `${t.contextMessages}/${t.summaryChars}`));
    if (shapes.size > 1) throw new Error(`case 1 (chromium) at ${n}: model inputs differ: ${[...shapes].join(", ")}`);
    if (compacted.get(n)!.some((t) => t.contextMessages !== COMPACTED_ACTIVE_SIZE || !(t.summaryChars > 0))) {
      throw new Error(`case 1 (chromium) at ${n}: the compacted history did not give ${COMPACTED_ACTIVE_SIZE} messages and a summary`);
    }
    const sf = median(own.get(n)!.map((t) => t.ms));
    const base = median(plain.get(n)!.map((t) => t.ms));
    ctx.log(
      `case 1 (chromium): n=${n}: sessionfold ${sf.toFixed(1)} ms, compacted ${median(compacted.get(n)!.map((t) => t.ms)).toFixed(1)} ms, plain JSONL ${
        base.toFixed(1)
      } ms`,
    );
    ctx.emit({
      case: 1,
      name: `turn.chromium.sessionfold.n=${sizeLabel(n)}`,
      value: sf,
      unit: "ms",
      baseline: base,
      baselineName: `plain JSONL read whole from the same IndexedDB storage (page thread, entry limit raised), n=${sizeLabel(n)}`,
      ratio: sf / base,
      ratioMeaning: "value / baseline",
      runs: own.get(n)!.length,
    });
  }
  const lo = sizes[0]!;
  const hi = sizes.at(-1)!;
  const range = `n=${sizeLabel(hi)}/n=${sizeLabel(lo)}`;
  const msOf = (timings: readonly OpenTiming[]) => timings.map((t) => t.ms);
  const r = pairedRatio(msOf(compacted.get(hi)!), msOf(compacted.get(lo)!));
  ctx.emit({
    case: 1,
    name: `turn.chromium.sessionfold.flatness(${range})`,
    value: median(msOf(compacted.get(hi)!)),
    unit: "ms",
    baseline: median(msOf(compacted.get(lo)!)),
    baselineName: `sessionfold in chromium itself at n=${sizeLabel(lo)}, compacted as every size`,
    ratio: r.ratio,
    ratioMeaning: `time at ${sizeLabel(hi)} / time at ${sizeLabel(lo)} messages, median of the per-batch ratios`,
    runs: r.batches,
    target: { op: "<=", limit: 1.1, text: "≤ 1.1 (flat)" },
    note:
      `timer: performance.now() in ${isolated ? "cross-origin isolated" : "not cross-origin isolated"} pages, its step measured there ${
        timerStep.toFixed(1)
      } µs (median); ` +
      `a freshly loaded page per open; every size compacted (Active ${COMPACTED_ACTIVE_SIZE} messages, a segment whose footer the open reads), in the same database as the size's own history and its plain copy, its batches before those are read, ` +
      `every size once per batch: per-batch ratio ${spreadText(r)}; medians ${
        sizes.map((n) => `n=${sizeLabel(n)}: ${median(msOf(compacted.get(n)!)).toFixed(2)} ms`).join(", ")
      }; ` +
      `on the per-size histories (Active 100; n=${sizeLabel(lo)} never compacted, so its open reads no segment and composes no summary): ` +
      `n=${sizeLabel(hi)}: ${median(msOf(own.get(hi)!)).toFixed(2)} ms (${own.get(hi)!.length} runs), n=${sizeLabel(lo)}: ${
        median(msOf(own.get(lo)!)).toFixed(2)
      } ms, ratio ${spreadText(pairedRatio(msOf(own.get(hi)!), msOf(own.get(lo)!)))}; compacted, n=${sizeLabel(hi)}: ${breakdowns.get(hi)}; n=${
        sizeLabel(lo)
      }: ${breakdowns.get(lo)}`,
  });
  const plainHi = median(msOf(plain.get(hi)!));
  const plainLo = median(msOf(plain.get(lo)!));
  ctx.emit({
    case: 1,
    name: `turn.chromium.jsonl.flatness(${range})`,
    value: plainHi,
    unit: "ms",
    baseline: plainLo,
    baselineName: `plain JSONL in chromium itself at n=${sizeLabel(lo)}`,
    ratio: plainHi / plainLo,
    ratioMeaning: `time at ${sizeLabel(hi)} / time at ${sizeLabel(lo)} messages`,
    runs: plain.get(hi)!.length,
  });
}
