/**
 * The CLI on PostgreSQL: `--store postgres://…` (and `SESSIONFOLD_STORE`) in place of
 * `--root`. The same command lines run against a folder and against a fresh schema, and
 * print the same documents once the store's name, times and generated ids are masked.
 * A read-only command on a database that never held a store creates nothing there.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, cliRaw, type RunResult } from "../cli/support.ts";
import { dropSchemas, freshSchema, POSTGRES_URL, withClient } from "./support.ts";

const REF = "a1/w1/s1";
const SCRIPT: readonly (readonly string[])[] = [
  ["new", REF, "--title", "Fix the build"],
  ["append", REF, "--role", "user", "--text", "hello"],
  ["append", REF, "--role", "assistant", "--text", "an answer. with two sentences"],
  ["append", REF, "--role", "user", "--text", "go on"],
  ["show", REF],
  ["messages", REF],
  ["messages", REF, "--before", "3"],
  ["compose", REF],
  ["compact", REF],
  ["append", REF, "--role", "assistant", "--text", "after compaction"],
  ["verify", REF],
  ["fork", REF, "--as", "s2"],
  ["show", "a1/w1/s2"],
  ["ls"],
  ["ls", "--workspace", "w1"],
  ["unlock", REF, "--force"],
  ["repair", REF],
  ["archive", "a1/w1/s2"],
  ["ls", "--archived"],
  ["verify"],
  ["show", "a1/w1/nope"],
];

let root: string;
const schema = freshSchema("cli");
const storeUrl = (): string => `${POSTGRES_URL}${POSTGRES_URL.includes("?") ? "&" : "?"}schema=${schema}`;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "sessionfold-cli-pg-"));
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
  if (POSTGRES_URL) await dropSchemas(schema, `${schema}_none`);
});

/** The output with what differs by nature masked: the store's name, times, generated ids, pids. */
function masked(result: RunResult, storeName: string): RunResult {
  const mask = (text: string) =>
    text
      .replaceAll(storeName, "<store>")
      .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, "<time>")
      .replace(/\b(m|lock|t|c|s)_[0-9a-f]{16,}\b/g, "<id>")
      .replace(/"pid": \d+/g, '"pid": <pid>');
  return { status: result.status, stdout: mask(result.stdout), stderr: mask(result.stderr) };
}

describe.skipIf(!POSTGRES_URL)("the CLI on PostgreSQL", () => {
  it("every command prints the same with --store postgres://… as with --root", async () => {
    const statuses: number[] = [];
    for (const command of SCRIPT) {
      const onFiles = masked(await cli(root, ["--json", ...command]), root);
      const onPostgres = masked(await cliRaw(["--store", storeUrl(), "--json", ...command]), storeUrl().replace(/\?.*$/, ""));
      expect({ command, ...onPostgres }).toEqual({ command, ...onFiles });
      statuses.push(onPostgres.status);
    }
    // Every command worked, but those that find nothing (exit 4, not-found): `unlock` of a
    // session with no lock, `show` of a session that does not exist.
    expect(statuses).toEqual(SCRIPT.map((command) => (command[0] === "unlock" || command.includes("a1/w1/nope") ? 4 : 0)));
  });

  it("SESSIONFOLD_STORE names the store; --root and --store together are refused", async () => {
    const shown = await cliRaw(["--json", "show", REF], { env: { SESSIONFOLD_STORE: storeUrl() } });
    expect(shown.status, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout).meta.title).toBe("Fix the build");
    const both = await cliRaw(["--root", root, "--store", storeUrl(), "ls"]);
    expect(both.status).toBe(2);
    expect(both.stderr).toContain("not both");
    const notPostgres = await cliRaw(["--store", "mysql://x/y", "ls"]);
    expect(notPostgres.status).toBe(2);
    expect(notPostgres.stderr).toContain("postgres://");
  });

  it("a URL with user info and an empty host, as libpq takes it (postgres://user@/db?host=…), names the store", async () => {
    // The test server's URL with its host moved into `?host=` (a socket folder, or a host name, as libpq reads either).
    const given = new URL(POSTGRES_URL);
    if (!given.searchParams.has("host")) given.searchParams.set("host", given.hostname);
    if (given.port) given.searchParams.set("port", given.port);
    given.searchParams.set("schema", schema);
    const credentials = `${given.username}${given.password ? `:${given.password}` : ""}`;
    const url = `${given.protocol}//${credentials}@${given.pathname}${given.search}`;
    const shown = await cliRaw(["--store", url, "--json", "show", REF]);
    expect(shown.status, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout).meta.title).toBe("Fix the build");
  });

  it("sync --remote the same database and schema, however spelled, is refused before anything is written", async () => {
    const given = new URL(storeUrl());
    const params = [...given.searchParams].reverse();
    const reordered = `${given.href.slice(0, given.href.length - given.search.length)}?${new URLSearchParams(params).toString()}`;
    for (const remote of [storeUrl(), storeUrl().replace(/^postgres:/, "postgresql:"), reordered]) {
      const result = await cliRaw(["--store", storeUrl(), "sync", "--remote", remote]);
      expect(result.status, `${remote}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toContain("is this store");
    }
    const written = await withClient((client) => client.query(`SELECT path FROM "${schema}".entries WHERE path LIKE 'sync%'`));
    expect(written.rows).toEqual([]);
  });

  it("a read-only command on a database with no store creates nothing", async () => {
    const url = `${POSTGRES_URL}${POSTGRES_URL.includes("?") ? "&" : "?"}schema=${schema}_none`;
    const listed = await cliRaw(["--json", "ls"], { env: { SESSIONFOLD_STORE: url } });
    expect(listed.status, listed.stderr).toBe(0);
    const client = new pg.Client({ connectionString: POSTGRES_URL });
    await client.connect();
    try {
      const found = await client.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [`${schema}_none`]);
      expect(found.rowCount).toBe(0);
    } finally {
      await client.end();
    }
  });
});
