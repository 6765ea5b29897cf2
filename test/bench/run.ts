/**
 * `npm run bench`: every benchmark case of sessionfold, each side by side with its
 * baseline in the same run, on this machine; writes docs/BENCHMARKS.md.
 *
 *   npm run bench                      # full sizes (10², 10⁴, 10⁶), writes docs/BENCHMARKS.md
 *   npm run bench -- --quick --json    # 10², 10⁴, 10⁵, fewer runs; one JSON object per line, about 10 min
 *   npm run bench -- --only=2,5        # some cases only (no report is written)
 *
 * Flags: `--quick` (smaller sizes, fewer runs; rows say `"mode":"quick"`), `--json` (rows
 * as JSON lines on stdout, progress on stderr), `--only=<cases>`, `--no-report`,
 * `--report=<file>` (write the report elsewhere; a quick run writes none unless given),
 * `--render=<run.json>` (no measuring: render the report again from a saved run, e.g. after
 * editing test/bench/notes.md). Every run saves itself to `<os.tmpdir()>/sessionfold-bench-last-<full|quick>[-partial].json`.
 *
 * @module
 */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { aiSdkCase } from "./cases/ai-sdk.ts";
import { appendCase } from "./cases/append.ts";
import { browserCase } from "./cases/browser.ts";
import { bundleCase } from "./cases/bundle.ts";
import { bytesCase } from "./cases/bytes.ts";
import { compactCase } from "./cases/compact.ts";
import { encryptionCase } from "./cases/encryption.ts";
import { listCase } from "./cases/list.ts";
import { packageCase } from "./cases/package.ts";
import { postgresCase } from "./cases/postgres.ts";
import { streamCase } from "./cases/stream.ts";
import { syncCase } from "./cases/sync.ts";
import { turnCase } from "./cases/turn.ts";
import { machineInfo } from "./lib/machine.ts";
import { renderReport } from "./lib/report.ts";
import { type BenchRow, type CaseContext, jsonLine, targetMet } from "./lib/result.ts";
import { round } from "./lib/stats.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

interface Step {
  /** Case numbers this step produces. */
  readonly cases: readonly number[];
  readonly title: string;
  readonly run: (ctx: CaseContext) => Promise<void>;
}

/** In the order they run: the cheap, noise-sensitive I/O cases first, the long history builds last. */
const STEPS: readonly Step[] = [
  { cases: [2, 5], title: "durable append and the worker hop", run: appendCase },
  { cases: [3], title: "streaming with draft persistence", run: streamCase },
  { cases: [4], title: "compaction", run: compactCase },
  { cases: [12], title: "encrypted store against the same store in the clear", run: encryptionCase },
  { cases: [7], title: "bytes stored per message", run: bytesCase },
  { cases: [1, 6], title: "turn cost against history length (Node) and peak memory", run: turnCase },
  { cases: [1], title: "turn cost against history length (chromium)", run: browserCase },
  { cases: [8], title: "demo bundle size", run: bundleCase },
  { cases: [9], title: "the installed package: tarball and CLI start", run: packageCase },
  { cases: [11], title: "the AI SDK adapter: cost per streamed delta against streamText", run: aiSdkCase },
  { cases: [10], title: "PostgreSQL: turn cost, commits against the server's floor, listing", run: postgresCase },
  { cases: [13], title: "sync over loopback HTTP: initial, incremental flatness, a push's round trip", run: syncCase },
  { cases: [14], title: "listing sessions at scale: files, IndexedDB (chromium), PostgreSQL", run: listCase },
];

function parseArgs(argv: readonly string[]) {
  const flags = new Map<string, string | true>();
  for (const arg of argv) {
    const match = /^--([^=]+)(?:=(.*))?$/.exec(arg);
    if (!match) throw new Error(`unknown argument ${JSON.stringify(arg)} (see test/bench/run.ts)`);
    flags.set(match[1]!, match[2] ?? true);
  }
  const only = flags.get("only");
  const report = flags.get("report");
  const render = flags.get("render");
  return {
    render: typeof render === "string" ? render : undefined,
    quick: flags.has("quick"),
    json: flags.has("json"),
    only: typeof only === "string" ? new Set(only.split(",").map(Number)) : undefined,
    report: typeof report === "string" ? report : flags.has("quick") || only || flags.has("no-report") ? undefined : join(ROOT, "docs/BENCHMARKS.md"),
  };
}

