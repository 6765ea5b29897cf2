/**
 * The file limit at write time (docs/FORMAT.md "Limits"; issue 27): Active never grows past
 * what an open reads. Five 55 MiB messages made `active.jsonl` 275 MiB, past the 256 MiB read
 * limit, and the session could no longer be opened; now the commit that would cross the
 * backend's limit is refused with `LimitExceededError` and every acknowledged message reads
 * back. Lowered through `maxFileBytes` (files, the worker, memory), plus one real-size case.
 */
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ExtractiveSummarizer, LimitExceededError, MAX_FILE_BYTES, MemoryStorage, type PortableSession, Sessions, StoreEntryError } from "../../core/mod.ts";
import { NodeFileStorage, WorkerFileStorage } from "../../runtime-node/mod.ts";

const REF = { agentId: "a1", workspaceId: "w1", sessionId: "s1" };
const roots: string[] = [];

async function tempRoot(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "sessionfold-limits-"));
  roots.push(dir);
  return join(dir, "store");
}

afterEach(async () => {
  await Promise.all(roots.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection");
}

describe("Active never grows past what an open reads", () => {
  it("a commit that would grow active.jsonl past the backend's file limit is refused; every acknowledged message reads back; compaction makes room", async () => {
    const maxFileBytes = 64 * 1024;
    const storage = new NodeFileStorage({ root: await tempRoot(), fsync: false, maxFileBytes });
    const session = await new Sessions({ storage }).create(REF);
    const text = "y".repeat(10 * 1024);
    const acknowledged: number[] = [];
    let refused: unknown;
    for (let i = 0; i < 10 && refused === undefined; i++) {
      try {
        acknowledged.push(...(await session.append({ role: i % 2 === 0 ? "user" : "assistant", parts: [{ type: "text", text }] })).sequences);
      } catch (error) {
        refused = error;
      }
    }
    expect(acknowledged).toEqual([1, 2, 3, 4, 5, 6]);
    expect(refused).toBeInstanceOf(LimitExceededError);
    expect((refused as LimitExceededError).details).toMatchObject({ limit: "MAX_FILE_BYTES", max: maxFileBytes, file: "messages/active.jsonl" });
    expect((refused as Error).message).toMatch(/compact the session/);
    const reopened = await new Sessions({ storage }).open(REF);
    expect(reopened.diagnostics).toEqual([]);
    expect(reopened.active.map((m) => m.sequence)).toEqual(acknowledged);
    await reopened.compact({ summarizer: new ExtractiveSummarizer() });
    expect((await reopened.append({ role: "user", parts: [{ type: "text", text }] })).sequences).toEqual([7]);
  });

  it("the worker-backed store passes its maxFileBytes to the worker and to the writer", async () => {
    const storage = new WorkerFileStorage({ root: await tempRoot(), fsync: false, maxFileBytes: 16 * 1024 });
    try {
      expect(storage.maxFileBytes).toBe(16 * 1024);
      const session = await new Sessions({ storage }).create(REF);
      await session.append({ role: "user", parts: [{ type: "text", text: "a".repeat(10_000) }] });
      const error = await rejection(session.append({ role: "user", parts: [{ type: "text", text: "b".repeat(10_000) }] }));
      expect((error as LimitExceededError).details).toMatchObject({ limit: "MAX_FILE_BYTES", max: 16 * 1024 });
      expect((await new Sessions({ storage }).open(REF)).active).toHaveLength(1);
    } finally {
      await storage.close();
    }
  });

  it("five 55 MiB messages: the fifth is refused, the four acknowledged read back (real size)", async () => {
    const root = await tempRoot();
    const storage = new NodeFileStorage({ root, fsync: false });
    const session = await new Sessions({ storage }).create(REF);
    const text = "m".repeat(55 * 1024 * 1024);
    for (let i = 0; i < 4; i++) await session.append({ role: "user", parts: [{ type: "text", text }] });
    const error = await rejection(session.append({ role: "user", parts: [{ type: "text", text }] }));
    expect(error).toBeInstanceOf(LimitExceededError);
    expect((error as LimitExceededError).details).toMatchObject({ limit: "MAX_FILE_BYTES", max: MAX_FILE_BYTES });
    const active = join(root, "agents/a1/workspaces/w1/sessions/s1/messages/active.jsonl");
    expect((await stat(active)).size).toBeLessThanOrEqual(MAX_FILE_BYTES);
    const reopened = await new Sessions({ storage }).open(REF);
    expect(reopened.diagnostics).toEqual([]);
    expect(reopened.active.map((m) => m.sequence)).toEqual([1, 2, 3, 4]);
  }, 120_000);
});

describe("importPortable keeps every file within the backend's limit; nothing is created", () => {
  it("Active over maxFileBytes", async () => {
    const root = await tempRoot();
    const storage = new NodeFileStorage({ root, fsync: false, maxFileBytes: 32 * 1024 });
    const messages = ["a", "b"].map((letter, i) => ({
      record_type: "message",
      sequence: i + 1,
      message_id: `m${i}`,
      created_at: "2026-12-02T13:00:00.000Z",
      role: "user",
      parts: [{ sequence: 1, type: "text", text: letter.repeat(20_000) }],
    }));
    const error = await rejection(new Sessions({ storage }).importPortable(REF, { messages } as unknown as PortableSession));
    expect(error).toBeInstanceOf(LimitExceededError);
    expect((error as LimitExceededError).details).toMatchObject({ limit: "MAX_FILE_BYTES", file: "messages/active.jsonl" });
    expect(await storage.list("agents/a1/workspaces/w1/sessions")).toEqual([]);
  });
});

describe("MemoryStorage enforces the file limit from the stored size, as every backend does", () => {
  it("a file over maxFileBytes is refused by read; readTail still answers with the size", async () => {
    const storage = new MemoryStorage({ maxFileBytes: 10 });
    await storage.append("a/f.jsonl", new TextEncoder().encode("0123456789"));
    expect(await storage.read("a/f.jsonl")).toHaveLength(10);
    await storage.append("a/f.jsonl", new TextEncoder().encode("x"));
    await expect(storage.read("a/f.jsonl")).rejects.toBeInstanceOf(StoreEntryError);
    await expect(storage.read("a/f.jsonl")).rejects.toThrow(/found a file of 11 bytes where a file of at most 10 bytes belongs/);
    expect((await storage.readTail("a/f.jsonl", 1))?.size).toBe(11);
    expect(() => new MemoryStorage({ maxFileBytes: -1 })).toThrow(/non-negative integer/);
  });
});

describe("a new session's meta.json and instruction.md are within what an open reads", () => {
  it("create refuses a title or an instruction that would make its file over the backend's limit (nothing written); within it, it reads back", async () => {
    const root = await tempRoot();
    const sessions = new Sessions({ storage: new NodeFileStorage({ root, fsync: false, maxFileBytes: 4096 }) });
    const big = await rejection(sessions.create({ ...REF, title: "T".repeat(5000) }));
    expect(big).toBeInstanceOf(LimitExceededError);
    expect((big as LimitExceededError).details).toMatchObject({ limit: "MAX_FILE_BYTES", max: 4096, file: "meta.json" });
    const instruction = await rejection(sessions.create({ ...REF, instruction: "I".repeat(5000) }));
    expect((instruction as LimitExceededError).details).toMatchObject({ limit: "MAX_FILE_BYTES", max: 4096, file: "instruction.md" });
    await expect(stat(root)).rejects.toMatchObject({ code: "ENOENT" });
    const title = `${"T".repeat(3000)}a\0b\uD800`;
    await sessions.create({ ...REF, title });
    const opened = await sessions.open(REF);
    expect(opened.diagnostics).toEqual([]);
    expect(opened.meta.title).toBe(title);
  });
});
