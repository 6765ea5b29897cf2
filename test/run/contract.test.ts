/**
 * run(): what a turn commits and when (docs/FORMAT.md "`assistant_message.json` (the draft)"
 * and "Revisions"; docs/decisions.md "On-disk format"), row by row, plus the event stream.
 */
import { describe, expect, it } from "vitest";
import {
  CancelledError,
  InternalError,
  MAX_LINE_BYTES,
  MemoryStorage,
  type MessageRecord,
  type Provider,
  ProviderError,
  type RunEvent,
  SessionBusyError,
  type Tool,
} from "../../core/mod.ts";
import { ScriptedProvider, ScriptedSummarizer } from "../../testing/mod.ts";
import { deferred, metaOnDisk, P, readText, RecordingStorage, rejection, snapshot } from "../support/session.ts";
import { activeOnDisk, createSession, drain, shape, textOf } from "./support.ts";

const readTool: Tool = {
  name: "read",
  description: "Reads a file",
  inputSchema: { type: "object", properties: { path: { type: "string" } } },
  execute: (input) => ({ content: `contents of ${(input as { path: string }).path}` }),
};

/** A session with one committed exchange (sequences 1, 2; revision 1). */
async function seeded(options: Parameters<typeof createSession>[1] = {}) {
  const storage = new MemoryStorage();
  const recording = new RecordingStorage(storage);
  const { sessions, session } = await createSession(recording, options, "Be brief.");
  await session.append([
    { role: "user", parts: [{ type: "text", text: "earlier question" }] },
    { role: "assistant", parts: [{ type: "text", text: "earlier answer" }], usage: { input_tokens: 5, output_tokens: 2 } },
  ]);
  recording.calls = [];
  return { storage, recording, sessions, session };
}

function twoStepProvider(): ScriptedProvider {
  return new ScriptedProvider([
    {
      reasoning: "I should read the file.",
      reasoningSummary: "Reading a.txt",
      text: "Let me look.",
      toolCalls: [{ name: "read", input: { path: "a.txt" } }],
      usage: { input_tokens: 40, output_tokens: 9 },
    },
    { text: "The file says hello.", usage: { input_tokens: 60, output_tokens: 6, total_tokens: 66 } },
  ]);
}

