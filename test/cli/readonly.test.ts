/**
 * Read-only commands (ls, show, compose, messages, verify, export) never change a byte under
 * --root: every path, mode and file hash is the same before and after, also for sessions
 * that recovery would repair at the next write, and a missing root stays missing.
 */
import { appendFile, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cli, expectOk, lockContent, missingRoot, put, seed, sessionDir, snapshot } from "./support.ts";

const READ_ONLY = (ref: string): string[][] => [
  ["ls"],
  ["ls", "--archived"],
  ["ls", "--agent", "a1"],
  ["ls", "--agent", "a1", "--workspace", "w1"],
  ["ls", "--agent", "nobody"],
  ["show", ref],
  ["compose", ref],
  ["messages", ref],
  ["messages", ref, "--before", "3"],
  ["verify", ref],
  ["verify"],
  ["export", ref, "--to", "deepcode", "--cwd", "/repo"],
  ["export", ref, "--to", "rho-snapshot", "--redact"],
];

/** A store holding every state the read-only commands must leave alone. */
async function richStore(): Promise<string> {
  const root = await missingRoot();
  await put(join(root, "agents/a1/agent.jsonc"), '{ "instruction": "Be brief.", "model_label": "m" }\n');
  // Healthy, with segments.
  await seed(root, "a1/w1/healthy", 8);
  expectOk(await cli(root, ["compact", "a1/w1/healthy"]));
  expectOk(await cli(root, ["compact", "a1/w1/healthy"]));
  // A torn tail and a live draft: both repaired only by the next write.
  await seed(root, "a1/w1/torn", 3);
  await appendFile(join(sessionDir(root, "a1/w1/torn"), "messages/active.jsonl"), '{"record_type":"message","seq');
  const draft = {
    record_type: "message",
    sequence: 4,
    message_id: "m_live",
    role: "assistant",
    created_at: "2026-12-02T13:00:00.000Z",
    status: "streaming",
    parts: [{ sequence: 1, type: "text", text: "half" }],
  };
  await put(join(sessionDir(root, "a1/w1/torn"), "messages/assistant_message.json"), JSON.stringify(draft));
  // meta.json behind the messages, and a stale draft.
  await seed(root, "a1/w1/behind", 2);
  const metaPath = join(sessionDir(root, "a1/w1/behind"), "meta.json");
  await writeFile(metaPath, JSON.stringify({ ...JSON.parse(await readFile(metaPath, "utf8")), message_count: 1 }));
  const firstId = JSON.parse((await readFile(join(sessionDir(root, "a1/w1/behind"), "messages/active.jsonl"), "utf8")).split("\n")[0]!).message_id;
  await put(join(sessionDir(root, "a1/w1/behind"), "messages/assistant_message.json"), JSON.stringify({ ...draft, message_id: firstId }));
  // A corrupt middle line, a lock left behind, an unknown schema, an archived session.
  await seed(root, "a1/w1/corrupt", 3);
  const active = join(sessionDir(root, "a1/w1/corrupt"), "messages/active.jsonl");
  const lines = (await readFile(active, "utf8")).split("\n");
  lines[1] = "{oops";
  await writeFile(active, lines.join("\n"));
  await writeFile(join(sessionDir(root, "a1/w1/corrupt"), "writer.lock"), lockContent());
  await seed(root, "a1/w2/future", 1);
  const futureMeta = join(sessionDir(root, "a1/w2/future"), "meta.json");
  await writeFile(futureMeta, JSON.stringify({ ...JSON.parse(await readFile(futureMeta, "utf8")), schema_version: 9 }));
  await seed(root, "a2/w1/old", 2);
  expectOk(await cli(root, ["archive", "a2/w1/old"]));
  return root;
}

