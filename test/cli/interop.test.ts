import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { bin, cli, expectOk, json, missingRoot, put, REPO, seed, snapshot, tempDir } from "./support.ts";

const FIXTURES = join(REPO, "test/formats/fixtures");
const OPENAI_KEY = "sk-proj-Zx81hQv7T2mB9wK4pL6nR3sD0fG5jH8kYcVbN1aE";

describe("import", () => {
  it("imports a Rho snapshot with its revision and prints the new meta", async () => {
    const root = await missingRoot();
    const result = expectOk(await cli(root, ["--json", "import", join(FIXTURES, "rho/snapshot-v2.json"), "--from", "rho-snapshot", "--into", "a1/w1/rho"]));
    const meta = json(result);
    expect(meta).toMatchObject({ session_id: "rho", agent_id: "a1", workspace_id: "w1", revision: 9 });
    expect(json(expectOk(await cli(root, ["--json", "messages", "a1/w1/rho"]))).length).toBe(meta.message_count);
  });

  it("imports a Rho v4 tree's active branch, says what it left out, and imports another with --branch", async () => {
    const root = await missingRoot();
    const file = join(FIXTURES, "rho/session-v4-tree.jsonl");
    const result = expectOk(await cli(root, ["--json", "import", file, "--into", "a1/w1/tree"]));
    const meta = json(result);
    expect(meta).toMatchObject({
      message_count: 5,
      revision: 3,
      tree: { branchCount: 1, offBranchNodes: 1, otherLeafIds: ["9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b"] },
    });
    expect(result.stderr).toMatch(/left out 1 node on 1 other branch \(--branch ID: 9e8d7c6b/);
    const other = json(
      expectOk(await cli(root, ["--json", "import", file, "--from", "rho-jsonl", "--branch", "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b", "--into", "a1/w1/other"])),
    );
    expect(other).toMatchObject({ message_count: 4, tree: { importedLeafId: "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b" } });
  });

  it("an imported session keeps its source's times: ls, meta.json and the export say 2026-03-01, not the import's", async () => {
    const root = await missingRoot();
    const imported = json(expectOk(await cli(root, ["--json", "import", join(FIXTURES, "deepcode/v1/7f3a.v1.jsonl"), "--into", "a1/w1/dc"])));
    expect(imported).toMatchObject({ created_at: "2026-03-01T09:00:00.000Z", updated_at: "2026-03-01T09:05:00.000Z" });
    expect(Date.parse(imported.imported_from.imported_at)).toBeGreaterThan(Date.parse("2026-12-01T00:00:00.000Z"));
    const listed = json(expectOk(await cli(root, ["--json", "ls"])));
    expect(listed.map((m: { updated_at: string }) => m.updated_at)).toEqual(["2026-03-01T09:05:00.000Z"]);
    const header = JSON.parse(expectOk(await cli(root, ["export", "a1/w1/dc", "--to", "deepcode"])).stdout.split("\n")[0]!);
    expect(header).toMatchObject({ created_at: "2026-03-01T09:00:00.000Z", updated_at: "2026-03-01T09:05:00.000Z" });
  });

  it("imports a legacy DeepCode core-v0 stream with the meta file beside it, never changing the source", async () => {
    const root = await missingRoot();
    const source = join(FIXTURES, "deepcode/core-v0/c0de.jsonl");
    const before = await readFile(source);
    const meta = json(expectOk(await cli(root, ["--json", "import", source, "--from", "deepcode", "--into", "a1/w1/dc"])));
    expect(meta.message_count).toBeGreaterThan(0);
    expect(await readFile(source)).toEqual(before);
  });

  it("refuses a file with a corrupt middle line with FILE:LINE, exit 4, creating nothing", async () => {
    const root = await missingRoot();
    await seed(root, "a1/w1/other", 1);
    const before = await snapshot(root);
    const result = await cli(root, ["import", join(FIXTURES, "deepcode/refusals/corrupt-middle.v1.jsonl"), "--from", "deepcode", "--into", "a1/w1/bad"]);
    expect(result.status).toBe(4);
    expect(result.stderr).toMatch(/^error\[invalid-input\]: corrupt-middle\.v1\.jsonl:3: /);
    expect(await snapshot(root)).toEqual(before);
  });

  it("refuses an unknown snapshot version (unsupported-schema, exit 4) and a missing --from (usage, exit 2)", async () => {
    const root = await missingRoot();
    const future = await cli(root, ["import", join(FIXTURES, "rho/snapshot-v3.json"), "--from", "rho-snapshot", "--into", "a1/w1/x"]);
    expect(future.status).toBe(4);
    expect(future.stderr).toMatch(/^error\[unsupported-schema\]/);
    expect(await snapshot(root)).toBeNull();
    // Without --from the format is detected; a file that matches none is a usage error.
    const usage = await cli(root, ["import", join(REPO, "README.md"), "--into", "a1/w1/x"]);
    expect(usage.status).toBe(2);
  });
});

describe("export", () => {
  it("writes a DeepCode v1 stream to stdout and, with --out, reports {out, records}; nothing under --root changes", async () => {
    const root = await missingRoot();
    await seed(root, "a1/w1/s1", 4);
    const before = await snapshot(root);
    const stream = expectOk(await cli(root, ["export", "a1/w1/s1", "--to", "deepcode", "--cwd", "/repo"]));
    const lines = stream.stdout.trimEnd().split("\n").map((line) => JSON.parse(line));
    expect(lines[0]).toMatchObject({ type: "session_meta", schema_version: 1, cwd: "/repo" });
    expect(lines.slice(1).map((l) => l.role)).toEqual(["user", "assistant", "user", "assistant"]);
    const out = join(await tempDir(), "s1.v1.jsonl");
    const result = json(expectOk(await cli(root, ["--json", "export", "a1/w1/s1", "--to", "deepcode", "--out", out])));
    expect(result).toEqual({ out, records: 5, filled: { cwd: "the current folder" } });
    expect(await snapshot(root)).toEqual(before);
  });

  it("--out into a DeepCode sessions folder: temp file + rename under DeepCode's <id>.writer.lock; a held lock refuses", async () => {
    const root = await missingRoot();
    await seed(root, "a1/w1/s1", 2);
    const dir = await tempDir();
    const out = join(dir, "s1.v1.jsonl");
    expectOk(await cli(root, ["export", "a1/w1/s1", "--to", "deepcode", "--cwd", "/repo", "--out", out]));
    expect((await readdir(dir)).sort()).toEqual(["s1.v1.jsonl"]);
    await writeFile(join(dir, "s2.writer.lock"), '{"pid":1,"createdAt":"2026-01-01T00:00:00.000Z"}');
    const refused = await cli(root, ["export", "a1/w1/s1", "--to", "deepcode", "--cwd", "/repo", "--out", join(dir, "s2.v1.jsonl")]);
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toMatch(/s2\.writer\.lock: DeepCode session s2 already has an active writer/);
    expect((await readdir(dir)).sort()).toEqual(["s1.v1.jsonl", "s2.writer.lock"]);
  });

  it("--redact keeps a planted key out of a Rho snapshot; without it the key is exported", async () => {
    const root = await missingRoot();
    expectOk(await cli(root, ["new", "a1/w1/s1"]));
    expectOk(await cli(root, ["append", "a1/w1/s1", "--role", "user", "--text", `my key is ${OPENAI_KEY} keep it safe`]));
    const plain = expectOk(await cli(root, ["export", "a1/w1/s1", "--to", "rho-snapshot"]));
    expect(plain.stdout).toContain(OPENAI_KEY);
    const redacted = expectOk(await cli(root, ["export", "a1/w1/s1", "--to", "rho-snapshot", "--redact"]));
    expect(redacted.stdout).not.toContain(OPENAI_KEY.slice(8, 24));
    expect(JSON.parse(redacted.stdout)).toMatchObject({ schema_version: 2, session_id: "s1" });
    expect(redacted.stdout).toContain("keep it safe");
  });

  it("round-trips through a real child process: export to a file, import it back, same messages and title", async () => {
    const root = await missingRoot();
    await seed(root, "a1/w1/s1", 3, "Port the parser");
    const out = join(await tempDir(), "s1.json");
    expectOk(await bin(["--root", root, "export", "a1/w1/s1", "--to", "rho-snapshot", "--out", out]));
    // Rho's snapshot has no title field: the title travels as metadata.title (docs/decisions.md).
    expect(JSON.parse(await readFile(out, "utf8")).metadata).toEqual({ title: "Port the parser" });
    const imported = json(expectOk(await bin(["--root", root, "--json", "import", out, "--from", "rho-snapshot", "--into", "a1/w1/back"])));
    expect(imported.title).toBe("Port the parser");
    const text = (ref: string) =>
      cli(root, ["--json", "messages", ref]).then((r) => json<{ parts: { text?: string }[] }[]>(r).map((m) => m.parts.map((p) => p.text)));
    expect(await text("a1/w1/back")).toEqual(await text("a1/w1/s1"));
    const listed = json<{ session_id: string; title?: string }[]>(expectOk(await cli(root, ["--json", "ls"])));
    expect(listed.map((m) => `${m.session_id}: ${m.title}`).sort()).toEqual(["back: Port the parser", "s1: Port the parser"]);
  });

  it("refuses an unknown format with a usage error (exit 2)", async () => {
    const root = await missingRoot();
    await put(join(root, "x"), "");
    const result = await cli(root, ["export", "a1/w1/s1", "--to", "pdf"]);
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(/^error\[usage\]/);
  });
});