describe("row 1: a successful final answer commits the whole run atomically", () => {
  it("appends user message, tool step and final answer with ONE append and ONE meta.json replace", async () => {
    const { storage, recording, session } = await seeded();
    const activeBefore = (await readText(storage, P.active))!;
    const provider = twoStepProvider();
    const onEvent: RunEvent[] = [];
    const run = session.run("What does a.txt say?", { provider, tools: [readTool], onEvent: (e) => onEvent.push(e) });
    const { events, outcome } = await drain(run);

    // Exactly one append to active.jsonl and one replace of meta.json for the run's commit.
    expect(recording.calls.filter((c) => c.op === "append").map((c) => c.path)).toEqual([P.active]);
    expect(recording.calls.filter((c) => c.path === P.meta && c.op !== "read").map((c) => c.op)).toEqual(["replace"]);
    expect(recording.calls.filter((c) => c.path === P.active && c.op !== "read").map((c) => c.op)).toEqual(["append"]);
    // The appended bytes are exactly the three new lines, the first carrying the batch mark.
    const appended = new TextDecoder().decode(recording.calls.find((c) => c.op === "append")!.bytes);
    expect((await readText(storage, P.active))!).toBe(activeBefore + appended);
    const lines = appended.split("\n");
    expect(lines).toHaveLength(4);
    expect(lines[3]).toBe("");
    const records = lines.slice(0, 3).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(records.map((r) => r["sequence"])).toEqual([3, 4, 5]);
    expect(records.map((r) => r["batch_size"])).toEqual([3, undefined, undefined]);

    // Revision +1, committed event and outcome.
    expect(session.revision).toBe(2);
    expect((await metaOnDisk(storage))["revision"]).toBe(2);
    expect((await metaOnDisk(storage))["message_count"]).toBe(5);
    expect(events.at(-1)).toEqual({ type: "committed", revision: 2, sequences: [3, 4, 5] });
    expect(events.filter((e) => e.type === "committed")).toHaveLength(1);
    expect(onEvent).toEqual(events);
    expect(outcome).toBeDefined();
    expect(outcome!.revision).toBe(2);
    expect(outcome!.steps).toBe(2);
    expect(outcome!.stopReason).toBe("final");
    expect(outcome!.usage).toEqual({ input_tokens: 60, output_tokens: 6, total_tokens: 66 });
    expect(outcome!.messages).toEqual(session.active.slice(2));
    expect(outcome!.messages.every((m) => !("batch_size" in m))).toBe(true);

    const [user, step, answer] = outcome!.messages as MessageRecord[];
    expect(user!.role).toBe("user");
    expect(user!.parts).toEqual([{ sequence: 1, type: "text", text: "What does a.txt say?" }]);
    expect(step!.role).toBe("assistant");
    expect(step!.status).toBe("completed");
    expect(step!.provider).toEqual(provider.identity);
    expect(step!.usage).toEqual({ input_tokens: 40, output_tokens: 9 });
    expect(step!.parts).toEqual([
      { sequence: 1, type: "reasoning", text: "I should read the file." },
      { sequence: 2, type: "reasoning-summary", text: "Reading a.txt" },
      { sequence: 3, type: "text", text: "Let me look." },
      {
        sequence: 4,
        type: "tool",
        tool_call_id: "call_1_1",
        tool_name: "read",
        state: "output-available",
        input: { path: "a.txt" },
        output: { content: "contents of a.txt" },
      },
    ]);
    expect(answer!.status).toBe("completed");
    expect(answer!.parts).toEqual([{ sequence: 1, type: "text", text: "The file says hello." }]);
    expect(answer!.usage).toEqual({ input_tokens: 60, output_tokens: 6, total_tokens: 66 });

    // No draft and no lock remain; the second request saw the tool result.
    const files = Object.keys(await snapshot(storage, P.dir));
    expect(files).not.toContain(P.draft);
    expect(files).not.toContain(P.lock);
    const second = provider.requests[1]!;
    expect(second.messages.map((m) => m.sequence)).toEqual([1, 2, 3, 4]);
    expect(second.messages[3]!.parts.at(-1)).toMatchObject({ type: "tool", state: "output-available", output: { content: "contents of a.txt" } });
    expect(second.tools).toEqual([{ name: "read", description: "Reads a file", inputSchema: readTool.inputSchema }]);
    expect(second.system).toBe("Be brief.");
  });

  it("a reopened session sees exactly the committed run", async () => {
    const { storage, sessions, session } = await seeded();
    await session.run("What does a.txt say?", { provider: twoStepProvider(), tools: [readTool] }).result;
    const reopened = await sessions.open(session.ref);
    expect(reopened.diagnostics).toEqual([]);
    expect(reopened.revision).toBe(2);
    expect(reopened.active).toEqual(session.active);
    expect(reopened.draft).toBeUndefined();
    expect((await activeOnDisk(storage)).map((r) => r["sequence"])).toEqual([1, 2, 3, 4, 5]);
  });

  it("a run without input lets the model continue and commits only its steps", async () => {
    const { session } = await seeded();
    const outcome = await session.run(undefined, { provider: ScriptedProvider.replies("Continuing.") }).result;
    expect(outcome.messages.map((m) => [m.sequence, m.role, textOf(m)])).toEqual([[3, "assistant", "Continuing."]]);
    expect(outcome.revision).toBe(2);
  });

  it("maxSteps ends the loop and commits what ran (stopReason max-steps)", async () => {
    const { session } = await seeded({ maxSteps: 2 });
    const provider = new ScriptedProvider(() => ({ toolCalls: [{ name: "read", input: { path: "loop" } }], usage: "none" }));
    const outcome = await session.run("loop forever", { provider, tools: [readTool] }).result;
    expect(provider.calls).toBe(2);
    expect(outcome.stopReason).toBe("max-steps");
    expect(outcome.steps).toBe(2);
    expect(outcome.usage).toBeUndefined();
    expect(outcome.messages.map((m) => m.sequence)).toEqual([3, 4, 5]);
    expect(outcome.messages.slice(1).map((m) => m.parts[0])).toMatchObject([{ state: "output-available" }, { state: "output-available" }]);
    expect(session.revision).toBe(2);
  });

  it("a second mutating operation while a run holds the session is refused with SessionBusyError", async () => {
    const { session } = await seeded();
    const controller = new AbortController();
    const first = session.run("hang", { provider: new ScriptedProvider([{ text: "x", hangAfterEvents: 0 }]), signal: controller.signal });
    const second = session.run("again", { provider: ScriptedProvider.replies("y") });
    await rejection(second.result, SessionBusyError, "busy");
    await rejection(session.append({ role: "user", parts: [{ type: "text", text: "z" }] }), SessionBusyError, "busy");
    controller.abort();
    await rejection(first.result, CancelledError, "cancelled");
    expect(session.active.map((m) => m.sequence)).toEqual([1, 2, 3]);
  });
});

