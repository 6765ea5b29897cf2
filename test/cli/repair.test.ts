/**
 * `sessionfold repair REF [--apply]` through the CLI: a plan that changes nothing, the plan
 * carried out (the session writable again, the bad line kept in quarantine), a refusal with
 * the reason and exit 4, and the huge-line attack repaired.
 */
import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { MAX_LINE_BYTES } from "../../core/mod.ts";
import { cli, expectOk, json, missingRoot, seed, sessionDir, snapshot } from "./support.ts";

const REF = "a1/w1/s1";

async function damagedStore(insert: string | undefined, at = 2): Promise<{ root: string; active: string }> {
  const root = await missingRoot();
  await seed(root, REF, 4);
  const active = join(sessionDir(root, REF), "messages", "active.jsonl");
  const lines = (await readFile(active, "utf8")).split("\n");
  if (insert !== undefined) lines.splice(at, 0, insert);
  await writeFile(active, lines.join("\n"));
  return { root, active };
}

describe("sessionfold repair", () => {
  it("shows the plan and changes nothing; --apply carries it out and the session takes writes again", async () => {
    const { root, active } = await damagedStore("{ a line a crash left behind");
    const valid = (await readFile(active, "utf8")).split("\n").filter((l) => !l.startsWith("{ a line")).join("\n");
    expect((await cli(root, ["append", REF, "--role", "user", "--text", "x"])).status).toBe(4);
    const before = await snapshot(root);
    const plan = expectOk(await cli(root, ["repair", REF]));
    expect(plan.stdout).toContain("repair plan (nothing changed yet; run again with --apply)");
    expect(plan.stdout).toMatch(
      /move messages\/active\.jsonl:3 \(invalid_json, 28 bytes: invalid JSON .*\) -> quarantine\/messages_active\.jsonl\.\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z\.jsonl/,
    );
    expect(await snapshot(root)).toEqual(before);

    const done = json(expectOk(await cli(root, ["--json", "repair", REF, "--apply"])));
    expect(done).toMatchObject({
      ref: REF,
      applied: true,
      clean: false,
      rewritten: ["messages/active.jsonl"],
      kept: { messages: 4, lastSequence: 4 },
      meta: { action: "updated", revision: 5 },
    });
    expect(done.moves).toHaveLength(1);
    expect(await readFile(active, "utf8")).toBe(valid);
    const quarantine = await readdir(join(sessionDir(root, REF), "quarantine"));
    expect(quarantine).toEqual([done.moves[0].to.slice("quarantine/".length)]);
    const kept = JSON.parse(await readFile(join(sessionDir(root, REF), done.moves[0].to), "utf8")) as Record<string, unknown>;
    expect(kept).toMatchObject({ record_type: "quarantined_line", file: "messages/active.jsonl", line: 3, text: "{ a line a crash left behind" });

    expect(json(expectOk(await cli(root, ["--json", "append", REF, "--role", "user", "--text", "back"])))).toMatchObject({ sequence: 5, revision: 6 });
    expect(json(expectOk(await cli(root, ["--json", "verify", REF]))).sessions[0].ok).toBe(true);
    expect(expectOk(await cli(root, ["repair", REF])).stdout).toBe("a1/w1/s1: nothing to repair (revision 6)\n");
  });

  it("refuses a gap it cannot close, with the reason, and changes nothing", async () => {
    const { root, active } = await damagedStore(undefined);
    const lines = (await readFile(active, "utf8")).split("\n");
    // Line 2 held message 2: cut it short, so its sequence is lost.
    lines[1] = lines[1]!.slice(0, 30);
    await writeFile(active, lines.join("\n"));
    const before = await snapshot(root);
    for (const args of [["repair", REF], ["repair", REF, "--apply"]]) {
      const result = await cli(root, args);
      expect(result.status).toBe(4);
      expect(result.stderr).toMatch(
        /^error\[corrupt\]: a1\/w1\/s1 cannot be repaired: messages\/active\.jsonl:3: message sequence 3 where 2 was expected: sequences 2–2 are missing \(line 2 could not be read and may have held them\); repair never renumbers messages/,
      );
    }
    expect(await snapshot(root)).toEqual(before);
  });

  it(`repairs a line over ${MAX_LINE_BYTES / 2 ** 20} MiB: moved out unread, every message kept`, async () => {
    const { root } = await damagedStore(`{"record_type":"message","text":"${"x".repeat(MAX_LINE_BYTES)}"}`);
    const done = json(expectOk(await cli(root, ["--json", "repair", REF, "--apply"])));
    expect(done.moves[0].lines).toEqual([{
      line: 3,
      code: "oversized_line",
      reason: expect.stringContaining("over the limit of 64 MiB; not read"),
      bytes: MAX_LINE_BYTES + 35,
    }]);
    expect(done.kept).toMatchObject({ messages: 4, lastSequence: 4 });
    expectOk(await cli(root, ["append", REF, "--role", "user", "--text", "after"]));
  });
});
