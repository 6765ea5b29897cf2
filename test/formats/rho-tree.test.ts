/**
 * Rho session JSONL version 4 (a tree of `node` records) and v1–v3 files Rho has resumed
 * (an `upgrade` record, then `node` records). Fixtures: Rho's own v1–v3 files
 * (fixtures/rho/upstream/) and files written here from Rho's serde types and writer code
 * (`session-v4-tree.jsonl`, `session-v3-resumed.jsonl`: see fixtures/README.md).
 */
import { describe, expect, it } from "vitest";
import { InvalidInputError } from "../../core/mod.ts";
import { readRhoJsonl, writeRhoSnapshot } from "../../core/formats/mod.ts";
import { expectFormatError, fixture, memorySessions, text, thrown, utf8 } from "./support.ts";

const N1 = "0b6f3c1e-7a52-4d0e-9c8b-1f2a3b4c5d6e";
const N2 = "5d2e8f90-1b3c-4e5f-8a7b-6c5d4e3f2a1b";
const N3 = "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b";
const texts = (m: { parts: readonly { type: string; text?: string }[] }) => m.parts.filter((p) => p.type === "text").map((p) => p.text).join("");
const lines = (name: string) => text(fixture(name)).trimEnd().split("\n");

describe("Rho session JSONL version 4", () => {
  it("imports the active leaf's branch and counts the other", () => {
    const { session, diagnostics, tree } = readRhoJsonl(fixture("rho/session-v4-tree.jsonl"), "tree.jsonl");
    expect(diagnostics).toEqual([]);
    expect(tree).toEqual({ activeLeafId: N2, importedLeafId: N2, nodeCount: 3, branchCount: 1, offBranchNodes: 1, otherLeafIds: [N3] });
    expect(session).toMatchObject({
      sourceId: "44444444-4444-4444-8444-444444444444",
      cwd: "/work/project",
      revision: 3,
      promptCacheKey: "rho:tree-fixture",
      format: "rho-jsonl-v4",
      provider: { provider: "openai", api: "responses", model: "gpt-5" },
    });
    expect(session.messages.map(texts)).toEqual(["Add a test for parse()", "Added test/parse.test.ts.", "Run it", "", "It passes."]);
    expect(session.messages[3]!.parts[0]).toMatchObject({ type: "tool", tool_call_id: "call_1", state: "output-available", output: "1 passing" });
    expect(session.messages.map((m) => m.created_at)).toEqual([
      "2026-01-05T08:00:10.000Z",
      "2026-01-05T08:00:10.000Z",
      "2026-01-05T08:00:20.000Z",
      "2026-01-05T08:00:20.000Z",
      "2026-01-05T08:00:20.000Z",
    ]);
  });

  it("--branch: any node's branch, or a typed refusal naming the leaves", async () => {
    const { session, tree } = readRhoJsonl(fixture("rho/session-v4-tree.jsonl"), "tree.jsonl", { branch: N3 });
    expect(tree).toMatchObject({ activeLeafId: N2, importedLeafId: N3, offBranchNodes: 1, otherLeafIds: [N2] });
    expect(session.messages.map(texts)).toEqual([
      "Add a test for parse()",
      "Added test/parse.test.ts.",
      "Explain the test instead",
      "It checks that the last token is kept.",
    ]);
    expect(readRhoJsonl(fixture("rho/session-v4-tree.jsonl"), "t.jsonl", { branch: N1 }).session.messages).toHaveLength(2);
    const error = thrown(() => readRhoJsonl(fixture("rho/session-v4-tree.jsonl"), "t.jsonl", { branch: "nope" }));
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as Error).message).toContain(N3);
    // The imported branch goes back out as a Rho snapshot with its revision and cache key.
    const imported = await memorySessions().importPortable("a1/w1/tree", session);
    expect(JSON.parse(text(writeRhoSnapshot(await imported.exportPortable())))).toMatchObject({ revision: 3, prompt_cache_key: "rho:tree-fixture" });
  });

  it("refuses what Rho's tree loader refuses, with the line and field", () => {
    const [header, root, child] = lines("rho/session-v4-tree.jsonl");
    const node = JSON.parse(child!);
    const cases: [string, number, string][] = [
      [`${header}\n${root}\n${root}\n`, 3, "$.id"],
      [`${header}\n${root}\n${JSON.stringify({ ...node, parent_id: "missing" })}\n`, 3, "$.parent_id"],
      [`${header}\n${root}\n${JSON.stringify({ ...node, parent_id: undefined })}\n`, 3, "$.parent_id"],
      [
        `${header}\n${root}\n${JSON.stringify({ ...node, transition: { ...node.transition, delta: { ...node.transition.delta, base_revision: 1 } } })}\n`,
        3,
        "$.transition.delta.base_revision",
      ],
      [`${header}\n${root}\n${JSON.stringify({ ...node, kind: "compaction" })}\n`, 3, "$.transition.type"],
      [`${header}\n${root}\n${JSON.stringify({ type: "set_leaf", timestamp: "1", target_id: "x" })}\n`, 3, "$.target_id"],
      [`${header}\n${root}\n${JSON.stringify({ type: "upgrade", timestamp: "1", active_leaf_id: N1 })}\n`, 3, "$.type"],
      [`${header}\n${JSON.stringify({ type: "message", timestamp: "1", message: { User: [] } })}\n`, 2, "$.type"],
      [`${header}\n${JSON.stringify({ ...JSON.parse(root!), id: " padded" })}\n`, 2, "$.id"],
    ];
    for (const [bytes, line, path] of cases) expectFormatError(thrown(() => readRhoJsonl(utf8(bytes), "bad.jsonl")), { file: "bad.jsonl", line, path });
  });
});

