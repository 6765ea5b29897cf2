/**
 * One measurement in a fresh process, for the cases where caches and heaps must start
 * cold: builds a synthetic history, or opens one and gets what the next model call
 * needs, timing only that and reporting the process's peak memory. Started by
 * `lib/child.ts` as `node --import tsx test/bench/probe.ts '<task json>'`; the last line
 * of stdout is the JSON result.
 *
 * @module
 */
import { readFile } from "node:fs/promises";
import { performance } from "node:perf_hooks";
import { openNodeSessions } from "../../runtime-node/mod.ts";
import { buildLangGraph, buildPiSession, buildPlainJsonl, buildSessionfold, LANGGRAPH_THREAD } from "./lib/fixtures.ts";
import { median } from "./lib/stats.ts";
import { startWorkerFloor } from "./lib/worker-floor.ts";
import { BENCH_PROVIDER, BENCH_REF, BENCH_SYSTEM, contextFromPlainJsonl } from "./lib/synth.ts";

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
   */
  | { readonly kind: "open"; readonly impl: ProbeImpl; readonly path: string; readonly n: number; readonly warm?: number; readonly warmBudgetMs?: number }
  /**
   * Warm opens of several sessionfold stores in one process, round-robin (a long-lived host
   * that opens sessions of every size): 5 warm-up rounds, then `rounds` timed ones.
   */
  | { readonly kind: "warm-sizes"; readonly paths: readonly string[]; readonly rounds: number };

/** What a `warm-sizes` probe reports: per store, the median open + compose of its timed rounds, ms. */
export interface WarmSizesResult {
  readonly ms: readonly number[];
  /** Per store, the median CPU time of the process (every thread) over the same opens, ms. */
  readonly cpuMs: readonly number[];
  /** Per store, messages/summary characters of the model input (every size must agree). */
  readonly shapes: readonly string[];
}

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
}

const MB = 1024 * 1024;

type OpenFigures = Omit<OpenResult, "maxRssMB">;

/** One open when `warm` is undefined; else the median of up to `warm` opens (3 at least, within `budgetMs`) after 5 warm-up opens. */
async function timeOpens(once: () => Promise<OpenFigures>, warm: number | undefined, budgetMs: number): Promise<OpenFigures> {
  if (warm === undefined) return await once();
  for (let i = 0; i < 5; i++) await once();
  const runs = [];
  const t0 = performance.now();
  while (runs.length < warm && (runs.length < 3 || performance.now() - t0 < budgetMs)) runs.push(await once());
  const cpu = runs.flatMap((r) => (r.cpuMs === undefined ? [] : [r.cpuMs]));
  return { ...runs[0]!, ms: median(runs.map((r) => r.ms)), ...(cpu.length ? { cpuMs: median(cpu) } : {}) };
}

/** CPU time of the whole process since `from` (a `process.cpuUsage()`), ms. */
function cpuMsSince(from: NodeJS.CpuUsage): number {
  const { user, system } = process.cpuUsage(from);
  return (user + system) / 1000;
}

/** Opens the store once per process (its worker start is per process, not per turn), then times open + compose. */
async function openSessionfold(impl: ProbeImpl, path: string, warm: number | undefined, budgetMs: number): Promise<Omit<OpenResult, "maxRssMB">> {
  const store = await openNodeSessions({ root: path, worker: impl !== "sessionfold-noworker" });
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
    return await timeOpens(once, warm, budgetMs);
  } finally {
    await store.close();
  }
}

/** The platform's floor for the same reads (lib/worker-floor.ts), timed as `openSessionfold` times an open. */
async function openWorkerFloor(root: string, warm: number | undefined, budgetMs: number): Promise<Omit<OpenResult, "maxRssMB">> {
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
async function openJsonl(path: string, warm: number | undefined, budgetMs: number): Promise<Omit<OpenResult, "maxRssMB">> {
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
      : await openSessionfold(impl, path, warm, budgetMs));
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
  return { ms, maxRssMB: (process.resourceUsage().maxRSS * 1024) / MB, contextMessages, summaryChars, ...(cpuMs === undefined ? {} : { cpuMs }) };
}

/**
 * Each store through its own worker, all opened before the first round; each round opens
 * every store once, in turn (starting one store later each round), so drift in the machine's
 * load, and the collections that recur every few opens, fall on every size alike.
 */
async function warmSizes(paths: readonly string[], rounds: number): Promise<WarmSizesResult> {
  const stores = await Promise.all(paths.map((root) => openNodeSessions({ root })));
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
  ? await warmSizes(task.paths, task.rounds)
  : await open(task.impl, task.path, task.warm, task.warmBudgetMs);
process.stdout.write(`\n${JSON.stringify(result)}\n`);
// pi and LangGraph may leave handles open; the measurement is done.
process.exit(0);
