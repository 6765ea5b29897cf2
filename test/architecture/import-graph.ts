/**
 * The project's import graph, read from the sources: static imports and re-exports (`import
 * type` included), side-effect imports and dynamic `import()` with a literal specifier all count.
 * (TypeScript 7 has no JavaScript API to ask, so the statements are matched here.)
 * Used by the architecture tests and printable with `tsx test/architecture/import-graph.ts`.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root. */
export const ROOT = resolve(import.meta.dirname, "../..");

/** The folders whose modules make up the project (tests and benchmarks included). */
const SCANNED = ["core", "runtime-node", "runtime-browser", "runtime-postgres", "ai-sdk", "testing", "demo", "test", "bin", "scripts"];
const SKIPPED = new Set(["node_modules", "dist", "fixture", "fixtures", ".vite"]);

/** Every source file, as a path relative to {@link ROOT} with `/` separators. */
export function sourceFiles(): string[] {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      if (SKIPPED.has(name)) continue;
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (/\.(ts|mts|mjs|js)$/.test(name) && !name.endsWith(".d.ts")) files.push(relative(ROOT, path).split("\\").join("/"));
    }
  };
  for (const dir of SCANNED) {
    try {
      walk(join(ROOT, dir));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
  }
  return files.sort();
}

/** File → the project files it imports (relative specifiers only; packages are left out). */
export function importGraph(files: readonly string[] = sourceFiles()): Map<string, string[]> {
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const targets = new Set<string>();
    for (const fileName of specifiers(readFileSync(join(ROOT, file), "utf8"))) {
      if (!fileName.startsWith(".")) continue;
      const target = relative(ROOT, resolve(ROOT, dirname(file), fileName)).split("\\").join("/");
      if (known.has(target)) targets.add(target);
      else if (known.has(target.replace(/\.js$/, ".ts"))) targets.add(target.replace(/\.js$/, ".ts"));
    }
    graph.set(file, [...targets].sort());
  }
  return graph;
}

const SPECIFIER_PATTERNS = [
  /^\s*(?:import|export)\s[^;]*?\sfrom\s*["']([^"']+)["']/gm,
  /^\s*import\s*["']([^"']+)["']/gm,
  /\bimport\(\s*["']([^"']+)["']\s*\)/g,
];

/** The module specifiers a source text imports, in no particular order. */
function specifiers(text: string): string[] {
  return SPECIFIER_PATTERNS.flatMap((pattern) => [...text.matchAll(pattern)].map((match) => match[1]!));
}

/** The strongly connected components with more than one file, or a file importing itself. */
export function importCircles(graph: Map<string, string[]>): string[][] {
  // Tarjan's algorithm, iterative over an explicit stack so deep graphs cannot overflow.
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const circles: string[][] = [];
  for (const start of graph.keys()) {
    if (index.has(start)) continue;
    const work: Array<{ node: string; next: number }> = [{ node: start, next: 0 }];
    index.set(start, counter);
    low.set(start, counter++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const edges = graph.get(frame.node) ?? [];
      if (frame.next < edges.length) {
        const to = edges[frame.next++]!;
        if (!index.has(to)) {
          index.set(to, counter);
          low.set(to, counter++);
          stack.push(to);
          onStack.add(to);
          work.push({ node: to, next: 0 });
        } else if (onStack.has(to)) {
          low.set(frame.node, Math.min(low.get(frame.node)!, index.get(to)!));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        if (component.length > 1 || edges.includes(frame.node)) circles.push(component.sort());
      }
    }
  }
  return circles;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const graph = importGraph();
  console.log(`${graph.size} files, ${[...graph.values()].reduce((n, e) => n + e.length, 0)} imports`);
  for (const circle of importCircles(graph)) console.log("circle:", circle.join(" ↔ "));
}
