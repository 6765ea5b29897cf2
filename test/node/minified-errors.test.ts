/**
 * Typed errors in a production build: a consumer and both workers bundled with esbuild's
 * minifier (which renames every class), run in Node. Every error class the package exports
 * keeps its `name` and, across the worker hop, its class (`instanceof`); the real storage
 * worker's errors too. Before the names were string literals, `name` was the minified
 * class name ("eh") and the hop rebuilt every error as the base class.
 */
import { spawnSync } from "node:child_process";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const FIXTURE = join(ROOT, "test/node/fixtures/minified");

interface Report {
  seen: {
    export: string;
    className: string;
    localName: string;
    localCode: unknown;
    hopName: string;
    hopInstanceOf: boolean;
    hopCode: unknown;
    hopDetails: unknown;
  }[];
  testing: { export: string; className: string; localName: string }[];
  storageWorker: { call: string; name: string; instanceOf: boolean }[];
}

let dir: string;
let report: Report;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "sessionfold-minified-"));
  await build({
    entryPoints: {
      consumer: join(FIXTURE, "consumer.ts"),
      "errors-worker": join(FIXTURE, "errors-worker.ts"),
      // The name the compiled runtime starts its worker by (runtime-node/worker-storage.ts).
      "storage-worker": join(ROOT, "runtime-node/storage-worker.ts"),
    },
    outdir: join(dir, "out"),
    bundle: true,
    minify: true,
    format: "esm",
    platform: "node",
    target: "node20",
    // ESM builds first, as a bundler for the web does (jsonc-parser's "main" is UMD).
    mainFields: ["module", "main"],
    logLevel: "error",
  });
  await writeFile(join(dir, "out", "package.json"), JSON.stringify({ type: "module" }));
  await mkdir(join(dir, "store"));
  await symlink("/dev/full", join(dir, "store", "full.jsonl"));
  const run = spawnSync(process.execPath, [join(dir, "out", "consumer.js"), join(dir, "store")], { encoding: "utf8", timeout: 60_000 });
  if (run.status !== 0) throw new Error(`the minified consumer exited with ${run.status}: ${run.stderr.slice(-2000)}`);
  report = JSON.parse(run.stdout) as Report;
}, 120_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("error classes in a minified build", () => {
  it("the minifier renamed the classes (else this test proves nothing)", () => {
    expect(report.seen.length).toBeGreaterThanOrEqual(19);
    const renamed = report.seen.filter((s) => s.className !== s.export).map((s) => s.export);
    expect(renamed).toContain("WriterLockedError");
    expect(renamed).toContain("StorageFullError");
  });

  it("every exported error class keeps its name, and across a worker its class, code and details", () => {
    for (const s of report.seen) {
      expect(s.localName, s.export).toBe(s.export);
      if (s.export === "ContextLengthExceededError") {
        // Not a sessionfold error (a provider adapter's signal to the engine): it crosses as internal.
        expect(s, s.export).toMatchObject({ hopName: "InternalError", hopCode: "internal", hopDetails: { original_name: "ContextLengthExceededError" } });
        continue;
      }
      expect(s, s.export).toMatchObject({ hopName: s.export, hopInstanceOf: true, hopCode: s.localCode, hopDetails: { file: "s1.v1.jsonl", line: 3 } });
    }
    for (const t of report.testing) expect(t.localName, t.export).toBe(t.export);
    expect(report.testing.map((t) => t.export)).toContain("SimulatedCrashError");
  });

  it("the real storage worker's errors keep their class", () => {
    expect(report.storageWorker).toEqual([
      { call: "read ../etc/passwd", name: "InvalidInputError", instanceOf: true },
      { call: "read full.jsonl (a symbolic link)", name: "StoreEntryError", instanceOf: true },
      { call: "read after close", name: "StoreClosedError", instanceOf: true },
    ]);
  });
});
