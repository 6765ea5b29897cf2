/**
 * Option objects from a careless or plain-JavaScript host (docs/decisions.md "Unknown option fields are refused"): a
 * field the call does not know (`signl`, `dryrun`, `hols`) is an `InvalidInputError` naming it, where it was given,
 * the fields there are and the nearest of them, before anything is read or written; a field set to `undefined` passes.
 * And a run's or a compaction's `signal` must be an `AbortSignal` by shape (`aborted`, the listener calls): a polyfill's
 * passes and cancels, `{}` or `{ aborted: "no" }` is refused.
 */
import { describe, expect, test } from "vitest";
import { invalidInput } from "../support/invalid-input.ts";
import { ExtractiveSummarizer, MemoryStorage, Sessions } from "../../core/mod.ts";
import { ScriptedProvider } from "../../testing/mod.ts";

async function setup() {
  const sessions = new Sessions({ storage: new MemoryStorage() });
  const session = await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
  await session.append({ role: "user", parts: [{ type: "text", text: "hi" }] });
  return { sessions, session };
}

/** A signal that is not this realm's `AbortSignal`: what a polyfill (or another realm's) gives. */
class PolyfillSignal extends EventTarget {
  aborted = false;
  reason: unknown;
  abort(): void {
    this.aborted = true;
    this.reason = new Error("stopped");
    this.dispatchEvent(new Event("abort"));
  }
}

