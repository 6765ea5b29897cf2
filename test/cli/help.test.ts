/**
 * `sessionfold --help` byte for byte, and what a command line loads before it knows its
 * command: the help, usage errors before the command name, and `COMMAND --help` run in a
 * child process (`bin/sessionfold.mjs`) with module hooks that log every module it resolves.
 * The help and those errors must not load the core (zod, the schemas): that is what keeps
 * `sessionfold --help` near a bare `node` start (bench row `cli.start.help`).
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { BIN, bin, REPO, tempDir } from "./support.ts";

const SLOW = 120_000;

/** The whole of `sessionfold --help` (docs/CLI.md lists the same commands). */
const PROGRAM_HELP = [
  "sessionfold: look into, repair, move and script durable AI-agent sessions.",
  "",
  "Usage: sessionfold [--root DIR] [--json] COMMAND …",
  "",
  "Commands:",
  "  ls [--agent A] [--workspace W] [--archived] [--limit N] [--cursor C]                         list sessions from the catalog, newest first, a page at a time",
  "  show REF                                                                                     what is stored and what recovery found (read-only)",
  "  compose REF                                                                                  exactly what the next model request would read (read-only)",
  "  messages REF [--before SEQ]                                                                  Active's messages, or an older segment's (read-only)",
  "  verify [REF] [--repair-catalog]                                                              check one or every session, reading every file (read-only but --repair-catalog)",
  "  repair REF [--apply]                                                                         move bad lines into quarantine and rebuild meta.json (a plan unless --apply)",
  "  new REF [--title T]                                                                          create an empty session",
  "  append REF --role user|assistant --text T                                                    commit one text message",
  "  compact REF                                                                                  compact Active with the configured summarizer",
  "  fork REF --as SESSION_ID                                                                     copy the full history into a new session",
  "  archive REF                                                                                  move the session to archived-sessions/",
  "  delete REF [--archived]                                                                      delete the session and its whole history, under its lock",
  "  purge --older-than D [--keep-newest N] [--agent A] [--workspace W] [--archived] [--dry-run]  delete sessions by last activity or count, only when run (--dry-run lists)",
  "  unlock REF --force                                                                           remove a writer lock after printing its owner",
  "  import FILE [--from deepcode|rho-snapshot|rho-jsonl|pi|codex|claude-code] --into REF         import another system's session",
  "  export REF --to deepcode|rho-snapshot|pi [--redact] [--out FILE]                             export the full history",
  "  serve [--host H] [--port P] [--token-file F] [--cors-origin ORIGIN]…                         run the sync server over the store",
  "  sync [REF] --remote URL|DIR|postgres://… [--token-file F]                                    bring the store and a remote to the same state",
  "  keygen --out FILE                                                                            write a new key file (mode 0600) for an encrypted store",
  "  encrypt                                                                                      encrypt a store in the clear in place with the --key-file (crash-safe)",
  "  rekey                                                                                        rotate an encrypted store to a new key (re-wraps data keys, rewrites no history)",
  "",
  "Global options:",
  "  --root DIR       the store (default $SESSIONFOLD_HOME, else ~/.sessionfold)",
  "  --store URL      a store in PostgreSQL instead: postgres://…[?schema=NAME] (default",
  "                   $SESSIONFOLD_STORE when --root is not given; needs the pg package)",
  "  --key-file FILE  the key file of an encrypted store (default $SESSIONFOLD_KEY_FILE);",
  "                   without it an encrypted store is refused (key-required, exit 4)",
  '  --json           the result as one JSON document on stdout; errors also as {"error":{…}}',
  "  -h, --help       this help; COMMAND --help for one command's",
  "  --version        the version of sessionfold",
  "",
  "REF is <agent_id>/<workspace_id>/<session_id>. Errors go to stderr as one line",
  "error[<code>]: <what and where>. Read-only commands (ls, show, compose, messages,",
  "verify without --repair-catalog, export, repair without --apply) never change a byte",
  "under --root; no --out FILE is ever written inside it.",
  "",
  "Exit status: 0 success; 1 a read-only check found fatal diagnostics, or sync left",
  "sessions unsynced (its conflicts); 2 bad usage;",
  "3 the session is locked by another writer or its revision moved; 4 bad input (invalid",
  "id, no such session, unknown schema version, corrupt file, an --out inside the store",
  "or in a missing folder); 5 anything else.",
  "",
].join("\n");

