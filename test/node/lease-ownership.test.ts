/**
 * Who owns a session on Node, with real processes (docs/FORMAT.md `writer.lock`, "Fencing"):
 *
 * - a lease holder in its own PID namespace (`unshare --pid --fork`, as a container with host
 *   networking: same hostname and boot id) records pid 1; a writer of the host namespace sees
 *   the host's pid 1 with another start time, and before `pid_namespace` took the lock as a
 *   dead writer's (split brain). It must be honoured, with or without the child's own `/proc`;
 * - where `unshare` is not allowed, the same lock planted by hand (pid 1 of another namespace);
 * - a second real process taking the lock while a lease holder holds it (`unlock --force`,
 *   then the CLI and another lease holder): the holder's next commit writes nothing and fails
 *   typed, and every acknowledged message is read back exactly once.
 */
import { spawnSync } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type StaleLockReclaimed, WriterLockedError } from "../../core/mod.ts";
import { openNodeSessions } from "../../runtime-node/mod.ts";
import { linuxBootId, linuxPidNamespace } from "../../runtime-node/process-probe.ts";
import { cli, expectOk, json, sessionDir, tempDir } from "../cli/support.ts";
import { bundledLauncher, type ChildLauncher, rawHistory, type RunningChild, startChild } from "./process-support.ts";

const REF = "a1/w1/s1";
const linux = process.platform === "linux" && linuxBootId() !== undefined && linuxPidNamespace() !== undefined;
/** Whether this machine lets us start a process in a new PID namespace (root, or user namespaces). */
const canUnshare = linux && spawnSync("unshare", ["--pid", "--fork", "--mount-proc", "true"], { stdio: "ignore" }).status === 0;

let launcher: ChildLauncher & { dispose(): Promise<void> };
beforeAll(async () => {
  launcher = await bundledLauncher("lease-child");
}, 120_000);
afterAll(async () => {
  await launcher?.dispose();
});

/** The fixture, optionally behind `unshare` with `flags`. */
function leaseChild(root: string, unshare?: readonly string[]): RunningChild {
  const inner = launcher;
  const wrapped: ChildLauncher = unshare
    ? {
      kind: inner.kind,
      command: (args) => {
        const { file, args: rest } = inner.command(args);
        return { file: "unshare", args: [...unshare, file, ...rest] };
      },
    }
    : inner;
  return startChild(wrapped, [root, REF], "pipe");
}

function tell(child: RunningChild, line: string): void {
  child.process.stdin!.write(`${line}\n`);
}

const text = (t: string) => ({ role: "user" as const, parts: [{ type: "text" as const, text: t }] });

/** Every message of the session, read by an independent raw read: sequences and texts. */
async function everyMessage(root: string): Promise<{ sequences: number[]; problems: string[] }> {
  const raw = await rawHistory(sessionDir(root, REF));
  return { sequences: raw.messages.map((m) => m.sequence), problems: raw.problems };
}

