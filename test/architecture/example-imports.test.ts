/**
 * Every `@example` imports only what a user can import: a subpath the package exports (package.json `exports`), or
 * another package the project names in its dependencies, or a Node builtin. A module the package does not export shows
 * its own names without an import, as `deno check --doc-only` (`npm run check:deno`) type-checks them: it imports the
 * module's exports into each example. 17 examples imported `sessionfold/internal`, which deno.json mapped but the
 * package does not export, so a user copying one got a resolution error; deno.json maps no such specifier now.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "./import-graph.ts";

/** The folders `npm run check:deno` type-checks the examples of. */
const CHECKED = ["core", "runtime-node", "runtime-browser", "runtime-postgres", "ai-sdk", "testing"];

const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
  name: string;
  exports: Record<string, unknown>;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
};
const exported = new Set(Object.keys(pkg.exports).map((key) => (key === "." ? pkg.name : `${pkg.name}/${key.slice(2)}`)));
const packages = new Set(Object.keys({ ...pkg.dependencies, ...pkg.peerDependencies, ...pkg.devDependencies }));

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith(".ts") && !name.endsWith(".d.ts") ? [path] : [];
  });
}

/** The code of every fenced block in `text`'s doc comments, with the line it starts at. */
function exampleBlocks(text: string): { line: number; code: string }[] {
  const blocks: { line: number; code: string }[] = [];
  let open: { line: number; lines: string[] } | undefined;
  text.split("\n").forEach((raw, index) => {
    const line = /^\s*\* ?(.*)$/.exec(raw)?.[1];
    if (line === undefined) return;
    if (/^```(ts|typescript|js|javascript)\s*$/.test(line.trim()) && !open) open = { line: index + 1, lines: [] };
    else if (line.trim() === "```" && open) (blocks.push({ line: open.line, code: open.lines.join("\n") }), open = undefined);
    else open?.lines.push(line);
  });
  return blocks;
}

/** The specifiers an example imports (static imports, re-exports, dynamic imports of a literal). */
function importedSpecifiers(code: string): string[] {
  const patterns = [/^\s*(?:import|export)\s[^;]*?\sfrom\s*["']([^"']+)["']/gm, /^\s*import\s*["']([^"']+)["']/gm, /\bimport\(\s*["']([^"']+)["']\s*\)/g];
  return patterns.flatMap((pattern) => [...code.matchAll(pattern)].map((match) => match[1]!));
}

/** Why a user cannot import `specifier`, or `undefined` when they can. */
function unimportable(specifier: string): string | undefined {
  if (specifier === pkg.name || specifier.startsWith(`${pkg.name}/`)) {
    return exported.has(specifier) ? undefined : `not an export of the package (package.json "exports": ${[...exported].join(", ")})`;
  }
  if (specifier.startsWith(".") || specifier.startsWith("/")) {
    return "a path into the package's sources: import an export, or the module's own names without an import";
  }
  if (specifier.startsWith("node:") || builtinModules.includes(specifier)) return undefined;
  const name = specifier.startsWith("@") ? specifier.split("/").slice(0, 2).join("/") : specifier.split("/")[0]!;
  return packages.has(name) ? undefined : `a package the project does not depend on (${name})`;
}

describe("@example imports", () => {
  const files = CHECKED.flatMap((dir) => sources(join(ROOT, dir)));

  it("finds the examples (sanity)", () => {
    const blocks = files.flatMap((file) => exampleBlocks(readFileSync(file, "utf8")));
    expect(blocks.length).toBeGreaterThan(300);
    expect(blocks.flatMap((block) => importedSpecifiers(block.code))).toContain("sessionfold/node");
  });

  it("import only what a user can import", () => {
    const wrong: string[] = [];
    for (const file of files) {
      for (const block of exampleBlocks(readFileSync(file, "utf8"))) {
        for (const specifier of importedSpecifiers(block.code)) {
          const why = unimportable(specifier);
          if (why) wrong.push(`${relative(ROOT, file)}:${block.line}: "${specifier}": ${why}`);
        }
      }
    }
    expect(wrong).toEqual([]);
  });

  it("deno.json maps no package specifier the package does not export (check:deno would resolve what a user cannot)", () => {
    const imports = (JSON.parse(readFileSync(join(ROOT, "deno.json"), "utf8")) as { imports: Record<string, string> }).imports;
    expect(Object.keys(imports).filter((specifier) => unimportable(specifier) !== undefined)).toEqual([]);
  });

  it("notices an internal specifier, a source path and an unknown package", () => {
    const code = 'import { a } from "sessionfold/internal";\nimport { b } from "./bytes.ts";\nimport c from "left-pad";\nimport { d } from "sessionfold/sync";';
    expect(importedSpecifiers(code).map((specifier) => [specifier, unimportable(specifier) !== undefined])).toEqual([
      ["sessionfold/internal", true],
      ["./bytes.ts", true],
      ["left-pad", true],
      ["sessionfold/sync", false],
    ]);
  });
});
