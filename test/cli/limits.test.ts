/**
 * The attacks of issue 27 on the CLI's limits, each rerun as it was found: imports of a FIFO
 * without a writer and of `/dev/zero` (they hung, or grew memory without bound), a 70 MB
 * Codex message and a 200 MB one-line Claude Code transcript (acknowledged, then the session
 * could not be appended to), 100,000-level nesting (exit 5, "Maximum call stack size
 * exceeded"), invalid UTF-8 on line 3 without `--from` (exit 2), `show` over a session whose
 * open is refused (exit 4 despite its promise), `repair` of a hard-linked `active.jsonl`
 * ("nothing to repair" while append refused), and `export --to pi --redact` leaking pieces
 * of a secret through a compaction summary.
 *
 * What could block or grow runs in a child process (`bin`, `binMany`) with a time limit: a
 * hang fails the test instead of stalling the run. The large files are real (written to a
 * temporary folder and removed after the test).
 */
import { execFileSync } from "node:child_process";
import { link, open, readFile, rename, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ExtractiveSummarizer, MAX_JSON_DEPTH, Sessions } from "../../core/mod.ts";
import { NodeFileStorage } from "../../runtime-node/mod.ts";
import { bin, binMany, cli, expectOk, json, seed, sessionDir, tempDir } from "./support.ts";

const REF = "a1/w1/s1";
const CODEX = join(import.meta.dirname, "../formats/fixtures/codex/rollout-2025-09-10T12-00-00-5f2c9a1e.jsonl");
const CODEX_HEADER =
  '{"timestamp":"2025-09-10T12:00:00.000Z","type":"session_meta","payload":{"id":"5f2c","timestamp":"2025-09-10T12:00:00.000Z","cwd":"/home/dev/app"}}\n';

/** A Codex user message line whose text is `text`. */
function codexMessage(text: string): string {
  return `{"timestamp":"2025-09-10T12:00:01.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"${text}"}]}}\n`;
}

/** `[[[…]]]` nested `depth` levels. */
function nested(depth: number): string {
  return `${"[".repeat(depth)}${"]".repeat(depth)}`;
}

