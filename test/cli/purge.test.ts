/**
 * `sessionfold purge` end to end, in-process through main(), on a folder store: the dry run
 * lists exactly what the run then deletes, a locked or streaming session is skipped with the
 * reason, and a bad duration is a usage error (exit 2) that touches nothing.
 */
import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cli, expectOk, json, lockContent, missingRoot, put, seed, sessionDir, snapshot, tempDir } from "./support.ts";

/** Sets a session's last activity (`meta.json`'s `updated_at`) by hand. */
async function lastActive(root: string, ref: string, updatedAt: string, archived = false): Promise<void> {
  const path = join(sessionDir(root, ref, archived), "meta.json");
  const meta = JSON.parse(await readFile(path, "utf8"));
  await writeFile(path, `${JSON.stringify({ ...meta, updated_at: updatedAt })}\n`);
}

async function store(): Promise<string> {
  const root = await missingRoot();
  for (const ref of ["a1/w1/old", "a1/w1/older", "a1/w1/recent", "a1/w2/ancient", "a1/w1/archived"]) await seed(root, ref, 1);
  await lastActive(root, "a1/w1/old", "2020-03-01T00:00:00.000Z");
  await lastActive(root, "a1/w1/older", "2020-02-01T00:00:00.000Z");
  await lastActive(root, "a1/w2/ancient", "2019-01-01T00:00:00.000Z");
  expectOk(await cli(root, ["archive", "a1/w1/archived"]));
  await lastActive(root, "a1/w1/archived", "2020-06-01T00:00:00.000Z", true);
  return root;
}

interface Entry {
  ref: string;
  place: string;
  updatedAt: string | null;
  outcome: string;
  reason?: string;
  removed?: string[];
}

