/**
 * The README's AI SDK hosts and `useChat` routes compile as written: the `ts` blocks of
 * its "On the Vercel AI SDK" section (a Node host, a browser host, a Next.js route
 * handler, a Hono route) are written to files (package specifiers mapped to this
 * repository's sources) and typechecked strictly with the project's `tsc` (the Hono block
 * against the `hono` devDependency).
 */
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const WORK = join(ROOT, "test/ai-sdk/.readme-hosts");
const SOURCES: Record<string, string> = {
  "sessionfold/ai-sdk": "../../../ai-sdk/mod.ts",
  "sessionfold/node": "../../../runtime-node/mod.ts",
  "sessionfold/browser": "../../../runtime-browser/mod.ts",
  sessionfold: "../../../core/mod.ts",
};

afterAll(() => rmSync(WORK, { recursive: true, force: true }));

it("the README's Node and browser hosts and its Next.js and Hono chat routes typecheck", async () => {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const section = readme.split("## On the Vercel AI SDK")[1]?.split("\n## ")[0];
  expect(section, 'README.md has no "On the Vercel AI SDK" section').toBeDefined();
  const blocks = [...section!.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
  expect(blocks).toHaveLength(4);
  // Each a dozen lines or so, as a newcomer copies them.
  for (const block of blocks) expect(block.trim().split("\n").length).toBeLessThanOrEqual(18);
  rmSync(WORK, { recursive: true, force: true });
  mkdirSync(WORK, { recursive: true });
  const files = blocks.map((block, i) => {
    const name = `host-${i + 1}.ts`;
    const mapped = block.replace(/from "(sessionfold(?:\/[a-z-]+)?)"/g, (whole, spec: string) => (SOURCES[spec] ? `from "${SOURCES[spec]}"` : whole));
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
