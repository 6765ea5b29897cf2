/**
 * A lease on Node keeps `active.jsonl` open (one write and one fsync per commit), through
 * the storage worker too, and never lets that handle outlive the file: a compaction that
 * replaces Active makes the next append open the new file.
 */
import { readdirSync, readlinkSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ExtractiveSummarizer } from "../../core/mod.ts";
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
});
