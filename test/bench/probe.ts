/**
 * One measurement in a fresh process, for the cases where caches and heaps must start
 * cold: builds a synthetic history, or opens one and gets what the next model call
 * needs, timing only that and reporting the process's peak memory. Started by
 * `lib/child.ts` as `node --import tsx test/bench/probe.ts '<task json>'`; the last line
 * of stdout is the JSON result. An open of sessionfold through the packed package (a task
 * with `entry`, an `open` or a `warm-sizes`) runs in `probe-package.ts` instead, which loads
 * nothing of the sources, and an open of a baseline or a peer in `probe-peers.ts`, which
 * loads nothing of sessionfold.
 *
 * @module
 */
import { performance } from "node:perf_hooks";
import { openNodeSessions } from "../../runtime-node/mod.ts";
import { buildLangGraph, buildPiSession, buildPlainJsonl, buildSessionfold } from "./lib/fixtures.ts";
import { openSessionfold, type WarmOpens, warmSizes, withPeakMemory } from "./lib/open-probe.ts";
import { isPeerImpl, type ProbeImpl } from "./lib/probe-impl.ts";

export type { OpenResult, WarmOpens, WarmSizesResult } from "./lib/open-probe.ts";
export type { ProbeImpl } from "./lib/probe-impl.ts";

/** The formats a probe builds. */
export type ProbeFormat = "sessionfold" | "jsonl" | "pi" | "langgraph";
/** A history to build: `active` messages left in Active (sessionfold only; default lib/synth.ts's `ACTIVE_SIZE`). */
export interface BuildItem {
  readonly format: ProbeFormat;
  readonly path: string;
  readonly active?: number;
}

export type ProbeTask =
  | { readonly kind: "build"; readonly items: readonly BuildItem[]; readonly n: number }
  /**
   * Opens once in this fresh process; with `warm`, first opens `warm.warmup` times untimed, then
   * reports the median of up to `warm.timed` more opens in the same process (a long-lived host's
   * per-turn cost; lib/open-probe.ts).
   * `entry`: the file of the `sessionfold/node` module to open sessionfold with, in `probe-package.ts`
   * (`lib/child.ts` starts that probe for such a task); without it, the sources' `runtime-node/mod.ts`, here.
   */
  | {
    readonly kind: "open";
    readonly impl: ProbeImpl;
    readonly path: string;
    readonly n: number;
    readonly warm?: WarmOpens;
    readonly entry?: string;
  }
  /**
   * Warm opens of several sessionfold stores in one process, round-robin (a long-lived host
   * that opens sessions of every size): 5 warm-up rounds, then `rounds` timed ones; `entry` as
   * for `open`.
   */
  | { readonly kind: "warm-sizes"; readonly paths: readonly string[]; readonly rounds: number; readonly entry?: string };

async function build(items: readonly BuildItem[], n: number): Promise<{ ms: number }> {
  const t0 = performance.now();
  for (const { format, path, active } of items) {
    if (format === "sessionfold") await buildSessionfold(path, n, active);
    else if (format === "jsonl") await buildPlainJsonl(path, n);
    else if (format === "pi") await buildPiSession(path, n);
    else await buildLangGraph(path, n);
  }
  return { ms: performance.now() - t0 };
}

const task = JSON.parse(process.argv[2] ?? "null") as ProbeTask | null;
if (!task) throw new Error("probe.ts needs a task as JSON in argv[2]");
if (task.kind === "open" && isPeerImpl(task.impl)) throw new Error(`probe.ts opens sessionfold only; lib/child.ts starts probe-peers.ts for ${task.impl}`);
const result = task.kind === "build"
  ? await build(task.items, task.n)
  : task.kind === "warm-sizes"
  ? await warmSizes(openNodeSessions, task.paths, task.rounds)
  : withPeakMemory(await openSessionfold(openNodeSessions, task.impl !== "sessionfold-noworker", task.path, task.warm));
process.stdout.write(`\n${JSON.stringify(result)}\n`);
// A builder's or a store's handles may stay open; the measurement is done.
process.exit(0);