describe("row 2: cooperative cancellation commits recoverable work, then rejects with CancelledError", () => {
  const fullStep = {
    reasoning: "raw thoughts that must not be kept",
    reasoningSummary: "Thinking about files",
    text: "I will read two files for you now.",
    toolCalls: [
      { id: "c1", name: "read", input: { path: "a.txt" } },
      { id: "c2", name: "read", input: { path: "b.txt" } },
    ],
    usage: { input_tokens: 70, output_tokens: 20, total_tokens: 90 },
  } as const;

  it("while streaming text: user message + stopped assistant with the partial text, raw reasoning removed", async () => {
    const { storage, recording, session } = await seeded();
    const controller = new AbortController();
    let deltas = 0;
    const provider = new ScriptedProvider([{ ...fullStep, hangAfterEvents: 100 }], { chunkSize: 4 });
    const run = session.run("read them", {
      provider,
      tools: [readTool],
      signal: controller.signal,
      onEvent: (e) => {
        if (e.type === "text-delta" && ++deltas === 3) controller.abort();
      },
    });
    const { events, error } = await drain(run);
    const cancelled = await rejection(run.result, CancelledError, "cancelled");
    expect(error).toBe(cancelled);
    expect(cancelled.revision).toBe(2);
    expect(session.revision).toBe(2);
    expect((await metaOnDisk(storage))["revision"]).toBe(2);
    expect(events.at(-1)).toEqual({ type: "committed", revision: 2, sequences: [3, 4] });
    expect(recording.calls.filter((c) => c.op === "append")).toHaveLength(1);
    expect(recording.calls.filter((c) => c.path === P.meta && c.op === "replace")).toHaveLength(1);
    expect(recording.calls.filter((c) => c.path === P.draft && c.op === "remove")).toHaveLength(1);

    const [user, stopped] = session.active.slice(2);
    expect(user!.parts).toEqual([{ sequence: 1, type: "text", text: "read them" }]);
    expect(stopped!.status).toBe("stopped");
    expect(stopped!.parts).toEqual([
      { sequence: 2, type: "reasoning-summary", text: "Thinking about files" },
      { sequence: 3, type: "text", text: "I will read " },
    ]);
    expect(stopped!.usage).toBeUndefined();
    expect(await readText(storage, P.draft)).toBeUndefined();
    expect(await readText(storage, P.lock)).toBeUndefined();
    // The raw reasoning was streamed to the host but is nowhere in storage.
    expect(events.some((e) => e.type === "reasoning-delta")).toBe(true);
    expect(JSON.stringify(await snapshot(storage))).not.toContain("raw thoughts");
  });

  it("after the whole step streamed: partial tool calls stay input-available, usage is kept, tools never run", async () => {
    const { storage, session } = await seeded();
    const controller = new AbortController();
    let executed = 0;
    const tool: Tool = { name: "read", execute: () => ++executed };
    const provider = new ScriptedProvider([{ ...fullStep, hangAfterEvents: 1000 }]);
    const run = session.run("read them", {
      provider,
      tools: [tool],
      signal: controller.signal,
      onEvent: (e) => {
        if (e.type === "usage") controller.abort();
      },
    });
    const cancelled = await rejection(run.result, CancelledError, "cancelled");
    expect(cancelled.revision).toBe(2);
    expect(executed).toBe(0);
    const stopped = session.active.at(-1)!;
    expect(stopped.sequence).toBe(4);
    expect(stopped.status).toBe("stopped");
    expect(stopped.usage).toEqual({ input_tokens: 70, output_tokens: 20, total_tokens: 90 });
    expect(stopped.parts).toEqual([
      { sequence: 2, type: "reasoning-summary", text: "Thinking about files" },
      { sequence: 3, type: "text", text: "I will read two files for you now." },
      { sequence: 4, type: "tool", tool_call_id: "c1", tool_name: "read", state: "input-available", input: { path: "a.txt" } },
      { sequence: 5, type: "tool", tool_call_id: "c2", tool_name: "read", state: "input-available", input: { path: "b.txt" } },
    ]);
    const disk = await activeOnDisk(storage);
    expect(disk.at(-1)).toEqual({ ...stopped, revision: stopped.revision === undefined ? expect.any(Number) : stopped.revision });
    expect(disk.at(-2)!["batch_size"]).toBe(2);
  });

  it("before any output: only the user message is committed", async () => {
    const { storage, session } = await seeded();
    const controller = new AbortController();
    const run = session.run("hello?", {
      provider: new ScriptedProvider([{ text: "never", hangAfterEvents: 0 }]),
      signal: controller.signal,
      onEvent: (e) => {
        if (e.type === "step-started") queueMicrotask(() => controller.abort());
      },
    });
    const { events } = await drain(run);
    const cancelled = await rejection(run.result, CancelledError, "cancelled");
    expect(cancelled.revision).toBe(2);
    expect(shape(events)).toEqual(["step-started", "committed"]);
    expect(events.at(-1)).toEqual({ type: "committed", revision: 2, sequences: [3] });
    expect(session.active.map((m) => [m.sequence, m.role])).toEqual([
      [1, "user"],
      [2, "assistant"],
      [3, "user"],
    ]);
    expect(await activeOnDisk(storage)).toHaveLength(3);
    expect((await activeOnDisk(storage))[2]!["batch_size"]).toBeUndefined();
  });

  it("with a signal aborted before the run: the user message is committed and no provider call is made", async () => {
    const { session } = await seeded();
    const provider = ScriptedProvider.replies("never");
    const run = session.run("hello?", { provider, signal: AbortSignal.abort() });
    const cancelled = await rejection(run.result, CancelledError, "cancelled");
    expect(cancelled.revision).toBe(2);
    expect(provider.calls).toBe(0);
    expect(session.active.map((m) => m.sequence)).toEqual([1, 2, 3]);
  });

  it("a cancelled run with nothing to commit keeps the revision", async () => {
    const { session } = await seeded();
    const run = session.run(undefined, { provider: ScriptedProvider.replies("never"), signal: AbortSignal.abort() });
    const cancelled = await rejection(run.result, CancelledError, "cancelled");
    expect(cancelled.revision).toBe(1);
    expect(session.revision).toBe(1);
    expect(session.active).toHaveLength(2);
  });

  it("during tool execution: the tool gets the signal; finished calls keep their output, the running one stays input-available", async () => {
    const { storage, session } = await seeded();
    const controller = new AbortController();
    const started = deferred();
    const seen: AbortSignal[] = [];
    const tool: Tool = {
      name: "read",
      execute: async (input, { signal }) => {
        seen.push(signal);
        if ((input as { path: string }).path === "a.txt") return "A";
        started.resolve();
        await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
        throw new Error("aborted by the host");
      },
    };
    const run = session.run("read them", { provider: new ScriptedProvider([fullStep, { text: "unreached" }]), tools: [tool], signal: controller.signal });
    await started.promise;
    controller.abort();
    const { events } = await drain(run);
    const cancelled = await rejection(run.result, CancelledError, "cancelled");
    expect(cancelled.revision).toBe(2);
    expect(seen).toHaveLength(2);
    expect(seen[1]!.aborted).toBe(true);
    expect(seen[0]).toBe(seen[1]);
    expect(events.filter((e) => e.type === "tool-result").map((e) => (e as { toolCallId: string }).toolCallId)).toEqual(["c1"]);
    expect(events.some((e) => e.type === "tool-error")).toBe(false);
    const stopped = session.active.at(-1)!;
    expect(stopped.status).toBe("stopped");
    expect(stopped.usage).toEqual(fullStep.usage);
    expect(stopped.parts.map((p) => p.type)).toEqual(["reasoning-summary", "text", "tool", "tool"]);
    expect(stopped.parts.slice(2)).toEqual([
      { sequence: 4, type: "tool", tool_call_id: "c1", tool_name: "read", state: "output-available", input: { path: "a.txt" }, output: "A" },
      { sequence: 5, type: "tool", tool_call_id: "c2", tool_name: "read", state: "input-available", input: { path: "b.txt" } },
    ]);
    expect(await readText(storage, P.draft)).toBeUndefined();
  });

  it("in the second step: the completed first step is committed too, the second as stopped", async () => {
    const { session } = await seeded();
    const controller = new AbortController();
    let deltas = 0;
    const provider = new ScriptedProvider([
      { text: "Looking.", toolCalls: [{ id: "c1", name: "read", input: { path: "a.txt" } }], usage: { input_tokens: 10, output_tokens: 3 } },
      { reasoning: "hmm", text: "It says: contents of a.txt, which is all.", hangAfterEvents: 99 },
    ]);
    const run = session.run("read a", {
      provider,
      tools: [readTool],
      signal: controller.signal,
      onEvent: (e) => {
        if (e.type === "text-delta" && ++deltas === 3) controller.abort();
      },
    });
    const { events } = await drain(run);
    await rejection(run.result, CancelledError, "cancelled");
    expect(events.at(-1)).toEqual({ type: "committed", revision: 2, sequences: [3, 4, 5] });
    const [user, first, second] = session.active.slice(2);
    expect(user!.role).toBe("user");
    expect(first!.status).toBe("completed");
    expect(first!.parts.at(-1)).toMatchObject({ type: "tool", state: "output-available", output: { content: "contents of a.txt" } });
    expect(second!.status).toBe("stopped");
    expect(second!.parts).toEqual([{ sequence: 2, type: "text", text: "It says: content" }]);
  });

  it("during an automatic compaction's summarizer call: the compaction is not installed, the user message is committed", async () => {
    const hanging = ScriptedSummarizer.hanging();
    const called = deferred();
    const summarizer = {
      summarize: (request: Parameters<typeof hanging.summarize>[0]) => {
        called.resolve();
        return hanging.summarize(request);
      },
    };
    const storage = new MemoryStorage();
    const { session } = await createSession(storage, { summarizer, contextWindow: 1000 });
    await session.append([
      { role: "user", parts: [{ type: "text", text: "q1" }] },
      { role: "assistant", parts: [{ type: "text", text: "a1" }], usage: { input_tokens: 900, output_tokens: 60 } },
    ]);
    const controller = new AbortController();
    const provider = ScriptedProvider.replies("never");
    const run = session.run("q2", { provider, signal: controller.signal });
    await called.promise;
    controller.abort();
    const { events } = await drain(run);
    const cancelled = await rejection(run.result, CancelledError, "cancelled");
    expect(cancelled.revision).toBe(2);
    expect(shape(events)).toEqual(["compaction-started", "committed"]);
    expect(hanging.calls).toHaveLength(1);
    expect(provider.calls).toBe(0);
    expect(await session.segments()).toEqual([]);
    expect(await storage.list(P.segmentsDir)).toEqual([]);
    expect(session.active.map((m) => m.sequence)).toEqual([1, 2, 3]);
    expect((await metaOnDisk(storage))["compaction"]).toBeUndefined();
  });
});

