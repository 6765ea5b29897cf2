/**
 * Case 9: the package as installed. `npm pack` (prepack builds dist/) gives the tarball's
 * size and file count; the tarball is unpacked into a temp folder (its dependencies from the
 * repository's node_modules) and its compiled CLI is started fresh, each run a new process:
 * `sessionfold --help`, and `sessionfold --json show` of a session of 10⁶ messages (10⁵ with
 * --quick), each against a bare `node -e ''` started the same way.
 *
 * @module
 */
import { execFile, execFileSync } from "node:child_process";
import { mkdir, symlink } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildSessionfold } from "../lib/fixtures.ts";
import type { CaseContext } from "../lib/result.ts";
import { median, round } from "../lib/stats.ts";
import { BENCH_REF, sizeLabel } from "../lib/synth.ts";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));

/** Wall time of one fresh process, start to exit, in ms; rejects when it exits non-zero. */
function timeProcess(args: readonly string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    execFile(process.execPath, args, { maxBuffer: 64 * 1024 * 1024 }, (error) => (error ? reject(error) : resolve(performance.now() - started)));
  });
}

/** Median of `runs` fresh starts, interleaved with the bare node baseline so both see the same load. */
async function against(args: readonly string[], runs: number): Promise<{ value: number; baseline: number }> {
  const values: number[] = [];
  const baselines: number[] = [];
  await timeProcess(args); // warm the page cache, not measured
  for (let i = 0; i < runs; i++) {
    baselines.push(await timeProcess(["-e", ""]));
    values.push(await timeProcess(args));
  }
  return { value: median(values), baseline: median(baselines) };
}

export async function packageCase(ctx: CaseContext): Promise<void> {
  const out = execFileSync("npm", ["pack", "--json", "--pack-destination", ctx.tmp], { cwd: ROOT, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  const [info] = JSON.parse(out.slice(out.indexOf("["))) as { filename: string; size: number; unpackedSize: number; entryCount: number }[];
  if (!info) throw new Error(`npm pack printed no package: ${out}`);
  ctx.log(`case 9: ${info.filename}: ${(info.size / 1000).toFixed(1)} kB, ${info.entryCount} files`);
  ctx.emit({ case: 9, name: "package.tarball", value: round(info.size / 1000, 1), unit: "kB", baseline: round(info.unpackedSize / 1000, 1), baselineName: "unpacked (kB)", ratio: info.entryCount, ratioMeaning: "files in the tarball" });

  const unpacked = join(ctx.tmp, "installed");
  await mkdir(unpacked);
  execFileSync("tar", ["-xzf", join(ctx.tmp, info.filename), "-C", unpacked]);
  const pkg = join(unpacked, "package");
  await symlink(join(ROOT, "node_modules"), join(pkg, "node_modules"), "dir");
  const bin = join(pkg, "bin/sessionfold.mjs");
  const runs = ctx.quick ? 5 : 15;

  const help = await against([bin, "--help"], runs);
  ctx.log(`case 9: sessionfold --help ${help.value.toFixed(0)} ms, bare node ${help.baseline.toFixed(0)} ms`);
  ctx.emit({ case: 9, name: "cli.start.help", value: round(help.value, 1), unit: "ms", baseline: round(help.baseline, 1), baselineName: "node -e '' (ms)", ratio: round(help.value / help.baseline, 2), ratioMeaning: "value / baseline", runs, note: "compiled CLI from the packed tarball, a fresh process per run" });

  const n = ctx.quick ? 100_000 : 1_000_000;
  const store = join(ctx.tmp, "store");
  await buildSessionfold(store, n);
  const ref = `${BENCH_REF.agentId}/${BENCH_REF.workspaceId}/${BENCH_REF.sessionId}`;
  const show = await against([bin, "--root", store, "--json", "show", ref], runs);
  ctx.log(`case 9: sessionfold show (${sizeLabel(n)}) ${show.value.toFixed(0)} ms, bare node ${show.baseline.toFixed(0)} ms`);
  ctx.emit({ case: 9, name: `cli.start.show.${sizeLabel(n)}`, value: round(show.value, 1), unit: "ms", baseline: round(show.baseline, 1), baselineName: "node -e '' (ms)", ratio: round(show.value / show.baseline, 2), ratioMeaning: "value / baseline", runs, note: `show of a session of ${n} messages (segments of 500, a meta.json hint), a fresh process per run` });
}
