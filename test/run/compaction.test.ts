/**
 * run() and compaction: the default real-usage trigger at 95% of the context window,
 * turn-boundary selection near floor(n/2) with one summarizer call, validation of the next usage (deep
 * compaction above 50%), the in-memory fold after context-length refusals, the opt-in
 * policies, and repeated compaction staying bounded.
 */
import { describe, expect, it } from "vitest";
import {
  afterMessages,
  atContextTokens,
  type CompactionOutcome,
  ContextLengthExceededError,
  ContextOverflowError,
  estimateModelInputTokens,
  estimateTokens,
  InvalidInputError,
  MemoryStorage,
  type NewMessage,
  ProviderError,
  realUsage,
  type RunEvent,
  type SessionOptions,
  type Tool,
  type Usage,
} from "../../core/mod.ts";
import { ScriptedProvider, ScriptedSummarizer } from "../../testing/mod.ts";
import { expectContiguous, fullHistory, metaOnDisk, millisecondClock, P, readText, REF, registry, rejection, snapshot } from "../support/session.ts";
import { activeOnDisk, createSession, drain, shape, textOf } from "./support.ts";
import { foldNote, toMessageRecord } from "../../core/internal.ts";

const WINDOW = 1000;

function exchange(count: number, usageOnLast?: Usage): NewMessage[] {
  const out: NewMessage[] = [];
  for (let i = 1; i <= count; i++) {
    const role = i % 2 === 1 ? "user" : "assistant";
    out.push({ role, parts: [{ type: "text", text: `${role} message ${i}` }], ...(i === count && usageOnLast ? { usage: usageOnLast } : {}) });
  }
  return out;
}

/** A session with `count` committed messages (revision 1); the last carries `usage`. */
async function sessionWith(count: number, usage: Usage | undefined, options: SessionOptions = {}) {
  const storage = new MemoryStorage();
  const summarizer = options.summarizer ?? new ScriptedSummarizer();
  const { sessions, session } = await createSession(storage, { summarizer, contextWindow: WINDOW, ...options });
  if (count > 0) await session.append(exchange(count, usage));
  return { storage, sessions, session, summarizer: summarizer as ScriptedSummarizer };
}

const compactionEvents = (events: readonly RunEvent[]) => events.filter((e) => e.type.startsWith("compaction-"));
const completed = (events: readonly RunEvent[]) =>
  events.filter((e): e is Extract<RunEvent, { type: "compaction-completed" }> => e.type === "compaction-completed").map((e) => e.outcome);

const echoTool: Tool = { name: "echo", execute: (input) => input };

