/**
 * One measurement in a fresh process, for the cases where caches and heaps must start
 * cold: builds a synthetic history, or opens one and gets what the next model call
 * needs, timing only that and reporting the process's peak memory. Started by
 * `lib/child.ts` as `node --import tsx test/bench/probe.ts '<task json>'`; the last line
 * of stdout is the JSON result. An open of sessionfold through the packed package (a task
 * with `entry`, an `open` or a `warm-sizes`) runs in `probe-package.ts` instead, which loads
 * nothing of the sources.
 *
 * @module
 */
import { readFile } from "node:fs/promises";
import { performance } from "node:perf_hooks";
import { openNodeSessions } from "../../runtime-node/mod.ts";
import { buildLangGraph, buildPiSession, buildPlainJsonl, buildSessionfold, LANGGRAPH_THREAD } from "./lib/fixtures.ts";
import { type OpenFigures, type OpenResult, openSessionfold, timeOpens, warmSizes, withPeakMemory } from "./lib/open-probe.ts";
import { median } from "./lib/stats.ts";
import { startWorkerFloor } from "./lib/worker-floor.ts";
import { BENCH_SYSTEM, contextFromPlainJsonl } from "./lib/synth.ts";

export type { OpenResult, WarmSizesResult } from "./lib/open-probe.ts";

/** The formats and implementations a probe knows. */
export type ProbeFormat = "sessionfold" | "jsonl" | "pi" | "langgraph";
/**
 * `worker-floor`: the bound of `open.node.*` (lib/worker-floor.ts), on a sessionfold tree.
 * `sessionfold-eager`: sessionfold through its worker in a process started with `--no-lazy`
 * (lib/child.ts), so that V8 compiles every function as its module loads, before the clock:
 * the first open without its first-call compiles, a bound of `open.node.cold`.
 */
export type ProbeImpl = "sessionfold" | "sessionfold-noworker" | "sessionfold-eager" | "worker-floor" | "jsonl" | "pi" | "langgraph";

/** A history to build: `active` messages left in Active (sessionfold only; default lib/synth.ts's `ACTIVE_SIZE`). */
export interface BuildItem {
  readonly format: ProbeFormat;
  readonly path: string;
  readonly active?: number;
}

export type ProbeTask =
  | { readonly kind: "build"; readonly items: readonly BuildItem[]; readonly n: number }
  /**
   * Opens once in this fresh process; with `warm`, first opens a few times, then reports the
   * median of up to `warm` more opens in the same process (a long-lived host's per-turn cost).
   * `entry`: the file of the `sessionfold/node` module to open sessionfold with, in `probe-package.ts`
   * (`lib/child.ts` starts that probe for such a task); without it, the sources' `runtime-node/mod.ts`, here.
   */
  | {
    readonly kind: "open";
    readonly impl: ProbeImpl;
    readonly path: string;
    readonly n: number;
    readonly warm?: number;
    readonly warmBudgetMs?: number;
    readonly entry?: string;
  }
  /**
   * Warm opens of several sessionfold stores in one process, round-robin (a long-lived host
   * that opens sessions of every size): 5 warm-up rounds, then `rounds` timed ones; `entry` as
   * for `open`.
   */
  | { readonly kind: "warm-sizes"; readonly paths: readonly string[]; readonly rounds: number; readonly entry?: string };

/** The platform's floor for the same reads (lib/worker-floor.ts), timed as `openSessionfold` times an open. */
async function openWorkerFloor(root: string, warm: number | undefined, budgetMs: number): Promise<OpenFigures> {
  const floor = await startWorkerFloor(root);
  try {
    const once = async () => {
      const t0 = performance.now();
      const { messages, summaryChars } = await floor.open();
      return { ms: performance.now() - t0, contextMessages: messages, summaryChars };
    };
    return await timeOpens(once, warm, budgetMs);
  } finally {
    await floor.close();
  }
}

/** Reads the whole plain JSONL file and takes the next model input from it. */
async function openJsonl(path: string, warm: number | undefined, budgetMs: number): Promise<OpenFigures> {
  const once = async () => {
    const t0 = performance.now();
    const context = contextFromPlainJsonl(await readFile(path, "utf8"));
    return { ms: performance.now() - t0, contextMessages: context.messages.length, summaryChars: context.summary?.length ?? 0 };
  };
  if (warm === undefined) return await once();
  const runs = [await once()];
  const t0 = performance.now();
  while (runs.length < warm + 1 && (runs.length < 4 || performance.now() - t0 < budgetMs)) runs.push(await once());
  runs.shift(); // the first one was the warm-up
  return { ...runs[0]!, ms: median(runs.map((r) => r.ms)) };
}

async function open(impl: ProbeImpl, path: string, warm: number | undefined, budgetMs = 10_000): Promise<OpenResult> {
  let ms: number;
  let contextMessages: number;
  let summaryChars: number;
  let cpuMs: number | undefined;
  if (impl === "worker-floor") {
    ({ ms, contextMessages, summaryChars } = await openWorkerFloor(path, warm, budgetMs));
  } else if (impl === "sessionfold" || impl === "sessionfold-noworker" || impl === "sessionfold-eager" || impl === "jsonl") {
    ({ ms, contextMessages, summaryChars, cpuMs } = impl === "jsonl"
      ? await openJsonl(path, warm, budgetMs)
      : await openSessionfold(openNodeSessions, impl !== "sessionfold-noworker", path, warm, budgetMs));
  } else if (impl === "pi") {
    const { SessionManager } = await import("@mariozechner/pi-coding-agent");
    const t0 = performance.now();
    const manager = SessionManager.open(path);
    const context = manager.buildSessionContext();
    ms = performance.now() - t0;
    // pi puts the compaction summary first, as a message of its own.
    const first = context.messages[0] as { role?: string; summary?: string } | undefined;
    const hasSummary = first?.role === "compactionSummary";
    contextMessages = context.messages.length - (hasSummary ? 1 : 0);
    summaryChars = hasSummary ? (first?.summary?.length ?? 0) : 0;
  } else {
    const { SqliteSaver } = await import("@langchain/langgraph-checkpoint-sqlite");
    const t0 = performance.now();
    const saver = SqliteSaver.fromConnString(path);
    const tuple = await saver.getTuple({ configurable: { thread_id: LANGGRAPH_THREAD } });
    const values = tuple!.checkpoint.channel_values as { messages: unknown[]; summary: string; summarized_through: number };
    const context = { system: BENCH_SYSTEM, summary: values.summary || null, messages: values.messages.slice(values.summarized_through) };
    ms = performance.now() - t0;
    contextMessages = context.messages.length;
    summaryChars = context.summary?.length ?? 0;
    saver.db.close();
  }
  return withPeakMemory({ ms, contextMessages, summaryChars, ...(cpuMs === undefined ? {} : { cpuMs }) });
}

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
const result = task.kind === "build"
  ? await build(task.items, task.n)
  : task.kind === "warm-sizes"
  ? await warmSizes(openNodeSessions, task.paths, task.rounds)
  : await open(task.impl, task.path, task.warm, task.warmBudgetMs);
process.stdout.write(`\n${JSON.stringify(result)}\n`);
// pi and LangGraph may leave handles open; the measurement is done.
process.exit(0);
