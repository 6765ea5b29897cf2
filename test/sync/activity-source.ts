/**
 * What the tests of a sync's `updated_at` share (not a test file; docs/SYNC.md "Activity"): a
 * source whose clock is in 2020 and its sessions (one sent in parts), clocks for the other
 * sides, and a listing as each side orders it.
 */
import { ExtractiveSummarizer, type Sessions } from "../../core/mod.ts";

/** Requests small enough that the large session goes in parts (a create, segments, appends). */
export const PARTS = { batchBytes: 6 * 1024, batchMessages: 4 };

/** A clock that starts at `iso` and goes one second further at each reading: every write has a time of its own. */
export function steppingClock(iso: string): () => number {
  let now = Date.parse(iso);
  return () => (now += 1000);
}

/** The source's clock: still within one write (its messages and its `updated_at` at one time, as a real one is within a millisecond), a second further at each `tick`. */
export function sourceClock(): { clock: () => number; tick: () => void } {
  let now = Date.parse("2020-01-01T00:00:00.000Z");
  return { clock: () => now, tick: () => void (now += 1000) };
}

/** Each session's `updated_at`, in the listing's order (newest first). */
export async function listing(sessions: Sessions): Promise<[string, string][]> {
  return (await sessions.list()).map((m) => [`${m.agent_id}/${m.workspace_id}/${m.session_id}`, m.updated_at]);
}

/** Sessions of the source: a small one, one sent in parts (three segments and Active), another small one, written in that order. */
export async function writeSource(source: Sessions, tick: () => void): Promise<void> {
  const small = await source.create({ agentId: "a1", workspaceId: "w1", sessionId: "small" });
  tick();
  await small.append({ role: "user", parts: [{ type: "text", text: "hello" }] });
  tick();
  const large = await source.create({ agentId: "a1", workspaceId: "w1", sessionId: "large" });
  for (let round = 0; round < 3; round++) {
    for (let i = 0; i < 6; i++) {
      tick();
      await large.append({ role: "user", parts: [{ type: "text", text: `${round}.${i} ${"x".repeat(400)}` }] });
    }
    tick();
    await large.compact({ summarizer: new ExtractiveSummarizer() });
  }
  for (let i = 0; i < 6; i++) {
    tick();
    await large.append({ role: "user", parts: [{ type: "text", text: `after ${i} ${"y".repeat(400)}` }] });
  }
  tick();
  const later = await source.create({ agentId: "a1", workspaceId: "w1", sessionId: "later" });
  await later.append({ role: "user", parts: [{ type: "text", text: "later" }] });
}

/** Appends to `small` on the source: it becomes the newest, and goes to the others as an append. */
export async function appendLater(source: Sessions, tick: () => void): Promise<void> {
  tick();
  const small = await source.open("a1/w1/small");
  await small.append([{ role: "user", parts: [{ type: "text", text: "back online" }] }, { role: "assistant", parts: [{ type: "text", text: "ok" }] }]);
}
