/**
 * A store made hostile, as an attacker (or bad luck) would: links out of the store, a hard
 * link to a file elsewhere, a FIFO and `/dev/zero` where `meta.json` belongs, folders where
 * files belong, a line and a file beyond the limits. Every command a user would run (`ls`,
 * `show`, `compose`, `verify`, `export`, `append`, `compact`) ends with a typed error or a
 * report, never hangs, never writes outside the root (a folder beside it is hashed before
 * and after), and quotes nothing of what it refused.
 *
 * The attacks that could block a reader (FIFO, `/dev/zero`, `/etc/passwd`) run the real
 * command in child processes with a time limit, so a regression fails instead of hanging
 * the test run.
 */
import { execFileSync } from "node:child_process";
import { link, mkdir, open, readFile, rename, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { MAX_FILE_BYTES, MAX_LINE_BYTES } from "../../core/mod.ts";
import { binMany, cliRaw, expectOk, json, type RunResult, seed, sessionDir, snapshot, tempDir } from "./support.ts";

const REF = "a1/w1/s1";

/** The commands of the matrix, by name. */
const COMMANDS = {
  ls: ["ls"],
  show: ["show", REF],
  compose: ["compose", REF],
  verify: ["verify", REF],
  export: ["export", REF, "--to", "rho-snapshot"],
  append: ["append", REF, "--role", "user", "--text", "one more"],
  compact: ["compact", REF],
} as const;
type CommandName = keyof typeof COMMANDS;

/** Exit statuses: 0 ok, 1 verify found fatal diagnostics, 4 corrupt. */
type Expected = Record<CommandName, 0 | 1 | 4>;
/** Every command that opens the session refuses it; `ls` warns and lists the rest; `verify` reports it. */
const REFUSED: Expected = { ls: 0, show: 4, compose: 4, verify: 1, export: 4, append: 4, compact: 4 };
/** The same, when meta.json itself is readable: `show` keeps its promise (exit 0) and reports the entry as `unsafe_entry`. */
const SHOWN: Expected = { ...REFUSED, show: 0 };

interface Attack {
  readonly name: string;
  /** Breaks the store; `session` is the session folder, `outside` a folder beside the root. */
  readonly setup: (session: string, outside: string) => Promise<void>;
  readonly expected: Expected;
  /** What a refused command's error names (`found …`). */
  readonly found: RegExp;
  /** Run the commands as child processes (the attack could block a reader). */
  readonly child?: boolean;
}

const ATTACKS: readonly Attack[] = [
  {
    name: "messages/segments is a link to a folder outside",
    setup: async (session, outside) => {
      await rm(join(session, "messages", "segments"), { recursive: true, force: true });
      await symlink(join(outside, "folder"), join(session, "messages", "segments"));
    },
    expected: SHOWN,
    found: /found a symbolic link where a folder belongs/,
  },
  {
    name: "active.jsonl is a link to a file outside",
    setup: async (session, outside) => {
      const active = join(session, "messages", "active.jsonl");
      await writeFile(join(outside, "victim.jsonl"), await readFile(active));
      await rm(active);
      await symlink(join(outside, "victim.jsonl"), active);
    },
    expected: SHOWN,
    found: /found a symbolic link where a regular file belongs/,
  },
  {
    name: "active.jsonl is a hard link to a file outside",
    setup: async (session, outside) => {
      const active = join(session, "messages", "active.jsonl");
      await rename(active, join(outside, "victim.jsonl"));
      await link(join(outside, "victim.jsonl"), active);
    },
    // Reading a file the store names is allowed; no write may reach the other copy.
    expected: { ls: 0, show: 0, compose: 0, verify: 0, export: 0, append: 4, compact: 4 },
    found: /found a file with 2 hard links where a file of its own belongs/,
  },
  {
    name: "meta.json is a FIFO",
    setup: async (session) => {
      await rm(join(session, "meta.json"));
      execFileSync("mkfifo", [join(session, "meta.json")]);
    },
    expected: REFUSED,
    found: /found a FIFO where a regular file belongs/,
    child: true,
  },
  {
    name: "meta.json is a link to /dev/zero",
    setup: async (session) => {
      await rm(join(session, "meta.json"));
      await symlink("/dev/zero", join(session, "meta.json"));
    },
    expected: REFUSED,
    found: /found a symbolic link where a regular file belongs/,
    child: true,
  },
  {
    name: "meta.json is a link to /etc/passwd",
    setup: async (session) => {
      await rm(join(session, "meta.json"));
      await symlink("/etc/passwd", join(session, "meta.json"));
    },
    expected: REFUSED,
    found: /found a symbolic link where a regular file belongs/,
    child: true,
  },
  {
    name: "active.jsonl is a folder",
    setup: async (session) => {
      const active = join(session, "messages", "active.jsonl");
      await rm(active);
      await mkdir(active);
      await writeFile(join(active, "inside"), "x");
    },
    expected: SHOWN,
    found: /found a folder where a regular file belongs/,
  },
  {
    name: "meta.json is a folder",
    setup: async (session) => {
      await rm(join(session, "meta.json"));
      await mkdir(join(session, "meta.json"));
    },
    expected: REFUSED,
    found: /found a folder where a regular file belongs/,
  },
  {
    name: `a line of active.jsonl is over ${MAX_LINE_BYTES / 2 ** 20} MiB`,
    setup: async (session) => {
      const active = join(session, "messages", "active.jsonl");
      const lines = (await readFile(active, "utf8")).split("\n");
      const huge = `{"record_type":"message","text":"${"x".repeat(MAX_LINE_BYTES)}"}`;
      await writeFile(active, [lines[0], huge, ...lines.slice(1)].join("\n"));
    },
    // The session opens (show reports the line) but stays read-only; verify reports it.
    expected: { ls: 0, show: 0, compose: 4, verify: 1, export: 4, append: 4, compact: 4 },
    found: /messages\/active\.jsonl:2: a line of \d+ bytes is over the limit of 64 MiB; not read/,
  },
  {
    name: `active.jsonl is over ${MAX_FILE_BYTES / 2 ** 20} MiB`,
    setup: async (session) => {
      // Sparse: the file is large without taking the disk (nothing of it is read).
      const file = await open(join(session, "messages", "active.jsonl"), "r+");
      await file.truncate(MAX_FILE_BYTES + 1);
      await file.close();
    },
    expected: SHOWN,
    found: /found a file of 256 MiB where a file of at most 256 MiB belongs; it is not read/,
  },
];

async function hostileStore(attack: Attack): Promise<{ root: string; outside: string }> {
  const dir = await tempDir();
  const root = join(dir, "store");
  const outside = join(dir, "outside");
  await seed(root, REF, 4);
  await seed(root, "a1/w1/bystander", 2);
  await mkdir(join(outside, "folder"), { recursive: true });
  await writeFile(join(outside, "folder", "kept.txt"), "someone else's file\n");
  await writeFile(join(outside, "notes.txt"), "not the store's\n");
  await attack.setup(sessionDir(root, REF), outside);
  return { root, outside };
}

async function runAll(root: string, child: boolean): Promise<Record<CommandName, RunResult>> {
  const names = Object.keys(COMMANDS) as CommandName[];
  const argvs = names.map((name) => ["--root", root, ...COMMANDS[name]]);
  const results: RunResult[] = [];
  if (child) results.push(...(await binMany(argvs)));
  else for (const argv of argvs) results.push(await cliRaw(argv));
  return Object.fromEntries(names.map((name, i) => [name, results[i]!])) as Record<CommandName, RunResult>;
}

describe("a hostile store: every command is typed, none hangs, nothing outside the root changes", () => {
  it.each(ATTACKS)("$name", async (attack) => {
    const { root, outside } = await hostileStore(attack);
    const before = await snapshot(outside);
    const results = await runAll(root, attack.child === true);
    for (const [name, result] of Object.entries(results) as [CommandName, RunResult][]) {
      const context = `${name}: exit ${result.status}\n${result.stderr}${result.stdout.slice(0, 2000)}`;
      expect(result.status, context).toBe(attack.expected[name]);
      if (attack.expected[name] === 4) {
        expect(result.stderr, context).toMatch(/^error\[corrupt\]: /m);
        expect(result.stderr, context).toMatch(attack.found);
      }
      // Nothing of a refused entry is quoted: not /etc/passwd's lines, not the huge line.
      expect(result.stderr + result.stdout, context).not.toMatch(/root:x?:0:0|x{64}/);
    }
    if (attack.expected === SHOWN) expect(results.show.stdout, results.show.stderr).toMatch(/unsafe_entry/);
    // The bystander session is still listed, and the attacked one named on stderr when ls cannot read it.
    expect(results.ls.stdout).toContain("a1/w1/bystander");
    expect(await snapshot(outside)).toEqual(before);
  }, 120_000);
});

/** An entry the store refuses where a folder of the walk belongs, from a session's folder up to an agent's. */
interface WalkAttack {
  readonly name: string;
  /** The store-relative path of the refused entry. */
  readonly entry: string;
  /** `link`: a symbolic link to a folder outside; `file`: a plain file. */
  readonly kind: "link" | "file";
  /** The session `verify --json` reports it under, or `null` when it lies above every session (`store.diagnostics`). */
  readonly ref: string | null;
}

const WALK_ATTACKS: readonly WalkAttack[] = [
  { name: "a link in a workspace's sessions/", entry: "agents/a1/workspaces/w1/sessions/evil", kind: "link", ref: "a1/w1/evil" },
  { name: "a file in a workspace's sessions/", entry: "agents/a1/workspaces/w1/sessions/plain", kind: "file", ref: "a1/w1/plain" },
  { name: "a link in place of archived-sessions/", entry: "agents/a1/workspaces/w1/archived-sessions", kind: "link", ref: null },
  { name: "a link in place of a workspace", entry: "agents/a1/workspaces/evil", kind: "link", ref: null },
  { name: "a file in place of a workspace", entry: "agents/a1/workspaces/plain", kind: "file", ref: null },
  { name: "a link in place of an agent", entry: "agents/evil", kind: "link", ref: null },
];

describe("a refused entry where a folder of the store belongs: verify reports it and goes on, ls and purge list the rest", () => {
  it.each(WALK_ATTACKS)("$name", async (attack) => {
    const dir = await tempDir();
    const root = join(dir, "store");
    const outside = join(dir, "outside");
    await seed(root, "a1/w1/s1", 2);
    await seed(root, "a1/w1/s2", 1);
    expectOk(await cliRaw(["--root", root, "archive", "a1/w1/s2"]));
    // Outside, what a followed link would find: a whole store's worth of folders.
    await seed(outside, "a1/w1/s1", 1);
    await mkdir(join(outside, "agents/a1/workspaces/w1/archived-sessions"), { recursive: true });
    const entry = join(root, attack.entry);
    await rm(entry, { recursive: true, force: true });
    if (attack.kind === "link") await symlink(outside, entry);
    else await writeFile(entry, "not a folder\n");
    const before = await snapshot(outside);

    const verified = await cliRaw(["--root", root, "--json", "verify"]);
    const context = `exit ${verified.status}\n${verified.stderr}${verified.stdout}`;
    expect(verified.status, context).toBe(1);
    const report = json<
      {
        sessions: { ref: string; ok: boolean; diagnostics: { code: string; file: string; fatal: boolean; message: string }[] }[];
        store?: { diagnostics: { code: string; file: string; fatal: boolean; message: string }[] };
      }
    >(verified);
    // Every session the store can read is verified, and found sound.
    const readable = attack.entry.endsWith("archived-sessions") ? ["a1/w1/s1"] : ["a1/w1/s1", "a1/w1/s2"];
    for (const ref of readable) expect(report.sessions.find((s) => s.ref === ref), context).toMatchObject({ ok: true });
    const found = attack.kind === "link" ? "a symbolic link" : "a regular file";
    const diagnostics = attack.ref === null ? report.store?.diagnostics : report.sessions.find((s) => s.ref === attack.ref)?.diagnostics;
    expect(diagnostics, context).toEqual([expect.objectContaining({ code: "unsafe_entry", fatal: true })]);
    expect(diagnostics![0]!.message, context).toContain(`${entry}): found ${found} where a folder belongs`);
    // Rebuilding the catalogs passes over the entry too (a refused session gets no entry), and reports the same.
    const repaired = await cliRaw(["--root", root, "--json", "verify", "--repair-catalog"]);
    expect(repaired.status, `${repaired.stderr}${repaired.stdout}`).toBe(1);
    expect(json(repaired)).toMatchObject({ sessions: report.sessions, ...(report.store ? { store: report.store } : {}) });
    const text = await cliRaw(["--root", root, "verify"]);
    expect(text.status).toBe(1);
    expect(text.stdout).toMatch(/fatal unsafe_entry: /);
    expect(text.stdout).toMatch(/^ok {3}a1\/w1\/s1$/m);

    // ls names the entry on stderr and lists the rest (docs/FORMAT.md "The store's boundary").
    const listed = await cliRaw(["--root", root, "ls"]);
    expect(listed.status, listed.stderr).toBe(0);
    expect(listed.stdout).toContain("a1/w1/s1");
    const archivedOnly = attack.entry.endsWith("archived-sessions");
    const listedArchived = await cliRaw(["--root", root, "ls", "--archived"]);
    expect(listedArchived.status, listedArchived.stderr).toBe(0);
    if (!archivedOnly) expect(listedArchived.stdout).toContain("a1/w1/s2");
    const warned = archivedOnly ? listedArchived.stderr : listed.stderr;
    expect(warned).toMatch(new RegExp(`^warning: .*\\(${entry}\\): found ${found} where a folder belongs`, "m"));
    // purge never follows it: the sessions it can read are its candidates, the entry is left as it is.
    const purged = await cliRaw(["--root", root, "--json", "purge", "--keep-newest", "0", "--archived", "--dry-run"]);
    expect(purged.status, purged.stderr).toBe(0);
    expect(json<{ entries: { ref: string }[] }>(purged).entries.map((e) => e.ref)).toContain("a1/w1/s1");
    expect(await snapshot(outside)).toEqual(before);
  }, 120_000);
});