describe("a field the call does not know is refused, named with where it was given and the fields there are", () => {
  test("new Sessions(options), and its defaults", async () => {
    const error = await invalidInput(() => new Sessions({ storage: new MemoryStorage(), default: {} } as never));
    expect(error.message).toBe(
      'new Sessions(options): unknown field "default" (did you mean "defaults"?); the fields are storage, identity, clock, defaults, onCommit, onRemoved, probe, onStaleLockReclaimed, onLeaseLost',
    );
    expect(error.details).toMatchObject({ argument: "new Sessions(options)", field: "default", suggestion: "defaults" });
    const nested = await invalidInput(() => new Sessions({ storage: new MemoryStorage(), defaults: { contextWindw: 1000 } } as never));
    expect(nested.message).toMatch(/^new Sessions\(options\)\.defaults: unknown field "contextWindw" \(did you mean "contextWindow"\?\)/);
    const agent = await invalidInput(() => new Sessions({ storage: new MemoryStorage(), defaults: { agent: { instructions: "x" } } } as never));
    expect(agent.message).toMatch(/^new Sessions\(options\)\.defaults\.agent: unknown field "instructions" \(did you mean "instruction"\?\)/);
  });

  test("create's input and options, open's options: nothing is created, the session is not held", async () => {
    const { sessions } = await setup();
    const input = await invalidInput(() => sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s2", titel: "x" } as never));
    expect(input.message).toMatch(/^create\(input\): unknown field "titel" \(did you mean "title"\?\); the fields are agentId, workspaceId, sessionId, title,/);
    const options = await invalidInput(() => sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s3" }, { hols: true } as never));
    expect(options.message).toMatch(/^create\(input, options\): unknown field "hols" \(did you mean "hold"\?\)/);
    expect((await sessions.list()).map((m) => m.session_id)).toEqual(["s1"]);
    const open = await invalidInput(() => sessions.open("a1/w1/s1", { hols: true } as never));
    expect(open.message).toMatch(/^open\(ref, options\): unknown field "hols" \(did you mean "hold"\?\)/);
    const draftFlush = await invalidInput(() => sessions.open("a1/w1/s1", { draftFlush: { interval: 5 } } as never));
    expect(draftFlush.message).toMatch(/^open\(ref, options\)\.draftFlush: unknown field "interval" \(did you mean "intervalMs"\?\)/);
    // Not held: another handle commits at once.
    await (await sessions.open("a1/w1/s1")).append({ role: "user", parts: [{ type: "text", text: "again" }] });
  });

  test("list, fork and delete", async () => {
    const { sessions } = await setup();
    expect((await invalidInput(() => sessions.list({ agent: "a1" } as never))).message).toMatch(
      /^list\(options\): unknown field "agent" \(did you mean "agentId"\?\)/,
    );
    expect((await invalidInput(() => sessions.fork("a1/w1/s1", "s2", { onProgres: () => undefined } as never))).message).toMatch(
      /^fork\(source, newSessionId, options\): unknown field "onProgres" \(did you mean "onProgress"\?\)/,
    );
    expect((await invalidInput(() => sessions.delete("a1/w1/s1", { archive: true } as never))).message).toMatch(
      /^delete\(ref, options\): unknown field "archive" \(did you mean "archived"\?\)/,
    );
    expect((await sessions.list()).map((m) => m.session_id)).toEqual(["s1"]);
  });

  test("purge with a misspelt dryRun deletes nothing", async () => {
    const { sessions } = await setup();
    const error = await invalidInput(() => sessions.purge({ keepNewest: 0, dryrun: true } as never));
    expect(error.message).toMatch(/^purge\(options\): unknown field "dryrun" \(did you mean "dryRun"\?\)/);
    expect((await sessions.list()).map((m) => m.session_id)).toEqual(["s1"]);
    expect(await invalidInput(() => sessions.purge(undefined as never))).toMatchObject({ message: "purge(options): expected an object, found nothing" });
  });

  test("run: the run is refused before it starts, nothing is committed", async () => {
    const { session } = await setup();
    const run = session.run("hello", { provider: new ScriptedProvider([{ text: "a" }]), signl: new AbortController().signal } as never);
    const error = await invalidInput(() => run.result);
    expect(error.message).toBe('run(input, options): unknown field "signl" (did you mean "signal"?); the fields are provider, tools, signal, onEvent');
    expect(error.details).toEqual({ argument: "run(input, options)", field: "signl", known: ["provider", "tools", "signal", "onEvent"], suggestion: "signal" });
    expect(session.revision).toBe(1);
  });

  test("compact, repair and messages", async () => {
    const { session } = await setup();
    expect((await invalidInput(() => session.compact({ summariser: new ExtractiveSummarizer() } as never))).message).toMatch(
      /^compact\(options\): unknown field "summariser" \(did you mean "summarizer"\?\)/,
    );
    expect((await invalidInput(() => session.repair({ aply: true } as never))).message).toMatch(
      /^repair\(options\): unknown field "aply" \(did you mean "apply"\?\)/,
    );
    expect((await invalidInput(() => session.messages({ before: 2 } as never))).message).toMatch(
      /^messages\(options\): unknown field "before" \(did you mean "beforeSequence"\?\); the fields are beforeSequence$/,
    );
    expect(session.revision).toBe(1);
  });

  test("a field far from every known one gets no suggestion; one set to undefined passes", async () => {
    const { sessions, session } = await setup();
    const error = await invalidInput(() => sessions.list({ zzz: 1 } as never));
    expect(error.message).toBe('list(options): unknown field "zzz"; the fields are agentId, workspaceId, archived, onProblem, limit, cursor, readMeta');
    expect(error.details).not.toHaveProperty("suggestion");
    expect(await sessions.list({ zzz: undefined } as never)).toHaveLength(1);
    await session.run("x", { provider: new ScriptedProvider([{ text: "a" }]), extra: undefined } as never).result;
    expect(session.revision).toBe(2);
  });
});

describe("a signal is an AbortSignal by shape", () => {
  const notSignals: Record<string, unknown> = {
    "{}": {},
    '{ aborted: "no" }': { aborted: "no", addEventListener: () => undefined, removeEventListener: () => undefined },
    "an object without removeEventListener": { aborted: false, addEventListener: () => undefined },
  };
  for (const [name, signal] of Object.entries(notSignals)) {
    test(`run and compact refuse ${name}`, async () => {
      const { session } = await setup();
      const run = await invalidInput(() => session.run("hello", { provider: new ScriptedProvider([{ text: "a" }]), signal } as never).result);
      expect(run.message).toMatch(/^run\(input, options\)\.signal: expected an AbortSignal \{ aborted, addEventListener, removeEventListener \}, found /);
      const compact = await invalidInput(() => session.compact({ signal, summarizer: new ExtractiveSummarizer() } as never));
      expect(compact.message).toMatch(/^compact\(options\)\.signal: expected an AbortSignal/);
      expect(session.revision).toBe(1);
    });
  }

  test("a polyfill's signal (not an instance of AbortSignal) runs, and cancels a run", async () => {
    const { session } = await setup();
    const signal = new PolyfillSignal();
    await session.run("one", { provider: new ScriptedProvider([{ text: "a" }]), signal: signal as never }).result;
    expect(session.revision).toBe(2);
    // Aborted once the provider streams (and then waits for ever): the run stops with a cancellation.
    const run = session.run("two", {
      provider: new ScriptedProvider([{ text: "a long answer", hangAfterEvents: 1 }], { chunkSize: 4 }),
      signal: signal as never,
      onEvent: (e) => e.type === "text-delta" && signal.abort(),
    });
    expect(await run.result.catch((e: Error) => e.name)).toBe("CancelledError");
  });

  test("a polyfill's signal compacts, and an aborted one fails the compaction as cancelled, nothing changed", async () => {
    const { session } = await setup();
    await session.append([1, 2, 3].map((n) => ({ role: "user" as const, parts: [{ type: "text" as const, text: `m${n}` }] })));
    const aborted = new PolyfillSignal();
    aborted.abort();
    const refused = await session.compact({ signal: aborted as never, summarizer: new ExtractiveSummarizer() }).catch((e: Error) => e);
    expect(refused).toMatchObject({ name: "CompactionFailedError", message: expect.stringMatching(/cancelled/) });
    expect(session.revision).toBe(2);
    const outcome = await session.compact({ signal: new PolyfillSignal() as never, summarizer: new ExtractiveSummarizer() });
    expect(outcome.revision).toBe(3);
  });
});