describe("Rho session JSONL v1–v3 resumed by Rho (upgrade + node records)", () => {
  it("reads as version 4: the legacy prefix is the parent chain of the new nodes", () => {
    const { session, tree } = readRhoJsonl(fixture("rho/session-v3-resumed.jsonl"), "resumed.jsonl");
    expect(session.format).toBe("rho-jsonl-v4");
    expect(session.revision).toBe(3);
    expect(session.messages.map(texts)).toEqual(["delta prompt", "delta answer", "resumed prompt", "resumed answer"]);
    // Entries the new snapshot keeps unchanged keep the times of the records that added them.
    expect(session.messages.map((m) => m.created_at)).toEqual([
      "1970-01-01T00:05:01.000Z",
      "1970-01-01T00:05:02.000Z",
      "1970-01-01T00:05:10.000Z",
      "1970-01-01T00:05:10.000Z",
    ]);
    expect(tree).toMatchObject({ nodeCount: 3, branchCount: 0, offBranchNodes: 0, activeLeafId: "7c1d2e3f-4a5b-4c6d-8e7f-0a1b2c3d4e5f" });
  });

  it("Rho's own v1–v3 fixtures still read, with the virtual leaf as the active node", () => {
    for (const version of [1, 2, 3]) {
      const { session, tree } = readRhoJsonl(fixture(`rho/upstream/session-v${version}.jsonl`), `session-v${version}.jsonl`);
      expect(session.format).toBe(`rho-jsonl-v${version}`);
      expect(tree?.activeLeafId).toMatch(/^legacy:[0-9a-f]{16}$/);
    }
  });

  it("refuses an upgrade naming another leaf, a second upgrade, a node before the upgrade and a legacy record after it", () => {
    const [header, snapshot, delta, upgrade, node] = lines("rho/session-v3-resumed.jsonl");
    const cases: [string, number, string][] = [
      [`${header}\n${snapshot}\n${delta}\n${upgrade!.replace("0251", "0250")}\n`, 4, "$.active_leaf_id"],
      [`${header}\n${snapshot}\n${delta}\n${upgrade}\n${upgrade}\n`, 5, "$.type"],
      [`${header}\n${snapshot}\n${delta}\n${node}\n`, 4, "$.type"],
      [`${header}\n${snapshot}\n${delta}\n${upgrade}\n${node}\n${delta}\n`, 6, "$.type"],
    ];
    for (const [bytes, line, path] of cases) expectFormatError(thrown(() => readRhoJsonl(utf8(bytes), "bad.jsonl")), { file: "bad.jsonl", line, path });
  });
});
