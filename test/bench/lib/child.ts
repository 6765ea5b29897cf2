/**
 * Runs one probe (`test/bench/probe.ts`; `probe-package.ts` for opens through the packed
 * package; `probe-peers.ts` for the baselines' and the peers' opens, lib/probe-impl.ts) in a
 * fresh Node process and returns its JSON result. Every probe gets the same flags, whatever
 * it measures, but one: `sessionfold-eager` also gets `--no-lazy` (V8 compiles every function
 * at load), to measure what first-call compiles cost an open.
 *
 * @module
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { OpenResult, ProbeTask } from "../probe.ts";
import { isPeerImpl } from "./probe-impl.ts";

const PROBE = fileURLToPath(new URL("../probe.ts", import.meta.url));
/** The probe of opens through the packed package (a task with `entry`): it loads nothing of the sources. */
const PACKAGE_PROBE = fileURLToPath(new URL("../probe-package.ts", import.meta.url));
/** The probe of the baselines' and the peers' opens: it loads nothing of sessionfold. */
const PEER_PROBE = fileURLToPath(new URL("../probe-peers.ts", import.meta.url));
/** Heap ceiling of every probe: the peers need several GB to open 10⁶ messages at all. */
export const PROBE_HEAP_MB = 12_288;

/** Runs `task` in a fresh process; rejects with the child's stderr when it fails or exceeds `timeoutMs`. */
export function runProbe<T = OpenResult>(task: ProbeTask, timeoutMs = 600_000): Promise<T> {
  return new Promise((resolve, reject) => {
    const eager = task.kind === "open" && task.impl === "sessionfold-eager" ? ["--no-lazy"] : [];
    const probe = task.kind === "open" && isPeerImpl(task.impl) ? PEER_PROBE : task.kind !== "build" && task.entry ? PACKAGE_PROBE : PROBE;
    const child = spawn(process.execPath, [`--max-old-space-size=${PROBE_HEAP_MB}`, ...eager, "--import", "tsx", probe, JSON.stringify(task)], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, NODE_NO_WARNINGS: "1" },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new ProbeTimeout(timeoutMs));
    }, timeoutMs);
    child.on("error", (error) => (clearTimeout(timer), reject(error)));
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      const last = stdout.trim().split("\n").at(-1) ?? "";
      if (code === 0) {
        try {
          resolve(JSON.parse(last) as T);
          return;
        } catch {
          // fall through to the error below
        }
      }
      const why = signal ? `killed by ${signal}` : `exit code ${code}`;
      reject(new Error(`probe ${JSON.stringify(task)} failed (${why}): ${stderr.trim().split("\n").slice(-6).join(" | ")}`));
    });
  });
}

/** A probe that ran longer than its time limit (it was killed). */
export class ProbeTimeout extends Error {
  readonly limitMs: number;
  constructor(limitMs: number) {
    super(`probe exceeded ${Math.round(limitMs / 1000)} s and was killed`);
    this.limitMs = limitMs;
  }
}