/** The repository's modules a command line resolved, relative to the repository, and the packages. */
async function loadedBy(args: readonly string[]): Promise<{ files: string[]; packages: string[]; stdout: string; status: number }> {
  const log = join(await tempDir(), "modules.log");
  const hooks = pathToFileURL(join(REPO, "test/cli/fixtures/log-modules.mjs")).href;
  const register = `data:text/javascript,import{register}from"node:module";register(${JSON.stringify(hooks)})`;
  const result = await bin(args, { SESSIONFOLD_TEST_MODULE_LOG: log }, [process.execPath, "--import", register, BIN]);
  const urls = [...new Set((await readFile(log, "utf8")).split("\n").filter((url) => url.startsWith("file:")))];
  const repo = pathToFileURL(REPO).href + "/";
  const packages = urls.filter((url) => url.includes("/node_modules/")).map((url) => url.slice(url.lastIndexOf("/node_modules/") + 14).split("/")[0]!);
  const files = urls.filter((url) => url.startsWith(repo) && !url.includes("/node_modules/")).map((url) => url.slice(repo.length));
  return { files: files.sort(), packages: [...new Set(packages)].sort(), stdout: result.stdout, status: result.status };
}

/** What `main()` needs before a command is named: none of the core but its errors. */
const BEFORE_A_COMMAND = [
  "bin/sessionfold.mjs",
  "core/errors.ts",
  "runtime-node/cli/args.ts",
  "runtime-node/cli/commands/mod.ts",
  "runtime-node/cli/exit.ts",
  "runtime-node/cli/help.ts",
  "runtime-node/cli/io.ts",
  "runtime-node/cli/main.ts",
  "runtime-node/cli/version.ts",
];

describe("sessionfold --help", () => {
  it("--version prints the package's version, in text and JSON, also after a command", async () => {
    const { version } = JSON.parse(await readFile(join(REPO, "package.json"), "utf8")) as { version: string };
    const text = await bin(["--version"]);
    expect(text.status).toBe(0);
    expect(text.stdout).toBe(`sessionfold ${version}\n`);
    const json = await bin(["--json", "--version"]);
    expect(JSON.parse(json.stdout)).toEqual({ version });
    const after = await bin(["show", "--version"]);
    expect(after.status).toBe(0);
    expect(after.stdout).toBe(`sessionfold ${version}\n`);
  }, SLOW);

  it("prints the program's help, byte for byte, for --help, -h and help", async () => {
    for (const argv of [["--help"], ["-h"], ["help"], ["--json", "--help"]]) {
      const result = await bin(argv);
      expect(result.status).toBe(0);
      expect(result.stderr).toBe("");
      expect(result.stdout).toBe(PROGRAM_HELP);
    }
  }, SLOW);

  it.each([[["--help"]], [["help"]], [["--version"]], [["nope"]], [[]], [["--verbose", "ls"]], [["--json", "help", "nope"]]])(
    "%j loads the command table and the errors, not the core",
    async (argv) => {
      const loaded = await loadedBy(argv);
      expect([0, 2]).toContain(loaded.status);
      expect(loaded.files).toEqual(BEFORE_A_COMMAND);
      // tsx (and its esbuild) run the sources in a clone; nothing else: no zod, no comlink.
      expect(loaded.packages.filter((name) => name !== "tsx" && name !== "esbuild")).toEqual([]);
    },
    SLOW,
  );

  it("loads a command's module, and the core with it, once the command is named", async () => {
    const help = await loadedBy(["show", "--help"]);
    expect(help.stdout).toMatch(/^Usage: sessionfold \[--root DIR\] \[--json\] show REF\n/);
    expect(help.files).toContain("runtime-node/cli/commands/show.ts");
    expect(help.files).toContain("core/reader.ts");
    expect(help.files).not.toContain("runtime-node/cli/commands/write.ts");
    // An existing root: the store is opened, and with it the registry, before the session is found missing.
    const listed = await loadedBy(["--root", await tempDir(), "compose", "a1/w1/s1"]);
    expect(listed.status).toBe(4);
    expect(listed.files).toContain("core/session/registry.ts");
  }, SLOW);

  it("show reaches the core through its narrow entry: not the importers, export, agent files, the storage worker, the writers, nor zod", async () => {
    const shown = await loadedBy(["--root", await tempDir(), "show", "a1/w1/s1"]);
    expect(shown.status).toBe(4);
    expect(shown.files).toContain("core/reader.ts");
    expect(shown.files).toContain("runtime-node/open-storage.ts");
    // It reads the session as an open does (readSessionState), without the registry and the handle's writers.
    const unused =
      /^core\/(mod|internal|registry)\.ts$|^core\/(formats|export|agent|composer)\/|^core\/session\/(registry|session|commit-path|run|purge|repair)\.ts$|^runtime-node\/(mod|open|storage-worker-client|key-file)\.ts$|cli\/agent-setup\.ts$/;
    expect(shown.files.filter((file) => unused.test(file))).toEqual([]);
    expect(shown.packages).not.toContain("comlink");
    // Records are judged by their hand-written checks (core/schema/fast-check.ts): neither zod nor the schemas are loaded.
    expect(shown.packages).not.toContain("zod");
    expect(shown.files.filter((file) => /^core\/schema\/(mod|common|message|meta|summary)\.ts$/.test(file))).toEqual([]);
  }, SLOW);
});