describe("import refuses what it cannot read back, and never waits", () => {
  it("a FIFO without a writer is refused before reading, with --from and without, for every format (exit 4, no hang)", async () => {
    const dir = await tempDir();
    const fifo = join(dir, "s1.v1.jsonl");
    execFileSync("mkfifo", [fifo]);
    const root = join(dir, "store");
    const formats = [undefined, "codex", "deepcode", "rho-snapshot", "rho-jsonl", "pi", "claude-code"];
    const results = await binMany(
      formats.map((format, i) => ["--root", root, "import", fifo, ...(format ? ["--from", format] : []), "--into", `a1/w1/fifo${i}`]),
      60_000,
    );
    for (const [i, result] of results.entries()) {
      expect(result.status, `${formats[i] ?? "detected"}: ${result.stderr}`).toBe(4);
      expect(result.stderr).toMatch(/found a FIFO where a regular file belongs; only regular files are read/);
    }
  }, 90_000);

  it("a socket and a folder are refused the same way (exit 4)", async () => {
    const dir = await tempDir();
    const socket = join(dir, "s.sock");
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(socket, resolve));
    try {
      const root = join(dir, "store");
      const results = await binMany([
        ["--root", root, "import", socket, "--from", "codex", "--into", "a1/w1/sock"],
        ["--root", root, "import", dir, "--from", "rho-snapshot", "--into", "a1/w1/dir"],
      ]);
      expect(results[0]!.status, results[0]!.stderr).toBe(4);
      expect(results[0]!.stderr).toMatch(/found a socket where a regular file belongs/);
      expect(results[1]!.status, results[1]!.stderr).toBe(4);
      expect(results[1]!.stderr).toMatch(/found a folder where a regular file belongs/);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  }, 90_000);

  it("/dev/zero is refused before a byte is read, for the streamed and the whole-file formats (exit 4, bounded)", async () => {
    const root = join(await tempDir(), "store");
    const formats = ["pi", "deepcode", "rho-jsonl", "codex", "claude-code", "rho-snapshot"];
    const results = await binMany(formats.map((format, i) => ["--root", root, "import", "/dev/zero", "--from", format, "--into", `a1/w1/zero${i}`]), 60_000);
    for (const [i, result] of results.entries()) {
      expect(result.status, `${formats[i]}: ${result.stderr}`).toBe(4);
      expect(result.stderr).toMatch(/found a character device where a regular file belongs/);
    }
  }, 90_000);

  it("a 70 MB Codex message is refused with the file, the line and the limit; nothing is created (real size)", async () => {
    const dir = await tempDir();
    const file = join(dir, "rollout.jsonl");
    await writeFile(file, CODEX_HEADER + codexMessage("x".repeat(70_000_000)));
    const root = join(dir, "store");
    const result = await bin(["--root", root, "--json", "import", file, "--from", "codex", "--into", REF]);
    expect(result.status, result.stderr).toBe(4);
    expect(result.stderr).toMatch(/rollout\.jsonl:2: found a line of more than 64 MiB .*MAX_LINE_BYTES/);
    expect(json(result).error).toMatchObject({ code: "invalid-input", file: "rollout.jsonl", line: 2, limit: "MAX_LINE_BYTES" });
    expect((await cli(root, ["show", REF])).status).toBe(4); // no such session
  }, 120_000);

  it("a 200 MB one-line Claude Code transcript is refused after at most 64 MiB held (real size)", async () => {
    const dir = await tempDir();
    const file = join(dir, "transcript.jsonl");
    const handle = await open(file, "w");
    await handle.write('{"uuid":"u1","sessionId":"s","type":"user","message":{"role":"user","content":"');
    const mib = "x".repeat(1 << 20);
    for (let i = 0; i < 200; i++) await handle.write(mib);
    await handle.write('"}}');
    await handle.close();
    const root = join(dir, "store");
    const results = await binMany([
      ["--root", root, "import", file, "--from", "claude-code", "--into", REF],
      ["--root", root, "import", file, "--into", "a1/w1/detected"],
    ]);
    expect(results[0]!.status, results[0]!.stderr).toBe(4);
    expect(results[0]!.stderr).toMatch(/transcript\.jsonl:1: found a line of more than 64 MiB/);
    // Without --from the first line is longer than detection looks: a usage error that asks for --from.
    expect(results[1]!.status, results[1]!.stderr).toBe(2);
  }, 120_000);

  it("100,000-level nesting in an imported line is refused with the file and line (exit 4), not a stack overflow (exit 5)", async () => {
    const dir = await tempDir();
    const file = join(dir, "rollout.jsonl");
    await writeFile(file, `${CODEX_HEADER}{"timestamp":"2025-09-10T12:00:01.000Z","type":"response_item","payload":${nested(100_000)}}\n`);
    const root = join(dir, "store");
    for (const from of [["--from", "codex"], []]) {
      const result = await cli(root, ["import", file, ...from, "--into", REF]);
      expect(result.status, result.stderr).toBe(4);
      expect(result.stderr).toMatch(new RegExp(`rollout\\.jsonl:2: found a value nested deeper than ${MAX_JSON_DEPTH} levels`));
    }
  });

  it("invalid UTF-8 on line 3 is the reader's error with its line, with --from and without (exit 4, not 2)", async () => {
    const dir = await tempDir();
    const file = join(dir, "rollout.jsonl");
    const lines = (await readFile(CODEX)).toString("utf8").split("\n");
    const bad = Buffer.concat([Buffer.from(`${lines[0]}\n${lines[1]}\n`), Buffer.from([0x7b, 0xff, 0xfe, 0x7d, 0x0a]), Buffer.from(lines.slice(2).join("\n"))]);
    await writeFile(file, bad);
    const root = join(dir, "store");
    const given = await cli(root, ["import", file, "--from", "codex", "--into", REF]);
    const detected = await cli(root, ["import", file, "--into", REF]);
    for (const result of [given, detected]) {
      expect(result.status, result.stderr).toBe(4);
      expect(result.stderr).toMatch(/rollout\.jsonl:3: found bytes that are not UTF-8/);
    }
    // On the first line detection itself names it.
    await writeFile(file, Buffer.concat([Buffer.from([0xff, 0x0a]), Buffer.from(lines.join("\n"))]));
    const first = await cli(root, ["import", file, "--into", REF]);
    expect(first.status, first.stderr).toBe(4);
    expect(first.stderr).toMatch(/rollout\.jsonl:1: found bytes that are not UTF-8/);
  });
});

