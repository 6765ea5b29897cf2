/**
 * The timed open of the probes (`probe.ts` from the sources, `probe-package.ts` from the
 * packed package): open + compose through a store opened before the clock, once, or the
 * median of many opens in one process. Imports nothing of sessionfold's sources.
 *
 * @module
 */
import { performance } from "node:perf_hooks";
import type { openNodeSessions } from "../../../runtime-node/mod.ts";
import { BENCH_PROVIDER, BENCH_REF } from "./bench-ref.ts";
import { median } from "./stats.ts";

/** What an `open` probe reports. */
export interface OpenResult {
  /** Milliseconds from "open the session" to "the next model call's input is in hand". */
  readonly ms: number;
  /**
   * sessionfold only: CPU time of the whole process (every thread, the worker's included)
   * over the same span, ms; what the load of a shared machine moves less than wall time.
   */
  readonly cpuMs?: number;
  /** Peak resident set of the whole process (worker threads included), MB. */
  readonly maxRssMB: number;
  /** Messages in the model input (a sanity check: every format must yield the same). */
  readonly contextMessages: number;
  /** Characters of the summary in the model input. */
  readonly summaryChars: number;
  /**
   * Warm opens with a warm-up past {@linkcode EARLY_OPENS}' end only: the median of those opens of the process (its
   * code still being optimized), ms; `ms` is then the steady state after the whole warm-up.
   */
  readonly earlyMs?: number;
}

/** An open's figures before the process's peak memory is added. */
export type OpenFigures = Omit<OpenResult, "maxRssMB">;

/** How a probe times warm opens: `timed` opens (3 at least, within `budgetMs`) after `warmup` untimed ones. */
export interface WarmOpens {
  readonly timed: number;
  readonly warmup: number;
  readonly budgetMs: number;
}

/**
 * Opens 6 to 35 of a process (0-based `[5, 35)`): the window the warm rows timed before their warm-up was long enough
 * for V8 to optimize the open's code (test/bench/lib/warmup.ts); a longer warm-up times it on the way, as `earlyMs`.
 */
const EARLY_OPENS = [5, 35] as const;

/**
 * One open when `warm` is undefined; else the median of up to `warm.timed` opens after `warm.warmup` untimed ones,
 * and, when the warm-up runs past {@linkcode EARLY_OPENS}, the median of those opens too.
 */
export async function timeOpens(once: () => Promise<OpenFigures>, warm: WarmOpens | undefined): Promise<OpenFigures> {
  if (warm === undefined) return await once();
  const [earlyFrom, earlyTo] = EARLY_OPENS;
  const early: number[] = [];
  for (let i = 0; i < warm.warmup; i++) {
    const { ms } = await once();
    if (warm.warmup >= earlyTo && i >= earlyFrom && i < earlyTo) early.push(ms);
  }
  const runs = [];
  const t0 = performance.now();
  while (runs.length < warm.timed && (runs.length < 3 || performance.now() - t0 < warm.budgetMs)) runs.push(await once());
  const cpu = runs.flatMap((r) => (r.cpuMs === undefined ? [] : [r.cpuMs]));
  return {
    ...runs[0]!,
    ms: median(runs.map((r) => r.ms)),
    ...(cpu.length ? { cpuMs: median(cpu) } : {}),
    ...(early.length ? { earlyMs: median(early) } : {}),
  };
}

/** CPU time of the whole process since `from` (a `process.cpuUsage()`), ms. */
function cpuMsSince(from: NodeJS.CpuUsage): number {
  const { user, system } = process.cpuUsage(from);
  return (user + system) / 1000;
}

/** Opens the store with `open` once per process (its worker start is per process, not per turn), then times open + compose. */
export async function openSessionfold(
  open: typeof openNodeSessions,
  worker: boolean,
  root: string,
  warm: WarmOpens | undefined,
): Promise<OpenFigures> {
  const store = await open({ root, worker });
  try {
    await store.storage.list(""); // the worker is up
    const once = async () => {
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      const session = await store.sessions.open(BENCH_REF);
      const { input } = session.compose(BENCH_PROVIDER);
      const ms = performance.now() - t0;
      return { ms, cpuMs: cpuMsSince(c0), contextMessages: input.messages.length, summaryChars: input.summary?.length ?? 0 };
    };
    return await timeOpens(once, warm);
  } finally {
    await store.close();
  }
}

/** What a `warm-sizes` probe reports: per store, the median open + compose of its timed rounds, ms. */
export interface WarmSizesResult {
  readonly ms: readonly number[];
  /** Per store, the median CPU time of the process (every thread) over the same opens, ms. */
  readonly cpuMs: readonly number[];
  /** Per store, messages/summary characters of the model input (every size must agree). */
  readonly shapes: readonly string[];
}

/**
 * Each store (opened with `open`) through its own worker, all opened before the first round;
 * each round opens every store once, in turn (starting one store later each round), so drift
 * in the machine's load, and the collections that recur every few opens, fall on every size
 * alike.
 */
export async function warmSizes(open: typeof openNodeSessions, paths: readonly string[], rounds: number): Promise<WarmSizesResult> {
  const stores = await Promise.all(paths.map((root) => open({ root })));
  try {
    for (const store of stores) await store.storage.list(""); // the workers are up
    const times = paths.map((): number[] => []);
    const cpu = paths.map((): number[] => []);
    const shapes = paths.map(() => "");
    for (let round = -5; round < rounds; round++) {
      // Each round starts one store later: a collection that recurs every few opens would
      // otherwise land on the same store in every round.
      for (let k = 0; k < stores.length; k++) {
        const i = (k + round + 5) % stores.length;
        const c0 = process.cpuUsage();
        const t0 = performance.now();
        const session = await stores[i]!.sessions.open(BENCH_REF);
        const { input } = session.compose(BENCH_PROVIDER);
        const ms = performance.now() - t0;
        shapes[i] = `${input.messages.length}/${input.summary?.length ?? 0}`;
        if (round < 0) continue;
        times[i]!.push(ms);
        cpu[i]!.push(cpuMsSince(c0));
      }
    }
    return { ms: times.map((t) => median(t)), cpuMs: cpu.map((t) => median(t)), shapes };
  } finally {
    for (const store of stores) await store.close();
  }
}

/** `figures` with the process's peak resident set. */
export function withPeakMemory(figures: OpenFigures): OpenResult {
  return { ...figures, maxRssMB: (process.resourceUsage().maxRSS * 1024) / (1024 * 1024) };
}
