import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { SessionManager } from "@mariozechner/pi-coding-agent";
import { describe, expect, it } from "vitest";
import { cli, expectOk, json, missingRoot, REPO, seed, snapshot, tempDir } from "./support.ts";

const FIXTURES = join(REPO, "test/formats/fixtures");
const CODEX = join(FIXTURES, "codex/rollout-2025-09-10T12-00-00-5f2c9a1e.jsonl");
const CLAUDE = join(FIXTURES, "claude-code/6a1f0c2e-session.jsonl");

async function piFile(): Promise<string> {
  const manager = SessionManager.create("/work/p", await tempDir());
  manager.appendMessage({ role: "user", content: "hi", timestamp: 0 } as never);
  const usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
  manager.appendMessage(
    {
      role: "assistant",
      content: [{ type: "toolCall", id: "t1", name: "ls", arguments: {} }],
      api: "a",
      provider: "p",
      model: "m",
      usage,
      stopReason: "toolUse",
      timestamp: 0,
    } as never,
  );
  manager.appendMessage(
    { role: "toolResult", toolCallId: "t1", toolName: "ls", content: [{ type: "text", text: "a.ts" }], isError: false, timestamp: 0 } as never,
  );
  manager.appendMessage(
    { role: "assistant", content: [{ type: "text", text: "a.ts" }], api: "a", provider: "p", model: "m", usage, stopReason: "stop", timestamp: 0 } as never,
  );
  return manager.getSessionFile()!;
}

describe("import --from pi|codex|claude-code, and detection", () => {
  it("imports each with --from; without it, detects and says what it detected", async () => {
    const root = await missingRoot();
    const pi = await piFile();
    expect(json(expectOk(await cli(root, ["--json", "import", pi, "--from", "pi", "--into", "a1/w1/pi"]))).message_count).toBe(3);
    expect(json(expectOk(await cli(root, ["--json", "import", CODEX, "--from", "codex", "--into", "a1/w1/codex"]))).message_count).toBe(5);
    const detected = expectOk(await cli(root, ["--json", "import", CLAUDE, "--into", "a1/w1/claude"]));
    expect(detected.stderr).toMatch(/note: detected claude-code \(/);
    expect(json(detected)).toMatchObject({ message_count: 5, detected: { format: "claude-code" } });
    const text = expectOk(await cli(root, ["import", CODEX, "--into", "a1/w1/codex2"]));
    expect(text.stderr).toMatch(/note: detected codex/);
  });

  it("refuses a corrupt middle line with FILE:LINE and creates nothing", async () => {
    const root = await missingRoot();
    await seed(root, "a1/w1/other", 1);
    const before = await snapshot(root);
    const lines = (await readFile(CODEX, "utf8")).split("\n");
    lines[5] = "{oops";
    const bad = join(await tempDir(), "rollout-bad.jsonl");
    await writeFile(bad, lines.join("\n"));
    const result = await cli(root, ["import", bad, "--into", "a1/w1/bad"]);
    expect(result.status).toBe(4);
    expect(result.stderr).toMatch(/error\[invalid-input\]: rollout-bad\.jsonl:6: /);
    expect(await snapshot(root)).toEqual(before);
  });
});

describe("export --to pi", () => {
  it("writes a pi session that pi's SessionManager opens with the same messages", async () => {
    const root = await missingRoot();
    const pi = await piFile();
    expectOk(await cli(root, ["import", pi, "--from", "pi", "--into", "a1/w1/pi"]));
    const out = join(await tempDir(), "back.jsonl");
    expect(json(expectOk(await cli(root, ["--json", "export", "a1/w1/pi", "--to", "pi", "--out", out])))).toEqual({ out, records: 5 });
    const context = SessionManager.open(out).buildSessionContext().messages.map((m) => (m as { role: string }).role);
    expect(context).toEqual(SessionManager.open(pi).buildSessionContext().messages.map((m) => (m as { role: string }).role));
  });
});
