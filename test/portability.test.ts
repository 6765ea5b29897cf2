/**
 * The core stays portable: no Node builtins, no DOM, no Comlink, no host globals.
 * `npx tsc -p tsconfig.core.json` enforces the types (ES2023 + core/platform.d.ts only);
 * this test catches what types alone would not (e.g. an `any`-typed `process.`).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const repo = fileURLToPath(new URL("..", import.meta.url));
const coreDir = join(repo, "core");

function coreSources(): string[] {
  return readdirSync(coreDir, { recursive: true, encoding: "utf8" })
    .filter((name) => /\.(ts|mts|js|mjs)$/.test(name) && !name.endsWith(".d.ts"))
    .map((name) => join(coreDir, name));
}

/** The source with comments blanked (line numbers kept), so prose like "this process." is not code. */
function code(source: string): string {
  return source
    .replace(/\/\*[\s\S]*?\*\//g, (comment) => comment.replace(/[^\n]/g, " "))
    .replace(/(^|\s)\/\/.*$/gm, "$1");
}

const BUILTINS = "fs|fs/promises|path|os|worker_threads|child_process";
const forbidden: [string, RegExp][] = [
  ["a node: module", /\bfrom\s*["']node:|\bimport\s*\(\s*["']node:|\bimport\s*["']node:/],
  ["a bare Node builtin", new RegExp(`\\bfrom\\s*["'](${BUILTINS})["']|\\bimport\\s*\\(\\s*["'](${BUILTINS})["']|\\bimport\\s*["'](${BUILTINS})["']`)],
  ["comlink", /["']comlink(\/[^"']*)?["']/],
  // A global's member access, not prose such as "…in this process." inside a message.
  ["process.", /(?<![\w$.])process\.[A-Za-z_$]/],
  ["window.", /(?<![\w$.])window\.[A-Za-z_$]/],
  ["document.", /(?<![\w$.])document\.[A-Za-z_$]/],
  ["Buffer", /\bBuffer\b/],
  ["require(", /\brequire\s*\(/],
];

describe("core portability", () => {
  const files = coreSources();

  it("finds the core's sources", () => {
    expect(files.length).toBeGreaterThan(5);
    expect(files.map((f) => relative(repo, f))).toContain(join("core", "mod.ts"));
  });

  it("uses no Node, DOM, Comlink or host-global API", () => {
    const found: string[] = [];
    for (const file of files) {
      code(readFileSync(file, "utf8"))
        .split("\n")
        .forEach((line, i) => {
          for (const [what, pattern] of forbidden) {
            if (pattern.test(line)) found.push(`${relative(repo, file)}:${i + 1}: ${what}: ${line.trim()}`);
          }
        });
    }
    expect(found).toEqual([]);
  });

  it("is type-checked without Node or DOM types (tsconfig.core.json)", () => {
    const config = JSON.parse(readFileSync(join(repo, "tsconfig.core.json"), "utf8"));
    expect(config.compilerOptions.types).toEqual([]);
    const lib: string[] = config.compilerOptions.lib;
    expect(lib.length).toBeGreaterThan(0);
    expect(lib.filter((l) => /^dom|^webworker/i.test(l))).toEqual([]);
    expect(config.include).toEqual(["core"]);
  });
});
