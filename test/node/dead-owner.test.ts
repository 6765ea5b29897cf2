/**
 * Dead-owner reclaim with real processes on Linux: the lock of a process that has exited is
 * taken over (through the storage worker, and by the CLI, which says so on stderr and in its
 * JSON); the lock of a process that runs is honoured until it dies. Platforms without a boot
 * id take nothing over (checked in test/session/dead-owner.test.ts).
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { type StaleLockReclaimed, WriterLockedError } from "../../core/mod.ts";
import { openNodeSessions } from "../../runtime-node/mod.ts";
import { linuxBootId, linuxPidNamespace, linuxProcessStartTime } from "../../runtime-node/process-probe.ts";
import { cli, expectOk, json, sessionDir } from "../cli/support.ts";

const roots: string[] = [];
afterEach(async () => {
  for (const root of roots.splice(0)) await rm(root, { recursive: true, force: true });
});

/** A child that runs until killed, and how to wait for its end. */
function runningChild() {
  const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return { pid: child.pid!, kill: async () => (child.kill("SIGKILL"), await exited) };
}

function lockOf(pid: number, startedAt: number | null | undefined, lockId: string): string {
  return JSON.stringify({
    pid,
    hostname: hostname(),
    boot_id: linuxBootId(),
    pid_namespace: linuxPidNamespace(),
    process_started_at: new Date(typeof startedAt === "number" ? startedAt : Date.now()).toISOString(),
    runtime: "node",
    operation: "run",
    lock_id: lockId,
    created_at: new Date().toISOString(),
  });
}

/** A fresh store (removed after the test) with one session a1/w1/s1, recording the locks it takes over. */
async function storeWithSession(options: { worker?: boolean } = {}) {
  const root = await mkdtemp(join(tmpdir(), "sessionfold-dead-owner-"));
  roots.push(root);
  const reclaimed: StaleLockReclaimed[] = [];
  const store = await openNodeSessions({ root, ...options, onStaleLockReclaimed: (e) => reclaimed.push(e) });
  const session = await store.sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" }).catch(async (error: unknown) => {
    await store.close();
    throw error;
  });
  return { root, reclaimed, store, session };
}

