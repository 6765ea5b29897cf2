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
  /** Peak resident set of the whole process (worker threads included), MB. */
  readonly maxRssMB: number;
  /** Messages in the model input (a sanity check: every format must yield the same). */
  readonly contextMessages: number;
  /** Characters of the summary in the model input. */
  readonly summaryChars: number;
}

/** An open's figures before the process's peak memory is added. */
export type OpenFigures = Omit<OpenResult, "maxRssMB">;

/** One open when `warm` is undefined; else the median of up to `warm` opens (3 at least, within `budgetMs`) after 5 warm-up opens. */
export async function timeOpens(once: () => Promise<OpenFigures>, warm: number | undefined, budgetMs: number): Promise<OpenFigures> {
  if (warm === undefined) return await once();
  for (let i = 0; i < 5; i++) await once();
  const runs = [];
  const t0 = performance.now();
  while (runs.length < warm && (runs.length < 3 || performance.now() - t0 < budgetMs)) runs.push(await once());
  return { ...runs[0]!, ms: median(runs.map((r) => r.ms)) };
}

/** Opens the store with `open` once per process (its worker start is per process, not per turn), then times open + compose. */
export async function openSessionfold(
  open: typeof openNodeSessions,
  worker: boolean,
  root: string,
  warm: number | undefined,
  budgetMs: number,
): Promise<OpenFigures> {
  const store = await open({ root, worker });
  try {
    await store.storage.list(""); // the worker is up
    const once = async () => {
      const t0 = performance.now();
      const session = await store.sessions.open(BENCH_REF);
      const { input } = session.compose(BENCH_PROVIDER);
      return { ms: performance.now() - t0, contextMessages: input.messages.length, summaryChars: input.summary?.length ?? 0 };
    };
    return await timeOpens(once, warm, budgetMs);
  } finally {
    await store.close();
  }
}

/** `figures` with the process's peak resident set. */
export function withPeakMemory(figures: OpenFigures): OpenResult {
  return { ...figures, maxRssMB: (process.resourceUsage().maxRSS * 1024) / (1024 * 1024) };
}
