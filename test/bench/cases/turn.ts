/**
 * Case 1 (Node) and case 6: the cost of a turn against history length, and the peak
 * memory of opening the largest history against an empty one.
 *
 * Each history exists in four formats holding the same messages (lib/fixtures.ts). Each
 * timing is one fresh process (probe.ts) that opens the session and gets what the next
 * model call needs — sessionfold: `sessions.open` + `compose` through `openNodeSessions`
 * (worker thread) of the package as `npm pack` ships it (lib/packed.ts: its `dist/`, what a
 * user's process loads; the histories are built from the sources); plain JSONL: read the
 * whole file, parse every line, take the last summary and what follows; pi-coding-agent:
 * `SessionManager.open` + `buildSessionContext()`; LangGraph: `SqliteSaver.getTuple` of the
 * thread and the messages after the summarized ones. The peers are measured size by size, implementations
 * interleaved; sessionfold's sizes are measured round-robin after all are built, so drift
 * in the machine's load falls on every size of its flatness ratio alike. Each figure is the
 * median. Files are in the page cache for every format alike (each was written shortly
 * before, on a machine with memory to spare).
 *
 * sessionfold's flatness rows compare the same open at every size: beside each size's
 * history, a compacted one (Active of `COMPACTED_ACTIVE_SIZE`, so 10² has a segment and a
 * summary as every larger size has), every size measured once per batch (cold: a fresh
 * process per size; warm: one process opening every size in turn), the ratio the median of
 * the per-batch ratios with its interquartile range in the note. The note also gives the
 * ratio on the per-size histories, where 10² is a session never compacted.
 *
 * @module
 */
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { Sessions } from "../../../core/mod.ts";
import { NodeFileStorage } from "../../../runtime-node/mod.ts";
import { ProbeTimeout, runProbe } from "../lib/child.ts";
import { packPackage } from "../lib/packed.ts";
import type { BenchRow, CaseContext } from "../lib/result.ts";
import { median, pairedRatio, spreadText } from "../lib/stats.ts";
import { timedStorage } from "../lib/timed-storage.ts";
import { ACTIVE_SIZE, BENCH_PROVIDER, BENCH_REF, COMPACTED_ACTIVE_SIZE, sizeLabel } from "../lib/synth.ts";
import { OPEN_WARMUP } from "../lib/warmup.ts";
import type { BuildItem, OpenResult, ProbeFormat, ProbeImpl, WarmSizesResult } from "../probe.ts";

/** Where a warm open + compose spends its time, storage call by storage call (host thread, this process, after `OPEN_WARMUP` untimed opens). */
async function openBreakdown(root: string): Promise<string> {
  const timed = timedStorage(new NodeFileStorage({ root }), true);
  const sessions = new Sessions({ storage: timed.storage });
  for (let i = 0; i < OPEN_WARMUP; i++) (await sessions.open(BENCH_REF)).compose(BENCH_PROVIDER);
  timed.clear();
  const runs = 20;
  const t0 = performance.now();
  for (let i = 0; i < runs; i++) (await sessions.open(BENCH_REF)).compose(BENCH_PROVIDER);
  return timed.describe((performance.now() - t0) / runs, runs);
}

interface Impl {
  readonly impl: ProbeImpl;
  readonly format: ProbeFormat;
  readonly label: string;
  readonly file: string;
}

/** The compacted history beside each size's own (lib/synth.ts `COMPACTED_ACTIVE_SIZE`): what the flatness rows compare. */
const COMPACTED_FILE = "sessionfold-compacted";
/** The cell of the compacted history at `n`. */
const compactedKey = (n: number) => `compacted@${n}`;

const IMPLS: readonly Impl[] = [
  { impl: "sessionfold", format: "sessionfold", label: "sessionfold", file: "sessionfold" },
  { impl: "jsonl", format: "jsonl", label: "plain JSONL read whole", file: "history.jsonl" },
  { impl: "pi", format: "pi", label: "pi-coding-agent SessionManager", file: "pi-session.jsonl" },
  { impl: "langgraph", format: "langgraph", label: "LangGraph SqliteSaver", file: "langgraph.sqlite" },
];