describe("commands over a 100,000-level line in the store", () => {
  it("messages, compose and export name the file and line (exit 4), show reports it (exit 0)", async () => {
    const root = join(await tempDir(), "store");
    await seed(root, REF, 2);
    const active = join(sessionDir(root, REF), "messages", "active.jsonl");
    const line =
      `{"record_type":"message","sequence":3,"message_id":"m3","role":"user","created_at":"2026-12-02T13:00:00.000Z","parts":[{"sequence":1,"type":"text","text":"x","deep":${
        nested(100_000)
      }}],"revision":3}\n`;
    await writeFile(active, (await readFile(active, "utf8")) + line);
    for (const args of [["messages", REF], ["compose", REF], ["export", REF, "--to", "pi"], ["append", REF, "--role", "user", "--text", "more"]]) {
      const result = await cli(root, args);
      expect(result.status, `${args[0]}: ${result.stderr}`).toBe(4);
      expect(result.stderr).toMatch(new RegExp(`active\\.jsonl:3: .*nested deeper than ${MAX_JSON_DEPTH} levels`));
    }
    const shown = await cli(root, ["--json", "show", REF]);
    expect(shown.status, shown.stderr).toBe(0);
    expect(json(shown).diagnostics).toEqual([expect.objectContaining({ line: 3, code: "invalid_record", fatal: true })]);
  });
});

describe("show keeps its promise: exit 0 whenever meta.json can be read", () => {
  it("active.jsonl over the read limit (a sparse 256 MiB + 1 file) and messages/ as a link: exit 0 with an unsafe_entry diagnostic", async () => {
    const root = join(await tempDir(), "store");
    await seed(root, REF, 2);
    await seed(root, "a1/w1/s2", 2);
    const file = await open(join(sessionDir(root, REF), "messages", "active.jsonl"), "r+");
    await file.truncate(256 * 1024 * 1024 + 1);
    await file.close();
    const linked = join(sessionDir(root, "a1/w1/s2"), "messages");
    await rename(linked, `${linked}.real`);
    execFileSync("ln", ["-s", `${linked}.real`, linked]);
    const results = await binMany([
      ["--root", root, "--json", "show", REF],
      ["--root", root, "--json", "show", "a1/w1/s2"],
    ]);
    for (const result of results) {
      expect(result.status, result.stderr).toBe(0);
      const report = JSON.parse(result.stdout);
      expect(report.meta).toMatchObject({ agent_id: "a1", message_count: 2 });
      expect(report.diagnostics).toEqual([expect.objectContaining({ code: "unsafe_entry", fatal: true })]);
    }
    expect(JSON.parse(results[0]!.stdout).diagnostics[0].message).toMatch(
      /messages\/active\.jsonl: found a file of 256 MiB where a file of at most 256 MiB belongs/,
    );
    expect(JSON.parse(results[1]!.stdout).diagnostics[0].message).toMatch(/found a symbolic link where a folder belongs/);
  }, 90_000);
});

