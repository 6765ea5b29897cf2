/**
 * A split brain repaired through the CLI (docs/CLI.md "A damaged session", docs/FORMAT.md
 * "Repair"): a second writer's lines with sequences the first writer already used make the
 * session read-only (`append` exits 4); `repair` shows the renumbering, `repair --apply`
 * keeps every message (the second writer's after the rest, ids kept), and the session takes
 * writes again, through the CLI and through the API, each message read back exactly once.
 */
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openNodeSessions } from "../../runtime-node/mod.ts";
import { cli, expectOk, json, missingRoot, seed, sessionDir, snapshot } from "./support.ts";

const REF = "a1/w1/s1";

describe("sessionfold repair after two writers", () => {
  it("renumbers the second writer's messages after the first's, and the session is writable again with every message once", async () => {
    const root = await missingRoot();
    await seed(root, REF, 4);
    const active = join(sessionDir(root, REF), "messages", "active.jsonl");
    const firstWriter = (await readFile(active, "utf8")).trimEnd().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    // A second writer that had read two messages committed sequences 3 and 4 again, with its own messages.
    const second = [3, 4].map((sequence) => ({
      ...firstWriter[sequence - 1],
      message_id: `second_${sequence}`,
      parts: [{ sequence: 1, type: "text", text: `second writer's ${sequence}` }],
    }));
    await writeFile(active, `${[...firstWriter, ...second].map((r) => JSON.stringify(r)).join("\n")}\n`);
    const refused = await cli(root, ["append", REF, "--role", "user", "--text", "refused"]);
    expect(refused.status).toBe(4);
    expect(refused.stderr).toContain("messages/active.jsonl:5");

    const before = await snapshot(root);
    const plan = expectOk(await cli(root, ["repair", REF]));
    expect(plan.stdout).toMatch(
      /move messages\/active\.jsonl:5 \(renumbered, \d+ bytes: sequence 3 is held by a message written before it \(another writer's\); kept as sequence 5\) -> quarantine\//,
    );
    expect(plan.stdout).toContain("kept: 6 messages (2 renumbered after the rest with their ids, the others untouched, last 6)");
    expect(await snapshot(root)).toEqual(before);

    const done = json(expectOk(await cli(root, ["--json", "repair", REF, "--apply"])));
    expect(done).toMatchObject({ applied: true, refused: [], kept: { messages: 6, lastSequence: 6 }, rewritten: ["messages/active.jsonl"] });
    expect(done.moves[0].lines.map((l: { line: number; code: string }) => [l.line, l.code])).toEqual([[5, "renumbered"], [6, "renumbered"]]);
    expect(json(expectOk(await cli(root, ["--json", "append", REF, "--role", "user", "--text", "by the CLI"])))).toMatchObject({ sequence: 7 });
    expect(json(await cli(root, ["--json", "verify", REF]))).toMatchObject({ sessions: [{ ok: true, diagnostics: [] }] });

    // The API (the storage worker, fsync on) reads and writes the repaired session too.
    const store = await openNodeSessions({ root });
    try {
      const session = await store.sessions.open(REF);
      expect(session.diagnostics).toEqual([]);
      await expect(session.append({ role: "user", parts: [{ type: "text", text: "by the API" }] })).resolves.toMatchObject({ sequences: [8] });
    } finally {
      await store.close();
    }
    const messages = json<{ sequence: number; message_id: string; parts: { text: string }[] }[]>(expectOk(await cli(root, ["--json", "messages", REF])));
    expect(messages.map((m) => m.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    const ids = messages.map((m) => m.message_id);
    expect(new Set(ids).size).toBe(8);
    expect(ids).toEqual(expect.arrayContaining([...firstWriter.map((r) => r["message_id"]), "second_3", "second_4"]));
    expect(messages.slice(4, 6).map((m) => [m.sequence, m.message_id, m.parts[0]!.text])).toEqual([
      [5, "second_3", "second writer's 3"],
      [6, "second_4", "second writer's 4"],
    ]);
  });
});
