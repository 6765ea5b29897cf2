/**
 * Case 9: the package as installed. `npm pack` (prepack builds dist/) gives the tarball's
 * size and file count; the tarball is unpacked into a temp folder (its dependencies from the
 * repository's node_modules) and its compiled CLI is started fresh through
 * `bin/sessionfold.mjs`, each run a new process: `sessionfold --help`, and
 * `sessionfold --json show` of a session of 10⁶ messages (with --quick too: building it takes
 * seconds), each against a bare `node -e ''` started the same way.
 *
 * What bounds each row is measured in the same run, fresh processes interleaved with the
 * same baseline: for `--help`, a process that only imports the CLI's entry module (the
 * bundle's `dist/cli/main.js`); for `show`, a process that only imports the bundle's `show`
 * command (its chunks: the core through its narrow entry `core/reader.ts`, without zod or
 * the schemas, and the file store; nothing run), and a
 * plain-node read of every file `show` must read (`meta.json`, Active, the last 4 KiB of each
 * segment, for its footer's length).
 *
 * @module
 */
import { execFile } from "node:child_process";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { buildSessionfold } from "../lib/fixtures.ts";
import { packPackage } from "../lib/packed.ts";
import type { CaseContext } from "../lib/result.ts";
import { median, round } from "../lib/stats.ts";
import { BENCH_REF, sizeLabel } from "../lib/synth.ts";

/** Wall time of one fresh process, start to exit, in ms; rejects when it exits non-zero. */
function timeProcess(args: readonly string[], cwd?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    execFile(
      process.execPath,
      args,
      { maxBuffer: 64 * 1024 * 1024, ...(cwd ? { cwd } : {}) },
      (error) => (error ? reject(error) : resolve(performance.now() - started)),
    );
  });
}

/** A command line run fresh each time; `cwd` for those that resolve a package from the install. */
interface Started {
  readonly args: readonly string[];
  readonly cwd?: string;
}

/**
 * Medians of `runs` fresh starts of each command line, interleaved with the bare node
 * baseline so all see the same load: `values[i]` for `started[i]`.
 */
async function against(started: readonly Started[], runs: number): Promise<{ values: number[]; baseline: number }> {
  const times: number[][] = started.map(() => []);
  const baselines: number[] = [];
  for (const s of started) await timeProcess(s.args, s.cwd); // warm the page cache, not measured
  for (let i = 0; i < runs; i++) {
    baselines.push(await timeProcess(["-e", ""]));
    for (const [j, s] of started.entries()) times[j]!.push(await timeProcess(s.args, s.cwd));
  }
  return { values: times.map(median), baseline: median(baselines) };
}

/** A fresh process that only imports `specifier` (a URL, or a package resolved from `cwd`). */
function importOnly(specifier: string, cwd?: string): Started {
  return { args: ["--input-type=module", "-e", `await import(${JSON.stringify(specifier)})`], ...(cwd ? { cwd } : {}) };
}

/**
 * A fresh plain-node process that reads what `show` must read of the session in `dir`: its
 * `meta.json` and Active whole, and the last 4 KiB of each segment (the summary footer).
 */
function showReadsOnly(dir: string): Started {
  const script = [
    `import { closeSync, fstatSync, openSync, readdirSync, readFileSync, readSync } from "node:fs";`,
    `const dir = ${JSON.stringify(dir)};`,
    `readFileSync(dir + "/meta.json"); readFileSync(dir + "/messages/active.jsonl");`,
    `const buffer = new Uint8Array(4096);`,
    `for (const name of readdirSync(dir + "/messages/segments")) {`,
    `  const fd = openSync(dir + "/messages/segments/" + name, "r");`,
    `  const size = fstatSync(fd).size;`,
    `  readSync(fd, buffer, 0, Math.min(size, 4096), Math.max(0, size - 4096));`,
    `  closeSync(fd);`,
    `}`,
  ].join("\n");
  return { args: ["--input-type=module", "-e", script] };
}

/** The bundle's chunk of the `show` command (its name carries a content hash). */
async function showChunk(bundle: string): Promise<string> {
  const found = (await readdir(bundle)).find((name) => /^show-[A-Z0-9]+\.js$/.test(name));
  if (!found) throw new Error(`no show-*.js chunk in ${bundle}`);
  return found;
}