describe("read-only commands change no byte", () => {
  it("over every kind of session, in text and JSON, the tree is byte-identical", async () => {
    const root = await richStore();
    const before = await snapshot(root);
    expect(Object.keys(before!).length).toBeGreaterThan(30);
    const statuses: Record<string, number> = {};
    for (const ref of ["a1/w1/healthy", "a1/w1/torn", "a1/w1/behind", "a1/w1/corrupt", "a1/w2/future", "a2/w1/old", "a1/w1/missing"]) {
      for (const argv of READ_ONLY(ref)) {
        for (const mode of [[], ["--json"]]) {
          const result = await cli(root, [...mode, ...argv]);
          statuses[`${argv.join(" ")}${mode.length ? " --json" : ""}`] = result.status;
        }
      }
    }
    expect(await snapshot(root)).toEqual(before);
    // The runs did exercise success and failure paths.
    expect(statuses["show a1/w1/torn"]).toBe(0);
    expect(statuses["compose a1/w1/corrupt"]).toBe(4);
    expect(statuses["verify"]).toBe(1);
    expect(statuses["show a1/w1/missing"]).toBe(4);
    expect(statuses["export a1/w1/healthy --to deepcode --cwd /repo"]).toBe(0);
    expect(statuses["export a1/w1/corrupt --to rho-snapshot --redact"]).toBe(4);
  }, 60_000);

  it("through the storage worker too (the real path)", async () => {
    const root = await richStore();
    const before = await snapshot(root);
    for (const argv of READ_ONLY("a1/w1/torn")) expect([0, 1]).toContain((await cli(root, argv, { worker: true, fsync: true })).status);
    expect(await snapshot(root)).toEqual(before);
  }, 120_000);

  it("what recovery found is reported but not repaired", async () => {
    const root = await richStore();
    const torn = (await cli(root, ["--json", "show", "a1/w1/torn"])).stdout;
    expect(JSON.parse(torn).diagnostics).toEqual([expect.objectContaining({ code: "truncated_tail", fatal: false })]);
    expect(JSON.parse(torn).draft).toMatchObject({ message_id: "m_live", sequence: 4 });
    const behind = JSON.parse((await cli(root, ["--json", "show", "a1/w1/behind"])).stdout);
    expect(behind.diagnostics.map((d: { code: string }) => d.code).sort()).toEqual(["meta_rebuilt", "stale_draft"]);
    expect(behind.meta.message_count).toBe(2);
    expect(JSON.parse(await readFile(join(sessionDir(root, "a1/w1/behind"), "meta.json"), "utf8")).message_count).toBe(1);
  });

  it.each([["ls"], ["ls", "--archived"], ["show", "a/b/c"], ["compose", "a/b/c"], ["messages", "a/b/c"], ["messages", "a/b/c", "--before", "2"], ["verify"], [
    "verify",
    "a/b/c",
  ]])(
    "%j on a missing root creates nothing",
    async (...argv) => {
      const root = await missingRoot();
      for (const mode of [[], ["--json"]]) {
        const result = await cli(root, [...mode, ...argv]);
        expect([0, 4]).toContain(result.status);
        const viaWorker = await cli(root, [...mode, ...argv], { worker: true });
        expect(viaWorker.status).toBe(result.status);
      }
      expect(await snapshot(root)).toBeNull();
    },
    60_000,
  );

  it("a missing root reads as an empty store", async () => {
    const root = await missingRoot();
    expect((await cli(root, ["--json", "ls"])).stdout).toBe("[]\n");
    expect(JSON.parse((await cli(root, ["--json", "verify"])).stdout)).toEqual({ sessions: [] });
    const show = await cli(root, ["show", "a/b/c"]);
    expect(show.status).toBe(4);
    expect(show.stderr).toBe(`error[not-found]: no session a/b/c (the store ${root} does not exist)\n`);
    // Writers other than `new` do not create it either.
    for (
      const argv of [["append", "a/b/c", "--role", "user", "--text", "x"], ["compact", "a/b/c"], ["fork", "a/b/c", "--as", "d"], ["archive", "a/b/c"], [
        "unlock",
        "a/b/c",
        "--force",
      ]]
    ) {
      expect((await cli(root, argv)).status).toBe(4);
    }
    expect(await snapshot(root)).toBeNull();
  });
});