interface Cell {
  runs: OpenResult[];
  spentMs: number;
  failure?: string;
}

/** The figures of case 1 (Node) and case 6, for reuse by the report. */
export async function turnCase(ctx: CaseContext): Promise<void> {
  const sizes = ctx.quick ? [100, 10_000, 100_000] : [100, 10_000, 1_000_000];
  // LangGraph needs minutes per open at 10⁵ and up; quick mode stops it at 10⁴.
  const sizesOf = (impl: ProbeImpl) => (ctx.quick && impl === "langgraph" ? sizes.filter((n) => n <= 10_000) : sizes);
  const sfReps = ctx.quick ? 4 : 15;
  /**
   * Cold runs of sessionfold's own histories above the smallest size (only their rows against
   * the peers use them), and of the compacted ones between the smallest and the largest (the
   * flatness row shows them; its ratio uses the two ends, measured in every batch).
   */
  const perSizeReps = ctx.quick ? 2 : 5;
  /** Processes opening every size in turn for the warm flatness row, and timed rounds in each. */
  const warmSizesReps = ctx.quick ? 3 : 7;
  const warmSizesRounds = ctx.quick ? 100 : 300;
  const peerReps = ctx.quick ? 1 : 5;
  /** A peer stops repeating once it has used this much time on one size (it always runs once). */
  const peerBudgetMs = ctx.quick ? 8_000 : 150_000;
  const timeoutMs = ctx.quick ? 90_000 : 1_800_000;
  const cells = new Map<string, Cell>();
  const warm = new Map<string, number>();
  const breakdowns = new Map<number, string>();
  const key = (impl: ProbeImpl, n: number) => `${impl}@${n}`;
  ctx.log("case 1: npm pack (sessionfold is opened as installed, from its dist/)");
  const entry = join((await packPackage(join(ctx.tmp, "package"))).dir, "dist/runtime-node/mod.js");
  /** The packed package for sessionfold's probes; the others load no sessionfold module to open with. */
  const entryOf = (impl: ProbeImpl) => (impl.startsWith("sessionfold") ? { entry } : {});
  /**
   * Warm processes for open.node.warm, each of sessionfold, plain JSONL and the worker floor in
   * turn (each the median of up to 30 opens after `OPEN_WARMUP` untimed ones); the figure is
   * their median. Seven, not three: one process's median moves by more than the row's margin
   * (0.40–0.60 ms for the same tree, timed after 5 untimed opens).
   */
  const warmReps = ctx.quick ? 2 : 7;
  /** Cold runs at n = 0 (case 6's empty-session baseline), for every implementation. */
  const emptyReps = ctx.quick ? 2 : 3;
  const ms = (impl: ProbeImpl, n: number) => {
    const cell = cells.get(key(impl, n));
    return cell && cell.runs.length > 0 ? median(cell.runs.map((r) => r.ms)) : null;
  };
  const msText = (impl: ProbeImpl, n: number) => ms(impl, n)?.toFixed(1) ?? "-";
  /** The cold runs of the compacted history at `n`, batch by batch. */
  const compactedMs = (n: number) => (cells.get(compactedKey(n))?.runs ?? []).map((r) => r.ms);
  const compactedCpuMs = (n: number) => (cells.get(compactedKey(n))?.runs ?? []).map((r) => r.cpuMs ?? Number.NaN);
  /** The cold runs of sessionfold's own history at `n`, batch by batch. */
  const cellMs = (n: number) => (cells.get(key("sessionfold", n))?.runs ?? []).map((r) => r.ms);
  const minMs = (impl: ProbeImpl, n: number) => {
    const cell = cells.get(key(impl, n));
    return cell && cell.runs.length > 0 ? Math.min(...cell.runs.map((r) => r.ms)) : null;
  };

  /** One cold probe of `impl` at size `n` into its cell; a failure is kept and ends the cell. */
  const probeCold = async (impl: ProbeImpl, file: string, n: number, cellKey = key(impl, n)) => {
    const cell = cells.get(cellKey) ?? { runs: [], spentMs: 0 };
    cells.set(cellKey, cell);
    if (cell.failure) return;
    const t0 = performance.now();
    try {
      cell.runs.push(await runProbe({ kind: "open", impl, path: join(ctx.tmp, `n${n}`, file), n, ...entryOf(impl) }, timeoutMs));
    } catch (error) {
      cell.failure = error instanceof ProbeTimeout
        ? `did not finish within ${Math.round(timeoutMs / 1000)} s`
        : String(error instanceof Error ? error.message : error).slice(0, 300);
      ctx.log(`case 1: ${impl} at ${n}: ${cell.failure}`);
    }
    cell.spentMs += performance.now() - t0;
  };
  /** Plain JSONL's warm opens of every size (`turn.node.jsonl.warm.flatness`): one untimed open each, then up to 30. */
  const warmRuns = new Map<string, number[]>();
  /** open.node.warm's processes by implementation at the smallest size, each timed after its {@linkcode OPEN_WARMUP} untimed opens. */
  const steadyRuns = new Map<ProbeImpl, OpenResult[]>();
  const probeWarm = async (impl: ProbeImpl, file: string, n: number, warmup: number) => {
    const warmOpens = { timed: 30, warmup, budgetMs: ctx.quick ? 2_000 : 10_000 };
    return await runProbe({ kind: "open", impl, path: join(ctx.tmp, `n${n}`, file), n, warm: warmOpens, ...entryOf(impl) }, timeoutMs);
  };
  const probeSteady = async (impl: ProbeImpl, file: string) => {
    steadyRuns.set(impl, [...(steadyRuns.get(impl) ?? []), await probeWarm(impl, file, lo, OPEN_WARMUP)]);
  };

  // The peers and the plain JSONL baseline, size by size: each size's files are removed
  // once measured (10⁶ messages take gigabytes in some formats). sessionfold's trees stay.
  for (const n of [0, ...sizes]) {
    const dir = join(ctx.tmp, `n${n}`);
    // Quick mode keeps the empty-session memory baseline for sessionfold only (case 6's target).
    const impls = IMPLS.filter((i) => (n === 0 ? !ctx.quick || i.impl === "sessionfold" : sizesOf(i.impl).includes(n)));
    ctx.log(`case 1: building ${impls.map((i) => i.format).join(", ")} histories of ${n} messages`);
    const items: BuildItem[] = impls.map(({ format, file }) => ({ format, path: join(dir, file) }));
    if (n > 0) items.push({ format: "sessionfold", path: join(dir, COMPACTED_FILE), active: COMPACTED_ACTIVE_SIZE });
    await runProbe({ kind: "build", items, n }, timeoutMs);
    const peers = impls.filter((i) => i.impl !== "sessionfold");
    const reps = n === 0 ? emptyReps : peerReps;
    for (let rep = 0; rep < reps; rep++) {
      for (const { impl, file } of peers) {
        const cell = cells.get(key(impl, n));
        if (cell && (cell.failure || (cell.runs.length > 0 && cell.spentMs > peerBudgetMs))) continue;
        await probeCold(impl, file, n);
      }
    }
    if (n > 0 && impls.some((i) => i.impl === "jsonl")) {
      const { ms } = await probeWarm("jsonl", "history.jsonl", n, 1);
      warmRuns.set(key("jsonl", n), [...(warmRuns.get(key("jsonl", n)) ?? []), ms]);
    }
    if (n > 0 && (n === sizes[0] || n === sizes.at(-1))) breakdowns.set(n, await openBreakdown(join(dir, "sessionfold")));
    // The plain JSONL file of the smallest size stays: open.node.* measures it again beside sessionfold.
    for (const { impl, file } of peers) if (!(impl === "jsonl" && n === sizes[0])) await rm(join(dir, file), { recursive: true, force: true });
    ctx.log(`case 1: n=${n}: ${peers.map(({ impl }) => `${impl} ${msText(impl, n)} ms`).join(", ")}`);
  }

  // sessionfold's flatness compares sizes, so its sizes are measured round-robin (cold, then
  // warm): load on this shared machine drifts over the minutes the peers take, and must fall
  // on every size alike.
  ctx.log(`case 1: sessionfold at ${[0, ...sizes].join(", ")} messages, sizes interleaved`);
  // open.node.*: at the smallest size, plain JSONL, sessionfold without its worker and the
  // worker floor (the same reads in a bare worker, lib/worker-floor.ts: what bounds both rows)
  // take turns with sessionfold, cold and warm, in the same alternation.
  const lo = sizes[0]!;
  const hi = sizes.at(-1)!;
  for (let rep = 0; rep < sfReps; rep++) {
    // Each batch starts one size later, so no size always follows the same process.
    for (const n of [0, ...sizes.map((_, k) => sizes[(k + rep) % sizes.length]!)]) {
      if (n === 0 ? rep < emptyReps : n === lo || rep < perSizeReps) await probeCold("sessionfold", "sessionfold", n);
      // The flatness ratio needs the smallest and the largest compacted size in every batch; the sizes between are shown.
      if (n === lo || n === hi || (n > 0 && rep < perSizeReps)) await probeCold("sessionfold", COMPACTED_FILE, n, compactedKey(n));
    }
    await probeCold("jsonl", "history.jsonl", lo);
    await probeCold("sessionfold-noworker", "sessionfold", lo);
    await probeCold("worker-floor", "sessionfold", lo);
    await probeCold("sessionfold-eager", "sessionfold", lo);
  }
  // Warm: each process of the flatness row opens every compacted size in turn, and the
  // smallest and largest per-size histories, in one long-lived host.
  const warmSizesPaths = [
    join(ctx.tmp, `n${lo}`, "sessionfold"),
    ...sizes.map((n) => join(ctx.tmp, `n${n}`, COMPACTED_FILE)),
    join(ctx.tmp, `n${hi}`, "sessionfold"),
  ];
  const warmSizes: WarmSizesResult[] = [];
  for (let rep = 0; rep < Math.max(warmReps, warmSizesReps); rep++) {
    if (rep < warmSizesReps) {
      warmSizes.push(await runProbe<WarmSizesResult>({ kind: "warm-sizes", paths: warmSizesPaths, rounds: warmSizesRounds, entry }, timeoutMs));
    }
    if (rep >= warmReps) continue;
    await probeSteady("sessionfold", "sessionfold");
    await probeSteady("jsonl", "history.jsonl");
    await probeSteady("worker-floor", "sessionfold");
  }
  /** Per size, the warm figure of every warm-sizes process: `[uncompacted lo, ...compacted sizes, per-size hi]`. */
  const warmOf = (index: number) => warmSizes.map((r) => r.ms[index]!);
  for (const n of [0, ...sizes]) {
    // Every format must hand the model the same input.
    const shapes = new Set(IMPLS.map(({ impl }) => cells.get(key(impl, n))?.runs[0]).filter(Boolean).map((r) => `${r!.contextMessages}/${r!.summaryChars}`));
    if (shapes.size > 1) throw new Error(`case 1 at ${n}: the formats disagree on the model input (messages/summary chars): ${[...shapes].join(", ")}`);
    ctx.log(`case 1: n=${n}: sessionfold cold ${msText("sessionfold", n)} ms${n > 0 ? `, compacted cold ${median(compactedMs(n)).toFixed(1)} ms` : ""}`);
  }
  // The compacted histories, cold and warm, must all hand the model the same shape of input: a summary and the same Active.
  const compactedShapes = [
    ...sizes.flatMap((n) => cells.get(compactedKey(n))?.runs ?? []).map((r) => [r.contextMessages, r.summaryChars] as const),
    ...warmSizes.flatMap((r) => r.shapes.slice(1, 1 + sizes.length).map((shape) => shape.split("/").map(Number) as [number, number])),
  ];
  if (compactedShapes.some(([messages, summary]) => messages !== COMPACTED_ACTIVE_SIZE || !(summary > 0))) {
    throw new Error(`case 1: a compacted history did not give ${COMPACTED_ACTIVE_SIZE} messages and a summary: ${JSON.stringify(compactedShapes)}`);
  }
  for (const [k, runs] of warmRuns) warm.set(k, median(runs));

  const runs = (impl: ProbeImpl, n: number) => cells.get(key(impl, n))?.runs.length ?? 0;
  const failure = (impl: ProbeImpl, n: number) => cells.get(key(impl, n))?.failure;

  for (const { impl, label } of IMPLS) {
    for (const n of sizesOf(impl)) {
      if (impl === "jsonl") continue; // it is every row's baseline
      const value = ms(impl, n);
      const base = ms("jsonl", n);
      const fail = failure(impl, n);
      ctx.emit({
        case: 1,
        name: `turn.node.${impl}.n=${sizeLabel(n)}`,
        value,
        unit: "ms",
        baseline: base,
        baselineName: `plain JSONL read whole, n=${sizeLabel(n)}`,
        ratio: value !== null && base ? value / base : null,
        ratioMeaning: "value / baseline",
        runs: runs(impl, n),
        ...(fail ? { note: `${label}: ${fail}` } : {}),
      });
    }
  }
  const flat: FlatnessFigures = {
    row: "flatness",
    sizes,
    times: sizes.map(compactedMs),
    cpu: sizes.map(compactedCpuMs),
    perSize: [cellMs(lo), cellMs(hi)],
    method: `first open + compose of a fresh process, the smallest and the largest size once per batch (the sizes between in ${perSizeReps})`,
  };
  for (const { impl, label } of IMPLS) {
    if (impl === "sessionfold") {
      ctx.emit(flatnessRow(flat));
      continue;
    }
    const own = sizesOf(impl);
    const hi = own.at(-1)!;
    const lo = own[0]!;
    const value = ms(impl, hi);
    const base = ms(impl, lo);
    const row: BenchRow = {
      case: 1,
      name: `turn.node.${impl}.flatness(n=${sizeLabel(hi)}/n=${sizeLabel(lo)})`,
      value,
      unit: "ms",
      baseline: base,
      baselineName: `${label} itself at n=${sizeLabel(lo)}`,
      ratio: value !== null && base ? value / base : null,
      ratioMeaning: `time at ${sizeLabel(hi)} / time at ${sizeLabel(lo)} messages`,
      runs: runs(impl, hi),
      ...(failure(impl, hi) ? { note: `${label} at n=${sizeLabel(hi)}: ${failure(impl, hi)}` } : {}),
    };
    ctx.emit(row);
  }

  openRows(ctx, {
    steady: steadyRuns,
    cold: [ms("sessionfold", lo), ms("jsonl", lo), ms("sessionfold-noworker", lo), ms("worker-floor", lo), ms("sessionfold-eager", lo)],
    runs: [runs("sessionfold", lo), runs("jsonl", lo)],
    eagerMin: minMs("sessionfold-eager", lo),
    lo,
    breakdown: breakdowns.get(lo),
  });
  ctx.emit(flatnessRow({
    row: "warm.flatness",
    sizes,
    times: sizes.map((_, i) => warmOf(1 + i)),
    cpu: sizes.map((_, i) => warmSizes.map((r) => r.cpuMs[1 + i]!)),
    perSize: [warmOf(0), warmOf(1 + sizes.length)],
    method: `${warmSizes.length} processes (the batches), each opening every size in turn through its own worker (${warmSizesRounds} rounds after 5 untimed, ` +
      `each starting one store later; each size's median per process)`,
    tail: `without the worker, per-size histories, n=${sizeLabel(hi)}: ${breakdowns.get(hi)}; n=${sizeLabel(lo)}: ${breakdowns.get(lo)}`,
  }));
  {
    const value = warm.get(key("jsonl", hi)) ?? null;
    const base = warm.get(key("jsonl", lo)) ?? null;
    ctx.emit({
      case: 1,
      name: `turn.node.jsonl.warm.flatness(n=${sizeLabel(hi)}/n=${sizeLabel(lo)})`,
      value,
      unit: "ms",
      baseline: base,
      baselineName: `the same, warm, at n=${sizeLabel(lo)}`,
      ratio: value !== null && base ? value / base : null,
      ratioMeaning: `time at ${sizeLabel(hi)} / time at ${sizeLabel(lo)} messages, warm process`,
      note: `median of up to 30 opens after one untimed open in one process (each size's open taking up to seconds here); ${
        sizes.map((n) => `n=${sizeLabel(n)}: ${(warm.get(key("jsonl", n)) ?? Number.NaN).toFixed(2)} ms`).join(", ")
      }`,
    });
  }

  // Case 6: peak memory (whole process, worker included) at the largest size against an empty session.
  for (const { impl, label } of IMPLS) {
    if (ctx.quick && impl !== "sessionfold") continue; // quick mode measures the empty baseline for sessionfold only
    const hi = sizesOf(impl).at(-1)!;
    const big = cells.get(key(impl, hi))?.runs ?? [];
    const empty = cells.get(key(impl, 0))?.runs ?? [];
    const peak = big.length ? median(big.map((r) => r.maxRssMB)) : null;
    const base = empty.length ? median(empty.map((r) => r.maxRssMB)) : null;
    ctx.emit({
      case: 6,
      name: `memory.open.${impl}.n=${sizeLabel(hi)}`,
      value: peak !== null && base !== null ? peak - base : null,
      unit: "MB above empty",
      baseline: base,
      baselineName: `${label}: peak RSS opening an empty session (MB)`,
      ratio: peak !== null && base ? peak / base : null,
      ratioMeaning: "peak RSS / peak RSS of the empty session",
      runs: big.length,
      ...(impl === "sessionfold" ? { target: { on: "value", op: "<=", limit: 64, text: "≤ 64 MB above empty" } as const } : {}),
      ...(failure(impl, hi) ? { note: `${label}: ${failure(impl, hi)}` } : {}),
    });
  }
}