describe("default policy: real usage ≥ 95% of the context window", () => {
  it("the options resolve to realUsage() when a summarizer and a window are given, else manual", async () => {
    const { session } = await sessionWith(0, undefined);
    expect(session.options.policy).toEqual(realUsage());
    const { session: manual } = await createSession(new MemoryStorage(), { summarizer: new ScriptedSummarizer() });
    expect(manual.options.policy).toEqual({ kind: "manual" });
  });

  it.each(
    [
      ["949 = 900 + 49 (no total)", { input_tokens: 900, output_tokens: 49 }, false],
      ["950 = 900 + 50 (no total)", { input_tokens: 900, output_tokens: 50 }, true],
      ["total 949 wins over 950 + 50", { input_tokens: 950, output_tokens: 50, total_tokens: 949 }, false],
      ["total 950 wins over 10 + 10", { input_tokens: 10, output_tokens: 10, total_tokens: 950 }, true],
    ] as const,
  )("a previous run's usage of %s → compaction: %s", async (_name, usage, expected) => {
    const { session, summarizer } = await sessionWith(4, usage);
    const provider = ScriptedProvider.replies("ok");
    const { events, outcome } = await drain(session.run("next", { provider }));
    expect(summarizer.calls).toHaveLength(expected ? 1 : 0);
    if (expected) {
      expect(shape(events)).toEqual(["compaction-started", "compaction-completed", "step-started", "text-delta*", "usage", "committed"]);
      expect((events[0] as { reason: string }).reason).toBe(`usage 950 tokens reached 95% of the 1000-token context window`);
      expect(outcome!.revision).toBe(3);
      expect(await session.segments()).toEqual([{ start: 1, end: 2 }]);
    } else {
      expect(compactionEvents(events)).toEqual([]);
      expect(outcome!.revision).toBe(2);
      expect(await session.segments()).toEqual([]);
    }
  });

  it.each([
    [949, false],
    [950, true],
  ])("a step's usage of %i inside the run → compaction before the next step: %s", async (tokens, expected) => {
    const { session, summarizer } = await sessionWith(4, undefined);
    const provider = new ScriptedProvider([
      { toolCalls: [{ name: "echo", input: { x: 1 } }], usage: { input_tokens: tokens - 10, output_tokens: 10 } },
      { text: "done", usage: { input_tokens: 100, output_tokens: 5 } },
    ]);
    const { events, outcome } = await drain(session.run("go", { provider, tools: [echoTool] }));
    const types = events.map((e) => e.type);
    if (expected) {
      expect(types.indexOf("compaction-started")).toBeGreaterThan(types.indexOf("tool-result"));
      expect(types.indexOf("compaction-completed")).toBeLessThan(types.lastIndexOf("step-started"));
      expect(summarizer.calls).toHaveLength(1);
      // Only the committed Active (4 messages) is planned: the run's candidate stays out.
      expect(summarizer.calls[0]!.messages.map((m) => m.sequence)).toEqual([1, 2]);
      expect(outcome!.revision).toBe(3);
      expect(outcome!.messages.map((m) => m.sequence)).toEqual([5, 6, 7]);
      expect(provider.requests[1]!.summary).toBe(session.summary!.text);
      expect(provider.requests[1]!.messages.map((m) => m.sequence)).toEqual([3, 4, 5, 6]);
    } else {
      expect(compactionEvents(events)).toEqual([]);
      expect(summarizer.calls).toHaveLength(0);
      expect(outcome!.revision).toBe(2);
    }
  });

  it("a usage from before the last compaction neither triggers nor validates", async () => {
    const { session, summarizer } = await sessionWith(4, { input_tokens: 990, output_tokens: 5 });
    await session.compact();
    expect(session.revision).toBe(2);
    // The 995-token usage of sequence 4 predates the compaction: no new compaction.
    const { events } = await drain(session.run("next", { provider: new ScriptedProvider([{ text: "ok", usage: { input_tokens: 300, output_tokens: 1 } }]) }));
    expect(compactionEvents(events)).toEqual([]);
    expect(summarizer.calls).toHaveLength(1);
  });
});