describe.runIf(process.platform === "linux" && linuxBootId() !== undefined)("dead-owner reclaim with real processes", () => {
  it("honours a running owner, and takes its lock over once it was killed (through the storage worker)", async () => {
    const { root, reclaimed, store, session } = await storeWithSession();
    try {
      const child = runningChild();
      await writeFile(join(root, session.paths.lock), lockOf(child.pid, linuxProcessStartTime(child.pid), "lock_child"));
      const refused = await session.append({ role: "user", parts: [{ type: "text", text: "refused" }] }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(WriterLockedError);
      expect((refused as WriterLockedError).owner?.pid).toBe(child.pid);
      await child.kill();
      await expect(session.append({ role: "user", parts: [{ type: "text", text: "after the kill" }] })).resolves.toMatchObject({ revision: 1 });
      expect(reclaimed.map((e) => [e.refText, e.owner.pid, e.owner["lock_id"]])).toEqual([["a1/w1/s1", child.pid, "lock_child"]]);
    } finally {
      await store.close();
    }
  });

  it("takes over a reused pid: a running process whose start is far from the lock's", async () => {
    const { root, reclaimed, store, session } = await storeWithSession({ worker: false });
    try {
      // This very process, but "started" an hour before it did: the pid was reused.
      await writeFile(join(root, session.paths.lock), lockOf(process.pid, Date.now() - 3_600_000, "lock_reused"));
      await session.append({ role: "user", parts: [{ type: "text", text: "x" }] });
      expect(reclaimed.map((e) => e.owner["lock_id"])).toEqual(["lock_reused"]);
    } finally {
      await store.close();
    }
  });

  it("the CLI takes a dead writer's lock over and says so on stderr and in --json", async () => {
    const root = await mkdtemp(join(tmpdir(), "sessionfold-dead-owner-"));
    roots.push(root);
    expectOk(await cli(root, ["new", "a1/w1/s1"]));
    const child = runningChild();
    const startedAt = linuxProcessStartTime(child.pid);
    await child.kill();
    const lockPath = join(sessionDir(root, "a1/w1/s1"), "writer.lock");
    await writeFile(lockPath, lockOf(child.pid, startedAt, "lock_gone"));
    const result = expectOk(await cli(root, ["--json", "append", "a1/w1/s1", "--role", "user", "--text", "hello"]));
    expect(json(result)).toMatchObject({
      sequence: 1,
      revision: 1,
      stale_locks_reclaimed: [{ ref: "a1/w1/s1", owner: { pid: child.pid, lock_id: "lock_gone" } }],
    });
    expect(result.stderr).toContain(`note stale_lock_reclaimed: a1/w1/s1: took over the writer.lock of a dead writer (pid ${child.pid} on ${hostname()}`);
    await expect(readFile(lockPath)).rejects.toMatchObject({ code: "ENOENT" });
  });
});

/**
 * README.md "Node: durable files in a worker thread" says what happens to a crashed writer's
 * lock; each case it names is run here, so the README and the behaviour cannot drift apart.
 */
describe.runIf(process.platform === "linux" && linuxBootId() !== undefined)("the README's account of a crashed writer's lock", () => {
  const readme = readFileSync(fileURLToPath(new URL("../../README.md", import.meta.url)), "utf8");
  const claim = readme.slice(readme.indexOf("A crashed writer's `writer.lock`"), readme.indexOf("way to remove it.") + "way to remove it.".length);

  it("the README states the rule, the hook and the way out", () => {
    for (
      const phrase of [
        "taken over by the next writer",
        "this host during this boot",
        "no longer runs",
        "`onStaleLockReclaimed`",
        "`WriterLockedError`",
        "`sessionfold unlock REF --force`",
        "of another host or of an earlier boot",
      ]
    ) {
      expect(claim, phrase).toContain(phrase);
    }
  });

  it("and it happens so: a dead writer of this host and boot is taken over and reported; a running one, another host's and an earlier boot's are refused until unlock --force", async () => {
    const { root, reclaimed, store, session } = await storeWithSession({ worker: false });
    try {
      const lockPath = join(root, session.paths.lock);
      const append = (text: string) => session.append({ role: "user", parts: [{ type: "text", text }] });

      const dead = runningChild();
      const deadStart = linuxProcessStartTime(dead.pid);
      await dead.kill();
      await writeFile(lockPath, lockOf(dead.pid, deadStart, "lock_dead"));
      await expect(append("after a crash")).resolves.toMatchObject({ revision: 1 });
      expect(reclaimed).toEqual([{ refText: "a1/w1/s1", path: session.paths.lock, owner: expect.objectContaining({ pid: dead.pid, lock_id: "lock_dead" }) }]);

      const alive = runningChild();
      try {
        const living = JSON.parse(lockOf(alive.pid, linuxProcessStartTime(alive.pid), "lock_alive")) as Record<string, unknown>;
        const gone = JSON.parse(lockOf(dead.pid, deadStart, "lock_gone")) as Record<string, unknown>;
        const refusedLocks: Record<string, Record<string, unknown>> = {
          running: living,
          "another host": { ...gone, hostname: `not-${hostname()}` },
          "an earlier boot": { ...gone, boot_id: "00000000-0000-4000-8000-000000000000" },
        };
        for (const [what, lock] of Object.entries(refusedLocks)) {
          await writeFile(lockPath, JSON.stringify(lock));
          const refused = await append(what).catch((e: unknown) => e);
          expect(refused, what).toBeInstanceOf(WriterLockedError);
          expect((refused as WriterLockedError).owner, what).toMatchObject({ lock_id: lock["lock_id"], hostname: lock["hostname"] });
          expectOk(await cli(root, ["unlock", "a1/w1/s1", "--force"]));
          await expect(append(`${what}, after unlock --force`)).resolves.toBeDefined();
        }
      } finally {
        await alive.kill();
      }
      expect(reclaimed).toHaveLength(1);
    } finally {
      await store.close();
    }
  });
});
