/**
 * The entry without `ai` installed: a Node process whose module resolution refuses `ai`
 * (a resolve hook, as when the package is absent) imports `sessionfold/ai-sdk`'s module
 * graph and builds a provider. Only `appendUIMessages` loads `ai`, when called, and says in a
 * typed error what is missing and how to install it.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const root = new URL("../../", import.meta.url).pathname;
let dir: string | undefined;

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("sessionfold/ai-sdk without ai installed", () => {
  it("imports and builds aiSdkProvider; appendUIMessages throws a typed InternalError naming ai, its peer range and the install", async () => {
    dir = await mkdtemp(join(tmpdir(), "sessionfold-no-ai-"));
    await writeFile(
      join(dir, "hook.mjs"),
      [
        "export async function resolve(specifier, context, next) {",
        "  if (specifier === 'ai' || specifier.startsWith('ai/')) throw Object.assign(new Error(`Cannot find package '${specifier}'`), { code: 'ERR_MODULE_NOT_FOUND' });",
        "  return next(specifier, context);",
        "}",
      ].join("\n"),
    );
    await writeFile(join(dir, "register.mjs"), "import { register } from 'node:module';\nregister(new URL('./hook.mjs', import.meta.url));\n");
    const script = [
      "const m = await import('./ai-sdk/mod.ts');",
      "const provider = m.aiSdkProvider({ specificationVersion: 'v3', provider: 'openai.chat', modelId: 'gpt', supportedUrls: {}, doGenerate: async () => ({}), doStream: async () => ({}) });",
      "const { SessionfoldError } = await import('./core/mod.ts');",
      "const append = await m.appendUIMessages({ messages: async () => [], append: async () => ({ sequences: [] }) }, []).then(",
      "  () => 'appended',",
      "  (e) => ({ typed: e instanceof SessionfoldError, name: e.name, code: e.code, details: e.details, message: e.message }),",
      ");",
      "console.log(JSON.stringify({ identity: provider.identity, append }));",
    ].join("\n");
    const { stdout } = await run(process.execPath, ["--import", join(dir, "register.mjs"), "--import", "tsx", "--input-type=module", "-e", script], {
      cwd: root,
    });
    const result = JSON.parse(stdout) as { identity: unknown; append: { message: string } };
    expect(result.identity).toEqual({ provider: "openai", api: "chat", model: "gpt" });
    const { peerDependencies } = JSON.parse(await readFile(join(root, "package.json"), "utf8")) as { peerDependencies: { ai: string } };
    expect(result.append).toEqual({
      typed: true,
      name: "InternalError",
      code: "internal",
      details: { package: "ai", peerRange: peerDependencies.ai },
      message: expect.stringContaining(`appendUIMessages needs the AI SDK package \`ai\` (${peerDependencies.ai})`),
    });
    expect(result.append.message).toMatch(/could not be loaded \(Cannot find package 'ai'\): install it with `npm install ai`$/);
  });
});
