/**
 * Fencing a lease (docs/FORMAT.md "Fencing"): a held handle's commit writes only while
 * `writer.lock` still carries its `lock_id`. When the lock was removed (`unlock --force`) or
 * taken by another writer, the next commit writes nothing, fails with `LeaseLostError` naming
 * who holds the lock now, and `onLeaseLost` is told once; the handle holds nothing afterwards
 * and, reloaded, writes per operation after the other writer's messages. Every acknowledged
 * message is read back exactly once.
 */
import { describe, expect, it } from "vitest";
import { ExtractiveSummarizer, LeaseLostError, type LeaseLostNotice, MemoryStorage, Sessions, type StoragePort, WriterLockedError } from "../../core/mod.ts";

const text = (t: string) => ({ role: "user" as const, parts: [{ type: "text" as const, text: t }] });
const texts = (messages: readonly { parts: readonly unknown[] }[]) => messages.map((m) => (m.parts[0] as { text: string }).text);

/** A view of `storage` as another process has it (the in-process busy check is per storage object). */
const view = (storage: MemoryStorage): StoragePort =>
  new Proxy(storage, {
    get: (target, key) => (typeof Reflect.get(target, key) === "function" ? Reflect.get(target, key).bind(target) : Reflect.get(target, key)),
  });

async function setup() {
  const storage = new MemoryStorage();
  const lost: LeaseLostNotice[] = [];
  const holder = new Sessions({
    storage: view(storage),
    identity: { pid: 1, hostname: "a", runtime: "node" },
    onLeaseLost: (e) => lost.push(e),
    defaults: { summarizer: new ExtractiveSummarizer() },
  });
  const other = new Sessions({ storage: view(storage), identity: { pid: 2, hostname: "b", runtime: "node" } });
  const held = await holder.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" }, { hold: true });
  await held.append(text("held 1"));
  const leaseId = (JSON.parse(new TextDecoder().decode(await storage.read(held.paths.lock))) as { lock_id: string }).lock_id;
  return { storage, lost, holder, other, held, leaseId };
}

describe("a lease is fenced", () => {
  it("a lock removed by hand and another writer's commit: the holder's next commit writes nothing, typed, and it writes again after a reload", async () => {
    const { storage, lost, other, held, leaseId } = await setup();
    // `unlock --force` by someone who believed the holder gone, then a per-operation writer.
    await storage.remove(held.paths.lock);
    await (await other.open("a1/w1/s1")).append(text("other 2"));
    const before = await storage.read(held.paths.active);
    const refused = await held.append(text("would be a second sequence 2")).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(LeaseLostError);
    expect(refused).toBeInstanceOf(WriterLockedError);
    expect(refused).toMatchObject({ code: "writer-locked", name: "LeaseLostError", details: { path: held.paths.lock, lockId: leaseId } });
    expect((refused as LeaseLostError).message).toContain("the lock is gone; nothing was written");
    expect(await storage.read(held.paths.active)).toEqual(before);
    expect(lost).toEqual([{ refText: "a1/w1/s1", path: held.paths.lock, lockId: leaseId }]);
    expect(held.held).toBe(false);
    // The handle re-reads the files before its next write and commits per operation.
    await expect(held.append(text("held 3"))).resolves.toMatchObject({ sequences: [3] });
    expect(await storage.read(held.paths.lock)).toBeUndefined();
    const reopened = await other.open("a1/w1/s1");
    expect(reopened.diagnostics).toEqual([]);
    expect(texts(reopened.active)).toEqual(["held 1", "other 2", "held 3"]);
    expect(reopened.active.map((m) => m.sequence)).toEqual([1, 2, 3]);
    expect(lost).toHaveLength(1);
  });

  it("a lock another writer now holds: LeaseLostError names it, onLeaseLost carries it, and the old holder is refused per operation", async () => {
    const { storage, lost, other, held, leaseId } = await setup();
    await storage.remove(held.paths.lock);
    const usurper = await other.open("a1/w1/s1", { hold: true });
    await usurper.append(text("usurper 2"));
    const refused = (await held.append(text("refused")).catch((e: unknown) => e)) as LeaseLostError;
    expect(refused).toBeInstanceOf(LeaseLostError);
    expect(refused.owner).toMatchObject({ pid: 2, hostname: "b", operation: "lease" });
    expect(refused.message).toContain('is now held by pid 2 on b (node) for "lease"');
    expect(lost).toMatchObject([{ refText: "a1/w1/s1", lockId: leaseId, owner: { pid: 2, operation: "lease" } }]);
    // No longer held: its next write takes a lock per operation, and finds the usurper's.
    await expect(held.append(text("refused again"))).rejects.toSatisfy((e) => e instanceof WriterLockedError && !(e instanceof LeaseLostError));
    await usurper.close();
    const reopened = await other.open("a1/w1/s1");
    expect(texts(reopened.active)).toEqual(["held 1", "usurper 2"]);
  });

  it("a compaction under a lost lease writes nothing and leaves the other writer's meta.json alone", async () => {
    const { storage, held } = await setup();
    for (let i = 2; i <= 6; i++) await held.append(text(`held ${i}`));
    await storage.remove(held.paths.lock);
    const usurper = await new Sessions({ storage: view(storage), identity: { pid: 3, hostname: "c", runtime: "node" } }).open("a1/w1/s1", { hold: true });
    await usurper.append(text("usurper 7"));
    await usurper.close();
    const meta = await storage.read(held.paths.meta);
    await expect(held.compact()).rejects.toBeInstanceOf(LeaseLostError);
    expect(await storage.read(held.paths.meta)).toEqual(meta);
    expect(await storage.list(`${held.paths.dir}/messages/segments`)).toEqual([]);
    await held.reload();
    expect(held.active.map((m) => m.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    await expect(held.compact()).resolves.toMatchObject({ removedMessages: 3 });
  });

  it("a lease that still stands commits as before (the fence passes)", async () => {
    const { held, lost } = await setup();
    await expect(held.append(text("held 2"))).resolves.toMatchObject({ sequences: [2] });
    await held.close();
    expect(lost).toEqual([]);
  });
});