// Row 3 (run-handle drop or task abort) promises nothing: no commit, terminal event or
// partial recovery. What sessionfold adds on a crash is tested in crash.test.ts and drafts.test.ts.

describe("row 2b: a provider or a tool that ignores the signal does not hold a cancelled run", () => {
  it("a provider stream stuck in an await: the run commits the user message and the partial reply, stopped, and rejects with CancelledError at the abort", async () => {
    const { storage, session } = await seeded();
    const controller = new AbortController();
    const streaming = deferred();
    let ended = false;
    const provider: Provider = {
      identity: { provider: "test", api: "chat", model: "deaf" },
      async *stream() {
        try {
          yield { type: "text-delta", text: "Partial" };
          streaming.resolve();
          await new Promise<never>(() => {});
        } finally {
          ended = true;
        }
      },
    };
    const run = session.run("hello?", { provider, signal: controller.signal });
    const drained = drain(run);
    await streaming.promise;
    controller.abort();
    const cancelled = await rejection(run.result, CancelledError, "cancelled");
    await drained;
    expect(cancelled.revision).toBe(2);
    expect(session.active.slice(2).map((m) => [m.role, m.status ?? null, m.parts])).toEqual([
      ["user", null, [{ sequence: 1, type: "text", text: "hello?" }]],
      ["assistant", "stopped", [{ sequence: 1, type: "text", text: "Partial" }]],
    ]);
    expect(await readText(storage, P.lock)).toBeUndefined();
    expect(ended, "the stream, stuck in its await, is not waited for").toBe(false);
  });

  it("a tool that never settles: the run rejects with CancelledError at the abort, the call left input-available", async () => {
    const { session } = await seeded();
    const controller = new AbortController();
    const called = deferred();
    const tool: Tool = { name: "read", execute: () => (called.resolve(), new Promise<never>(() => {})) };
    const run = session.run("read a.txt", {
      provider: new ScriptedProvider([{ toolCalls: [{ id: "c1", name: "read", input: { path: "a.txt" } }] }, { text: "never" }]),
      tools: [tool],
      signal: controller.signal,
    });
    const drained = drain(run);
    await called.promise;
    controller.abort();
    const cancelled = await rejection(run.result, CancelledError, "cancelled");
    await drained;
    expect(cancelled.revision).toBe(2);
    expect(session.active.at(-1)!.parts.at(-1)).toMatchObject({ type: "tool", tool_call_id: "c1", state: "input-available" });
    await session.append({ role: "user", parts: [{ type: "text", text: "the session writes again" }] });
  });
});

