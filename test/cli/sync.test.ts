/**
 * `sessionfold sync` and `sessionfold serve` (docs/CLI.md, docs/SYNC.md): two folders synced
 * directly, a fork reported, and a real `serve` process on loopback with a token file that a
 * `sync --remote URL` reaches; a refused token is error[unauthorized] and changes nothing.
 */
import { spawn } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";
import { BIN, cli, expectOk, json, missingRoot, REPO, tempDir } from "./support.ts";

const REF = "a1/w1/s1";

describe("sessionfold sync", () => {
  it("brings a folder and another folder to the same state, both ways, and reports a fork", async () => {
    const [laptop, desktop, backup] = [await missingRoot(), await missingRoot(), await missingRoot()];
    expectOk(await cli(laptop, ["new", REF, "--title", "synced"]));
    expectOk(await cli(laptop, ["append", REF, "--role", "user", "--text", "one"]));
    expect(json(expectOk(await cli(laptop, ["--json", "sync", "--remote", backup])))).toEqual({ pushed: 1, pulled: 0, forks: [], conflicts: [] });
    expect(json(expectOk(await cli(desktop, ["--json", "sync", REF, "--remote", backup])))).toMatchObject({ pushed: 0, pulled: 1 });
    // Both write after sequence 1; the laptop reaches the backup first.
    expectOk(await cli(laptop, ["append", REF, "--role", "user", "--text", "from the laptop"]));
    expectOk(await cli(desktop, ["append", REF, "--role", "user", "--text", "from the desktop"]));
    expectOk(await cli(laptop, ["sync", "--remote", backup]));
    const report = json(expectOk(await cli(desktop, ["--json", "sync", "--remote", backup])));
    expect(report.forks).toEqual([{ ref: REF, forked_as: expect.stringMatching(/^a1\/w1\/s1\.fork-[0-9a-f]{16}$/), at_sequence: 1 }]);
    const text = expectOk(await cli(desktop, ["sync", "--remote", backup])).stdout;
    expect(text).toBe("pushed 0 messages, pulled 0\n");
    const listed = json(expectOk(await cli(desktop, ["--json", "ls"]))) as { session_id: string }[];
    expect(listed.map((m) => m.session_id).sort()).toEqual(["s1", report.forks[0].forked_as.split("/")[2]].sort());
  });

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
