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
 * and the plain copies are read. In each batch every size is opened `openSamples` times, each
 * in a fresh page, and its floor (the same storage reads with raw IndexedDB,
 * browser/open-floor.ts) read `floorSamples` times, each by a fresh bare worker of one fresh
 * page; the batch's figure of a size is its samples' median. Beside them, a page per size of
 * its steps (the same first open timed through a timing wrapper of the store, its `readMany`
 * timed inside the storage worker too, browser/idb-timed-worker.ts): the row's note gives the
 * floor's flatness and sessionfold's over it, batch by batch.
 *
 * @module
 */
import { withBenchPage } from "../lib/bench-page.ts";
import type { CaseContext } from "../lib/result.ts";
import type { OpenFloorTiming } from "../browser/open-floor.ts";
import type { OpenSteps } from "../browser/main.ts";
import { batchesToResolve, median, pairedRatio, spreadText } from "../lib/stats.ts";
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
  openFloors(dbNames: readonly string[]): Promise<OpenFloorTiming[]>;
  openSteps(dbName: string): Promise<OpenSteps>;
  deleteDb(dbName: string): Promise<null>;
  openBreakdown(dbName: string, compacted: boolean): Promise<string>;
};

export async function browserCase(ctx: CaseContext): Promise<void> {
  const sizes = ctx.quick ? [100, 10_000, 100_000] : [100, 10_000, 1_000_000];
  /**
   * The flatness row's batches: each opens every size's compacted history once, beside it its
   * floor and its steps. 15 in full: at the spread of the per-batch ratios of a full run (IQR
   * 1.065–1.225 in the run of 2026-12-07 00:04) that many put 1.1 two standard errors from a
   * median of 1.18, where 9 put it 1.6 (the note says how many its own spread needs); a multiple
   * of 3, so every size starts a batch, and every page of the three goes first, equally often.
   */
  const flatnessReps = ctx.quick ? 4 : 15;
  /**
   * Fresh-page opens of each size in a flatness batch, and reads of its floor (fresh workers of
   * one fresh page): a batch's ratio of two single samples spread too widely to resolve the
   * row (test/bench/notes.md, the chromium flatness row). The floor's reads share one page a
   * batch, so 6 cost little; each open costs a page, so 3: a full run's flatness batches are 195
   * pages where they were 135, about 5 more minutes where a page takes 5 s (load 10–16).
   */
  const openSamples = 3;
  const floorSamples = 6;
  /** The other rows' batches: each opens the smallest size's own history once. */
  const reps = ctx.quick ? 4 : 9;
  /** Of those batches, how many also open the larger sizes' own histories (only their rows against plain JSONL use them). */
  const perSizeReps = ctx.quick ? 2 : 3;
  const plainReps = ctx.quick ? 2 : 5;
  const dbOf = (n: number) => `bench-${n}`;
  const own = new Map<number, OpenTiming[]>(sizes.map((n) => [n, []]));
  /** Each flatness batch's fresh-page opens of each size's compacted history. */
  const compacted = new Map<number, OpenTiming[][]>(sizes.map((n) => [n, []]));
  const plain = new Map<number, OpenTiming[]>(sizes.map((n) => [n, []]));
  /** The floor of the compacted open, each flatness batch's reads: the open's reads with raw IndexedDB (browser/open-floor.ts). */
  const floor = new Map<number, OpenFloorTiming[][]>(sizes.map((n) => [n, []]));
  /** The same open's steps, in a third fresh page beside it in every flatness batch. */
  const steps = new Map<number, OpenSteps[]>(sizes.map((n) => [n, []]));
  const breakdowns = new Map<number, string>();
  /** A batch's pages: every size's opens and steps page, and one floor page. */
  const flatnessPages = flatnessReps * (sizes.length * (openSamples + 1) + 1);
  let flatnessSeconds = 0;
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
    // pages after it (test/bench/notes.md, the chromium flatness row). A batch is three blocks,
    // which goes first rotating batch by batch: the opens, the floor's page, the steps' pages.
    // Within a block the sizes alternate (the batch's order, then back), so no size's samples
    // all come first or last.
    const alternating = (order: readonly number[], samples: number) =>
      Array.from({ length: samples }, (_, k) => (k % 2 === 0 ? order : [...order].reverse())).flat();
    const flatnessFrom = performance.now();
    for (let rep = 0; rep < flatnessReps; rep++) {
      const order = batch(rep);
      for (const n of sizes) {
        compacted.get(n)!.push([]);
        floor.get(n)!.push([]);
      }
      const blocks = [
        async () => {
          for (const n of alternating(order, openSamples)) compacted.get(n)!.at(-1)!.push(await page<OpenTiming>("open", dbOf(n), true));
        },
        async () => {
          const reads = alternating(order, floorSamples);
          const found = await page<OpenFloorTiming[]>("openFloors", reads.map(dbOf));
          reads.forEach((n, i) => floor.get(n)!.at(-1)!.push(found[i]!));
        },
        async () => {
          for (const n of order) steps.get(n)!.push(await page<OpenSteps>("openSteps", dbOf(n)));
        },
      ];
      for (let k = 0; k < blocks.length; k++) await blocks[(k + rep) % blocks.length]!();
    }
    flatnessSeconds = (performance.now() - flatnessFrom) / 1000;
    ctx.log(
      `case 1 (chromium): the flatness batches, ${flatnessPages} pages (${openSamples} opens a size a batch, ${floorSamples} floor reads a size in one page a batch, a steps page a size), took ${
        flatnessSeconds.toFixed(1)
      } s`,
    );
    for (let rep = 0; rep < reps; rep++) {
      for (const n of batch(rep)) {
        if (n === sizes[0] || rep < perSizeReps) own.get(n)!.push(await page<OpenTiming>("open", dbOf(n), false));
        if (rep < plainReps) plain.get(n)!.push(await page<OpenTiming>("openPlain", dbOf(n)));
      }
    }
    for (const n of [sizes[0]!, sizes.at(-1)!]) breakdowns.set(n, await page<string>("openBreakdown", dbOf(n), true));
    for (const n of sizes) await page("deleteDb", dbOf(n));
  });
  const all = [...own.values(), ...[...compacted.values()].flat(), ...plain.values()].flat();
  const isolated = all.every((t) => t.isolated);
  const timerStep = median(all.map((t) => t.timerStepUs));
  for (const n of sizes) {
    const shapes = new Set([...own.get(n)!, ...plain.get(n)!].map((t) => `${t.contextMessages}/${t.summaryChars}`));
    if (shapes.size > 1) throw new Error(`case 1 (chromium) at ${n}: model inputs differ: ${[...shapes].join(", ")}`);
    const floorFiles = floor.get(sizes[0]!)![0]![0]!.files;
    if (floor.get(n)!.flat().some((t) => t.files !== floorFiles)) {
      throw new Error(
        `case 1 (chromium) at ${n}: the floor's reads found ${floor.get(n)!.flat().map((t) => t.files).join(", ")} files, at n=${sizes[0]} ${floorFiles}`,
      );
    }
    if (compacted.get(n)!.flat().some((t) => t.contextMessages !== COMPACTED_ACTIVE_SIZE || !(t.summaryChars > 0))) {
      throw new Error(`case 1 (chromium) at ${n}: the compacted history did not give ${COMPACTED_ACTIVE_SIZE} messages and a summary`);
    }
    const sf = median(own.get(n)!.map((t) => t.ms));
    const base = median(plain.get(n)!.map((t) => t.ms));
    ctx.log(
      `case 1 (chromium): n=${n}: sessionfold ${sf.toFixed(1)} ms, compacted ${median(compacted.get(n)!.flat().map((t) => t.ms)).toFixed(1)} ms, plain JSONL ${
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
  /** Each flatness batch's figure of a size: the median of its samples in that batch. */
  const batchMedians = (samples: readonly (readonly { ms: number }[])[]) => samples.map((batch) => median(batch.map((t) => t.ms)));
  const openMs = (n: number) => batchMedians(compacted.get(n)!);
  const r = pairedRatio(openMs(hi), openMs(lo));
  const floorMs = (n: number) => batchMedians(floor.get(n)!);
  const floorFlatness = pairedRatio(floorMs(hi), floorMs(lo));
  const perBatch = (hiMs: readonly number[], loMs: readonly number[]) => hiMs.map((ms, i) => ms / loMs[i]!);
  // sessionfold's per-batch ratio over its floor's in the same batch: the flatness the platform's reads do not explain.
  const overFloor = pairedRatio(perBatch(openMs(hi), openMs(lo)), perBatch(floorMs(hi), floorMs(lo)));
  // The bound: the smallest open plus only what the platform's reads add at the largest size, batch by batch.
  const floorBound = pairedRatio(openMs(lo).map((ms, i) => ms + floorMs(hi)[i]! - floorMs(lo)[i]!), openMs(lo));
  const floorText =
    `the floor (the open's reads with raw IndexedDB, each by a fresh bare worker, ${floorSamples} a size in a fresh page of each batch, the same timer: ${
      floor.get(lo)![0]![0]!.files
    } files, ${floor.get(hi)![0]![0]!.bytes} bytes at n=${sizeLabel(hi)}): per-batch ratio ${spreadText(floorFlatness)}, ${
      batchesToResolve(floorFlatness, 1)
    } batches at this spread would tell it from 1; medians ${
      sizes.map((n) => `n=${sizeLabel(n)}: ${median(floorMs(n)).toFixed(2)} ms`).join(", ")
    }; sessionfold's per-batch ratio over the floor's ${spreadText(overFloor)}, ${
      batchesToResolve(overFloor, 1)
    } batches at this spread would tell it from 1; sessionfold / floor per batch n=${sizeLabel(lo)}: ${spreadText(pairedRatio(openMs(lo), floorMs(lo)))}, n=${
      sizeLabel(hi)
    }: ${spreadText(pairedRatio(openMs(hi), floorMs(hi)))}; bound: the n=${sizeLabel(lo)} open plus the floor's growth in the same batch, (open n=${
      sizeLabel(lo)
    } + floor n=${sizeLabel(hi)} − floor n=${sizeLabel(lo)}) / open n=${sizeLabel(lo)}: ${spreadText(floorBound)}, ${
      batchesToResolve(floorBound, 1.1)
    } batches at this spread would tell it from 1.1`;
  /** The open's steps, and its `readMany` split: inside IndexedDB's transaction, the store's own code in the worker, the hop (the rest of the round trip). */
  const stepOf = {
    waitingMs: (t: OpenSteps) => t.waitingMs,
    outsideMs: (t: OpenSteps) => t.outsideMs,
    idbMs: (t: OpenSteps) => t.inWorker.idbMs,
    storeMs: (t: OpenSteps) => t.inWorker.inWorkerMs - t.inWorker.idbMs,
    hopMs: (t: OpenSteps) => t.readManyMs - t.inWorker.inWorkerMs,
  };
  type Step = keyof typeof stepOf;
  const stepsOf = (n: number, step: Step) => steps.get(n)!.map(stepOf[step]);
  const stepText = (step: Step) =>
    `${median(stepsOf(lo, step)).toFixed(2)} → ${median(stepsOf(hi, step)).toFixed(2)} ms, per-batch ratio ${
      spreadText(pairedRatio(stepsOf(hi, step), stepsOf(lo, step)))
    }`;
  const idbLo = steps.get(lo)![0]!.inWorker;
  const stepsText = `the same first open's steps in a third page beside it (a timing wrapper of the store), n=${sizeLabel(lo)} → n=${sizeLabel(hi)}: whole ${
    median(steps.get(lo)!.map((t) => t.ms)).toFixed(2)
  } → ${median(steps.get(hi)!.map((t) => t.ms)).toFixed(2)} ms; waiting on storage (its readMany through the worker) ${
    stepText("waitingMs")
  } (of it: IndexedDB's transaction in the storage worker, ${idbLo.transactions} with ${idbLo.requests} requests, from its creation to its last request's success, ${
    stepText("idbMs")
  }; the store's own code in the worker ${stepText("storeMs")}; the rest of the round trip, the worker hop, Comlink and the copies, ${
    stepText("hopMs")
  }); outside storage ${stepText("outsideMs")}`;
  ctx.log(`case 1 (chromium): ${floorText}; ${stepsText}`);
  const listed = (values: readonly number[]) => values.map((ms) => ms.toFixed(2)).join(" ");
  for (const n of [lo, hi]) {
    ctx.log(
      `case 1 (chromium): n=${sizeLabel(n)} batch by batch (each batch's samples): open ${
        compacted.get(n)!.map((batch) => listed(msOf(batch))).join(" | ")
      }; floor ${floor.get(n)!.map((batch) => listed(batch.map((t) => t.ms))).join(" | ")}; steps (waiting = IndexedDB + store + hop / outside) ${
        steps.get(n)!.map((t) =>
          `${t.waitingMs.toFixed(2)} = ${stepOf.idbMs(t).toFixed(2)} + ${stepOf.storeMs(t).toFixed(2)} + ${stepOf.hopMs(t).toFixed(2)} / ${
            t.outsideMs.toFixed(2)
          }`
        ).join(" ")
      }`,
    );
  }
  ctx.emit({
    case: 1,
    name: `turn.chromium.sessionfold.flatness(${range})`,
    value: median(openMs(hi)),
    unit: "ms",
    baseline: median(openMs(lo)),
    baselineName: `sessionfold in chromium itself at n=${sizeLabel(lo)}, compacted as every size`,
    ratio: r.ratio,
    ratioMeaning: `time at ${sizeLabel(hi)} / time at ${sizeLabel(lo)} messages, median of the per-batch ratios`,
    runs: r.batches,
    target: { op: "<=", limit: 1.1, text: "≤ 1.1 (flat)" },
    note:
      `timer: performance.now() in ${isolated ? "cross-origin isolated" : "not cross-origin isolated"} pages, its step measured there ${
        timerStep.toFixed(1)
      } µs (median); ` +
      `a freshly loaded page per open, ${openSamples} a size in every batch (their median the batch's figure); the batches' ${flatnessPages} pages took ${
        flatnessSeconds.toFixed(0)
      } s (${
        flatnessReps * sizes.length * 3
      } with one open and one floor page a size a batch); every size compacted (Active ${COMPACTED_ACTIVE_SIZE} messages, a segment whose footer the open reads), in the same database as the size's own history and its plain copy, its batches before those are read, ` +
      `per-batch ratio ${spreadText(r)}, ${batchesToResolve(r, 1.1)} batches at this spread would tell it from 1.1; medians ${
        sizes.map((n) => `n=${sizeLabel(n)}: ${median(openMs(n)).toFixed(2)} ms`).join(", ")
      }; ${floorText}; ${stepsText}; ` +
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
