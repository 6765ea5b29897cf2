/**
 * The opens of the baselines and the peers (lib/probe-impl.ts): plain JSONL (the whole file
 * read with `fs` and parsed), the worker floor (`lib/worker-floor.ts`), pi-coding-agent and
 * LangGraph. Started by `lib/child.ts`, with the flags of every probe, in a process that
 * loads what the reader it measures loads and nothing of sessionfold but the layout's paths
 * (the worker floor's). With the sources' core loaded as well, as `probe.ts` loads it, about
 * one cold plain JSONL read in five ran a young-generation collection of the modules' load
 * inside its clock, 6 to 11 ms where the read takes about 1.3 (docs/decisions.md "The
 * baselines' cold opens in a process of their own"). The last line of stdout is the JSON result.
 *
 * @module
 */
import { readFile } from "node:fs/promises";
import { performance } from "node:perf_hooks";
import { LANGGRAPH_THREAD } from "./lib/bench-ref.ts";
import { type OpenFigures, timeOpens, type WarmOpens, withPeakMemory } from "./lib/open-probe.ts";
import { BENCH_SYSTEM, contextFromPlainJsonl } from "./lib/plain-jsonl.ts";
import { isPeerImpl } from "./lib/probe-impl.ts";
import { startWorkerFloor } from "./lib/worker-floor.ts";
import type { ProbeTask } from "./probe.ts";

/** The platform's floor for the same reads (lib/worker-floor.ts), timed as `openSessionfold` times an open. */
async function openWorkerFloor(root: string, warm: WarmOpens | undefined): Promise<OpenFigures> {
  const floor = await startWorkerFloor(root);
  try {
    const once = async () => {
      const t0 = performance.now();
      const { messages, summaryChars } = await floor.open();
      return { ms: performance.now() - t0, contextMessages: messages, summaryChars };
    };
    return await timeOpens(once, warm);
  } finally {
    await floor.close();
  }
}

/** Reads the whole plain JSONL file and takes the next model input from it. */
async function openJsonl(path: string, warm: WarmOpens | undefined): Promise<OpenFigures> {
  const once = async () => {
    const t0 = performance.now();
    const context = contextFromPlainJsonl(await readFile(path, "utf8"));
    return { ms: performance.now() - t0, contextMessages: context.messages.length, summaryChars: context.summary?.length ?? 0 };
  };
  return await timeOpens(once, warm);
}

/** Opens pi-coding-agent's session file once, its module loaded before the clock. */
async function openPi(path: string): Promise<OpenFigures> {
  const { SessionManager } = await import("@mariozechner/pi-coding-agent");
  const t0 = performance.now();
  const manager = SessionManager.open(path);
  const context = manager.buildSessionContext();
  const ms = performance.now() - t0;
  // pi puts the compaction summary first, as a message of its own.
  const first = context.messages[0] as { role?: string; summary?: string } | undefined;
  const hasSummary = first?.role === "compactionSummary";
  return { ms, contextMessages: context.messages.length - (hasSummary ? 1 : 0), summaryChars: hasSummary ? (first?.summary?.length ?? 0) : 0 };
}

/** Reads LangGraph's latest checkpoint once, its module loaded before the clock. */
async function openLangGraph(path: string): Promise<OpenFigures> {
  const { SqliteSaver } = await import("@langchain/langgraph-checkpoint-sqlite");
  const t0 = performance.now();
  const saver = SqliteSaver.fromConnString(path);
  const tuple = await saver.getTuple({ configurable: { thread_id: LANGGRAPH_THREAD } });
  const values = tuple!.checkpoint.channel_values as { messages: unknown[]; summary: string; summarized_through: number };
  const context = { system: BENCH_SYSTEM, summary: values.summary || null, messages: values.messages.slice(values.summarized_through) };
  const ms = performance.now() - t0;
  saver.db.close();
  return { ms, contextMessages: context.messages.length, summaryChars: context.summary?.length ?? 0 };
}

const task = JSON.parse(process.argv[2] ?? "null") as ProbeTask | null;
if (task?.kind !== "open" || !isPeerImpl(task.impl)) throw new Error("probe-peers.ts needs an open task of a baseline or a peer as JSON in argv[2]");
const figures = task.impl === "jsonl"
  ? await openJsonl(task.path, task.warm)
  : task.impl === "worker-floor"
  ? await openWorkerFloor(task.path, task.warm)
  : task.impl === "pi"
  ? await openPi(task.path)
  : await openLangGraph(task.path);
process.stdout.write(`\n${JSON.stringify(withPeakMemory(figures))}\n`);
// pi and LangGraph may leave handles open; the measurement is done.
process.exit(0);
