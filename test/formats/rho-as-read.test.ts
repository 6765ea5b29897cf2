/**
 * Every Rho snapshot sessionfold writes is one Rho's serde types read (rho-reader.ts):
 * exported from each Rho fixture (Rho's own and those written here from its types), from
 * DeepCode files as DeepCode writes them, and through a stored session; and the check is
 * not one that always passes.
 */
import { describe, expect, it } from "vitest";
import type { PortableSession } from "../../core/mod.ts";
import { detectDeepCodeLayout, readDeepCode, readRhoJsonl, readRhoSnapshot, writeRhoSnapshot } from "../../core/formats/mod.ts";
import { expectRhoReads, rhoSnapshotProblems } from "./rho-reader.ts";
import { fixture, memorySessions, text, utf8 } from "./support.ts";
import type { LooseJson } from "../support/loose-json.ts";

const SNAPSHOTS = [
  "rho/snapshot-v1.json",
  "rho/snapshot-v2.json",
  "rho/snapshot-portable-fallback.json",
  "rho/upstream/session-snapshot-v1.json",
  "rho/upstream/session-snapshot-v2.json",
];
const JSONL = [
  "rho/session-v1.jsonl",
  "rho/session-v3.jsonl",
  "rho/session-v3-resumed.jsonl",
  "rho/session-v4-tree.jsonl",
  "rho/session-torn.jsonl",
  "rho/upstream/session-v1.jsonl",
  "rho/upstream/session-v2.jsonl",
  "rho/upstream/session-v3.jsonl",
];
const DEEPCODE = [
  "deepcode/v1/7f3a.v1.jsonl",
  "deepcode/as-written/2025-12-02-1a2b3c4d.v1.jsonl",
  "deepcode/as-written/20251120100000-k3j9x1.v1.jsonl",
  "deepcode/as-written/5e1f.v1.jsonl",
  "deepcode/as-written/9a0b.v1.jsonl",
];

const base = (path: string) => path.split("/").at(-1)!;

/** Imports `portable` into a stored session and exports it as a Rho snapshot, checked both ways. */
async function throughSession(portable: PortableSession): Promise<Uint8Array> {
  const direct = writeRhoSnapshot(portable);
  expectRhoReads(direct);
  const session = await memorySessions().importPortable("a1/w1/rho-check", portable);
  const bytes = writeRhoSnapshot(await session.exportPortable());
  expectRhoReads(bytes);
  return bytes;
}

describe("Rho reads every snapshot sessionfold writes", () => {
  it.each(SNAPSHOTS)("exported from the Rho snapshot %s", async (path) => {
    await throughSession(readRhoSnapshot(fixture(path), base(path)));
  });

  it.each(JSONL)("exported from the Rho session JSONL %s", async (path) => {
    await throughSession(readRhoJsonl(fixture(path), base(path)).session);
  });

  it.each(DEEPCODE)("exported from the DeepCode stream %s", async (path) => {
    await throughSession(readDeepCode(detectDeepCodeLayout([{ name: base(path), bytes: fixture(path) }])).session);
  });
});

describe("the ported check refuses what Rho refuses (it is not a check that always passes)", () => {
  const doc = (): Record<string, LooseJson> => JSON.parse(text(fixture("rho/snapshot-portable-fallback.json")));
  const problems = (edit: (d: Record<string, LooseJson>) => void) => {
    const d = doc();
    edit(d);
    return rhoSnapshotProblems(utf8(JSON.stringify(d)));
  };

  it("accepts the fixture as it is", () => {
    expect(problems(() => {})).toEqual([]);
  });

  it("names each refused field by its path", () => {
    expect(problems((d) => (d.schema_version = 3))).toEqual(["$.schema_version: 3, not 1 or 2"]);
    expect(problems((d) => (d.session_id = ""))).toEqual(["$.session_id: empty (SessionId::from_string refuses it)"]);
    expect(problems((d) => delete d.provider)).toEqual(["$.provider: not a ModelIdentity object"]);
    expect(problems((d) => (d.revision = -1))).toEqual(["$.revision: not a u64"]);
    expect(problems((d) => delete d.compaction.removed_messages)).toEqual(["$.compaction.removed_messages: not a u64"]);
    expect(problems((d) => (d.history[1] = { User: [{ Video: {} }] }))).toEqual(['$.history[1].User[0]: unknown ContentBlock variant "Video"']);
    expect(problems((d) => (d.history[1] = { Tool: {} }))).toEqual(['$.history[1]: unknown Message variant "Tool"']);
    expect(problems((d) => delete d.history[4].EnrichedAssistant.provider_context[0].data)).toEqual([
      "$.history[4].EnrichedAssistant.provider_context[0].data: missing",
    ]);
    expect(problems((d) => d.history.push({ AbortedAssistant: { content: [], reasoning: "" } }))).toEqual([
      "$.history[7].AbortedAssistant.tool_calls: not an array of PartialToolCall",
      "$.history[7].AbortedAssistant.usage: not a ModelUsage object",
    ]);
  });

  it("refuses a fallback written the older way or not as with_portable_fallback writes it", () => {
    expect(problems((d) => (d.history[4].EnrichedAssistant.portable_fallback = "x"))).toEqual([
      "$.history[4].EnrichedAssistant.portable_fallback: the older field; Rho writes the fallback as a provider_context block",
    ]);
    expect(problems((d) => d.history[2].EnrichedAssistant.provider_context.reverse())).toEqual([
      "$.history[2].EnrichedAssistant.provider_context: the portable fallback block is not the last (with_portable_fallback appends it)",
    ]);
  });
});