describe("repair sees what append refuses", () => {
  it("an active.jsonl hard-linked outside the store: the plan names it, --apply gives the store its own copy, append works, the outside copy is untouched", async () => {
    const dir = await tempDir();
    const root = join(dir, "store");
    await seed(root, REF, 3);
    const active = join(sessionDir(root, REF), "messages", "active.jsonl");
    const outside = join(dir, "victim.jsonl");
    await link(active, outside);
    const before = await readFile(outside);
    expect((await cli(root, ["append", REF, "--role", "user", "--text", "x"])).status).toBe(4);
    const plan = await cli(root, ["--json", "repair", REF]);
    expect(plan.status, plan.stderr).toBe(0);
    expect(json(plan)).toMatchObject({ clean: false, applied: false, detached: [{ file: "messages/active.jsonl", links: 2 }] });
    expect((await cli(root, ["repair", REF])).stdout).toMatch(/give messages\/active\.jsonl a copy of its own \(it had 2 hard links/);
    expectOk(await cli(root, ["repair", REF, "--apply"]));
    expectOk(await cli(root, ["append", REF, "--role", "user", "--text", "after"]));
    expect(await readFile(outside)).toEqual(before);
    const messages = json(await cli(root, ["--json", "messages", REF]));
    expect(messages.map((m: { sequence: number }) => m.sequence)).toEqual([1, 2, 3, 4]);
    expect((await cli(root, ["repair", REF])).stdout).toMatch(/nothing to repair/);
  });
});

describe("export --to pi --redact leaves no piece of a secret in a compaction summary", () => {
  it("a secret split across two text parts (joined with a space by the summarizer) and secrets cut at 160 and 60 characters", async () => {
    const root = join(await tempDir(), "store");
    const token = "ghp_Q7wErTy9UiOp3AsDfGhJkL1zXcVbNm0Qw2Er";
    const aws = "AKIAZ7Q4M2X9R5T8W3YB";
    const sessions = new Sessions({ storage: new NodeFileStorage({ root, fsync: false }) });
    const session = await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
    const split = token.length / 2;
    await session.append({
      role: "user",
      parts: [{ type: "text", text: `deploy with ${token.slice(0, split)}` }, { type: "text", text: `${token.slice(split)} please` }],
    });
    // Cut at 160 inside the token: 141 characters without a space come before it.
    await session.append({ role: "assistant", parts: [{ type: "text", text: `${"a".repeat(140)}=${token} is set` }] });
    // Cut at 60 inside the key: the end of a tool input.
    await session.append({
      role: "assistant",
      parts: [{
        type: "tool",
        tool_call_id: "c1",
        tool_name: "env",
        state: "output-available",
        input: { note: "set the aws credentials for ci!", id: aws },
        output: "ok",
      }],
    });
    for (const text of ["thanks", "more", "done"]) await session.append({ role: "user", parts: [{ type: "text", text }] });
    await session.compact({ summarizer: new ExtractiveSummarizer() });
    const summary = session.summary?.text ?? "";
    // The summarizer wrote the pieces (the attack as found): a space inside the token, cut prefixes.
    expect(summary).toContain(`${token.slice(0, split)} ${token.slice(split)}`);
    expect(summary).toContain("ghp_Q7wErTy9UiOp3As…");
    expect(summary).toContain("AKIAZ7Q4M2X9…");
    const exported = await cli(root, ["export", REF, "--to", "pi", "--redact"]);
    expect(exported.status, exported.stderr).toBe(0);
    const compaction = exported.stdout.split("\n").filter(Boolean).map((line) => JSON.parse(line)).find((entry) => entry.type === "compaction");
    expect(compaction.summary).toMatch(/\[REDACTED:[a-z-]+#\d+\]/);
    for (const secret of [token, aws]) {
      for (let length = 8; length <= secret.length; length++) expect(exported.stdout, secret.slice(0, length)).not.toContain(secret.slice(0, length));
    }
    expect(exported.stdout).not.toContain(token.slice(split));
  });
});
