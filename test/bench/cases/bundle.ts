/**
 * Case 8: gzipped size of the demo's main-thread and worker bundles, built with Vite's
 * JS API from `demo/` with the project's `vite.config.ts` (what `npm run build:demo` does) into a
 * temp folder.
 *
 * @module
 */
import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import type { CaseContext } from "../lib/result.ts";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const DEMO = join(ROOT, "demo");

async function filesBelow(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await filesBelow(path)));
    else out.push(path);
  }
  return out;
}

/** `true` for a JS chunk that runs in a worker: Vite names a worker bundle after its entry (`storage-worker-<hash>.js`). */
function isWorkerChunk(name: string): boolean {
  return /worker/i.test(name.split("/").at(-1) ?? name);
}

export async function bundleCase(ctx: CaseContext): Promise<void> {
  const missing = (why: string) => {
    ctx.log(`case 8: not measured: ${why}`);
    for (const part of ["main", "worker"]) {
      ctx.emit({
        case: 8,
        name: `bundle.demo.${part}.gzip`,
        value: null,
        unit: "KiB",
        baseline: null,
        baselineName: "minified size before gzip (KiB)",
        ratio: null,
        ratioMeaning: "gzip / minified",
        note: `not measured: ${why}`,
      });
    }
  };
  if (!existsSync(join(DEMO, "index.html"))) return missing("demo/ has no index.html yet (the demo is being built by another helper)");
  const { build } = await import("vite");
  const outDir = join(ctx.tmp, "demo-dist");
  // The project's own vite.config.ts builds the demo (`npm run build:demo`); only the output folder differs.
  const config = [join(DEMO, "vite.config.ts"), join(ROOT, "vite.config.ts")].find((file) => existsSync(file));
  try {
    await build({
      root: DEMO,
      configFile: config ?? false,
      logLevel: "error",
      build: { outDir, emptyOutDir: true, write: true },
    });
  } catch (error) {
    return missing(`vite build of demo/ failed: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`);
  }
  const sizes = { main: { raw: 0, gz: 0, files: [] as string[] }, worker: { raw: 0, gz: 0, files: [] as string[] } };
  for (const file of await filesBelow(outDir)) {
    if (!/\.(m?js)$/.test(file)) continue;
    const bytes = await readFile(file);
    const part = isWorkerChunk(relative(outDir, file)) ? sizes.worker : sizes.main;
    part.raw += bytes.length;
    part.gz += gzipSync(bytes, { level: 9 }).length;
    part.files.push(relative(outDir, file));
  }
  for (const [part, size] of Object.entries(sizes)) {
    if (size.files.length === 0) {
      ctx.emit({
        case: 8,
        name: `bundle.demo.${part}.gzip`,
        value: null,
        unit: "KiB",
        baseline: null,
        baselineName: "minified size before gzip (KiB)",
        ratio: null,
        ratioMeaning: "gzip / minified",
        note: `the build has no ${part} chunk`,
      });
      continue;
    }
    ctx.log(`case 8: ${part}: ${(size.gz / 1024).toFixed(1)} KiB gzip (${size.files.join(", ")})`);
    ctx.emit({
      case: 8,
      name: `bundle.demo.${part}.gzip`,
      value: size.gz / 1024,
      unit: "KiB",
      baseline: size.raw / 1024,
      baselineName: "minified size before gzip (KiB)",
      ratio: size.gz / size.raw,
      ratioMeaning: "gzip / minified",
      note: `gzip -9 of ${size.files.join(", ")}`,
    });
  }
}