const FLAT = { op: "<=", limit: 1.2, text: "≤ 1.2 (flat)" } as const;

/** `n=1e2: 3.10 ms, n=1e4: …` of per-size figures. */
const perSizeText = (sizes: readonly number[], figures: readonly number[][]) =>
  sizes.map((n, i) => `n=${sizeLabel(n)}: ${median(figures[i]!).toFixed(2)} ms`).join(", ");

/** The process's CPU time per open (every thread), per size and as a per-batch ratio: what the machine's load moves less than wall time. */
function cpuText(sizes: readonly number[], cpu: readonly number[][]): string {
  return `CPU time of the process per open (every thread) ${perSizeText(sizes, cpu)}, per-batch ratio ${spreadText(pairedRatio(cpu.at(-1)!, cpu[0]!))}`;
}

/** What the per-size histories give, beside the compacted ones: there n=10² was never compacted. */
function perSizeHistoriesText(lo: number, hi: number, [atLo, atHi]: readonly [readonly number[], readonly number[]]): string {
  return `on the per-size histories (Active ${ACTIVE_SIZE}; n=${sizeLabel(lo)} never compacted, so its open reads no segment and composes no summary): ` +
    `n=${sizeLabel(hi)}: ${median(atHi).toFixed(2)} ms (${atHi.length} runs), n=${sizeLabel(lo)}: ${median(atLo).toFixed(2)} ms, ratio ${
      spreadText(pairedRatio(atHi, atLo))
    }`;
}

