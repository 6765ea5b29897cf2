/**
 * Helpers of the CLI tests: run `main()` in-process with captured io, run the real
 * `bin/sessionfold.mjs` in a child process, temporary roots, hand-made session files and a byte-exact
 * snapshot of a whole tree. Not a test file itself.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach } from "vitest";
import { type CliIo, main } from "../../runtime-node/cli/main.ts";
import type { LooseJson } from "../support/loose-json.ts";

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const BIN = join(REPO, "bin/sessionfold.mjs");

/** What one CLI run produced. */
export interface RunResult {
  readonly status: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** stdout parsed as the one JSON document `--json` promises. */
export function json<T = LooseJson>(result: RunResult): T {
  return JSON.parse(result.stdout) as T;
}

/** Runs `main()` in-process (no worker, no fsync: fast) against `root`. */
export async function cli(root: string, args: readonly string[], io: Partial<CliIo> = {}): Promise<RunResult> {
  let stdout = "";
  let stderr = "";
  const status = await main(["--root", root, ...args], {
    stdout: (text) => void (stdout += text),
    stderr: (text) => void (stderr += text),
    env: {},
    worker: false,
    fsync: false,
    ...io,
  });
  return { status, stdout, stderr };
}

/** Runs `main()` in-process with exactly `argv` (no `--root` added). */
export async function cliRaw(argv: readonly string[], io: Partial<CliIo> = {}): Promise<RunResult> {
  let stdout = "";
  let stderr = "";
  const status = await main(argv, { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t), env: {}, worker: false, fsync: false, ...io });
  return { status, stdout, stderr };
}

/** The user a child process runs as (`bin`'s `user`): another than the test's own. */
export interface ChildUser {
  readonly uid: number;
  readonly gid: number;
}

/**
 * Runs `node bin/sessionfold.mjs …` as a child process: the real path (worker storage, fsync);
 * with `user`, as that user (the test must run as root to give one).
 */
export function bin(
  args: readonly string[],
  env: Record<string, string> = {},
  command: readonly string[] = [process.execPath, BIN],
  user?: ChildUser,
): Promise<RunResult> {
  return new Promise((resolvePromise) => {
    execFile(
      command[0]!,
      [...command.slice(1), ...args],
      { cwd: REPO, env: { ...process.env, ...env, SESSIONFOLD_DEBUG: "" }, maxBuffer: 64 * 1024 * 1024, timeout: 60_000, ...user },
      (error, stdout, stderr) => {
        const status = error ? (typeof error.code === "number" ? error.code : -1) : 0;
        resolvePromise({ status, stdout, stderr });
      },
    );
  });
}

/**
 * Runs several command lines in ONE child process (the real path: storage worker, fsync),
 * one after the other, within `timeoutMs`: for commands that must not hang, at the cost of
 * one process start.
 */
export function binMany(argvs: readonly (readonly string[])[], timeoutMs = 60_000): Promise<RunResult[]> {
  return new Promise((resolvePromise, reject) => {
    execFile(
      process.execPath,
      [join(REPO, "test/cli/fixtures/run-commands.mjs"), JSON.stringify(argvs)],
      { cwd: REPO, env: { ...process.env, SESSIONFOLD_DEBUG: "" }, maxBuffer: 64 * 1024 * 1024, timeout: timeoutMs },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`the commands did not finish within ${timeoutMs} ms (${error.message}): ${stderr}`));
        else resolvePromise(JSON.parse(stdout) as RunResult[]);
      },
    );
  });
}

const roots: string[] = [];

/** A new temporary folder, removed after the test. The store root inside it does not exist yet. */
export async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "sessionfold-cli-"));
  roots.push(dir);
  return dir;
}

/** A path for a store root that does not exist yet, inside a fresh temporary folder. */
export async function missingRoot(): Promise<string> {
  return join(await tempDir(), "store");
}

afterEach(async () => {
  await Promise.all(roots.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

/** The folder of a live session. */
export function sessionDir(root: string, ref: string, archived = false): string {
  const [a, w, s] = ref.split("/");
  return join(root, "agents", a!, "workspaces", w!, archived ? "archived-sessions" : "sessions", s!);
}

/** Creates `ref` and appends `count` alternating user/assistant messages through the CLI. */
export async function seed(root: string, ref: string, count: number, title = "Seeded"): Promise<void> {
  expectOk(await cli(root, ["new", ref, "--title", title]));
  for (let i = 1; i <= count; i++) {
    expectOk(await cli(root, ["append", ref, "--role", i % 2 === 1 ? "user" : "assistant", "--text", `message ${i}`]));
  }
}

/** Throws with the run's output when it did not exit 0. */
export function expectOk(result: RunResult): RunResult {
  if (result.status !== 0) throw new Error(`exit ${result.status}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`);
  return result;
}

/** Writes a file, creating its folder. */
export async function put(path: string, content: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, content);
}

/** A `writer.lock` as another process would leave it. */
export function lockContent(pid = 31337, hostname = "build-box"): string {
  return `${JSON.stringify({ pid, hostname, runtime: "node", operation: "append", created_at: "2026-12-02T13:00:00.000Z", lock_id: "lock_other" }, null, 2)}\n`;
}

/**
 * Every path under `root` (folders end with `/`) with the SHA-256 of each file's bytes
 * and its mode; `null` when `root` does not exist.
 */
export async function snapshot(root: string): Promise<Record<string, string> | null> {
  try {
    await stat(root);
  } catch {
    return null;
  }
  const out: Record<string, string> = {};
  async function walk(dir: string): Promise<void> {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      const rel = relative(root, path);
      const mode = ((await stat(path)).mode & 0o777).toString(8);
      if (entry.isDirectory()) {
        out[`${rel}/`] = mode;
        await walk(path);
      } else {
        out[rel] = `${mode} ${createHash("sha256").update(await readFile(path)).digest("hex")}`;
      }
    }
  }
  await walk(root);
  return out;
}
