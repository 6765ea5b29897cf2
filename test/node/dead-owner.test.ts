/**
 * Dead-owner reclaim with real processes on Linux: the lock of a process that has exited is
 * taken over (through the storage worker, and by the CLI, which says so on stderr and in its
 * JSON); the lock of a process that runs is honoured until it dies. Platforms without a boot
 * id take nothing over (checked in test/session/dead-owner.test.ts).
 */
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { WriterLockedError, type StaleLockReclaimed } from "../../core/mod.ts";
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

describe.runIf(process.platform === "linux" && linuxBootId() !== undefined)("dead-owner reclaim with real processes", () => {
  it("honours a running owner, and takes its lock over once it was killed (through the storage worker)", async () => {
    const root = await mkdtemp(join(tmpdir(), "sessionfold-dead-owner-"));
    roots.push(root);
    const reclaimed: StaleLockReclaimed[] = [];
    const store = await openNodeSessions({ root, onStaleLockReclaimed: (e) => reclaimed.push(e) });
    try {
      const session = await store.sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
      const child = runningChild();
      await writeFile(join(root, session.paths.lock), lockOf(child.pid, linuxProcessStartTime(child.pid), "lock_child"));
      const refused = await session.append({ role: "user", parts: [{ type: "text", text: "refused" }] }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(WriterLockedError);
      expect((refused as WriterLockedError).owner?.pid).toBe(child.pid);
      await child.kill();
      await expect(session.append({ role: "user", parts: [{ type: "text", text: "after the kill" }] })).resolves.toMatchObject({ revision: 1 });
      expect(reclaimed.map((e) => [e.ref, e.owner.pid, e.owner["lock_id"]])).toEqual([["a1/w1/s1", child.pid, "lock_child"]]);
    } finally {
      await store.close();
    }
  });

  it("takes over a reused pid: a running process whose start is far from the lock's", async () => {
    const root = await mkdtemp(join(tmpdir(), "sessionfold-dead-owner-"));
    roots.push(root);
    const reclaimed: StaleLockReclaimed[] = [];
    const store = await openNodeSessions({ root, worker: false, onStaleLockReclaimed: (e) => reclaimed.push(e) });
    try {
      const session = await store.sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
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
    expect(json(result)).toMatchObject({ sequence: 1, revision: 1, stale_locks_reclaimed: [{ ref: "a1/w1/s1", owner: { pid: child.pid, lock_id: "lock_gone" } }] });
    expect(result.stderr).toContain(`note stale_lock_reclaimed: a1/w1/s1: took over the writer.lock of a dead writer (pid ${child.pid} on ${hostname()}`);
    await expect(readFile(lockPath)).rejects.toMatchObject({ code: "ENOENT" });
  });
});
