/**
 * The layering of docs/ARCHITECTURE.md, checked over the real import graph: no import
 * circle anywhere, each `core/` module imports only its own folder or a lower layer, and
 * everything outside the core reaches it through an entry point (`core/mod.ts`, or
 * `core/internal.ts` for what the runtimes, the CLI and the tests need beyond it, or
 * `core/reader.ts` for what opening and reading a store needs without the rest, and
 * `core/registry.ts` for the session registry on top of it, or `core/storage-worker.ts` for
 * what a storage worker serves a store with, or
 * `core/errors.ts`, which imports nothing, for code that must fail typed without loading the
 * core).
 */
import { describe, expect, it } from "vitest";
import { importCircles, importGraph } from "./import-graph.ts";

/** The core's layers, lowest first; a module may import its own unit or any lower layer. */
export const CORE_LAYERS: readonly (readonly string[])[] = [
  ["core/errors.ts"],
  ["core/schema", "core/layout"],
  ["core/model", "core/storage"],
  ["core/jsonl", "core/encryption"],
  ["core/composer", "core/compaction", "core/summarizer", "core/formats"],
  ["core/export"],
  ["core/session"],
  ["core/agent", "core/verify", "core/sync"],
  ["core/worker"],
  ["core/mod.ts", "core/internal.ts", "core/reader.ts", "core/registry.ts", "core/storage-worker.ts"],
];

/** The unit a core file belongs to: its folder under `core/`, or the file itself at the top. */
function coreUnit(file: string): string {
  const parts = file.split("/");
  return parts.length > 2 ? `core/${parts[1]}` : file;
}

function layerOf(unit: string): number {
  const layer = CORE_LAYERS.findIndex((units) => units.includes(unit));
  if (layer < 0) throw new Error(`${unit} has no layer in CORE_LAYERS: add it where it belongs (docs/ARCHITECTURE.md)`);
  return layer;
}

const ENTRY_POINTS = new Set([
  "core/mod.ts",
  "core/internal.ts",
  "core/reader.ts",
  "core/registry.ts",
  "core/storage-worker.ts",
  "core/sync/mod.ts",
  "core/errors.ts",
]);

describe("import graph", () => {
  const graph = importGraph();

  it("sees the project (sanity: the scanner found files and imports)", () => {
    expect(graph.size).toBeGreaterThan(100);
    expect(graph.get("core/mod.ts")?.length).toBeGreaterThan(5);
  });

  it("has no import circle", () => {
    expect(importCircles(graph)).toEqual([]);
  });

  it("keeps every core module at or above what it imports", () => {
    const violations: string[] = [];
    for (const [file, targets] of graph) {
      if (!file.startsWith("core/")) continue;
      const from = coreUnit(file);
      for (const target of targets) {
        if (!target.startsWith("core/")) {
          violations.push(`${file} imports ${target}, outside the core`);
          continue;
        }
        const to = coreUnit(target);
        if (to !== from && layerOf(to) >= layerOf(from)) violations.push(`${file} (${from}) imports ${target} (${to}), not a lower layer`);
      }
    }
    expect(violations).toEqual([]);
  });

  it("reaches the core only through its entry points from the runtimes, adapters, testing and the demo", () => {
    const violations: string[] = [];
    for (const [file, targets] of graph) {
      if (file.startsWith("core/") || file.startsWith("test/") || file.startsWith("scripts/")) continue;
      for (const target of targets) {
        if (target.startsWith("core/") && !ENTRY_POINTS.has(target)) violations.push(`${file} imports ${target}`);
      }
    }
    expect(violations).toEqual([]);
  });
});