describe("purge", () => {
  it("the dry run lists exactly what the run then deletes: archived first, then the oldest; the dry run changes no byte", async () => {
    const root = await store();
    const before = await snapshot(root);
    const plan = json<{ dryRun: boolean; entries: Entry[] }>(expectOk(await cli(root, ["--json", "purge", "--older-than", "30d", "--archived", "--dry-run"])));
    expect(await snapshot(root)).toEqual(before);
    expect(plan.dryRun).toBe(true);
    expect(plan.entries.map((e) => [e.ref, e.place, e.updatedAt, e.outcome])).toEqual([
      ["a1/w1/archived", "archived", "2020-06-01T00:00:00.000Z", "would-delete"],
      ["a1/w2/ancient", "live", "2019-01-01T00:00:00.000Z", "would-delete"],
      ["a1/w1/older", "live", "2020-02-01T00:00:00.000Z", "would-delete"],
      ["a1/w1/old", "live", "2020-03-01T00:00:00.000Z", "would-delete"],
    ]);
    const run = json<{ dryRun: boolean; entries: Entry[] }>(expectOk(await cli(root, ["--json", "purge", "--older-than", "30d", "--archived"])));
    expect(run.dryRun).toBe(false);
    expect(run.entries.map((e) => [e.ref, e.place, e.outcome])).toEqual(plan.entries.map((e) => [e.ref, e.place, "deleted"]));
    expect(run.entries[1]!.removed).toEqual(
      expect.arrayContaining(["agents/a1/workspaces/w2/sessions/ancient/meta.json", "agents/a1/workspaces/w2/sessions/ancient/messages/active.jsonl"]),
    );
    expect(await readdir(join(root, "agents/a1/workspaces/w1/sessions"))).toEqual(["recent"]);
    expect(await readdir(join(root, "agents/a1/workspaces/w1/archived-sessions")).catch(() => [])).toEqual([]);
    expect(await readdir(join(root, "agents/a1/workspaces/w2/sessions")).catch(() => [])).toEqual([]);
  });

  it("without --archived archived sessions stay; --keep-newest and --workspace narrow; the text lists each session", async () => {
    const root = await store();
    const text = expectOk(await cli(root, ["purge", "--keep-newest", "1", "--workspace", "w1", "--dry-run"])).stdout;
    expect(text).toMatch(/^REF +PLACE +LAST ACTIVITY +OUTCOME +DETAIL\n/);
    expect(text.split("\n").slice(1, 3).map((l) => l.split(/ +/).slice(0, 4))).toEqual([
      ["a1/w1/older", "live", "2020-02-01T00:00:00.000Z", "would-delete"],
      ["a1/w1/old", "live", "2020-03-01T00:00:00.000Z", "would-delete"],
    ]);
    expect(text.endsWith("2 would be deleted, 0 skipped (dry run)\n")).toBe(true);
    const done = expectOk(await cli(root, ["purge", "--keep-newest", "1", "--workspace", "w1"])).stdout;
    expect(done.endsWith("2 deleted, 0 skipped\n")).toBe(true);
    expect(await readdir(join(root, "agents/a1/workspaces/w1/sessions"))).toEqual(["recent"]);
    expect(await readdir(join(root, "agents/a1/workspaces/w1/archived-sessions"))).toEqual(["archived"]);
    expect(await readdir(join(root, "agents/a1/workspaces/w2/sessions"))).toEqual(["ancient"]);
    expect(expectOk(await cli(root, ["purge", "--keep-newest", "1", "--workspace", "w1"])).stdout).toBe("nothing purged\n");
  });

  it("a session whose meta.json cannot be read is skipped with the reason (not counted by --keep-newest, never deleted)", async () => {
    const root = await store();
    await writeFile(join(sessionDir(root, "a1/w1/recent"), "meta.json"), "{not json");
    const before = await snapshot(sessionDir(root, "a1/w1/recent"));
    // --keep-newest 1 keeps "old", the newest session purge can date; "recent" is neither kept nor deleted.
    const plan = json<{ entries: Entry[] }>(expectOk(await cli(root, ["--json", "purge", "--keep-newest", "1", "--workspace", "w1", "--dry-run"])));
    expect(plan.entries.map((e) => [e.ref, e.place, e.updatedAt, e.outcome])).toEqual([
      ["a1/w1/older", "live", "2020-02-01T00:00:00.000Z", "would-delete"],
      ["a1/w1/recent", "live", null, "skipped"],
    ]);
    expect(plan.entries[1]!.reason).toMatch(/^cannot be read: a1\/w1\/recent\/meta\.json.*; not deleted, and not counted among the newest kept$/);
    const text = expectOk(await cli(root, ["purge", "--keep-newest", "1", "--workspace", "w1"])).stdout;
    expect(text).toMatch(/^a1\/w1\/recent +live +- +skipped +cannot be read: /m);
    expect(text.endsWith("1 deleted, 1 skipped\n")).toBe(true);
    expect(await snapshot(sessionDir(root, "a1/w1/recent"))).toEqual(before);
  });

  it("a session with a writer.lock or a streaming draft is skipped with the reason, by the dry run and the run", async () => {
    const root = await store();
    await put(join(sessionDir(root, "a1/w1/old"), "writer.lock"), lockContent(31337, "build-box"));
    await put(join(sessionDir(root, "a1/w1/older"), "messages", "assistant_message.json"), '{"partial":true}');
    const expected = [
      ["a1/w2/ancient", "would-delete", undefined],
      ["a1/w1/older", "skipped", "a draft is streaming (messages/assistant_message.json)"],
      ["a1/w1/old", "skipped", 'locked by pid 31337 on build-box (node) for "append" since 2026-12-02T13:00:00.000Z'],
    ];
    const plan = json<{ entries: Entry[] }>(expectOk(await cli(root, ["--json", "purge", "--older-than", "12h", "--dry-run"])));
    expect(plan.entries.map((e) => [e.ref, e.outcome, e.reason])).toEqual(expected);
    const run = json<{ entries: Entry[] }>(expectOk(await cli(root, ["--json", "purge", "--older-than", "720h"])));
    expect(run.entries.map((e) => [e.ref, e.outcome, e.reason])).toEqual(
      expected.map(([ref, outcome, reason]) => [ref, outcome === "would-delete" ? "deleted" : outcome, reason]),
    );
    expect((await readdir(join(root, "agents/a1/workspaces/w1/sessions"))).sort()).toEqual(["old", "older", "recent"]);
    expect(await readFile(join(sessionDir(root, "a1/w1/old"), "writer.lock"), "utf8")).toBe(lockContent(31337, "build-box"));
  });

  it("a bad duration, a bad count or no policy at all is a usage error (exit 2) that touches nothing", async () => {
    const root = await store();
    const before = await snapshot(root);
    for (
      const [args, message] of [
        [["--older-than", "30x"], 'purge: --older-than expects a duration such as 30d, 12h or 90m, got "30x"'],
        [["--older-than", "-5d"], 'purge: --older-than expects a duration such as 30d, 12h or 90m, got "-5d"'],
        [["--older-than", "90"], 'purge: --older-than expects a duration such as 30d, 12h or 90m, got "90"'],
        [["--keep-newest", "two"], 'purge: --keep-newest expects a non-negative integer, got "two"'],
        [[], "purge: give --older-than D or --keep-newest N (or both)"],
      ] as const
    ) {
      const result = await cli(root, ["purge", ...args]);
      expect(result.status).toBe(2);
      expect(result.stderr).toMatch(new RegExp(`^error\\[usage\\]: ${message.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`));
    }
    expect(await snapshot(root)).toEqual(before);
  });

  it("on a store that does not exist there is nothing to purge, and no store is created", async () => {
    const root = await missingRoot();
    expect(expectOk(await cli(root, ["purge", "--older-than", "90m", "--dry-run"])).stdout).toBe("nothing would be purged\n");
    expect(await snapshot(root)).toBeNull();
  });

  it("on an encrypted store purge deletes through the same path: the data keys go with the folder; without the key it changes nothing", async () => {
    const root = await missingRoot();
    const keyFile = join(await tempDir(), "store.key");
    expectOk(await cli(root, ["keygen", "--out", keyFile]));
    for (const ref of ["a1/w1/first", "a1/w1/second"]) {
      expectOk(await cli(root, ["--key-file", keyFile, "new", ref]));
      expectOk(await cli(root, ["--key-file", keyFile, "append", ref, "--role", "user", "--text", `secret of ${ref}`]));
    }
    const before = await snapshot(root);
    const refused = await cli(root, ["purge", "--keep-newest", "1"]);
    expect(refused.status).toBe(4);
    expect(refused.stderr).toMatch(/^error\[key-required\]/);
    expect(await snapshot(root)).toEqual(before);
    const plan = json<{ entries: Entry[] }>(expectOk(await cli(root, ["--key-file", keyFile, "--json", "purge", "--keep-newest", "1", "--dry-run"])));
    expect(plan.entries.map((e) => [e.ref, e.outcome])).toEqual([["a1/w1/first", "would-delete"]]);
    const run = json<{ entries: Entry[] }>(expectOk(await cli(root, ["--key-file", keyFile, "--json", "purge", "--keep-newest", "1"])));
    expect(run.entries.map((e) => [e.ref, e.outcome])).toEqual([["a1/w1/first", "deleted"]]);
    // The result names the session's files; keys.json, which the encrypted store keeps out of listings, went first.
    expect(run.entries[0]!.removed).toEqual(
      expect.arrayContaining(["agents/a1/workspaces/w1/sessions/first/meta.json", "agents/a1/workspaces/w1/sessions/first/messages/active.jsonl"]),
    );
    expect(Object.keys(before!)).toEqual(expect.arrayContaining(["agents/a1/workspaces/w1/sessions/first/keys.json"]));
    expect(Object.keys((await snapshot(root))!).filter((path) => path.includes("/first/"))).toEqual([]);
    expect(await readdir(join(root, "agents/a1/workspaces/w1/sessions"))).toEqual(["second"]);
    // The session kept still opens under the key.
    expect(JSON.stringify(json(expectOk(await cli(root, ["--key-file", keyFile, "--json", "messages", "a1/w1/second"]))))).toContain("secret of a1/w1/second");
  });
});