/** Everything a report is rendered from, as saved after each run. */
interface SavedRun {
  readonly rows: BenchRow[];
  readonly machine: ReturnType<typeof machineInfo>;
  readonly loadAtEnd: number[];
  readonly startedAt: string;
  readonly seconds: number;
  readonly quick: boolean;
  readonly failures: [number, string][];
}

async function writeReport(run: SavedRun, file: string): Promise<void> {
  const notes = await readFile(join(ROOT, "test/bench/notes.md"), "utf8");
  await writeFile(file, renderReport({ ...run, startedAt: new Date(run.startedAt), failures: new Map(run.failures), notes }));
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  if (args.render) {
    const run = JSON.parse(await readFile(args.render, "utf8")) as SavedRun;
    const file = args.report ?? join(ROOT, "docs/BENCHMARKS.md");
    await writeReport(run, file);
    process.stderr.write(`rendered ${file} from ${args.render}\n`);
    return;
  }
  const startedAt = new Date();
  const t0 = performance.now();
  const machine = machineInfo();
  const log = (message: string) => process.stderr.write(`[bench ${((performance.now() - t0) / 1000).toFixed(0).padStart(4)} s] ${message}\n`);
  log(`${args.quick ? "quick" : "full"} run on ${machine.cpu} (${machine.cores} cores), load ${machine.loadAtStart.map((l) => l.toFixed(2)).join(" ")}`);
  const rows: BenchRow[] = [];
  const failures = new Map<number, string>();
  const emit = (row: BenchRow) => {
    rows.push(row);
    if (args.json) process.stdout.write(`${jsonLine(row, args.quick ? "quick" : "full")}\n`);
    else {
      const met = targetMet(row);
      const verdict = row.target ? ` [target ${row.target.text}: ${met === null ? "not measured" : met ? "met" : "MISSED"}]` : "";
      process.stdout.write(
        `${row.name}: ${row.value === null ? "–" : round(row.value)} ${row.unit}; baseline ${row.baseline === null ? "–" : round(row.baseline)}; ratio ${
          row.ratio === null ? "–" : round(row.ratio)
        }${verdict}\n`,
      );
    }
  };
  for (const step of STEPS) {
    if (args.only && !step.cases.some((c) => args.only!.has(c))) continue;
    const tmp = await mkdtemp(join(tmpdir(), "sessionfold-bench-"));
    log(`cases ${step.cases.join("+")}: ${step.title}`);
    try {
      await step.run({ quick: args.quick, tmp, log, emit });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      log(`cases ${step.cases.join("+")} failed: ${message}`);
      for (const c of step.cases) failures.set(c, `${step.title}: ${message.slice(0, 500)}`);
      if (args.json) {
        process.stdout.write(
          `${
            JSON.stringify({
              name: `case-${step.cases.join("+")}.failed`,
              value: null,
              unit: "",
              baseline: null,
              ratio: null,
              mode: args.quick ? "quick" : "full",
              note: message.slice(0, 500),
            })
          }\n`,
        );
      }
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
  }
  const seconds = (performance.now() - t0) / 1000;
  const saved: SavedRun = { rows, machine, loadAtEnd: loadavg(), startedAt: startedAt.toISOString(), seconds, quick: args.quick, failures: [...failures] };
  // Named by kind, so a quick or partial run never replaces the last full one.
  const savedFile = join(tmpdir(), `sessionfold-bench-last-${args.quick ? "quick" : "full"}${args.only ? "-partial" : ""}.json`);
  await writeFile(savedFile, JSON.stringify(saved, null, 2));
  if (args.report) {
    await writeReport(saved, args.report);
    log(`wrote ${args.report} (run saved in ${savedFile})`);
  }
  const missed = rows.filter((row) => targetMet(row) === false).map((row) => row.name);
  log(`done in ${seconds.toFixed(0)} s; ${rows.length} figures; targets missed: ${missed.length ? missed.join(", ") : "none"}`);
  if (failures.size > 0) process.exitCode = 1;
}

await main();
// Playwright, LangGraph's SQLite and the storage workers are all closed; leave nothing behind.
process.exit(process.exitCode ?? 0);
