/**
 * Dead-owner reclaim (docs/FORMAT.md `writer.lock`): a lock of this host and boot whose pid
 * is gone, or runs but started more than 2 s away from `process_started_at`, is taken over
 * and reported; every other lock is honoured. Many writers reclaiming one stale lock at once
 * still give the session one writer at a time, and a reclaimer killed half-way (its guard
 * left behind) never leaves the session locked.
 */
import { describe, expect, it } from "vitest";
import { type LockOwner, MemoryStorage, type OwnerProbe, Sessions, type StaleLockReclaimed, type WriterIdentity, WriterLockedError } from "../../core/mod.ts";

const BOOT = "8409da02-0f18-43e0-b44b-c2cc33e4ebff";
const STARTED = Date.parse("2026-12-03T10:00:00.000Z");
const NAMESPACE = "pid:[4026531836]";
const me: WriterIdentity = {
  pid: 100,
  hostname: "box",
  runtime: "node",
  bootId: BOOT,
  processStartedAt: new Date(STARTED).toISOString(),
  pidNamespace: NAMESPACE,
};
const text = (t: string) => ({ role: "user" as const, parts: [{ type: "text" as const, text: t }] });
const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

/** A host where `running` maps pid → start time (ms); every other pid is gone. */
function probeOf(running: Record<number, number>): OwnerProbe {
  return { processStartTime: (pid) => running[pid] ?? null };
}

function staleLock(overrides: Partial<LockOwner> = {}): LockOwner {
  return {
    pid: 4242,
    hostname: "box",
    boot_id: BOOT,
    pid_namespace: NAMESPACE,
    process_started_at: "2026-12-03T09:00:00.000Z",
    runtime: "node",
    operation: "append",
    lock_id: "lock_dead",
    created_at: "2026-12-03T09:30:00.000Z",
    ...overrides,
  };
}

async function setup(probe: OwnerProbe | undefined, lock: LockOwner) {
  const storage = new MemoryStorage();
  const reclaimed: StaleLockReclaimed[] = [];
  const sessions = new Sessions({ storage, identity: me, ...(probe ? { probe } : {}), onStaleLockReclaimed: (e) => reclaimed.push(e) });
  const session = await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
  await storage.replace(session.paths.lock, encode(lock));
  return { storage, sessions, session, reclaimed };
}