describe("what a compaction in a run does", () => {
  it("selects the oldest committed messages up to the turn boundary nearest floor(n/2) (4 of 7: floor is 3, a reply), makes one summarizer call, and the next step reads the summary", async () => {
    const { storage, session, summarizer } = await sessionWith(7, { input_tokens: 960, output_tokens: 1 });
    const provider = ScriptedProvider.replies("after compaction");
    const { events, outcome } = await drain(session.run("question 8", { provider }));
    expect(summarizer.calls).toHaveLength(1);
    expect(summarizer.calls[0]!.previousSummary).toBeNull();
    expect(summarizer.calls[0]!.messages.map((m) => m.sequence)).toEqual([1, 2, 3, 4]);
    const [done] = completed(events);
    expect(done).toEqual(
      {
        revision: 2,
        removedMessages: 4,
        keptMessages: 3,
        segment: { start: 1, end: 4 },
        beforeTokens: done!.beforeTokens,
        afterTokens: done!.afterTokens,
        summaryUsage: done!.summaryUsage!,
        summaryChars: session.summary!.text.length,
      } satisfies CompactionOutcome,
    );
    expect(done!.afterTokens).toBeLessThan(done!.beforeTokens);
    // The segment on storage: messages 1..4 and the cumulative footer.
    const segment = (await readText(storage, `${P.segmentsDir}/000000000001-000000000004.jsonl`))!.trimEnd().split("\n").map((l) => JSON.parse(l));
    expect(segment.map((r) => r.record_type)).toEqual(["message", "message", "message", "message", "summary"]);
    expect(segment.slice(0, 4).map((r) => r.sequence)).toEqual([1, 2, 3, 4]);
    expect(segment.slice(0, 4).some((r) => "batch_size" in r)).toBe(false);
    expect(segment[4]).toMatchObject({ through_sequence: 4, text: session.summary!.text, session_id: "s1" });
    // The step's input: summary + the kept half + the new user message.
    const request = provider.requests[0]!;
    expect(request.summary).toBe(session.summary!.text);
    expect(request.summary).toContain("Summary through #4");
    expect(request.messages.map((m) => m.sequence)).toEqual([5, 6, 7, 8]);
    expect(textOf(request.messages.at(-1)!)).toBe("question 8");
    // The run's commit comes after the compaction's.
    expect(outcome!.revision).toBe(3);
    expect((await activeOnDisk(storage)).map((r) => r["sequence"])).toEqual([5, 6, 7, 8, 9]);
    const meta = await metaOnDisk(storage);
    expect(meta["revision"]).toBe(3);
    expect(meta["message_count"]).toBe(9);
    expect(meta["compaction"]).toMatchObject({ completed: 1, removed_messages: 4, last_compacted_sequence: 7 });
  });

  it("the next compaction is cumulative: it gets the previous summary and the oldest half of the then-current Active", async () => {
    const { session, summarizer } = await sessionWith(7, { input_tokens: 960, output_tokens: 1 });
    await session.run("question 8", { provider: new ScriptedProvider([{ text: "a", usage: { input_tokens: 400, output_tokens: 1 } }]) }).result;
    const first = session.summary!.text;
    await session.run("question 10", { provider: new ScriptedProvider([{ text: "b", usage: { input_tokens: 955, output_tokens: 1 } }]) }).result;
    const { events } = await drain(session.run("question 12", { provider: ScriptedProvider.replies("c") }));
    expect(completed(events)).toHaveLength(1);
    expect(summarizer.calls).toHaveLength(2);
    expect(summarizer.calls[1]!.previousSummary).toBe(first);
    // Active was 5..11 (7 messages, the user messages 7 and 8 in a row): the turn boundary at floor(7/2) = 3 selects 5..7.
    expect(summarizer.calls[1]!.messages.map((m) => m.sequence)).toEqual([5, 6, 7]);
    expect(await session.segments()).toEqual([
      { start: 1, end: 4 },
      { start: 5, end: 7 },
    ]);
    expect(session.summary!.text).toContain("Earlier: Summary through #4");
  });

  it.each([
    [501, true],
    [500, false],
  ])("inside a run: the first usage after a compaction of %i/1000 → deep compaction before the following step: %s", async (tokens, deep) => {
    const { session, summarizer } = await sessionWith(8, { input_tokens: 960, output_tokens: 1 });
    const provider = new ScriptedProvider([
      { toolCalls: [{ name: "echo", input: {} }], usage: { input_tokens: tokens, output_tokens: 0 } },
      { text: "done", usage: { input_tokens: 100, output_tokens: 0 } },
    ]);
    const { events } = await drain(session.run("go", { provider, tools: [echoTool] }));
    expect(summarizer.calls).toHaveLength(deep ? 2 : 1);
    expect(completed(events).map((o) => o.segment)).toEqual(deep ? [{ start: 1, end: 4 }, { start: 5, end: 6 }] : [{ start: 1, end: 4 }]);
    if (deep) {
      const started = events.filter((e) => e.type === "compaction-started") as { reason: string }[];
      expect(started[1]!.reason).toContain("deep compaction");
      expect(shape(events).slice(0, 8)).toEqual([
        "compaction-started",
        "compaction-completed",
        "step-started",
        "tool-call",
        "usage",
        "tool-result",
        "compaction-started",
        "compaction-completed",
      ]);
      expect(provider.requests[1]!.summary).toBe(session.summary!.text);
    }
  });

  it.each([
    [501, true],
    [500, false],
  ])("across runs: a run's last usage of %i/1000 after its compaction → the next run compacts first: %s", async (tokens, deep) => {
    const { session, summarizer } = await sessionWith(8, { input_tokens: 960, output_tokens: 1 });
    await session.run("first", { provider: new ScriptedProvider([{ text: "a", usage: { input_tokens: tokens, output_tokens: 0 } }]) }).result;
    expect(summarizer.calls).toHaveLength(1);
    const { events } = await drain(session.run("second", { provider: new ScriptedProvider([{ text: "b", usage: { input_tokens: 100, output_tokens: 0 } }]) }));
    expect(summarizer.calls).toHaveLength(deep ? 2 : 1);
    // Active 5..10: floor(6/2) = 3 is a reply; the turn boundaries 2 and 4 tie → 4.
    expect(completed(events).map((o) => o.segment)).toEqual(deep ? [{ start: 5, end: 8 }] : []);
    // Once the deep compaction happened and validated (100 ≤ 500), nothing more is due.
    const { events: third } = await drain(session.run("third", { provider: ScriptedProvider.replies("c") }));
    expect(compactionEvents(third)).toEqual([]);
  });

  it("a failed automatic compaction emits compaction-failed, changes nothing and is not retried in the same run", async () => {
    const summarizer = ScriptedSummarizer.failing(new Error("summary model down"));
    const { storage, session } = await sessionWith(4, { input_tokens: 960, output_tokens: 1 }, { summarizer });
    const provider = new ScriptedProvider([
      { toolCalls: [{ name: "echo", input: {} }], usage: { input_tokens: 990, output_tokens: 1 } },
      { text: "still fine" },
    ]);
    const { events, outcome } = await drain(session.run("go", { provider, tools: [echoTool] }));
    expect(compactionEvents(events).map((e) => e.type)).toEqual(["compaction-started", "compaction-failed"]);
    expect((compactionEvents(events)[1] as { message: string }).message).toContain("summary model down");
    expect(summarizer.calls).toHaveLength(1);
    expect(outcome!.revision).toBe(2);
    expect(await storage.list(P.segmentsDir)).toEqual([]);
    expect(session.active.map((m) => m.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });
});

describe("context-length refusals fold the input in memory", () => {
  it("one refusal: the input is folded and retried; stored messages are untouched", async () => {
    const { storage, session } = await sessionWith(8, undefined);
    const provider = new ScriptedProvider([{ fail: "context-length" }, { text: "short answer" }]);
    const { events, outcome } = await drain(session.run("question 9", { provider }));
    expect(provider.calls).toBe(2);
    expect(shape(events)).toEqual(["step-started", "context-folded", "text-delta*", "usage", "committed"]);
    const full = provider.requests[0]!;
    const folded = provider.requests[1]!;
    expect(full.messages.map((m) => m.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // The oldest floor(9/2) = 4 are left out; the kept half starts at a user message (5).
    expect(folded.messages.map((m) => m.sequence)).toEqual([5, 6, 7, 8, 9]);
    expect(folded.summary).toBe(foldNote(4));
    expect(events[1]).toEqual({ type: "context-folded", depth: 1, droppedMessages: 4 });
    expect(outcome!.revision).toBe(2);
    expect(await session.segments()).toEqual([]);
    expect((await activeOnDisk(storage)).map((r) => r["sequence"])).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it("the provider's own context window refuses the full input and accepts the folded one", async () => {
    const { session } = await sessionWith(8, undefined, { agent: { instruction: "Be brief." } });
    const long = "x".repeat(400);
    await session.append([
      { role: "user", parts: [{ type: "text", text: long }] },
      { role: "assistant", parts: [{ type: "text", text: long }] },
    ]);
    const user = toMessageRecord({ role: "user", parts: [{ type: "text", text: "q" }] }, Date.now);
    const full = estimateModelInputTokens({ system: "Be brief.", summary: null, messages: [...session.active, user] });
    const provider = new ScriptedProvider([{ text: "ok" }], { contextWindow: full - 1 });
    const { events } = await drain(session.run("q", { provider }));
    expect(provider.calls).toBe(2);
    expect(estimateModelInputTokens(provider.requests[0]!)).toBe(full);
    expect(estimateModelInputTokens(provider.requests[1]!)).toBeLessThan(full);
    expect(events.filter((e) => e.type === "context-folded")).toEqual([{ type: "context-folded", depth: 1, droppedMessages: 6 }]);
    expect(session.active).toHaveLength(12);
  });

  it("after 3 folds it fails with ContextOverflowError and commits nothing: exactly 4 provider calls", async () => {
    const { storage, session } = await sessionWith(16, undefined);
    const before = await snapshot(storage);
    const provider = new ScriptedProvider(() => ({ fail: "context-length" }));
    const run = session.run("question 17", { provider });
    const { events, error } = await drain(run);
    const overflow = await rejection(run.result, ContextOverflowError, "context-overflow");
    expect(error).toBe(overflow);
    expect(provider.calls).toBe(4);
    expect(events.filter((e) => e.type === "context-folded").map((e) => (e as { depth: number }).depth)).toEqual([1, 2, 3]);
    expect(provider.requests.map((r) => r.messages.length)).toEqual([17, 9, 5, 3]);
    expect(await snapshot(storage)).toEqual(before);
    expect(session.revision).toBe(1);
  });

  it("an input that cannot be folded overflows at once: one provider call", async () => {
    const { storage, session } = await sessionWith(0, undefined);
    const before = await snapshot(storage);
    const provider = new ScriptedProvider(() => ({ fail: "context-length" }));
    await rejection(session.run("too long", { provider }).result, ContextOverflowError, "context-overflow");
    expect(provider.calls).toBe(1);
    expect(await snapshot(storage)).toEqual(before);
  });

  it("each step gets its own bounded folds; a refusal after output is a provider failure, not a fold", async () => {
    const { storage, session } = await sessionWith(8, undefined);
    const before = await snapshot(storage);
    const provider = new ScriptedProvider([{ text: "partial output", failAfterEvents: 1, fail: new ContextLengthExceededError() }]);
    await rejection(session.run("q", { provider }).result, ProviderError, "internal");
    expect(provider.calls).toBe(1);
    expect(await snapshot(storage)).toEqual(before);
  });
});

describe("opt-in policies", () => {
  it.each([
    [4, true],
    [3, false],
  ])("afterMessages(4) with %i committed messages → compaction before the first step: %s", async (count, expected) => {
    const summarizer = new ScriptedSummarizer();
    const { session } = await createSession(new MemoryStorage(), { summarizer, policy: afterMessages(4) });
    await session.append(exchange(count));
    const { events } = await drain(session.run("next", { provider: ScriptedProvider.replies("ok") }));
    expect(summarizer.calls).toHaveLength(expected ? 1 : 0);
    expect(completed(events).map((o) => o.segment)).toEqual(expected ? [{ start: 1, end: 2 }] : []);
  });

  it("afterMessages(n) is checked before every step, on the committed Active", async () => {
    const summarizer = new ScriptedSummarizer();
    const { session } = await createSession(new MemoryStorage(), { summarizer, policy: afterMessages(4) });
    await session.append(exchange(4));
    const provider = new ScriptedProvider([{ toolCalls: [{ name: "echo", input: {} }] }, { toolCalls: [{ name: "echo", input: {} }] }, { text: "end" }]);
    const { events } = await drain(session.run("go", { provider, tools: [echoTool] }));
    // Before step 1: 4 ≥ 4 → compact to 2; before steps 2 and 3 the committed Active holds 2.
    expect(completed(events).map((o) => o.segment)).toEqual([{ start: 1, end: 2 }]);
    expect(shape(events).filter((t) => t === "step-started")).toHaveLength(3);
  });

  it.each([
    [0, true],
    [1, false],
  ])("atContextTokens(estimate + %i) counts Active, the run's candidate and the tool schemas", async (extra, expected) => {
    const summarizer = new ScriptedSummarizer();
    const storage = new MemoryStorage();
    const probe = await createSession(storage, {});
    await probe.session.append(exchange(6));
    const user = toMessageRecord({ role: "user", parts: [{ type: "text", text: "how big?" }] }, Date.now);
    const estimate = estimateTokens([...probe.session.active, user], [{ name: echoTool.name }]);
    const session = await registry(storage, undefined, millisecondClock()).open(REF, { summarizer, policy: atContextTokens(estimate + extra) });
    const { events } = await drain(session.run("how big?", { provider: ScriptedProvider.replies("ok"), tools: [echoTool] }));
    expect(summarizer.calls).toHaveLength(expected ? 1 : 0);
    if (expected) expect((events[0] as { reason: string }).reason).toBe(`estimated ${estimate} tokens reached ${estimate}`);
    else expect(compactionEvents(events)).toEqual([]);
  });

  it("an automatic policy without a summarizer is rejected when the session is configured", async () => {
    const storage = new MemoryStorage();
    const sessions = registry(storage, undefined, millisecondClock());
    await rejection(sessions.create(REF, { policy: afterMessages(3) }), InvalidInputError, "invalid-input");
    expect(await storage.list("")).toEqual([]);
    await sessions.create(REF);
    await rejection(sessions.open(REF, { policy: atContextTokens(1000) }), InvalidInputError, "invalid-input");
    await rejection(sessions.open(REF, { policy: realUsage(), contextWindow: 1000 }), InvalidInputError, "invalid-input");
    await rejection(sessions.open(REF, { policy: realUsage(), summarizer: new ScriptedSummarizer() }), InvalidInputError, "invalid-input");
    await rejection(registry(storage, { policy: afterMessages(2) }, millisecondClock()).open(REF), InvalidInputError, "invalid-input");
  });

  it("a policy a host wrote as an object literal is checked when the session is configured", async () => {
    const storage = new MemoryStorage();
    const sessions = registry(storage, undefined, millisecondClock());
    await sessions.create(REF);
    const summarizer = new ScriptedSummarizer();
    const outOfRange = { kind: "real-usage", ratio: 1.5 } as const;
    await rejection(sessions.open(REF, { policy: outOfRange, summarizer, contextWindow: 1000 }), InvalidInputError, "invalid-input");
    const unknown = { kind: "sometimes" } as unknown as SessionOptions["policy"];
    await rejection(sessions.open(REF, { policy: unknown, summarizer }), InvalidInputError, "invalid-input");
    await rejection(
      registry(storage, { policy: outOfRange, summarizer, contextWindow: 1000 }, millisecondClock()).open(REF),
      InvalidInputError,
      "invalid-input",
    );
    // Without one (or with `undefined`), the default policy opens the session.
    await sessions.open(REF, { policy: undefined });
    await sessions.open(REF, { summarizer, contextWindow: 1000 });
  });
});

describe("repeated compaction stays bounded under the default policy", () => {
  it("100+ compactions in a row keep Active and the summary bounded while message_count grows", async () => {
    const window = 1200;
    const maxChars = 600;
    const storage = new MemoryStorage();
    const summarizer = new ScriptedSummarizer({ maxChars });
    const { sessions, session } = await createSession(storage, { summarizer, contextWindow: window }, "You are a terse assistant.");
    // "auto" usage grows with Active; the provider also refuses anything over the window.
    const provider = new ScriptedProvider(
      (_request, call) => ({ text: `Answer ${call}: ${"the reply goes on for a while ".repeat(4)}`.trim(), usage: "auto" }),
      { contextWindow: window },
    );
    let compactions = 0;
    let folds = 0;
    let deep = 0;
    let maxActive = 0;
    let maxSummary = 0;
    let maxUsage = 0;
    let previousCount = 0;
    let turns = 0;
    while (compactions < 100) {
      turns += 1;
      const outcome = await session.run(`Question ${turns}: ${"please tell me more about it ".repeat(3)}`, {
        provider,
        onEvent: (e) => {
          if (e.type === "compaction-completed") compactions += 1;
          if (e.type === "compaction-started" && e.reason.includes("deep")) deep += 1;
          if (e.type === "context-folded") folds += 1;
          if (e.type === "compaction-failed") throw new Error("compaction failed");
        },
      }).result;
      maxUsage = Math.max(maxUsage, outcome.usage!.input_tokens);
      maxActive = Math.max(maxActive, session.active.length);
      maxSummary = Math.max(maxSummary, session.summary?.text.length ?? 0);
      const count = session.meta.message_count;
      expect(count).toBe(previousCount + 2);
      previousCount = count;
      expect(turns).toBeLessThan(1000);
    }
    expect(compactions).toBeGreaterThanOrEqual(100);
    expect(folds).toBe(0);
    // Validation is exercised: a compaction that left usage above 50% was followed by a deep one.
    expect(deep).toBeGreaterThan(0);
    expect(maxUsage).toBeLessThan(window);
    expect(maxActive).toBeLessThanOrEqual(32);
    expect(maxSummary).toBeLessThanOrEqual(maxChars);
    expect(summarizer.calls).toHaveLength(compactions);
    expect(session.meta.compaction!.completed).toBe(compactions);
    expect(await session.segments()).toHaveLength(compactions);
    expect(session.meta.message_count).toBe(turns * 2);
    // Every message exists exactly once across the segments and Active.
    const reopened = await sessions.open(REF);
    expect(reopened.diagnostics).toEqual([]);
    const history = await fullHistory(reopened);
    expect(history).toHaveLength(turns * 2);
    expectContiguous(history);
  }, 20_000);
});
