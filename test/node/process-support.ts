/**
 * Helpers of the real-process tests (crash.test.ts, two-writers.test.ts): starting a
 * fixture child (bundled once for fast start-up, or through tsx), reading its fd-3 report
 * lines, reading a session's whole history, and an independent raw read of its files.
 * Not a test file itself.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { MessageRecord, Session } from "../../core/mod.ts";

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, "..", "..");

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** How a fixture is started: `node <bundle>.js` or `node --import tsx <fixture>.ts`. */
export interface ChildLauncher {
  readonly kind: "bundle" | "tsx";
  command(args: readonly string[]): { file: string; args: string[] };
}

/** Where a fixture's source is, and what a bundle leaves to Node's own resolution. */
export interface FixtureOptions {
  /** Folder of `<fixture>.ts` (default: test/node/fixtures). */
  readonly dir?: string;
  /** Modules not bundled (an optional native addon a dependency only requires when asked to). */
  readonly external?: readonly string[];
}

/** Runs a fixture from its TypeScript source through tsx (about 2–4 s to start on this machine). */
export function tsxLauncher(fixture: string, options: FixtureOptions = {}): ChildLauncher {
  const source = join(options.dir ?? join(here, "fixtures"), `${fixture}.ts`);
  return { kind: "tsx", command: (args) => ({ file: process.execPath, args: ["--import", "tsx", source, ...args] }) };
}

/**
 * Bundles a fixture and the storage worker with esbuild (tsx's own dependency) into one temp
 * folder, so a child starts in well under a second: the bundle's `WorkerFileStorage` then starts
 * `storage-worker.js` next to it, exactly as a compiled build does. Falls back to tsx when
 * esbuild cannot be loaded. `dispose()` removes the folder.
 */
export async function bundledLauncher(fixture: string, options: FixtureOptions = {}): Promise<ChildLauncher & { dispose(): Promise<void> }> {
  let esbuild: typeof import("esbuild");
  try {
    esbuild = await import("esbuild");
  } catch {
    return { ...tsxLauncher(fixture, options), dispose: async () => undefined };
  }
  const outdir = await mkdtemp(join(tmpdir(), `sessionfold-${fixture}-`));
  await esbuild.build({
    entryPoints: { [fixture]: join(options.dir ?? join(here, "fixtures"), `${fixture}.ts`), "storage-worker": join(repo, "runtime-node", "storage-worker.ts") },
    external: [...(options.external ?? [])],
    // A CommonJS dependency (pg) requires Node's built-ins; an ESM bundle has no `require` of its own.
    banner: { js: 'import { createRequire as __sfCreateRequire } from "node:module"; const require = __sfCreateRequire(import.meta.url);' },
    outdir,
    bundle: true,
    format: "esm",
    platform: "node",
    target: "node20",
    // jsonc-parser's UMD build does dynamic requires an ESM bundle cannot do; its ESM build is fine.
    mainFields: ["module", "main"],
    logLevel: "error",
  });
  await writeFile(join(outdir, "package.json"), '{"type":"module"}\n');
  const entry = join(outdir, `${fixture}.js`);
  return {
    kind: "bundle",
    command: (args) => ({ file: process.execPath, args: [entry, ...args] }),
    dispose: () => rm(outdir, { recursive: true, force: true }),
  };
}

/** One line a fixture wrote to fd 3. */
export type Report = { readonly type: string } & Record<string, unknown>;

/** A started fixture: its report lines as they arrive, and how it ended. */
export interface RunningChild {
  readonly process: ChildProcess;
  readonly pid: number;
  /** Every report line so far (complete lines only). */
  readonly reports: Report[];
  /** Resolves with the first report of `type` (rejects when the child ends first). */
  next(type: string, count?: number): Promise<Report>;
  /** Resolves once the process ended and fd 3 and stderr are drained. */
  readonly closed: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
}