describe("row 4: tool success or tool-reported failure is appended and the loop goes on", () => {
  it("a throwing tool becomes an output-error part with the message and a tool-error event", async () => {
    const { session } = await seeded();
    const failing: Tool = {
      name: "read",
      execute: () => {
        throw new Error("ENOENT: a.txt");
      },
    };
    const provider = new ScriptedProvider([{ toolCalls: [{ id: "c1", name: "read", input: { path: "a.txt" } }] }, { text: "The file is missing." }]);
    const { events, outcome } = await drain(session.run("read a", { provider, tools: [failing] }));
    expect(events.filter((e) => e.type === "tool-error")).toEqual([{ type: "tool-error", toolCallId: "c1", toolName: "read", error: "ENOENT: a.txt" }]);
    expect(provider.calls).toBe(2);
    expect(outcome!.steps).toBe(2);
    expect(outcome!.messages[1]!.parts).toEqual([
      { sequence: 1, type: "tool", tool_call_id: "c1", tool_name: "read", state: "output-error", input: { path: "a.txt" }, error: "ENOENT: a.txt" },
    ]);
    expect(provider.requests[1]!.messages.at(-1)!.parts[0]).toMatchObject({ state: "output-error", error: "ENOENT: a.txt" });
    expect(textOf(outcome!.messages[2]!)).toBe("The file is missing.");
  });

  it("a rejecting async tool, an unknown tool and a non-JSON output are output-errors too; a good call next to them succeeds", async () => {
    const { session } = await seeded();
    const tools: Tool[] = [
      readTool,
      { name: "async_fail", execute: async () => Promise.reject(new Error("remote said no")) },
      { name: "bigint", execute: () => ({ n: 1n }) },
      { name: "nothing", execute: () => undefined },
    ];
    const provider = new ScriptedProvider([
      {
        toolCalls: [
          { id: "c1", name: "async_fail", input: {} },
          { id: "c2", name: "no_such_tool", input: { x: 1 } },
          { id: "c3", name: "bigint", input: {} },
          { id: "c4", name: "nothing", input: {} },
          { id: "c5", name: "read", input: { path: "b" } },
        ],
      },
      { text: "Done." },
    ]);
    const { events, outcome } = await drain(session.run("go", { provider, tools }));
    expect(events.filter((e) => e.type === "tool-error" || e.type === "tool-result").map((e) => [e.type, (e as { toolCallId: string }).toolCallId])).toEqual([
      ["tool-error", "c1"],
      ["tool-error", "c2"],
      ["tool-error", "c3"],
      ["tool-result", "c4"],
      ["tool-result", "c5"],
    ]);
    const parts = outcome!.messages[1]!.parts as Extract<MessageRecord["parts"][number], { type: "tool" }>[];
    expect(parts.map((p) => p.state)).toEqual(["output-error", "output-error", "output-error", "output-available", "output-available"]);
    expect(parts[0]!.error).toBe("remote said no");
    expect(parts[1]!.error).toBe('no tool named "no_such_tool" is available');
    expect(parts[2]!.error).toMatch(/BigInt/);
    expect(parts[3]!.output).toBeNull();
    expect(parts[4]!.output).toEqual({ content: "contents of b" });
    expect(outcome!.stopReason).toBe("final");
    expect(provider.calls).toBe(2);
  });

  it("an output larger than a stored message may hold is an output-error naming its size; the turn commits", async () => {
    const { session } = await seeded();
    const huge = "q".repeat(MAX_LINE_BYTES); // its JSON adds two quotes
    const tools: Tool[] = [{ name: "cat", execute: () => huge }, { name: "wide", execute: () => "é".repeat(MAX_LINE_BYTES / 2) }];
    const provider = new ScriptedProvider([
      { toolCalls: [{ id: "c1", name: "cat", input: {} }, { id: "c2", name: "wide", input: {} }] },
      { text: "Too big." },
    ]);
    const { outcome } = await drain(session.run("cat the log", { provider, tools }));
    const parts = outcome!.messages[1]!.parts as Extract<MessageRecord["parts"][number], { type: "tool" }>[];
    expect(parts.map((p) => [p.state, p.error])).toEqual([
      ["output-error", "the output of tool cat is at least 64 MiB as JSON, over the 64 MiB a stored message may hold"],
      ["output-error", expect.stringMatching(/^the output of tool wide is at least 64 MiB as JSON, over the 64 MiB/)],
    ]);
    expect(session.active.at(-1)!.parts).toEqual([{ sequence: 1, type: "text", text: "Too big." }]);
  });
});