/** What a flatness row of sessionfold is made of: the compacted histories' figures per size, batch by batch. */
interface FlatnessFigures {
  /** `"flatness"` (cold) or `"warm.flatness"`. */
  readonly row: "flatness" | "warm.flatness";
  readonly sizes: readonly number[];
  /** Per size, the wall time of each batch, ms. */
  readonly times: number[][];
  /** Per size, the process's CPU time of each batch, ms. */
  readonly cpu: number[][];
  /** The per-size histories at the smallest and the largest size, batch by batch. */
  readonly perSize: readonly [number[], number[]];
  /** How a batch measures, first in the note. */
  readonly method: string;
  /** What the note ends with. */
  readonly tail?: string;
}

/**
 * `turn.node.sessionfold.flatness` (cold) and `….warm.flatness`: the compacted history at the
 * largest size against the smallest, the median of the per-batch ratios.
 */
function flatnessRow(m: FlatnessFigures): BenchRow {
  const lo = m.sizes[0]!;
  const hi = m.sizes.at(-1)!;
  const [atLo, atHi] = [m.times[0]!, m.times.at(-1)!];
  const r = pairedRatio(atHi, atLo);
  return {
    case: 1,
    name: `turn.node.sessionfold.${m.row}(n=${sizeLabel(hi)}/n=${sizeLabel(lo)})`,
    value: atHi.length ? median(atHi) : null,
    unit: "ms",
    baseline: atLo.length ? median(atLo) : null,
    baselineName: `sessionfold itself at n=${sizeLabel(lo)}${m.row === "warm.flatness" ? ", warm" : ""}, compacted as every size`,
    ratio: r.batches > 0 ? r.ratio : null,
    ratioMeaning: `time at ${sizeLabel(hi)} / time at ${sizeLabel(lo)} messages, median of the per-batch ratios`,
    runs: r.batches,
    target: FLAT,
    note: `${m.method}; every size compacted (Active ${COMPACTED_ACTIVE_SIZE} messages, a segment whose footer the open reads, a summary in the input): ` +
      `per-batch ratio ${spreadText(r)}; medians ${perSizeText(m.sizes, m.times)}; ${cpuText(m.sizes, m.cpu)}; ${perSizeHistoriesText(lo, hi, m.perSize)}${
        m.tail ? `; ${m.tail}` : ""
      }`,
  };
}