/** Spawns a fixture with fd 3 as a report pipe (stdout inherited: fixtures never print). */
export function startChild(launcher: ChildLauncher, args: readonly string[], stdin: "ignore" | "pipe" = "ignore"): RunningChild {
  const { file, args: argv } = launcher.command(args);
  const child = spawn(file, argv, { cwd: repo, stdio: [stdin, "inherit", "pipe", "pipe"] });
  const reports: Report[] = [];
  const waiters: { type: string; count: number; resolve: (r: Report) => void; reject: (e: Error) => void }[] = [];
  let buffered = "";
  let stderr = "";
  let ended = false;
  const check = () => {
    for (const waiter of [...waiters]) {
      const matching = reports.filter((r) => r.type === waiter.type);
      if (matching.length >= waiter.count) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(matching[waiter.count - 1]!);
      } else if (ended || reports.some((r) => r.type === "fatal")) {
        waiters.splice(waiters.indexOf(waiter), 1);
        const fatal = reports.find((r) => r.type === "fatal");
        waiter.reject(
          new Error(
            `child ${child.pid} ended before "${waiter.type}" #${waiter.count}${fatal ? `: ${JSON.stringify(fatal)}` : ""}; stderr: ${stderr.slice(-2000)}`,
          ),
        );
      }
    }
  };
  const pipe = child.stdio[3] as NodeJS.ReadableStream;
  pipe.setEncoding("utf8");
  pipe.on("data", (chunk: string) => {
    buffered += chunk;
    let newline: number;
    while ((newline = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      if (line.trim() !== "") reports.push(JSON.parse(line) as Report);
    }
    check();
  });
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (chunk: string) => (stderr += chunk));
  const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) => {
    child.on("close", (code, signal) => {
      ended = true;
      check();
      resolve({ code, signal, stderr });
    });
  });
  return {
    process: child,
    pid: child.pid!,
    reports,
    closed,
    next(type, count = 1) {
      return new Promise<Report>((resolve, reject) => {
        waiters.push({ type, count, resolve, reject });
        check();
      });
    },
  };
}

/** Every committed message of the session, oldest first: every segment (read whole) then Active. */
export async function fullHistory(session: Session): Promise<MessageRecord[]> {
  const all: MessageRecord[] = [];
  for (const range of await session.segments()) {
    const { messages, footer } = await session.readSegment(range);
    if (footer?.through_sequence !== range.end) throw new Error(`segment ${range.start}-${range.end} has no footer through ${range.end}`);
    all.push(...messages);
  }
  all.push(...session.active);
  return all;
}

/** The same history paged the way a host pages it: Active, then `messages({ beforeSequence })` back to the start. */
export async function pagedHistory(session: Session): Promise<MessageRecord[]> {
  const pages: MessageRecord[][] = [[...session.active]];
  let oldest = session.active[0]?.sequence ?? (session.newestSegment?.end ?? 0) + 1;
  for (;;) {
    const page = await session.messages({ beforeSequence: oldest });
    if (page.length === 0) break;
    pages.unshift(page);
    oldest = page[0]!.sequence;
  }
  return pages.flat();
}

/** What an independent raw read of a session folder's `.jsonl` files found. */
export interface RawHistory {
  /** Message records of every segment (in name order) then `active.jsonl`, as parsed. */
  readonly messages: { sequence: number; message_id: string; file: string }[];
  /** Lines that are not valid JSON, or a file whose last byte is not `\n`. */
  readonly problems: string[];
}

/**
 * Reads a session's files with plain `fs` and `JSON.parse`, not through the core: every line
 * of every segment and of `active.jsonl` must be one JSON object ending in `\n`.
 */
export async function rawHistory(sessionDir: string): Promise<RawHistory> {
  const messages: RawHistory["messages"] = [];
  const problems: string[] = [];
  const segmentsDir = join(sessionDir, "messages", "segments");
  const names = (await readdir(segmentsDir).catch(() => [] as string[])).filter((n) => n.endsWith(".jsonl")).sort();
  const files = [...names.map((n) => join(segmentsDir, n)), join(sessionDir, "messages", "active.jsonl")];
  for (const file of files) {
    const text = await readFile(file, "utf8").catch(() => "");
    if (text === "") continue;
    if (!text.endsWith("\n")) problems.push(`${file}: does not end with a newline`);
    text.split("\n").forEach((line, i, lines) => {
      if (i === lines.length - 1 && line === "") return;
      let record: { record_type?: unknown; sequence?: unknown; message_id?: unknown };
      try {
        record = JSON.parse(line) as typeof record;
      } catch {
        problems.push(`${file}:${i + 1}: invalid JSON ${JSON.stringify(line.slice(0, 80))}`);
        return;
      }
      if (record.record_type === "message") messages.push({ sequence: record.sequence as number, message_id: record.message_id as string, file });
    });
  }
  return { messages, problems };
}
