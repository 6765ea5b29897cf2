/**
 * Helpers of the run() tests only: a created session, event helpers, on-disk readers and
 * a forced unlock. The helpers shared with the session engine tests (registry, clocks,
 * recording storage, snapshots, hand-written records) are in ../support/session.ts.
 * Not a test file itself.
 */
import type { MessageRecord, RunEvent, RunHandle, RunOutcome, Session, SessionOptions, SessionPaths, Sessions, StoragePort } from "../../core/mod.ts";
import { millisecondClock, P, readText, REF, registry } from "../support/session.ts";

/** Creates session a1/w1/s1 (optionally with an instruction) and returns it opened with `options`. */
export async function createSession(
  storage: StoragePort,
  options: SessionOptions = {},
  instruction?: string,
): Promise<{ sessions: Sessions; session: Session }> {
  const sessions = registry(storage, options, millisecondClock());
  const session = await sessions.create({ ...REF, ...(instruction !== undefined ? { instruction } : {}) }, options);
  return { sessions, session };
}

/** Collects every event of a run by iterating it; returns events and the settled result (or error). */
export async function drain(run: RunHandle): Promise<{ events: RunEvent[]; outcome?: RunOutcome; error?: unknown }> {
  const events: RunEvent[] = [];
  let error: unknown;
  try {
    for await (const event of run) events.push(event);
  } catch (thrown) {
    error = thrown;
  }
  if (error !== undefined) return { events, error };
  return { events, outcome: await run.result };
}

/** The events' types, with text deltas collapsed into one `text-delta*` entry per run of them. */
export function shape(events: readonly RunEvent[]): string[] {
  const out: string[] = [];
  for (const event of events) {
    const name = event.type === "text-delta" || event.type === "reasoning-delta" ? `${event.type}*` : event.type;
    if (out.at(-1) === name && name.endsWith("*")) continue;
    out.push(name);
  }
  return out;
}

/** The records of active.jsonl on storage. */
export async function activeOnDisk(storage: StoragePort, paths: SessionPaths = P): Promise<Record<string, unknown>[]> {
  const text = (await readText(storage, paths.active)) ?? "";
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** The text of a message's text parts, joined. */
export function textOf(message: Pick<MessageRecord, "parts">): string {
  return message.parts.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("");
}

/** A user-visible "unlock --force": removes a writer.lock a crashed process left behind. */
export async function forceUnlock(storage: StoragePort, paths: SessionPaths = P): Promise<void> {
  await storage.remove(paths.lock);
}
