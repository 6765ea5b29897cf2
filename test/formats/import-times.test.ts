/**
 * An import is not activity: an imported session's `created_at` / `updated_at` in meta.json
 * are its source's (or its first and last message's), for every format a host can import;
 * only `imported_from.imported_at` is the import time. An export of the unchanged session
 * gives the source's times back.
 */
import { describe, expect, it } from "vitest";
import { MemoryStorage, type PortableSession, Sessions } from "../../core/mod.ts";
import { readClaudeCode, readCodex, readDeepCode, readPi, readRhoJsonl, readRhoSnapshot, writeDeepCodeV1, writePi } from "../../core/formats/mod.ts";
import { fixture, text } from "./support.ts";

/** Long after every fixture: an import stamped with it shows. */
const IMPORT_TIME = "2031-01-01T00:00:00.000Z";

function sessionsAt(time: string): Sessions {
  return new Sessions({ storage: new MemoryStorage(), identity: { pid: 1, hostname: "test", runtime: "node" }, clock: () => Date.parse(time) });
}

/** A pi file as pi would have it: a session made on 2026-01-05, written by writePi. */
async function piFile(): Promise<Uint8Array> {
  let now = Date.parse("2026-01-05T08:00:00.000Z");
  const sessions = new Sessions({ storage: new MemoryStorage(), identity: { pid: 1, hostname: "test", runtime: "node" }, clock: () => (now += 1000) });
  const session = await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "made" });
  await session.append({ role: "user", parts: [{ type: "text", text: "hi" }] });
  return writePi(await session.exportPortable(), { cwd: "/repo" });
}

const SOURCES: { format: string; read: () => Promise<PortableSession> | PortableSession }[] = [
  { format: "deepcode-v1", read: () => readDeepCode({ file: "7f3a.v1.jsonl", bytes: fixture("deepcode/v1/7f3a.v1.jsonl") }).session },
  {
    format: "deepcode-core-v0",
    read: () =>
      readDeepCode({ file: "c0de.jsonl", bytes: fixture("deepcode/core-v0/c0de.jsonl"), metaBytes: fixture("deepcode/core-v0/c0de.meta.json") }).session,
  },
  { format: "rho-snapshot", read: () => readRhoSnapshot(fixture("rho/snapshot-v2.json"), "snapshot-v2.json", { timestamp: "2026-02-02T02:02:02.000Z" }) },
  { format: "rho-jsonl", read: () => readRhoJsonl(fixture("rho/session-v3.jsonl"), "session-v3.jsonl").session },
  { format: "pi", read: async () => (await readPi(await piFile(), "pi.jsonl")).session },
  { format: "codex", read: async () => (await readCodex(fixture("codex/rollout-2025-09-10T12-00-00-5f2c9a1e.jsonl"), "rollout.jsonl")).session },
  { format: "claude-code", read: async () => (await readClaudeCode(fixture("claude-code/6a1f0c2e-session.jsonl"), "6a1f0c2e-session.jsonl")).session },
];

describe("an imported session keeps its source's times", () => {
  for (const source of SOURCES) {
    it(source.format, async () => {
      const portable = await source.read();
      const createdAt = portable.createdAt ?? portable.messages[0]!.created_at!;
      const updatedAt = portable.updatedAt ?? portable.messages.at(-1)!.created_at!;
      expect(updatedAt < IMPORT_TIME).toBe(true);
      const sessions = sessionsAt(IMPORT_TIME);
      const session = await sessions.importPortable("a1/w1/imported", portable);
      expect(session.meta).toMatchObject({ created_at: createdAt, updated_at: updatedAt, imported_from: { imported_at: IMPORT_TIME } });
      // What a host lists: the source's last activity, not the import.
      expect((await sessions.list({ agentId: "a1", workspaceId: "w1" }))[0]!.updated_at).toBe(updatedAt);
      const back = await session.exportPortable();
      expect({ createdAt: back.createdAt, updatedAt: back.updatedAt }).toEqual({ createdAt, updatedAt });
    });
  }

  it("the first commit after the import is activity: updated_at moves to its time", async () => {
    const portable = readDeepCode({ file: "7f3a.v1.jsonl", bytes: fixture("deepcode/v1/7f3a.v1.jsonl") }).session;
    let now = Date.parse(IMPORT_TIME);
    const sessions = new Sessions({ storage: new MemoryStorage(), identity: { pid: 1, hostname: "test", runtime: "node" }, clock: () => now });
    const session = await sessions.importPortable("a1/w1/imported", portable);
    now += 60_000;
    await session.append({ role: "user", parts: [{ type: "text", text: "later" }] });
    expect(session.meta.updated_at).toBe("2031-01-01T00:01:00.000Z");
    const header = JSON.parse(text(writeDeepCodeV1(await session.exportPortable(), { cwd: "/repo" })).split("\n")[0]!);
    expect(header.updated_at).toBe("2031-01-01T00:01:00.000Z");
  });
});
