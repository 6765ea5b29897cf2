/**
 * Every `ts` block of the README compiles as written: each is written to its own module
 * (package specifiers mapped to this repository's sources) and typechecked strictly with the
 * project's `tsc`, the Hono route against the `hono` devDependency. What a block leaves to
 * the reader (a provider adapter, a storage backend) it declares itself, so a newcomer who
 * copies a block sees every name it needs.
 */
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const WORK = join(ROOT, "test/architecture/.readme-blocks");
const SOURCES: Record<string, string> = {
  "sessionfold/ai-sdk": "../../../ai-sdk/mod.ts",
  "sessionfold/node": "../../../runtime-node/mod.ts",
  "sessionfold/browser": "../../../runtime-browser/mod.ts",
  "sessionfold/postgres": "../../../runtime-postgres/mod.ts",
  "sessionfold/sync": "../../../core/sync/mod.ts",
  "sessionfold/testing": "../../../testing/mod.ts",
  "sessionfold/testing/conformance": "../../../testing/storage-conformance.ts",
  "sessionfold/testing/sync-conformance": "../../../testing/sync-conformance.ts",
  sessionfold: "../../../core/mod.ts",
};

afterAll(() => rmSync(WORK, { recursive: true, force: true }));

const tsBlocks = (markdown: string) => [...markdown.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);

it("the README's AI SDK section shows a Node host, a browser host and two chat routes, each short enough to copy", () => {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const section = readme.split("## On the Vercel AI SDK")[1]?.split("\n## ")[0];
  expect(section, 'README.md has no "On the Vercel AI SDK" section').toBeDefined();
  const blocks = tsBlocks(section!);
  expect(blocks).toHaveLength(4);
  for (const block of blocks) expect(block.trim().split("\n").length).toBeLessThanOrEqual(18);
});

it("every ts block of the README typechecks as written", async () => {
  const blocks = tsBlocks(readFileSync(join(ROOT, "README.md"), "utf8"));
  expect(blocks.length).toBeGreaterThanOrEqual(10);
  rmSync(WORK, { recursive: true, force: true });
  mkdirSync(WORK, { recursive: true });
  const files = blocks.map((block, i) => {
    const name = `block-${String(i + 1).padStart(2, "0")}.ts`;
    const mapped = block.replace(/from "(sessionfold(?:\/[a-z-]+)*)"/g, (whole, spec: string) => (SOURCES[spec] ? `from "${SOURCES[spec]}"` : whole));
    writeFileSync(join(WORK, name), `${mapped}\nexport {};\n`);
    return name;
  });
  writeFileSync(
    join(WORK, "tsconfig.json"),
    JSON.stringify({
      extends: "../../../tsconfig.base.json",
      compilerOptions: { lib: ["ES2023", "DOM", "DOM.Iterable"], types: ["node"] },
      files: [...files, "../../../runtime-node/comlink-node-adapter.d.ts"],
    }),
  );
  const result = await new Promise<{ code: number; output: string }>((resolve) =>
    execFile(
      process.execPath,
      [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", join(WORK, "tsconfig.json")],
      { cwd: ROOT },
      (error, stdout, stderr) => resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, output: `${stdout}${stderr}` }),
    )
  );
  expect(result.output).toBe("");
  expect(result.code).toBe(0);
}, 120_000);