describe("dead-owner reclaim", () => {
  it("takes over the lock of a pid that no longer runs, reports it with the old content, and stamps boot_id, pid_namespace and process_started_at", async () => {
    const { storage, session, reclaimed } = await setup(probeOf({}), staleLock());
    await expect(session.append(text("after the crash"))).resolves.toMatchObject({ revision: 1 });
    expect(reclaimed).toEqual([{ refText: "a1/w1/s1", path: session.paths.lock, owner: staleLock() }]);
    expect(await storage.read(session.paths.lock)).toBeUndefined(); // the operation's own lock is gone too
    expect(await storage.list(session.paths.dir)).not.toContain("writer.lock.reclaim-lock_dead");
    // The lock this writer takes carries what the next reclaimer needs.
    let held: unknown;
    await session.mutate("probe", async () => {
      held = JSON.parse(new TextDecoder().decode(await storage.read(session.paths.lock)));
    });
    expect(held).toMatchObject({
      pid: 100,
      hostname: "box",
      boot_id: BOOT,
      pid_namespace: NAMESPACE,
      process_started_at: me.processStartedAt,
      runtime: "node",
      operation: "probe",
    });
  });

  it("takes over a reused pid: running, but started more than 2 s away from process_started_at", async () => {
    const lock = staleLock();
    const { session, reclaimed } = await setup(probeOf({ 4242: Date.parse(lock["process_started_at"] as string) + 2_001 }), lock);
    await session.append(text("reused pid"));
    expect(reclaimed.map((e) => e.owner["lock_id"])).toEqual(["lock_dead"]);
  });

  const honoured: Array<[string, OwnerProbe | undefined, LockOwner]> = [
    ["a live owner (same start within 2 s)", probeOf({ 4242: Date.parse("2026-12-03T09:00:01.999Z") }), staleLock()],
    ["a live owner without process_started_at", probeOf({ 4242: 1 }), staleLock({ process_started_at: undefined })],
    ["another host's lock", probeOf({}), staleLock({ hostname: "other" })],
    ["another boot's lock", probeOf({}), staleLock({ boot_id: "00000000-0000-4000-8000-000000000000" })],
    ["a lock without boot_id", probeOf({}), staleLock({ boot_id: undefined })],
    // Same host and boot, another PID namespace (a container with host networking): its pid 4242 is not ours.
    ["another PID namespace's lock", probeOf({}), staleLock({ pid_namespace: "pid:[4026532175]" })],
    ["a lock without pid_namespace (an older writer: its namespace cannot be told)", probeOf({}), staleLock({ pid_namespace: undefined })],
    ["any lock when the platform cannot tell (no probe)", undefined, staleLock()],
    ["any lock when the probe cannot tell this pid", { processStartTime: () => undefined }, staleLock()],
  ];
  for (const [name, probe, lock] of honoured) {
    it(`honours ${name}: WriterLockedError naming the holder, nothing written`, async () => {
      const clean = Object.fromEntries(Object.entries(lock).filter(([, v]) => v !== undefined)) as LockOwner;
      const { storage, session, reclaimed } = await setup(probe, clean);
      const error = await session.append(text("refused")).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(WriterLockedError);
      expect((error as WriterLockedError).owner).toEqual(clean);
      expect(reclaimed).toEqual([]);
      expect(JSON.parse(new TextDecoder().decode(await storage.read(session.paths.lock)))).toEqual(clean);
      expect(session.active).toEqual([]);
    });
  }

  const blind: Array<[string, WriterIdentity]> = [
    ["no boot id (a platform without one)", { pid: 1, hostname: "box", runtime: "node" }],
    ["no PID namespace (no /proc, or /proc of another namespace)", { pid: 1, hostname: "box", runtime: "node", bootId: BOOT }],
  ];
  for (const [name, identity] of blind) {
    it(`takes nothing over when this writer has ${name}`, async () => {
      const storage = new MemoryStorage();
      const sessions = new Sessions({ storage, identity, probe: probeOf({}) });
      const session = await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
      await storage.replace(session.paths.lock, encode(staleLock()));
      await expect(session.append(text("x"))).rejects.toBeInstanceOf(WriterLockedError);
    });
  }

  it("many writers reclaiming one stale lock at once: one writer at a time, every reclaim reported once", async () => {
    const storage = new MemoryStorage();
    const reclaimed: StaleLockReclaimed[] = [];
    // The twelve writers run (started at STARTED); the stale lock's pid does not.
    const livePids = probeOf(Object.fromEntries(Array.from({ length: 12 }, (_, i) => [200 + i, STARTED])));
    // One view of the store per writer, as separate processes have (the in-process busy check is per storage object).
    const view = (): MemoryStorage =>
      new Proxy(storage, {
        get: (target, key) => (typeof Reflect.get(target, key) === "function" ? Reflect.get(target, key).bind(target) : Reflect.get(target, key)),
      });
    const writers = Array.from(
      { length: 12 },
      (_, i) => new Sessions({ storage: view(), identity: { ...me, pid: 200 + i }, probe: livePids, onStaleLockReclaimed: (e) => reclaimed.push(e) }),
    );
    const created = await writers[0]!.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
    await storage.replace(created.paths.lock, encode(staleLock()));
    const handles = await Promise.all(writers.map((w) => w.open("a1/w1/s1")));
    let inside = 0;
    let most = 0;
    const outcomes = await Promise.allSettled(
      handles.map((h) =>
        h.mutate("exclusive", async () => {
          inside += 1;
          most = Math.max(most, inside);
          await new Promise((r) => setTimeout(r, 5));
          inside -= 1;
        })
      ),
    );
    expect(most).toBe(1);
    expect(outcomes.filter((o) => o.status === "fulfilled").length).toBeGreaterThanOrEqual(1);
    for (const o of outcomes) if (o.status === "rejected") expect(o.reason, String(o.reason)).toBeInstanceOf(WriterLockedError);
    expect(reclaimed).toHaveLength(1);
  });

  it("steps over the guard of a reclaimer that died half-way, and cleans the guards up", async () => {
    const { storage, session, reclaimed } = await setup(probeOf({}), staleLock());
    const deadReclaimer = staleLock({ pid: 4343, lock_id: "lock_reclaimer", operation: "append" });
    await storage.createExclusive(`${session.paths.lock}.reclaim-lock_dead`, encode(deadReclaimer));
    await session.append(text("after two crashes"));
    expect(reclaimed).toHaveLength(1);
    expect((await storage.list(session.paths.dir)).filter((n) => n.startsWith("writer.lock"))).toEqual([]);
  });

  it("a live reclaimer's guard is honoured: the session reads as locked meanwhile", async () => {
    const { storage, session, reclaimed } = await setup(probeOf({ 4343: STARTED }), staleLock());
    const liveReclaimer = staleLock({ pid: 4343, lock_id: "lock_reclaimer", process_started_at: new Date(STARTED).toISOString() });
    await storage.createExclusive(`${session.paths.lock}.reclaim-lock_dead`, encode(liveReclaimer));
    await expect(session.append(text("x"))).rejects.toBeInstanceOf(WriterLockedError);
    expect(reclaimed).toEqual([]);
  });

  it("fork and delete take a dead writer's lock over too", async () => {
    const { storage, sessions, session, reclaimed } = await setup(probeOf({}), staleLock());
    await session.append(text("one"));
    await storage.replace(session.paths.lock, encode(staleLock({ lock_id: "lock_dead2" })));
    await sessions.fork("a1/w1/s1", "s2");
    await storage.replace(session.paths.lock, encode(staleLock({ lock_id: "lock_dead3" })));
    await sessions.delete("a1/w1/s1");
    expect(reclaimed.map((e) => e.owner["lock_id"])).toEqual(["lock_dead", "lock_dead2", "lock_dead3"]);
  });
});