describe("row 5: a fatal provider error commits nothing of the run", () => {
  async function expectNothingCommitted(storage: MemoryStorage, before: Record<string, string>): Promise<void> {
    const after = await snapshot(storage);
    expect(after).toEqual(before);
    expect(Object.keys(after)).not.toContain(P.draft);
    expect(Object.keys(after)).not.toContain(P.lock);
  }

  it("fail before any event", async () => {
    const { storage, recording, session } = await seeded();
    const before = await snapshot(storage);
    const provider = new ScriptedProvider([{ fail: "error" }]);
    const run = session.run("hi", { provider });
    const { events, error } = await drain(run);
    const failure = await rejection(run.result, ProviderError, "internal");
    expect(error).toBe(failure);
    expect(failure.message).toContain("scripted provider failure");
    expect(failure.details).toMatchObject({ provider: "scripted", api: "test", model: "scripted-1", step: 1 });
    expect(shape(events)).toEqual(["step-started"]);
    expect(recording.calls.filter((c) => c.op === "append" || (c.path === P.meta && c.op === "replace"))).toEqual([]);
    await expectNothingCommitted(storage, before);
    expect(session.revision).toBe(1);
    expect(session.active).toHaveLength(2);
    expect(session.draft).toBeUndefined();
  });

  it("fail after streamed events of the second step (failAfterEvents): the completed first step is not committed either", async () => {
    const { storage, session } = await seeded();
    const before = await snapshot(storage);
    const provider = new ScriptedProvider([
      { text: "Looking.", toolCalls: [{ name: "read", input: { path: "a.txt" } }] },
      { reasoning: "thinking", text: "Partial answer that dies", failAfterEvents: 3 },
    ]);
    const run = session.run("hi", { provider, tools: [readTool] });
    const { events } = await drain(run);
    await rejection(run.result, ProviderError, "internal");
    expect(shape(events)).toEqual(["step-started", "text-delta*", "tool-call", "usage", "tool-result", "step-started", "reasoning-delta*", "text-delta*"]);
    expect(events.some((e) => e.type === "committed")).toBe(false);
    await expectNothingCommitted(storage, before);
  });

  it("a custom provider that throws mid-stream is wrapped as ProviderError with the cause", async () => {
    const { storage, session } = await seeded();
    const before = await snapshot(storage);
    const cause = new TypeError("socket hang up");
    const provider = {
      identity: { provider: "p", api: "a", model: "m" },
      async *stream() {
        yield { type: "text-delta" as const, text: "half" };
        throw cause;
      },
    };
    const failure = await rejection(session.run("hi", { provider }).result, ProviderError, "internal");
    expect(failure.cause).toBe(cause);
    expect(failure.message).toContain("socket hang up");
    await expectNothingCommitted(storage, before);
  });

  it.each(["tool-result", "text-delta", "usage"] as const)(
    "an event-delivery failure (onEvent throwing on %s) is fatal too: a typed InternalError, nothing of the run committed",
    async (type) => {
      const { storage, session } = await seeded();
      const before = await snapshot(storage);
      const broken = new Error("the host's event sink broke");
      let executed = 0;
      const run = session.run("hi", {
        provider: new ScriptedProvider([{ text: "Looking.", toolCalls: [{ name: "read", input: { path: "a" } }] }, { text: "done" }]),
        tools: [{ name: "read", execute: () => ++executed }],
        onEvent: (e) => {
          if (e.type === type) throw broken;
        },
      });
      const { events, error } = await drain(run);
      const failure = await rejection(run.result, InternalError, "internal");
      expect(error).toBe(failure);
      expect(failure).not.toBeInstanceOf(ProviderError);
      expect(failure.cause).toBe(broken);
      expect(failure.message).toContain(`onEvent failed on a "${type}" event: the host's event sink broke`);
      // The event that could not be delivered is the last one; no tool-error stands in for it.
      expect(events.at(-1)!.type).toBe(type);
      expect(events.some((e) => e.type === "tool-error")).toBe(false);
      expect(executed).toBe(type === "tool-result" ? 1 : 0);
      await expectNothingCommitted(storage, before);
      expect(session.revision).toBe(1);
    },
  );

  it("an event-delivery failure on compaction-completed keeps the compaction (its own commit) and is not reported as a failed compaction", async () => {
    const storage = new MemoryStorage();
    const summarizer = new ScriptedSummarizer();
    const { session } = await createSession(storage, { summarizer, contextWindow: 1000 });
    await session.append([
      { role: "user", parts: [{ type: "text", text: "q1" }] },
      { role: "assistant", parts: [{ type: "text", text: "a1" }], usage: { input_tokens: 990, output_tokens: 1 } },
    ]);
    const provider = ScriptedProvider.replies("never");
    const run = session.run("q2", {
      provider,
      onEvent: (e) => {
        if (e.type === "compaction-completed") throw new Error("sink down");
      },
    });
    const { events } = await drain(run);
    await rejection(run.result, InternalError, "internal");
    expect(shape(events)).toEqual(["compaction-started", "compaction-completed"]);
    expect(provider.calls).toBe(0);
    expect(session.revision).toBe(2);
    expect(await session.segments()).toEqual([{ start: 1, end: 1 }]);
    expect(session.active.map((m) => m.sequence)).toEqual([2]);
    expect(await readText(storage, P.draft)).toBeUndefined();
  });

  it("the session stays usable after a provider failure", async () => {
    const { session } = await seeded();
    await rejection(session.run("hi", { provider: new ScriptedProvider([{ fail: "error" }]) }).result, ProviderError);
    const outcome = await session.run("again", { provider: ScriptedProvider.replies("ok") }).result;
    expect(outcome.revision).toBe(2);
    expect(outcome.messages.map((m) => m.sequence)).toEqual([3, 4]);
  });

  it("after an automatic compaction committed, a fatal error leaves exactly the compaction", async () => {
    const storage = new MemoryStorage();
    const summarizer = new ScriptedSummarizer();
    const { session } = await createSession(storage, { summarizer, contextWindow: 1000 });
    await session.append([
      { role: "user", parts: [{ type: "text", text: "q1" }] },
      { role: "assistant", parts: [{ type: "text", text: "a1" }] },
      { role: "user", parts: [{ type: "text", text: "q2" }] },
      { role: "assistant", parts: [{ type: "text", text: "a2" }], usage: { input_tokens: 900, output_tokens: 50 } },
    ]);
    expect(session.revision).toBe(1);
    const provider = new ScriptedProvider([{ text: "dies", failAfterEvents: 1 }]);
    const run = session.run("q3", { provider });
    const { events } = await drain(run);
    await rejection(run.result, ProviderError, "internal");
    expect(shape(events)).toEqual(["compaction-started", "compaction-completed", "step-started", "text-delta*"]);
    expect(session.revision).toBe(2);
    expect((await metaOnDisk(storage))["revision"]).toBe(2);
    expect(await storage.list(P.segmentsDir)).toEqual(["000000000001-000000000002.jsonl"]);
    expect(session.active.map((m) => m.sequence)).toEqual([3, 4]);
    expect((await activeOnDisk(storage)).map((r) => r["sequence"])).toEqual([3, 4]);
    expect(await readText(storage, P.draft)).toBeUndefined();
    expect(JSON.stringify(await snapshot(storage))).not.toContain("q3");
    // The step's input already had the summary.
    expect(provider.requests[0]!.summary).toBe(session.summary!.text);
  });
});