describe.runIf(linux)("lease ownership with real processes", () => {
  const namespaces: Array<[string, string[]]> = [
    ["its own /proc (--mount-proc): the lock records pid 1 and its namespace", ["--pid", "--fork", "--mount-proc"]],
    ["the host's /proc: it cannot tell its namespace, so the lock records none", ["--pid", "--fork"]],
  ];
  for (const [name, flags] of namespaces) {
    it.runIf(canUnshare)(`a lease holder in its own PID namespace with ${name}; the host honours it`, async () => {
      const root = await tempDir();
      expectOk(await cli(root, ["new", REF]));
      const child = leaseChild(root, flags);
      try {
        const held = await child.next("held");
        const lock = held["lock"] as Record<string, unknown>;
        expect(lock).toMatchObject({ pid: 1, hostname: hostname(), boot_id: linuxBootId(), operation: "lease" });
        if (flags.includes("--mount-proc")) expect(lock["pid_namespace"]).toMatch(/^pid:\[\d+\]$/);
        else expect(lock).not.toHaveProperty("pid_namespace");
        expect(lock["pid_namespace"]).not.toBe(linuxPidNamespace());
        // The host's pid 1 runs, started long before the lock's process_started_at (if any): before
        // pid_namespace, exactly what a dead owner with a reused pid looked like.
        const reclaimed: StaleLockReclaimed[] = [];
        const store = await openNodeSessions({ root, onStaleLockReclaimed: (e) => reclaimed.push(e) });
        try {
          const session = await store.sessions.open(REF);
          const refused = await session.append(text("host, refused")).catch((e: unknown) => e);
          expect(refused).toBeInstanceOf(WriterLockedError);
          expect((refused as WriterLockedError).owner).toMatchObject({ pid: 1, lock_id: lock["lock_id"] });
          expect(reclaimed).toEqual([]);
          // The CLI (its own registry, as another process has) is refused too (exit 3), and the lock is untouched.
          const byCli = await cli(root, ["append", REF, "--role", "user", "--text", "cli, refused"]);
          expect(byCli.status).toBe(3);
          expect(JSON.parse(await readFile(join(sessionDir(root, REF), "writer.lock"), "utf8"))).toEqual(lock);
          tell(child, "append child 2");
          expect(await child.next("append")).toMatchObject({ result: "landed", sequence: 2 });
          tell(child, "close");
          expect((await child.closed).code).toBe(0);
          await session.reload();
          await expect(session.append(text("host 3"))).resolves.toMatchObject({ sequences: [3] });
        } finally {
          await store.close();
        }
        expect(await everyMessage(root)).toEqual({ sequences: [1, 2, 3], problems: [] });
      } finally {
        child.process.kill("SIGKILL");
        await child.closed;
      }
    });
  }

  it("a lock recorded from another PID namespace (pid 1, as a container writes it) is honoured though the host's pid 1 runs", async () => {
    const root = await tempDir();
    expectOk(await cli(root, ["new", REF]));
    const lockPath = join(sessionDir(root, REF), "writer.lock");
    const lock = {
      pid: 1,
      hostname: hostname(),
      boot_id: linuxBootId(),
      pid_namespace: "pid:[4026599999]",
      process_started_at: new Date().toISOString(),
      runtime: "node",
      operation: "lease",
      lock_id: "lock_container",
      created_at: new Date().toISOString(),
    };
    await writeFile(lockPath, JSON.stringify(lock));
    const refused = await cli(root, ["--json", "append", REF, "--role", "user", "--text", "refused"]);
    expect(refused.status).toBe(3);
    expect(json(refused)).toMatchObject({ error: { code: "writer-locked", owner: { pid: 1, lock_id: "lock_container" } } });
    expect(JSON.parse(await readFile(lockPath, "utf8"))).toEqual(lock);
  });

  it("a second process takes the lock while a lease holder holds it: the holder's next commit writes nothing, typed, and every message is read once", async () => {
    const root = await tempDir();
    expectOk(await cli(root, ["new", REF]));
    const first = leaseChild(root);
    let second: RunningChild | undefined;
    try {
      const held = await first.next("held");
      const firstLock = held["lock"] as { lock_id: string };
      // Someone decides the holder is gone: `unlock --force`, then a commit of the CLI.
      expect(json(expectOk(await cli(root, ["--json", "unlock", REF, "--force"])))).toMatchObject({ lock_id: firstLock.lock_id });
      expect(json(expectOk(await cli(root, ["--json", "append", REF, "--role", "user", "--text", "cli 2"])))).toMatchObject({ sequence: 2 });
      tell(first, "append first, would be a second sequence 2");
      expect(await first.next("append")).toMatchObject({ result: "failed", name: "LeaseLostError", code: "writer-locked" });
      expect(await first.next("lease-lost")).toMatchObject({ refText: REF, lockId: firstLock.lock_id });
      // Another lease holder, a real process, takes the session (the lock was free).
      second = leaseChild(root);
      const secondHeld = await second.next("held");
      expect(secondHeld).toMatchObject({ sequence: 3 });
      // The first one holds nothing now: its next write takes a lock per operation and finds the second's.
      tell(first, "append first, refused");
      const refused = await first.next("append", 2);
      expect(refused).toMatchObject({ result: "failed", name: "WriterLockedError", code: "writer-locked" });
      expect(refused["message"]).toContain(`pid ${second.pid}`);
      tell(second, "close");
      expect((await second.closed).code).toBe(0);
      // The second holder's close brought meta.json up to date: the first reads it, then commits.
      tell(first, "reload");
      await first.next("reloaded");
      tell(first, "append first 4");
      expect(await first.next("append", 3)).toMatchObject({ result: "landed", sequence: 4 });
      tell(first, "close");
      expect((await first.closed).code).toBe(0);
      expect(first.reports.filter((r) => r.type === "lease-lost")).toHaveLength(1);
    } finally {
      first.process.kill("SIGKILL");
      second?.process.kill("SIGKILL");
      await first.closed;
      await second?.closed;
    }
    expect(await everyMessage(root)).toEqual({ sequences: [1, 2, 3, 4], problems: [] });
    const verified = json(await cli(root, ["--json", "verify", REF]));
    expect(verified).toMatchObject({ sessions: [{ ref: REF, ok: true, diagnostics: [] }] });
  });
});
