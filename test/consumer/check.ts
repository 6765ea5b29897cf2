/**
 * The consumer check (`npm run consumer`, part of `npm test`): the package as a user gets it.
 * `npm pack` (which builds through `prepack`), install the tarball into a fresh temporary
 * project (from the local npm cache when it can), then, in that project:
 *
 * - Node runs the README's Node example as plain JavaScript (no loader);
 * - `npx sessionfold --help`, and a `new` / `append` / `show` round trip;
 * - `tsc --noEmit` of a strict consumer with `skipLibCheck: false`, for nodenext and bundler;
 * - the same host under Bun and Deno;
 * - a Vite app importing `sessionfold/browser`, built, served and opened in chromium:
 *   create and append, reload, read back from IndexedDB;
 * - publint and `attw --pack --profile esm-only` on the package.
 *
 * Every step prints one line; the first failure prints its output and exits 1. Steps wait on
 * processes and page content, never on short timers (the machine may be loaded).
 *
 *   npx tsx test/consumer/check.ts [--keep]    (--keep leaves the temporary project)
 */
import { execFile } from "node:child_process";
import { cp, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright";
import { CHROMIUM_ARGS, CHROMIUM_PATH } from "../support/chromium.ts";

const REPO = fileURLToPath(new URL("../..", import.meta.url));
const FIXTURE = fileURLToPath(new URL("./fixture", import.meta.url));
const BIN = join(REPO, "node_modules/.bin");
const keep = process.argv.includes("--keep");

interface Ran {
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a program to its end; rejects with its output when it exits non-zero. */
function run(file: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<Ran> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { cwd, env: { ...process.env, ...env }, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${file} ${args.join(" ")} (in ${cwd}) failed: ${error.message}\n${stdout}\n${stderr}`));
      else resolve({ stdout, stderr });
    });
  });
}

const steps: { readonly name: string; readonly body: () => Promise<string> }[] = [];
function step(name: string, body: () => Promise<string>): void {
  steps.push({ name, body });
}

const work = await mkdtemp(join(tmpdir(), "sessionfold-consumer-"));
const project = join(work, "project");
let tarball = "";

step("npm pack (prepack builds dist/)", async () => {
  const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", work], REPO);
  const [info] = JSON.parse(stdout.slice(stdout.indexOf("["))) as { filename: string; size: number; entryCount: number; files: { path: string }[] }[];
  if (!info) throw new Error(`npm pack printed no package: ${stdout}`);
  tarball = join(work, info.filename);
  const stray = info.files.map((f) => f.path).filter((p) =>
    !/^(dist\/|bin\/|docs\/(FORMAT|CLI|SYNC|POSTGRES|BENCHMARKS)\.md$|docs\/screenshot\.png$|README\.md$|LICENSE$|package\.json$)/.test(p) ||
    p.startsWith("dist/demo/")
  );
  if (stray.length > 0) throw new Error(`the tarball holds files outside the allowlist: ${stray.join(", ")}`);
  // The shipped docs and every file they and the README link to (docs/decisions.md "The package ships the docs its docs link to").
  const docs = ["docs/FORMAT.md", "docs/CLI.md", "docs/SYNC.md", "docs/POSTGRES.md", "docs/BENCHMARKS.md", "docs/screenshot.png"];
  for (const needed of ["LICENSE", "README.md", ...docs, "bin/sessionfold.mjs", "dist/core/mod.js", "dist/core/mod.d.ts"]) {
    if (!info.files.some((f) => f.path === needed)) throw new Error(`the tarball lacks ${needed}`);
  }
  return `${info.filename}: ${(info.size / 1000).toFixed(1)} kB, ${info.entryCount} files`;
});

step("install the tarball into a fresh project", async () => {
  await cp(FIXTURE, project, { recursive: true });
  await writeFile(join(project, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }, null, 2));
  const types = JSON.parse(await readFile(join(REPO, "node_modules/@types/node/package.json"), "utf8")) as { version: string };
  await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts", tarball, `@types/node@${types.version}`], project);
  const installed = await readdir(join(project, "node_modules"));
  return `node_modules: ${installed.filter((n) => !n.startsWith(".")).join(", ")}`;
});

step("node: the README's Node example, plain JavaScript", async () => {
  const { stdout } = await run(process.execPath, ["host.mjs", join(work, "node-store")], project);
  return expectHost(stdout);
});

step("npx sessionfold --help, new / append / show", async () => {
  const help = await run("npx", ["--no-install", "sessionfold", "--help"], project);
  if (!help.stdout.includes("Usage: sessionfold")) throw new Error(`--help printed no usage:\n${help.stdout}`);
  const root = ["--root", join(work, "cli-store"), "--json"];
  await run("npx", ["--no-install", "sessionfold", ...root, "new", "a/w/s1", "--title", "consumer"], project);
  const appended = JSON.parse(
    (await run("npx", ["--no-install", "sessionfold", ...root, "append", "a/w/s1", "--role", "user", "--text", "hi"], project)).stdout,
  ) as { sequence: number };
  const shown = JSON.parse((await run("npx", ["--no-install", "sessionfold", ...root, "show", "a/w/s1"], project)).stdout) as {
    meta: { message_count: number; title: string };
    active: { count: number };
  };
  if (appended.sequence !== 1 || shown.meta.message_count !== 1 || shown.active.count !== 1 || shown.meta.title !== "consumer") {
    throw new Error(`unexpected round trip: append ${JSON.stringify(appended)}, show ${JSON.stringify(shown)}`);
  }
  return "help, new, append (sequence 1), show (1 message)";
});

for (const flavour of ["nodenext", "bundler"]) {
  step(`tsc --noEmit, ${flavour}, skipLibCheck false`, async () => {
    await run(process.execPath, [join(REPO, "node_modules/typescript/bin/tsc"), "-p", `tsconfig.${flavour}.json`], project);
    return "no errors";
  });
}

step("bun: the same host", async () => {
  const { stdout } = await run(join(BIN, "bun"), ["host.mjs", join(work, "bun-store")], project);
  return expectHost(stdout);
});

step("deno: the same host", async () => {
  const { stdout } = await run(join(BIN, "deno"), ["run", "--quiet", "--allow-all", "host.mjs", join(work, "deno-store")], project, {
    DENO_NO_PROMPT: "1",
    DENO_NO_UPDATE_CHECK: "1",
  });
  return expectHost(stdout);
});

step("vite build of an app importing sessionfold/browser, in chromium", async () => {
  const web = join(project, "web");
  await run(process.execPath, [join(REPO, "node_modules/vite/bin/vite.js"), "build", "--config", "vite.config.js"], web);
  const { server, origin } = await serve(join(web, "dist"));
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: [...CHROMIUM_ARGS] });
  try {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(String(error)));
    await page.goto(`${origin}/`);
    const written = await result(page, "written");
    await page.goto(`${origin}/?read`);
    const read = await result(page, "read");
    const texts = (read as { texts: unknown[] }).texts;
    if (texts.length !== 1 || texts[0] !== "stored in IndexedDB") {
      throw new Error(`read back ${JSON.stringify(read)}${errors.length ? `; page errors: ${errors.join("; ")}` : ""}`);
    }
    const chunks = await readdir(join(web, "dist/assets"));
    return `written at revision ${(written as { revision: number }).revision}, read back after reload; assets: ${chunks.join(", ")}`;
  } finally {
    await browser.close();
    server.close();
  }
});

step("publint", async () => {
  const { stdout } = await run(join(BIN, "publint"), ["--strict", tarball], REPO);
  return stdout.trim().split("\n").at(-1) ?? "";
});

step("attw --pack --profile esm-only", async () => {
  await run(join(BIN, "attw"), [tarball, "--profile", "esm-only", "--format", "ascii"], REPO);
  return "no problems";
});

/** Checks the JSON line of host.mjs: two messages, one compacted into a segment with a summary. */
function expectHost(stdout: string): string {
  const result = JSON.parse(stdout.trim().split("\n").at(-1) ?? "") as { revision: number; segmentEnd: number | null; active: number; summary: boolean };
  if (result.segmentEnd !== 1 || result.active !== 1 || !result.summary) throw new Error(`unexpected host result: ${stdout}`);
  return `revision ${result.revision}, segment 1-1, 1 message in Active`;
}

/** Waits (on the page's content, with no time limit of its own) for main.js's JSON result of one step. */
async function result(page: import("playwright").Page, expected: string): Promise<unknown> {
  const out = page.locator("#out");
  await out.filter({ hasText: /"(step|error)"/ }).waitFor({ timeout: 0 });
  const value = JSON.parse(await out.innerText()) as { step?: string; error?: string };
  if (value.step !== expected) throw new Error(`page reported ${JSON.stringify(value)}, expected step ${expected}`);
  return value;
}

const TYPES: Record<string, string> = { ".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".map": "application/json" };

/** A static server for the built app on 127.0.0.1 and a port the system picks. */
async function serve(dir: string): Promise<{ server: Server; origin: string }> {
  const server = createServer(async (request, response) => {
    const path = new URL(request.url ?? "/", "http://x").pathname;
    const file = join(dir, path === "/" ? "index.html" : path);
    try {
      if (!file.startsWith(dir) || !(await stat(file)).isFile()) throw new Error("not a file");
      response.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream" });
      response.end(await readFile(file));
    } catch {
      response.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("the server has no port");
  return { server, origin: `http://127.0.0.1:${address.port}` };
}

let failed = false;
for (const { name, body } of steps) {
  const started = performance.now();
  try {
    const detail = await body();
    console.log(`ok   ${name} (${((performance.now() - started) / 1000).toFixed(1)} s): ${detail}`);
  } catch (error) {
    console.log(`FAIL ${name}: ${error instanceof Error ? error.message : String(error)}`);
    failed = true;
    break;
  }
}
if (keep || failed) console.log(`consumer project: ${project}`);
if (!keep && !failed) await rm(work, { recursive: true, force: true });
process.exit(failed ? 1 : 0);