describe("row 6: reset", () => {
  it("increments the revision and empties the model context; the next run starts from the system alone", async () => {
    const { storage, session } = await seeded();
    await session.run("q", { provider: ScriptedProvider.replies("a") }).result;
    expect(session.revision).toBe(2);
    expect(session.compose({ provider: "x", api: "y", model: "z" }).input.messages).toHaveLength(4);
    const { revision } = await session.reset();
    expect(revision).toBe(3);
    expect((await metaOnDisk(storage))["revision"]).toBe(3);
    const composed = session.compose({ provider: "x", api: "y", model: "z" }).input;
    expect(composed).toEqual({ system: "Be brief.", summary: null, messages: [] });
    const provider = ScriptedProvider.replies("fresh");
    const outcome = await session.run("new topic", { provider }).result;
    expect(outcome.revision).toBe(4);
    expect(outcome.messages.map((m) => m.sequence)).toEqual([5, 6]);
    expect(provider.requests[0]!.summary).toBeNull();
    expect(provider.requests[0]!.messages.map((m) => textOf(m))).toEqual(["new topic"]);
  });
});

describe("events", () => {
  it("a tool round trip streams step-started, deltas, tool-call, usage, tool-result, step-started, …, committed", async () => {
    const { session } = await seeded();
    const provider = new ScriptedProvider(
      [
        { text: "Let me check that file.", toolCalls: [{ id: "c1", name: "read", input: { path: "a.txt" } }], usage: { input_tokens: 5, output_tokens: 5 } },
        { text: "It says hello.", usage: { input_tokens: 9, output_tokens: 4 } },
      ],
      { chunkSize: 5 },
    );
    const seen: RunEvent[] = [];
    const run = session.run("check a.txt", { provider, tools: [readTool], onEvent: (e) => seen.push(e) });
    const { events } = await drain(run);
    expect(events.map((e) => e.type)).toEqual([
      "step-started",
      "text-delta",
      "text-delta",
      "text-delta",
      "text-delta",
      "text-delta",
      "tool-call",
      "usage",
      "tool-result",
      "step-started",
      "text-delta",
      "text-delta",
      "text-delta",
      "usage",
      "committed",
    ]);
    // Each step names the message it produces: the committed assistant messages, in order.
    const stepIds = (await run.result).messages.filter((m) => m.role === "assistant").map((m) => m.message_id);
    expect(events[0]).toEqual({ type: "step-started", step: 1, messageId: stepIds[0] });
    expect(events[9]).toEqual({ type: "step-started", step: 2, messageId: stepIds[1] });
    expect(events.filter((e) => e.type === "text-delta").map((e) => (e as { text: string }).text).join("")).toBe("Let me check that file.It says hello.");
    expect(events[6]).toEqual({ type: "tool-call", toolCallId: "c1", toolName: "read", input: { path: "a.txt" } });
    expect(events[8]).toEqual({ type: "tool-result", toolCallId: "c1", toolName: "read", output: { content: "contents of a.txt" } });
    // onEvent received the very same event objects, in the same order.
    expect(seen).toHaveLength(events.length);
    seen.forEach((event, i) => expect(event).toBe(events[i]));
    // A second iteration replays every event.
    const again: RunEvent[] = [];
    for await (const event of run) again.push(event);
    expect(again).toEqual(events);
  });

  it("several iterators at once each receive every event", async () => {
    const { session } = await seeded();
    const run = session.run("hi", { provider: new ScriptedProvider([{ text: "abcdefghijkl" }], { chunkSize: 2, delayMs: 1 }) });
    const consume = async () => {
      const out: RunEvent[] = [];
      for await (const event of run) out.push(event);
      return out;
    };
    const [a, b, c] = await Promise.all([consume(), consume(), consume()]);
    expect(a.map((e) => e.type)).toEqual(["step-started", ...Array(6).fill("text-delta"), "usage", "committed"]);
    expect(b).toEqual(a);
    expect(c).toEqual(a);
    expect((await run.result).revision).toBe(2);
  });

  it("iteration throws the same error as result on failure", async () => {
    const { session } = await seeded();
    const run = session.run("hi", { provider: new ScriptedProvider([{ text: "abc", failAfterEvents: 1 }]) });
    const iterated: RunEvent[] = [];
    let thrown: unknown;
    try {
      for await (const event of run) iterated.push(event);
    } catch (error) {
      thrown = error;
    }
    const failure = await rejection(run.result, ProviderError);
    expect(thrown).toBe(failure);
    expect(iterated.map((e) => e.type)).toEqual(["step-started", "text-delta"]);
  });

  it("files and provider context are not events but are committed as parts in generation order", async () => {
    const { session } = await seeded();
    const provider = new ScriptedProvider([
      { text: "Here is a file.", files: [{ mediaType: "text/plain", name: "a.txt", data: btoa("hello") }], providerContext: { cache: "abc" } },
    ]);
    const { events, outcome } = await drain(session.run("file please", { provider }));
    expect(shape(events)).toEqual(["step-started", "text-delta*", "usage", "committed"]);
    expect(outcome!.messages[1]!.parts).toEqual([
      { sequence: 1, type: "text", text: "Here is a file." },
      { sequence: 2, type: "file", media_type: "text/plain", name: "a.txt", data: btoa("hello") },
      { sequence: 3, type: "provider-context", provider: "scripted", api: "test", model: "scripted-1", data: { cache: "abc" } },
    ]);
  });
});
