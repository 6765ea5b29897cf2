/**
 * A lease on Node keeps `active.jsonl` open (one write and one fsync per commit), through
 * the storage worker too, and never lets that handle outlive the file: a compaction that
 * replaces Active makes the next append open the new file. It keeps `writer.lock` open for
 * the fence's read too, and that handle never stands for a lock that changed behind it.
 */
import { readdirSync, readlinkSync, renameSync, unlinkSync, writeFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ExtractiveSummarizer, LeaseLostError } from "../../core/mod.ts";
import { openNodeSessions } from "../../runtime-node/mod.ts";

const roots: string[] = [];
afterEach(async () => {
  for (const root of roots.splice(0)) await rm(root, { recursive: true, force: true });
});

/** How many of this process's open files are `file` (Linux `/proc/self/fd`; threads share it). */
function openCount(file: string): number {
  let count = 0;
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`) === file) count += 1;
    } catch {
      // Closed while listed.
    }
  }
  return count;
}

/** A store under a fresh root and a session held in it; the caller closes the store. */
async function heldSession(worker: boolean) {
  const root = await mkdtemp(join(tmpdir(), "sessionfold-lease-"));
  roots.push(root);
  const store = await openNodeSessions({ root, worker });
  const session = await store.sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" }, { hold: true });
  return { root, store, session, lock: join(root, session.paths.lock) };
}

describe.runIf(process.platform === "linux")("leases on Node", () => {
  for (const worker of [false, true]) {
    it(`keeps active.jsonl open while held and reopens it after a compaction (worker: ${worker})`, async () => {
      const root = await mkdtemp(join(tmpdir(), "sessionfold-lease-"));
      roots.push(root);
      const store = await openNodeSessions({ root, worker, defaults: { summarizer: new ExtractiveSummarizer() } });
      try {
        const session = await store.sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" }, { hold: true });
        const active = join(root, session.paths.active);
        for (let i = 1; i <= 6; i++) await session.append({ role: "user", parts: [{ type: "text", text: `m${i}` }] });
        expect(openCount(active)).toBe(1);
        await session.compact();
        await session.append({ role: "user", parts: [{ type: "text", text: "after the compaction" }] });
        const lines = (await readFile(active, "utf8")).trimEnd().split("\n").map((l) => JSON.parse(l).parts[0].text);
        expect(lines).toEqual(["m4", "m5", "m6", "after the compaction"]);
        await session.close();
        expect(openCount(active)).toBe(0);
        const reopened = await store.sessions.open("a1/w1/s1");
        expect(reopened.diagnostics).toEqual([]);
        expect(reopened.meta.message_count).toBe(7);
      } finally {
        await store.close();
      }
    });
  }

  // Each way the lock can change behind the holder: rewritten in place (same file), replaced
  // by a rename (another file at the path), removed and taken anew (unlock --force, then another writer).
  const changes: Record<string, (lock: string, foreign: string) => void> = {
    "rewritten in place": (lock, foreign) => writeFileSync(lock, foreign),
    "replaced by a rename": (lock, foreign) => (writeFileSync(`${lock}.new`, foreign), renameSync(`${lock}.new`, lock)),
    "removed and taken anew": (lock, foreign) => (unlinkSync(lock), writeFileSync(lock, foreign, { flag: "wx" })),
  };
  for (const [change, apply] of Object.entries(changes)) {
    for (const worker of [false, true]) {
      it(`keeps writer.lock open for the fence while held, and sees the lock ${change} (worker: ${worker})`, async () => {
        const { root, store, session, lock } = await heldSession(worker);
        try {
          await session.append({ role: "user", parts: [{ type: "text", text: "m1" }] });
          expect(openCount(lock)).toBe(1);
          const owner = JSON.parse(await readFile(lock, "utf8"));
          apply(lock, `${JSON.stringify({ ...owner, lock_id: "lock_someone_else" }, null, 2)}\n`);
          const failed = await session.append({ role: "user", parts: [{ type: "text", text: "m2" }] }).catch((e: unknown) => e);
          expect(failed).toBeInstanceOf(LeaseLostError);
          expect(openCount(lock)).toBe(0);
          const lines = (await readFile(join(root, session.paths.active), "utf8")).trimEnd().split("\n");
          expect(lines.map((l) => JSON.parse(l).parts[0].text)).toEqual(["m1"]);
          // The other holder's lock is left alone.
          expect(JSON.parse(await readFile(lock, "utf8")).lock_id).toBe("lock_someone_else");
        } finally {
          await store.close();
        }
      });
    }
  }

  for (const worker of [false, true]) {
    it(`closes writer.lock's handle when the lease is released (worker: ${worker})`, async () => {
      const { root, store, session, lock } = await heldSession(worker);
      try {
        for (let i = 1; i <= 3; i++) await session.append({ role: "user", parts: [{ type: "text", text: `m${i}` }] });
        expect(openCount(lock)).toBe(1);
        await session.close();
        expect(openCount(lock)).toBe(0);
        expect(readdirSync(join(root, session.paths.dir))).not.toContain("writer.lock");
      } finally {
        await store.close();
      }
    });
  }
});