/**
 * The open.node.* rows: open + compose of the smallest history against reading the same
 * history as plain JSONL, warm (a long-lived host) and cold (a fresh process), each
 * measured in the alternation above. Their notes give what bounds them in the same run.
 */
function openRows(
  ctx: CaseContext,
  m: {
    /** The warm processes by implementation (sessionfold, plain JSONL, the worker floor), each timed after its warm-up. */
    steady: ReadonlyMap<ProbeImpl, readonly OpenResult[]>;
    cold: [number | null, number | null, number | null, number | null, number | null];
    runs: [number, number];
    /** The fastest `--no-lazy` run: a process that compiled everything at load has a larger heap, and a collection may land in its clock. */
    eagerMin: number | null;
    lo: number;
    breakdown: string | undefined;
  },
): void {
  const label = sizeLabel(m.lo);
  const steadyOf = (impl: ProbeImpl) => m.steady.get(impl) ?? [];
  /** The median of a figure over `impl`'s warm processes, `undefined` without any. */
  const warmFigure = (impl: ProbeImpl, figure: (run: OpenResult) => number | undefined) => {
    const values = steadyOf(impl).flatMap((run) => figure(run) ?? []);
    return values.length ? median(values) : undefined;
  };
  const [sfWarm, plainWarm, floorWarm] = (["sessionfold", "jsonl", "worker-floor"] as const).map((impl) => warmFigure(impl, (run) => run.ms));
  const [sfEarly, plainEarly] = (["sessionfold", "jsonl"] as const).map((impl) => warmFigure(impl, (run) => run.earlyMs));
  const warmSpread = (impl: ProbeImpl) => spread(steadyOf(impl).map((run) => run.ms));
  const [sfCold, plainCold, noWorkerCold, floorCold, eagerCold] = m.cold;
  /** The worker floor (lib/worker-floor.ts) of this run, against the baseline: the least a worker-backed open can cost here. */
  const floor = (value: number | null | undefined, base: number | null | undefined) =>
    `bound: the same files read with fs in a bare worker thread and posted back (transferred), then parsed as plain JSONL: ${value?.toFixed(2) ?? "-"} ms${
      value && base ? ` = ${(value / base).toFixed(2)}× the baseline` : ""
    }`;
  const target = { op: "<=", limit: 2, text: "≤ 2× plain JSONL" } as const;
  /** The lowest and highest of some per-process medians, ms. */
  const spread = (values: readonly number[]) => (values.length ? `${Math.min(...values).toFixed(3)}–${Math.max(...values).toFixed(3)}` : "-");
  ctx.emit({
    case: 1,
    name: `open.node.warm.n=${label}`,
    value: sfWarm ?? null,
    unit: "ms",
    baseline: plainWarm ?? null,
    baselineName: `plain JSONL read whole, warm, n=${label}`,
    ratio: sfWarm !== undefined && plainWarm ? sfWarm / plainWarm : null,
    ratioMeaning: "value / baseline",
    target,
    runs: steadyOf("sessionfold").length,
    note:
      `sessionfold through its storage worker (openNodeSessions), each figure the median of up to 30 opens after ${
        OPEN_WARMUP.toLocaleString("en-US")
      } untimed opens in one process (a long-lived host, its open's code optimized: test/bench/lib/warmup.ts), ` +
      `${steadyOf("sessionfold").length} processes each, alternating (per process: sessionfold ${warmSpread("sessionfold")} ms, plain JSONL ${
        warmSpread("jsonl")
      } ms); opens 6–35 of the same processes, the code still being optimized: sessionfold ${sfEarly?.toFixed(2) ?? "-"} ms, plain JSONL ${
        plainEarly?.toFixed(2) ?? "-"
      } ms${sfEarly !== undefined && plainEarly ? ` = ${(sfEarly / plainEarly).toFixed(2)}×` : ""}; ` +
      `${floor(floorWarm, plainWarm)}; without the worker (host thread, this process): ${m.breakdown ?? "-"}`,
  });
  ctx.emit({
    case: 1,
    name: `open.node.cold.n=${label}`,
    value: sfCold,
    unit: "ms",
    baseline: plainCold,
    baselineName: `plain JSONL read whole in a fresh process, n=${label}`,
    ratio: sfCold !== null && plainCold ? sfCold / plainCold : null,
    ratioMeaning: "value / baseline",
    target,
    runs: m.runs[0],
    note:
      `the first open + compose of a fresh process (the packed package's dist/ as a user's process loads it; store opened, worker up, modules loaded before the clock starts), alternating with plain JSONL (${
        m.runs[1]
      } runs); ${floor(floorCold, plainCold)}; the same without the worker: ${noWorkerCold?.toFixed(2) ?? "-"} ms; ` +
      `bound: the same open with every function compiled as its module loads (node --no-lazy, out of the clock), so none at its first call: ${
        eagerCold?.toFixed(2) ?? "-"
      } ms median (${m.eagerMin?.toFixed(2) ?? "-"} ms the fastest run)${
        eagerCold && plainCold ? ` = ${(eagerCold / plainCold).toFixed(2)}× the baseline` : ""
      }`,
  });
}
