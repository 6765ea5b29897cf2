/**
 * The outbox's large mutations are kept in files of their own (core/sync/pending-files.ts,
 * docs/SYNC.md "The engine"): the state saved after each acknowledged batch no longer holds
 * the segments still to send, so a first sync writes a session's bytes about once, not once
 * per batch. Counted in bytes written, never timed. A save that ended before its state, a
 * lost answer and a kept file gone are each met as the outbox's rules say.
 */
import { describe, expect, it } from "vitest";
import { ExtractiveSummarizer, InvalidInputError, MemoryStorage, Sessions } from "../../core/mod.ts";
import { directRemote, type SyncRemote, syncStores } from "../../core/sync/mod.ts";
import { syncStatePath } from "../../core/sync/sync-state.ts";
import { RecordingStorage } from "../support/session.ts";

const REF = "a1/w1/s1";
const PENDING_DIR = "sync/pending/server";
const text = (t: string) => ({ role: "user" as const, parts: [{ type: "text" as const, text: t }] });

/** A device holding one session of six segments of 80–200 KB each and 8 more messages in Active, and an empty server. */
async function longSession() {
  const device = new RecordingStorage(new MemoryStorage());
  const local = new Sessions({ storage: device });
  const session = await local.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1", title: "long" });
  for (let i = 0; i < 7; i++) {
    await session.append(Array.from({ length: 8 }, (_, k) => text(`message ${i}.${k} ${"x".repeat(20_000)}`)));
    if (i < 6) await session.compact({ summarizer: new ExtractiveSummarizer() });
  }
  await session.close();
  expect((await (await local.open(REF)).segments()).length).toBe(6);
  const server = new MemoryStorage();
  return { device, local, server, remote: directRemote(server, { id: "server" }) };
}

/** One mutation a request, the segments beyond the first sent one by one: a save after each. */
const SMALL_BATCHES = { batchMutations: 1, batchBytes: 150_000 };

/** Every message id of the session on `storage`, oldest first. */
async function messageIds(storage: MemoryStorage | RecordingStorage): Promise<string[]> {
  const session = await new Sessions({ storage }).open(REF);
  const ids: string[] = [];
  for (const range of await session.segments()) ids.push(...(await session.readSegment(range)).messages.map((m) => m.message_id));
  return [...ids, ...session.active.map((m) => m.message_id)];
}

describe("the outbox's large mutations in files of their own", () => {
  it("a first sync in many batches writes the session's bytes about once", async () => {
    const { device, local, server, remote } = await longSession();
    const sessionBytes = (await local.open(REF)).meta.history_bytes;
    device.reset();
    const report = await syncStores({ local, remote, ...SMALL_BATCHES });
    expect(report.conflicts).toEqual([]);
    const saves = device.calls.filter((c) => c.op === "replace" && c.path.startsWith("sync/"));
    const written = saves.reduce((sum, c) => sum + c.bytes!.length, 0);
    // Each segment went in a request of its own, the state saved after each.
    expect(saves.filter((c) => c.path === syncStatePath("server")).length).toBeGreaterThan(6);
    expect(written).toBeLessThan(2 * sessionBytes);
    expect(await messageIds(server)).toEqual(await messageIds(device));
    expect(await device.list(PENDING_DIR)).toEqual([]);
  });

  it("a save that ended before its state: the files it wrote are removed and the next run sends everything", async () => {
    const { device, local, server, remote } = await longSession();
    let crashed = false;
    device.before = (call) => {
      if (!crashed && call.op === "replace" && call.path === syncStatePath("server")) {
        crashed = true;
        throw new Error("the process ended here");
      }
    };
    await expect(syncStores({ local, remote, ...SMALL_BATCHES })).rejects.toThrow("the process ended here");
    // The first save writes its large mutations as one file before the state, where the forced crash ends the run.
    expect(await device.list(PENDING_DIR)).toHaveLength(1);
    expect(await device.read(syncStatePath("server"))).toBeUndefined();
    device.before = undefined;
    const report = await syncStores({ local, remote, ...SMALL_BATCHES });
    expect(report.conflicts).toEqual([]);
    expect(await messageIds(server)).toEqual(await messageIds(device));
    expect(await device.list(PENDING_DIR)).toEqual([]);
  });

  it("a lost answer: the kept mutations go again under their numbers, acknowledged as duplicates", async () => {
    const { device, local, server, remote } = await longSession();
    let lost = 0;
    const losing: SyncRemote = {
      ...remote,
      push: async (request) => {
        const answer = await remote.push(request);
        if (lost++ === 2) throw new TypeError("fetch failed: the answer was lost");
        return answer;
      },
    };
    await expect(syncStores({ local, remote: losing, ...SMALL_BATCHES })).rejects.toThrow("the answer was lost");
    const stored = JSON.parse(new TextDecoder().decode(await device.read(syncStatePath("server")))) as { pending: { file?: string }[] };
    expect(stored.pending.filter((m) => m.file !== undefined).length).toBeGreaterThan(0);
    const report = await syncStores({ local, remote, ...SMALL_BATCHES });
    expect(report.conflicts).toEqual([]);
    expect(report.forks).toEqual([]);
    expect(await messageIds(server)).toEqual(await messageIds(device));
    expect(await device.list(PENDING_DIR)).toEqual([]);
  });

  it("a kept mutation's file gone: a typed error names it and the state, and nothing local changes", async () => {
    const { device, local, server, remote } = await longSession();
    const offline: SyncRemote = {
      ...remote,
      push: () => Promise.reject(new TypeError("fetch failed: offline")),
    };
    await expect(syncStores({ local, remote: offline, ...SMALL_BATCHES })).rejects.toThrow("offline");
    const [kept] = await device.list(PENDING_DIR);
    await device.remove(`${PENDING_DIR}/${kept}`);
    const before = await messageIds(device);
    const failure = await syncStores({ local, remote, ...SMALL_BATCHES }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(InvalidInputError);
    expect((failure as Error).message).toContain(`${PENDING_DIR}/${kept}`);
    expect((failure as Error).message).toContain(syncStatePath("server"));
    expect((failure as Error).message).toContain("is missing");
    expect(await messageIds(device)).toEqual(before);
    // The way out SYNC.md gives: without the state, the next run compares every session again.
    await device.remove(syncStatePath("server"));
    expect((await syncStores({ local, remote, ...SMALL_BATCHES })).conflicts).toEqual([]);
    expect(await messageIds(server)).toEqual(before);
    expect(await device.list(PENDING_DIR)).toEqual([]);
  });
});
