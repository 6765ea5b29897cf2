/**
 * Leases (docs/FORMAT.md `writer.lock`): a handle opened to hold the session keeps its lock
 * until `close()`, so its commits are its writes and the fence (one read of `writer.lock`, no
 * lock file created or removed, no revision read); any other writer is refused at once, naming the holder; `close()` gives the
 * session back. Per-operation locking stays the default.
 */
import { describe, expect, it } from "vitest";
import { ExtractiveSummarizer, MemoryStorage, Sessions, type StoragePort, WriterLockedError } from "../../core/mod.ts";

const text = (t: string) => ({ role: "user" as const, parts: [{ type: "text" as const, text: t }] });

/** A view of `inner` that counts every storage call by name (a separate "process": its own busy check). */
function counting(inner: MemoryStorage): { storage: StoragePort; calls: string[] } {
  const calls: string[] = [];
  const storage = new Proxy(inner, {
    get(target, key) {
      const value = Reflect.get(target, key);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        calls.push(`${String(key)} ${String(args[0]).split("/").slice(-2).join("/")}`);
        return value.apply(target, args);
      };
    },
  });
  return { storage, calls };
}

describe("leases", () => {
  it("a held handle commits with its writes and the fence's read of writer.lock alone, and close() gives the lock back", async () => {
    const inner = new MemoryStorage();
    const { storage, calls } = counting(inner);
    const sessions = new Sessions({ storage, identity: { pid: 7, hostname: "h", runtime: "node" } });
    const held = await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" }, { hold: true });
    expect(held.held).toBe(true);
    expect(JSON.parse(new TextDecoder().decode(await inner.read(held.paths.lock)))).toMatchObject({ pid: 7, operation: "lease" });
    calls.length = 0;
    await held.append(text("one"));
    await held.append([text("two"), text("three")]);
    // meta.json may lag behind the lines under a lease (up to 1,024 commits or a second); the
    // fence reads writer.lock before each append (docs/FORMAT.md "Fencing").
    expect(calls).toEqual(["readTail s1/writer.lock", "append messages/active.jsonl", "readTail s1/writer.lock", "append messages/active.jsonl"]);
    expect(held.revision).toBe(2);
    await held.close();
    expect(held.held).toBe(false);
    expect(await inner.read(held.paths.lock)).toBeUndefined();
    // After close the handle locks per operation again.
    await held.append(text("four"));
    expect(await inner.read(held.paths.lock)).toBeUndefined();
    expect((await sessions.open("a1/w1/s1")).active.map((m) => m.sequence)).toEqual([1, 2, 3, 4]);
  });

  it("refuses a second writer at once, naming the holder, until the holder closes", async () => {
    const inner = new MemoryStorage();
    const holder = new Sessions({ storage: counting(inner).storage, identity: { pid: 1, hostname: "a", runtime: "node" } });
    const other = new Sessions({ storage: counting(inner).storage, identity: { pid: 2, hostname: "b", runtime: "node" } });
    const held = await holder.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" }, { hold: true });
    const second = await other.open("a1/w1/s1");
    const refused = await second.append(text("refused")).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(WriterLockedError);
    expect((refused as WriterLockedError).owner).toMatchObject({ pid: 1, hostname: "a", operation: "lease" });
    await expect(other.open("a1/w1/s1", { hold: true })).rejects.toBeInstanceOf(WriterLockedError);
    await held.append(text("the holder writes"));
    await held.close();
    await second.reload();
    await expect(second.append(text("now mine"))).resolves.toMatchObject({ revision: 2 });
  });

  it("compacts, resets and runs under the lease; a stale handle is refused at hold()", async () => {
    const inner = new MemoryStorage();
    const sessions = new Sessions({ storage: counting(inner).storage, defaults: { summarizer: new ExtractiveSummarizer() } });
    const held = await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" }, { hold: true });
    for (let i = 0; i < 6; i++) await held.append(text(`m${i}`));
    await held.compact();
    await held.append(text("after the compaction"));
    await held.reset();
    await held.append(text("after the reset"));
    await held.close();
    const reopened = await sessions.open("a1/w1/s1");
    expect(reopened.diagnostics).toEqual([]);
    expect(reopened.active.map((m) => (m.parts[0] as { text: string }).text)).toEqual(["after the reset"]);
    expect((await reopened.segments()).length).toBe(2);
    // Another writer commits; the old handle's hold() sees the revision moved.
    const stale = await sessions.open("a1/w1/s1");
    await reopened.append(text("moves the revision"));
    await expect(stale.hold()).rejects.toMatchObject({ code: "revision-conflict" });
  });
});
