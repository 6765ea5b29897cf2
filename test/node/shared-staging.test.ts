/**
 * Compactions through the storage worker stage their files from shared memory that the worker's client lends again
 * once the worker answered a later call (`StoragePort.stageLines`, `core/worker/staging-pool.ts`): after compactions one
 * after another and several at once on one store (more files staged at once than the pool lends), every session holds
 * its own messages, as a fresh open reads them, and a session compacted twice reads whole.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openNodeSessions } from "../../runtime-node/mod.ts";
import { fullHistory } from "../support/session.ts";
import { summarizer, user } from "../session/support.ts";

const roots: string[] = [];
afterEach(async () => {
  for (const root of roots.splice(0)) await rm(root, { recursive: true, force: true });
});

/** Session `s`'s messages: texts no other session has, of a length of their own. */
const textsOf = (s: number, count: number) => Array.from({ length: count }, (_, i) => `session ${s} message ${i + 1} ${"x".repeat(100 + 7 * s)}`);
const refOf = (s: number) => ({ agentId: "a1", workspaceId: "w1", sessionId: `s${s}` });

describe("compactions through the worker, their staged files in shared memory lent again", () => {
  it("write each session's own messages, one after another, several at once and twice", async () => {
    const root = await mkdtemp(join(tmpdir(), "sessionfold-shared-staging-"));
    roots.push(root);
    const store = await openNodeSessions({ root });
    expect(typeof store.storage.stageLines).toBe("function");
    const sessions = [];
    for (let s = 0; s < 7; s++) {
      const session = await store.sessions.create(refOf(s));
      await session.append(textsOf(s, 40).map((text, i) => user(text, `m_${s}_${i + 1}`)));
      sessions.push(session);
    }
    // One after another (the same memory each time), then four at once: eight stages, more than the pool lends.
    for (const session of sessions.slice(0, 3)) expect((await session.compact({ summarizer: summarizer() })).segment).toEqual({ start: 1, end: 20 });
    const outcomes = await Promise.all(sessions.slice(3).map((session) => session.compact({ summarizer: summarizer() })));
    expect(outcomes.map((outcome) => outcome.segment)).toEqual(Array(4).fill({ start: 1, end: 20 }));
    // Compacted again: the second segment's lines and the new Active come from the first compaction's Active.
    expect((await sessions[0]!.compact({ summarizer: summarizer() })).segment).toEqual({ start: 21, end: 30 });
    await store.close();
    const reader = await openNodeSessions({ root, worker: false });
    for (let s = 0; s < 7; s++) {
      const history = await fullHistory(await reader.sessions.open(refOf(s)));
      expect(history.map((message) => (message.parts[0] as { text: string }).text), `session ${s}`).toEqual(textsOf(s, 40));
    }
    await reader.close();
  });
});
