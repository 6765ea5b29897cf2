/**
 * `sessionfold sync` and `sessionfold serve` (docs/CLI.md, docs/SYNC.md): two folders synced
 * directly, a fork reported, and a real `serve` process on loopback with a token file that a
 * `sync --remote URL` reaches; a refused token is error[unauthorized] and changes nothing.
 */
import { spawn } from "node:child_process";
import { readdir, readFile, symlink, writeFile } from "node:fs/promises";
import { type AddressInfo, createServer } from "node:net";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";
import { nodeWriterIdentity } from "../../runtime-node/open.ts";
import { BIN, cli, expectOk, json, missingRoot, REPO, seed, sessionDir, snapshot, tempDir } from "./support.ts";

const REF = "a1/w1/s1";
/** A report's counts of a run that deleted and archived nothing. */
const NOTHING_REMOVED = { deletes: { pushed: 0, pulled: 0 }, archives: { pushed: 0, pulled: 0 } };

describe("sessionfold sync", () => {
  it("counts the sessions deleted and archived, pushed and pulled, in the readable report and --json", async () => {
    const [laptop, desktop, backup] = [await missingRoot(), await missingRoot(), await missingRoot()];
    for (const ref of [REF, "a1/w1/s2"]) {
      expectOk(await cli(laptop, ["new", ref]));
      expectOk(await cli(laptop, ["append", ref, "--role", "user", "--text", "one"]));
    }
    expectOk(await cli(laptop, ["sync", "--remote", backup]));
    expectOk(await cli(desktop, ["sync", "--remote", backup]));
    expectOk(await cli(laptop, ["archive", REF]));
    expectOk(await cli(laptop, ["delete", "a1/w1/s2"]));
    expect(expectOk(await cli(laptop, ["sync", "--remote", backup])).stdout).toBe(
      "pushed 0 messages, pulled 0 messages\ndeleted: pushed 1 session, pulled 0 sessions\narchived: pushed 1 session, pulled 0 sessions\n",
    );
    expect(json(expectOk(await cli(desktop, ["--json", "sync", "--remote", backup])))).toMatchObject({
      pushed: 0,
      pulled: 0,
      deletes: { pushed: 0, pulled: 1 },
      archives: { pushed: 0, pulled: 1 },
    });
    expect(expectOk(await cli(desktop, ["sync", "--remote", backup])).stdout).toBe("pushed 0 messages, pulled 0 messages\n");
  });

  it("brings a folder and another folder to the same state, both ways, and reports a fork", async () => {
    const [laptop, desktop, backup] = [await missingRoot(), await missingRoot(), await missingRoot()];
    expectOk(await cli(laptop, ["new", REF, "--title", "synced"]));
    expectOk(await cli(laptop, ["append", REF, "--role", "user", "--text", "one"]));
    expect(json(expectOk(await cli(laptop, ["--json", "sync", "--remote", backup])))).toEqual({
      pushed: 1,
      pulled: 0,
      ...NOTHING_REMOVED,
      forks: [],
      conflicts: [],
    });
    expect(json(expectOk(await cli(desktop, ["--json", "sync", REF, "--remote", backup])))).toMatchObject({ pushed: 0, pulled: 1 });
    // Both write after sequence 1; the laptop reaches the backup first.
    expectOk(await cli(laptop, ["append", REF, "--role", "user", "--text", "from the laptop"]));
    expectOk(await cli(desktop, ["append", REF, "--role", "user", "--text", "from the desktop"]));
    expectOk(await cli(laptop, ["sync", "--remote", backup]));
    const forked = expectOk(await cli(desktop, ["sync", "--remote", backup])).stdout;
    const [, forkId] = forked.match(/^fork: a1\/w1\/s1: this store's messages after sequence 1 are now a1\/w1\/(s1\.fork-[0-9a-f]{16})$/m) ?? [];
    expect(forkId, `the readable fork line names the tail that moved: ${forked}`).toBeDefined();
    const text = expectOk(await cli(desktop, ["sync", "--remote", backup])).stdout;
    expect(text).toBe("pushed 0 messages, pulled 0 messages\n");
    const listed = json(expectOk(await cli(desktop, ["--json", "ls"]))) as { session_id: string }[];
    expect(listed.map((m) => m.session_id).sort()).toEqual(["s1", forkId].sort());
  });

  it("syncs every session it can read; a corrupt one and one of an unknown schema are conflicts naming them, and the run exits 1", async () => {
    const [root, backup] = [await missingRoot(), await missingRoot()];
    for (const ref of ["coder/repo/c3", "coder/repo/s1", "coder/repo/u1"]) await seed(root, ref, 3);
    const active = join(sessionDir(root, "coder/repo/c3"), "messages/active.jsonl");
    const lines = (await readFile(active, "utf8")).split("\n");
    await writeFile(active, lines.map((line, i) => (i === 1 ? `xx${line}` : line)).join("\n"));
    const meta = join(sessionDir(root, "coder/repo/u1"), "meta.json");
    await writeFile(meta, (await readFile(meta, "utf8")).replace(/"schema_version":\s*1/, '"schema_version": 99'));
    const result = await cli(root, ["--json", "sync", "--remote", backup]);
    expect(result.status).toBe(1);
    const report = json(result);
    expect(report.pushed).toBe(3);
    expect(report.conflicts.map((c: { ref: string; reason: string }) => [c.ref, c.reason]).sort()).toEqual([
      ["coder/repo/c3", "corrupt"],
      ["coder/repo/u1", "unsupported-schema"],
    ]);
    expect(report.conflicts.find((c: { ref: string }) => c.ref === "coder/repo/c3").message).toContain("messages/active.jsonl:2");
    expect(report.conflicts.find((c: { ref: string }) => c.ref === "coder/repo/u1").message).toMatch(/^coder\/repo\/u1: meta\.json: schema_version 99/);
    expect((json(expectOk(await cli(backup, ["--json", "ls"]))) as { session_id: string }[]).map((m) => m.session_id)).toEqual(["s1"]);
    // Nothing stays queued behind them: the next run pushes nothing more and says the same.
    const again = await cli(root, ["sync", "--remote", backup]);
    expect(again.status).toBe(1);
    expect(again.stdout).toMatch(/^pushed 0 messages, pulled 0 messages\nconflict: coder\/repo\/(c3|u1) /);
  });

  it("a session corrupt in the remote folder is its conflict (exit 1); the others push and pull", async () => {
    const [root, backup, other] = [await missingRoot(), await missingRoot(), await missingRoot()];
    for (const ref of ["a1/w1/g1", "a1/w1/ok"]) await seed(root, ref, 2);
    expectOk(await cli(root, ["sync", "--remote", backup]));
    await seed(other, "a1/w1/fresh", 1);
    expectOk(await cli(other, ["sync", "--remote", backup]));
    for (const ref of ["a1/w1/g1", "a1/w1/ok"]) expectOk(await cli(root, ["append", ref, "--role", "user", "--text", "3"]));
    const active = join(sessionDir(backup, "a1/w1/g1"), "messages/active.jsonl");
    await writeFile(active, (await readFile(active, "utf8")).split("\n").map((line, i) => (i === 1 ? `xx${line}` : line)).join("\n"));
    const result = await cli(root, ["--json", "sync", "--remote", backup]);
    expect(result.status).toBe(1);
    const report = json(result);
    expect(report).toMatchObject({ pushed: 1, pulled: 1 });
    expect(report.conflicts).toEqual([{ ref: "a1/w1/g1", reason: "corrupt", message: expect.stringMatching(/server's copy .*messages\/active\.jsonl:2/) }]);
  });

  it("refuses to sync a store with itself, a folder inside it or one that holds it (usage, exit 2), by another path to it too, and writes nothing", async () => {
    const root = await missingRoot();
    await seed(root, "a1/w1/live", 1);
    await seed(root, "a1/w1/old", 1);
    expectOk(await cli(root, ["archive", "a1/w1/old"]));
    const link = join(await tempDir(), "link");
    await symlink(root, link);
    const before = await snapshot(root);
    const parent = join(root, "..");
    const parentBefore = await readdir(parent);
    for (const remote of [root, `${root}/`, link, join(root, "agents"), join(link, "agents", "new"), parent]) {
      const result = await cli(root, ["sync", "--remote", remote]);
      expect(result.status).toBe(2);
      expect(result.stderr).toMatch(/^error\[usage\]: sync: --remote .* is this store \(.*\), a folder inside it, or a folder that holds it;/);
    }
    expect(await snapshot(root)).toEqual(before);
    expect(await readdir(parent)).toEqual(parentBefore);
  });

  it("refuses a URL it cannot sync with, or a typo'd one (usage, exit 2), naming it and what it takes, and creates nothing", async () => {
    const [root, cwd] = [await missingRoot(), await tempDir()];
    for (const remote of ["ftp://x", "ftp:x", "http:/x", "HTTPS:x", "postgres:db"]) {
      const result = await cli(root, ["sync", "--remote", remote], { cwd });
      expect(result.status).toBe(2);
      expect(result.stderr).toBe(
        `error[usage]: sync: --remote ${
          JSON.stringify(remote)
        } is not a URL sync takes; it takes a sync server (http://, https://), a PostgreSQL store (postgres://, postgresql://) or a folder (a name with a colon as ./${remote})\n`,
      );
    }
    expect(await readdir(cwd)).toEqual([]);
    expect(await snapshot(root)).toBeNull();
    // Such a folder, given as a path, is a folder.
    await seed(root, REF, 1);
    expectOk(await cli(root, ["sync", "--remote", "./ftp:x"], { cwd }));
    expect(await readdir(cwd)).toEqual(["ftp:x"]);
  });

  it("names the URL and the cause when nothing answers there (exit 5)", async () => {
    const root = await missingRoot();
    await seed(root, REF, 1);
    // A port that was free a moment ago: nothing listens there.
    const listener = createServer();
    await new Promise<void>((listening) => listener.listen(0, "127.0.0.1", listening));
    const { port } = listener.address() as AddressInfo;
    await new Promise((closed) => listener.close(closed));
    const result = await cli(root, ["sync", "--remote", `http://127.0.0.1:${port}`]);
    expect(result.status).toBe(5);
    expect(result.stderr).toBe(`error[internal]: http://127.0.0.1:${port}/push: the remote could not be reached (connect ECONNREFUSED 127.0.0.1:${port})\n`);
    // A port fetch never connects to: its own reason.
    expect((await cli(root, ["sync", "--remote", "http://127.0.0.1:1"])).stderr).toBe(
      "error[internal]: http://127.0.0.1:1/push: the remote could not be reached (bad port)\n",
    );
  });

  it("a REF on neither side is not-found (exit 4); one on either side syncs", async () => {
    const [root, other, backup] = [await missingRoot(), await missingRoot(), await missingRoot()];
    await seed(root, REF, 1);
    const missing = await cli(root, ["sync", "a1/w1/nope", "--remote", backup]);
    expect(missing.status).toBe(4);
    expect(missing.stderr).toMatch(/^error\[not-found\]: no session a1\/w1\/nope in this store or on the remote /);
    expect(json(expectOk(await cli(root, ["--json", "sync", REF, "--remote", backup])))).toMatchObject({ pushed: 1, conflicts: [] });
    expect(json(expectOk(await cli(other, ["--json", "sync", REF, "--remote", backup])))).toMatchObject({ pulled: 1, conflicts: [] });
  });

  it.skipIf(process.platform !== "linux")(
    "a sync while another of the store runs, against any remote, is writer-locked (exit 3), naming the lock; a dead run's lock is taken over",
    async () => {
      const [root, backup] = [await missingRoot(), await missingRoot()];
      await seed(root, REF, 1);
      expectOk(await cli(root, ["sync", "--remote", backup]));
      const remotes = join(root, "sync", "remotes");
      const state = (await readdir(remotes)).find((name) => name.endsWith(".json"))!;
      const lockPath = "sync/run.lock";
      const me = nodeWriterIdentity();
      const lockOf = (pid: number) =>
        JSON.stringify({
          pid,
          hostname: me.hostname,
          boot_id: me.bootId,
          pid_namespace: me.pidNamespace,
          process_started_at: me.processStartedAt,
          runtime: "node",
          operation: "sync with http://127.0.0.1:1/sync",
          lock_id: "lock_other",
          created_at: "2026-12-07T10:00:00.000Z",
        });
      // This process runs (the CLI runs in it here): its lock is honoured.
      await writeFile(join(root, lockPath), lockOf(process.pid));
      await seed(root, "a1/w1/s2", 1);
      const before = await snapshot(root);
      const locked = await cli(root, ["sync", "--remote", backup]);
      expect(locked.status).toBe(3);
      expect(locked.stderr).toMatch(
        new RegExp(
          `^error\\[writer-locked\\]: sync/run\\.lock: another sync of this store is running, by pid ${process.pid} .* for "sync with http://127\\.0\\.0\\.1:1/sync"`,
        ),
      );
      expect(await snapshot(root)).toEqual(before);
      // A pid above the system's highest runs nowhere: a run of this host and boot that is gone.
      const gone = Number(await readFile("/proc/sys/kernel/pid_max", "utf8")) + 1;
      await writeFile(join(root, lockPath), lockOf(gone));
      expect(json(expectOk(await cli(root, ["--json", "sync", "--remote", backup])))).toMatchObject({ pushed: 1, conflicts: [] });
      expect(await readdir(remotes)).toEqual([state]);
      expect(await readdir(join(root, "sync"))).not.toContain("run.lock");
    },
  );

  it("refuses without --remote (usage, exit 2)", async () => {
    const result = await cli(await missingRoot(), ["sync"]);
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(/^error\[usage\]: sync: missing --remote/);
  });
});

describe("sessionfold serve", () => {
  it("refuses to listen beyond loopback without a token file (exit 2)", async () => {
    const result = await cli(await missingRoot(), ["serve", "--host", "0.0.0.0"]);
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(/needs --token-file/);
  });

  it("--cors-origin is an origin, each given once: a wildcard or a path is refused (exit 2) before anything is served", async () => {
    for (const origin of ["*", "http://localhost:5173/app"]) {
      const result = await cli(await missingRoot(), ["serve", "--cors-origin", "http://localhost:5173", "--cors-origin", origin]);
      expect(result.status).toBe(2);
      expect(result.stderr).toBe(
        `error[usage]: serve: --cors-origin: expected an origin, scheme://host[:port], such as http://localhost:5173 (every allowed origin listed; no wildcard), found ${
          JSON.stringify(origin)
        }\n`,
      );
    }
  });

  it("answers CORS for each --cors-origin and for no other origin", async () => {
    const child = spawn(process.execPath, [
      BIN,
      "--root",
      await missingRoot(),
      "serve",
      "--cors-origin",
      "http://localhost:5173",
      "--cors-origin",
      "https://app.example",
    ], {
      cwd: REPO,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
    try {
      const url = (await createInterface({ input: child.stdout! })[Symbol.asyncIterator]().next()).value!;
      const allowed = [];
      for (const origin of ["http://localhost:5173", "https://app.example", "http://localhost:5174"]) {
        const answer = await fetch(`${url}/pull`, { method: "OPTIONS", headers: { origin, "access-control-request-method": "POST" } });
        await answer.arrayBuffer();
        allowed.push(answer.headers.get("access-control-allow-origin"));
      }
      expect(allowed).toEqual(["http://localhost:5173", "https://app.example", null]);
    } finally {
      child.kill("SIGTERM");
    }
    expect(await exited).toBe(0);
  });

  it("serves the store on loopback: prints its URL first, takes the token, refuses another one and changes nothing", async () => {
    const [server, laptop] = [await missingRoot(), await missingRoot()];
    const dir = await tempDir();
    const [good, bad] = [join(dir, "token"), join(dir, "wrong")];
    await writeFile(good, "s3cret-token\n");
    await writeFile(bad, "not-the-token\n");
    const child = spawn(process.execPath, [BIN, "--root", server, "serve", "--port", "0", "--token-file", good], {
      cwd: REPO,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
    try {
      const lines = createInterface({ input: child.stdout! });
      const [url] = (await lines[Symbol.asyncIterator]().next()).value!.split("\n");
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expectOk(await cli(laptop, ["new", REF]));
      expectOk(await cli(laptop, ["append", REF, "--role", "user", "--text", "over http"]));
      const refused = await cli(laptop, ["sync", "--remote", url!, "--token-file", bad]);
      expect(refused.status).not.toBe(0);
      expect(refused.stderr).toMatch(/^error\[unauthorized\]: /);
      expect(json(expectOk(await cli(server, ["--json", "ls"])))).toEqual([]);
      expect(json(expectOk(await cli(laptop, ["--json", "sync", "--remote", url!, "--token-file", good])))).toEqual({
        pushed: 1,
        pulled: 0,
        ...NOTHING_REMOVED,
        forks: [],
        conflicts: [],
      });
      const shown = json(expectOk(await cli(server, ["--json", "show", REF])));
      expect(shown.active.count).toBe(1);
    } finally {
      child.kill("SIGTERM");
    }
    expect(await exited).toBe(0);
  });
});