/** `value` as a multiple of the bare node start, for notes. */
function times(value: number, baseline: number): string {
  return `${value.toFixed(0)} ms (${(value / baseline).toFixed(2)}×)`;
}

export async function packageCase(ctx: CaseContext): Promise<void> {
  const { info, dir: pkg } = await packPackage(ctx.tmp);
  ctx.log(`case 9: ${info.filename}: ${(info.size / 1000).toFixed(1)} kB, ${info.entryCount} files`);
  ctx.emit({
    case: 9,
    name: "package.tarball",
    value: round(info.size / 1000, 1),
    unit: "kB",
    baseline: round(info.unpackedSize / 1000, 1),
    baselineName: "unpacked (kB)",
    ratio: info.entryCount,
    ratioMeaning: "files in the tarball",
  });

  const bin = join(pkg, "bin/sessionfold.mjs");
  // Start-up times are tens of ms on a loaded machine: medians of many short runs, interleaved.
  const runs = ctx.quick ? 11 : 21;

  const bundle = join(pkg, "dist/cli");
  const help = await against([{ args: [bin, "--help"] }, importOnly(pathToFileURL(join(bundle, "main.js")).href)], runs);
  const [helpMs, helpImports] = help.values as [number, number];
  ctx.log(`case 9: sessionfold --help ${helpMs.toFixed(0)} ms, bare node ${help.baseline.toFixed(0)} ms`);
  ctx.emit({
    case: 9,
    name: "cli.start.help",
    value: round(helpMs, 1),
    unit: "ms",
    baseline: round(help.baseline, 1),
    baselineName: "node -e '' (ms)",
    ratio: round(helpMs / help.baseline, 2),
    ratioMeaning: "value / baseline",
    target: { op: "<=", limit: 1.5, text: "≤ 1.5× bare node" },
    runs,
    note: `compiled CLI from the packed tarball via bin/sessionfold.mjs, a fresh process per run (median wall time, interleaved with the baseline); ` +
      `bound: importing the CLI's entry module alone (the command table, help, errors; no core) takes ${times(helpImports, help.baseline)}`,
  });

  const n = 1_000_000;
  const store = join(ctx.tmp, "store");
  await buildSessionfold(store, n);
  const ref = `${BENCH_REF.agentId}/${BENCH_REF.workspaceId}/${BENCH_REF.sessionId}`;
  const sessionDir = join(store, "agents", BENCH_REF.agentId, "workspaces", BENCH_REF.workspaceId, "sessions", BENCH_REF.sessionId);
  const segments = (await readdir(join(sessionDir, "messages/segments"))).length;
  const show = await against(
    [
      { args: [bin, "--root", store, "--json", "show", ref] },
      importOnly(pathToFileURL(join(bundle, await showChunk(bundle))).href),
      showReadsOnly(sessionDir),
    ],
    runs,
  );
  const [showMs, importMs, readsMs] = show.values as [number, number, number];
  const base = show.baseline;
  // Loading the command and doing the reads, each on top of one node start: what no show that
  // validates with the core and reports every footer can go below.
  const bound = (importMs + readsMs - base) / base;
  ctx.log(`case 9: sessionfold show (${sizeLabel(n)}) ${showMs.toFixed(0)} ms, bare node ${base.toFixed(0)} ms`);
  ctx.emit({
    case: 9,
    name: `cli.start.show.${sizeLabel(n)}`,
    value: round(showMs, 1),
    unit: "ms",
    baseline: round(base, 1),
    baselineName: "node -e '' (ms)",
    ratio: round(showMs / base, 2),
    ratioMeaning: "value / baseline",
    target: { op: "<=", limit: 2.5, text: "≤ 2.5× bare node" },
    runs,
    note:
      `show of a session of ${n} messages (${segments} segments of 500, a meta.json hint) via bin/sessionfold.mjs, a fresh process per run, read on the main thread (no storage worker); ` +
      `bound, measured in this run: importing the bundled show command alone (the core through core/reader.ts without zod, the file store; nothing run) ${
        times(importMs, base)
      }; ` +
      `plain node reading what show reads (meta.json, Active, the last 4 KiB of ${segments} segments) ${times(readsMs, base)}; ` +
      `both on one node start bound the ratio at ${
        bound.toFixed(2)
      }× (the rest is the store's checks (each key, the folders once per call of 16 footers), judging each footer, the garbage collector, and compiling what runs; docs/BENCHMARKS.md "9 —")`,
  });
}
