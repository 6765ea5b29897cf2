import { describe, expect, it } from "vitest";
import {
  ContextLengthExceededError,
  estimateModelInputTokens,
  InvalidInputError,
  type MessageRecord,
  type ModelRequest,
  type ProviderEvent,
  type Tool,
} from "../../core/mod.ts";
import { scriptedAutoUsage, ScriptedProvider, type ScriptedStep } from "../../testing/scripted-provider.ts";

const TS = "2026-12-02T13:00:00.000Z";

function userMessage(sequence: number, text: string): MessageRecord {
  return { record_type: "message", sequence, message_id: `m_${sequence}`, role: "user", created_at: TS, parts: [{ sequence: 1, type: "text", text }] };
}

function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return {
    system: "Be brief.",
    summary: null,
    messages: [userMessage(1, "hello there")],
    tools: [],
    signal: new AbortController().signal,
    ...overrides,
  };
}

async function collect(iterable: AsyncIterable<ProviderEvent>): Promise<ProviderEvent[]> {
  const events: ProviderEvent[] = [];
  for await (const event of iterable) events.push(event);
  return events;
}

/** Collects until the stream throws; returns what arrived and the error. */
async function collectUntilError(iterable: AsyncIterable<ProviderEvent>): Promise<{ events: ProviderEvent[]; error: unknown }> {
  const events: ProviderEvent[] = [];
  try {
    for await (const event of iterable) events.push(event);
  } catch (error) {
    return { events, error };
  }
  throw new Error("the stream did not throw");
}

const types = (events: ProviderEvent[]): string[] => events.map((event) => event.type);

describe("ScriptedProvider: streaming", () => {
  it("streams a full step in the realistic order, usage last", async () => {
    const provider = new ScriptedProvider([
      {
        reasoning: "think think",
        reasoningSummary: "thought",
        text: "answer",
        toolCalls: [{ name: "search", input: { q: "x" } }, { id: "own", name: "read", input: 1 }],
        files: [{ mediaType: "text/plain", name: "a.txt", data: "aGk=" }, { mediaType: "image/png", url: "https://x/y.png" }],
        providerContext: { opaque: true },
      },
    ]);
    const events = await collect(provider.stream(request()));
    expect(types(events)).toEqual([
      "reasoning-delta",
      "reasoning-delta",
      "reasoning-summary",
      "text-delta",
      "tool-call",
      "tool-call",
      "file",
      "file",
      "provider-context",
      "usage",
    ]);
    expect(events.slice(0, 2)).toEqual([
      { type: "reasoning-delta", text: "think th" },
      { type: "reasoning-delta", text: "ink" },
    ]);
    expect(events[4]).toEqual({ type: "tool-call", toolCallId: "call_1_1", toolName: "search", input: { q: "x" } });
    expect(events[5]).toEqual({ type: "tool-call", toolCallId: "own", toolName: "read", input: 1 });
    expect(events[6]).toEqual({ type: "file", mediaType: "text/plain", name: "a.txt", data: "aGk=" });
    expect(events[7]).toEqual({ type: "file", mediaType: "image/png", url: "https://x/y.png" });
    expect(events[8]).toEqual({ type: "provider-context", data: { opaque: true } });
  });

  it("chunks text by chunkSize (default 8) and rejoins exactly", async () => {
    const text = "The quick brown fox jumps over the lazy dog.";
    const events = await collect(new ScriptedProvider([{ text, usage: "none" }]).stream(request()));
    const deltas = events.map((e) => (e.type === "text-delta" ? e.text : ""));
    expect(deltas.every((d) => d.length <= 8)).toBe(true);
    expect(deltas.slice(0, -1).every((d) => d.length === 8)).toBe(true);
    expect(deltas.join("")).toBe(text);
    expect(events).toHaveLength(Math.ceil(text.length / 8));

    const three = await collect(new ScriptedProvider([{ text: "abcdefg", usage: "none" }], { chunkSize: 3 }).stream(request()));
    expect(three).toEqual([
      { type: "text-delta", text: "abc" },
      { type: "text-delta", text: "def" },
      { type: "text-delta", text: "g" },
    ]);
  });

  it("never splits a surrogate pair across chunks", async () => {
    const text = "a😀b😀c😀";
    const events = await collect(new ScriptedProvider([{ text, usage: "none" }], { chunkSize: 2 }).stream(request()));
    const deltas = events.map((e) => (e.type === "text-delta" ? e.text : ""));
    expect(deltas).toEqual(["a😀", "b😀", "c😀"]);
  });

  it("streams nothing for empty text, and no usage with usage: none", async () => {
    expect(await collect(new ScriptedProvider([{ text: "", usage: "none" }]).stream(request()))).toEqual([]);
  });

  it("passes a fixed usage through unchanged", async () => {
    const usage = { input_tokens: 10, output_tokens: 2, cost_usd_micros: 7 };
    const events = await collect(new ScriptedProvider([{ text: "ok", usage }]).stream(request()));
    expect(events.at(-1)).toEqual({ type: "usage", usage });
  });

  it("waits delayMs before each event", async () => {
    const provider = new ScriptedProvider([{ text: "abcdef", usage: "none" }], { chunkSize: 2, delayMs: 15 });
    const started = Date.now();
    const events = await collect(provider.stream(request()));
    expect(events).toHaveLength(3);
    expect(Date.now() - started).toBeGreaterThanOrEqual(40);
  });

  it("replies() answers each call with the next text, with default identity", async () => {
    const provider = ScriptedProvider.replies("one", "two");
    expect(provider.identity).toEqual({ provider: "scripted", api: "test", model: "scripted-1" });
    expect(provider.remaining).toBe(2);
    const first = await collect(provider.stream(request()));
    const second = await collect(provider.stream(request()));
    expect(first[0]).toEqual({ type: "text-delta", text: "one" });
    expect(second[0]).toEqual({ type: "text-delta", text: "two" });
    expect(provider.remaining).toBe(0);
  });

  it("uses a custom identity", () => {
    const identity = { provider: "openai", api: "responses", model: "gpt-x" };
    expect(new ScriptedProvider([], { identity }).identity).toEqual(identity);
  });

  it("accepts a function script called with the request and the call number", async () => {
    const seen: number[] = [];
    const provider = new ScriptedProvider((req, call) => {
      seen.push(call);
      return { text: `${call}:${req.messages.length}`, usage: "none" };
    });
    expect(await collect(provider.stream(request()))).toEqual([{ type: "text-delta", text: "1:1" }]);
    expect(await collect(provider.stream(request({ messages: [] })))).toEqual([{ type: "text-delta", text: "2:0" }]);
    expect(seen).toEqual([1, 2]);
    expect(provider.remaining).toBe(Infinity);
  });

  it("rejects invalid options", () => {
    expect(() => new ScriptedProvider([], { chunkSize: 0 })).toThrow(InvalidInputError);
    expect(() => new ScriptedProvider([], { chunkSize: 1.5 })).toThrow(InvalidInputError);
    expect(() => new ScriptedProvider([], { delayMs: -1 })).toThrow(InvalidInputError);
    expect(() => new ScriptedProvider([], { contextWindow: Number.NaN })).toThrow(InvalidInputError);
  });
});

describe("ScriptedProvider: auto usage", () => {
  it("input = estimateModelInputTokens(request, tools), output = ceil(chars / 4), total = sum", async () => {
    const tools = [{ name: "search", description: "Search the web", inputSchema: { type: "object" } }];
    const req = request({ summary: "Earlier they said hi.", tools });
    const step: ScriptedStep = {
      reasoning: "abc",
      reasoningSummary: "de",
      text: "hello world",
      toolCalls: [{ name: "search", input: { q: "x" } }],
    };
    const events = await collect(new ScriptedProvider([step]).stream(req));
    const usage = events.at(-1);
    const input = estimateModelInputTokens({ system: req.system, summary: req.summary, messages: req.messages }, tools);
    const chars = 3 + 2 + 11 + "search".length + JSON.stringify({ q: "x" }).length; // 16 + 6 + 9 = 31
    const output = Math.ceil(chars / 4);
    expect(output).toBe(8);
    expect(usage).toEqual({ type: "usage", usage: { input_tokens: input, output_tokens: output, total_tokens: input + output } });
    expect(scriptedAutoUsage(step, req)).toEqual({ input_tokens: input, output_tokens: output, total_tokens: input + output });
  });

  it("matches the documented figures for a tiny request", () => {
    expect(scriptedAutoUsage({ text: "12345678" }, { system: "Be brief.", summary: null, messages: [], tools: [] })).toEqual({
      input_tokens: 3,
      output_tokens: 2,
      total_tokens: 5,
    });
  });

  it("grows the input estimate with the request", async () => {
    const provider = ScriptedProvider.replies("a", "b");
    const small = await collect(provider.stream(request()));
    const big = await collect(provider.stream(request({ messages: [userMessage(1, "x".repeat(400)), userMessage(2, "y".repeat(400))] })));
    const inputOf = (events: ProviderEvent[]): number => {
      const last = events.at(-1);
      return last?.type === "usage" ? last.usage.input_tokens : -1;
    };
    expect(inputOf(big)).toBeGreaterThan(inputOf(small) + 190);
  });
});

describe("ScriptedProvider: context window", () => {
  const long = (): ModelRequest => request({ messages: [userMessage(1, "x".repeat(2_000))] });

  it("refuses an over-long request with ContextLengthExceededError and no events", async () => {
    const provider = new ScriptedProvider([{ text: "fits" }], { contextWindow: 100 });
    const { events, error } = await collectUntilError(provider.stream(long()));
    expect(events).toEqual([]);
    expect(error).toBeInstanceOf(ContextLengthExceededError);
    expect((error as ContextLengthExceededError).code).toBe("context-length-exceeded");
    expect(String((error as Error).message)).toContain("call 1");
  });

  it("does not use up the step: the same step answers the shorter retry", async () => {
    const provider = new ScriptedProvider([{ text: "fits" }], { contextWindow: 100 });
    await collectUntilError(provider.stream(long()));
    expect(provider.remaining).toBe(1);
    const events = await collect(provider.stream(request()));
    expect(events[0]).toEqual({ type: "text-delta", text: "fits" });
    expect(provider.calls).toBe(2);
    expect(provider.requests).toHaveLength(2);
    expect(provider.remaining).toBe(0);
  });

  it("answers at exactly the window, refuses one token over", async () => {
    const req = request();
    const estimate = estimateModelInputTokens(req, req.tools);
    expect(types(await collect(new ScriptedProvider([{ text: "ok" }], { contextWindow: estimate }).stream(req)))).toContain("text-delta");
    const refused = await collectUntilError(new ScriptedProvider([{ text: "ok" }], { contextWindow: estimate - 1 }).stream(req));
    expect(refused.error).toBeInstanceOf(ContextLengthExceededError);
  });

  it("a step with ignoreContextWindow answers anyway", async () => {
    const provider = new ScriptedProvider([{ text: "big", ignoreContextWindow: true }], { contextWindow: 10 });
    const events = await collect(provider.stream(long()));
    expect(types(events)).toEqual(["text-delta", "usage"]);
  });

  it("a step with its own fail is played as scripted", async () => {
    const provider = new ScriptedProvider([{ fail: "error" }], { contextWindow: 10 });
    const { error } = await collectUntilError(provider.stream(long()));
    expect(error).not.toBeInstanceOf(ContextLengthExceededError);
    expect((error as Error).message).toBe("scripted provider failure");
    expect(provider.remaining).toBe(0);
  });
});

describe("ScriptedProvider: failures", () => {
  it("fail: error throws a plain Error before any event", async () => {
    const { events, error } = await collectUntilError(new ScriptedProvider([{ text: "never", fail: "error" }]).stream(request()));
    expect(events).toEqual([]);
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(ContextLengthExceededError);
    expect((error as Error).message).toBe("scripted provider failure");
  });

  it("fail: context-length throws ContextLengthExceededError without usage", async () => {
    const { events, error } = await collectUntilError(new ScriptedProvider([{ fail: "context-length" }]).stream(request()));
    expect(events).toEqual([]);
    expect(error).toBeInstanceOf(ContextLengthExceededError);
  });

  it("fail with a custom Error throws that very error", async () => {
    const mine = new TypeError("boom");
    const { error } = await collectUntilError(new ScriptedProvider([{ fail: mine }]).stream(request()));
    expect(error).toBe(mine);
  });

  it("failAfterEvents streams that many events, then throws (default: plain error)", async () => {
    const provider = new ScriptedProvider([{ text: "abcdefghijklmnop", failAfterEvents: 1 }]);
    const { events, error } = await collectUntilError(provider.stream(request()));
    expect(events).toEqual([{ type: "text-delta", text: "abcdefgh" }]);
    expect((error as Error).message).toBe("scripted provider failure");
  });

  it("failAfterEvents with context-length streams no usage, even past the end", async () => {
    const provider = new ScriptedProvider([{ text: "abcdefghij", fail: "context-length", failAfterEvents: 99 }]);
    const { events, error } = await collectUntilError(provider.stream(request()));
    expect(types(events)).toEqual(["text-delta", "text-delta"]);
    expect(error).toBeInstanceOf(ContextLengthExceededError);
  });

  it("failAfterEvents past the end throws after the usage event", async () => {
    const provider = new ScriptedProvider([{ text: "hi", failAfterEvents: 10 }]);
    const { events, error } = await collectUntilError(provider.stream(request()));
    expect(types(events)).toEqual(["text-delta", "usage"]);
    expect(error).toBeInstanceOf(Error);
  });

  it("throws a clear error naming the call number when the script runs out", async () => {
    const provider = ScriptedProvider.replies("only");
    await collect(provider.stream(request()));
    const { error } = await collectUntilError(provider.stream(request()));
    expect((error as Error).message).toMatch(/call 2 has no scripted step \(the script has 1 step\)/);
    expect(provider.calls).toBe(2);
  });
});

describe("ScriptedProvider: cancellation", () => {
  it("hangAfterEvents streams n events, waits for abort, then ends without throwing", async () => {
    const controller = new AbortController();
    const provider = new ScriptedProvider([{ text: "abcdefghijklmnop", hangAfterEvents: 1 }]);
    const events: ProviderEvent[] = [];
    let firstArrived!: () => void;
    const first = new Promise<void>((resolve) => (firstArrived = resolve));
    const done = (async () => {
      for await (const event of provider.stream(request({ signal: controller.signal }))) {
        events.push(event);
        firstArrived();
      }
      return "ended";
    })();
    await first;
    expect(events).toEqual([{ type: "text-delta", text: "abcdefgh" }]);
    let settled = false;
    void done.then(() => (settled = true));
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(settled).toBe(false);
    controller.abort();
    await expect(done).resolves.toBe("ended");
    expect(events).toHaveLength(1);
  });

  it("hangAfterEvents: 0 hangs before the first event", async () => {
    const controller = new AbortController();
    const pending = collect(new ScriptedProvider([{ text: "x", hangAfterEvents: 0 }]).stream(request({ signal: controller.signal })));
    setTimeout(() => controller.abort(), 10);
    expect(await pending).toEqual([]);
  });

  it("hangAfterEvents past the end hangs after the last event", async () => {
    const controller = new AbortController();
    const pending = collect(new ScriptedProvider([{ text: "x", hangAfterEvents: 50 }]).stream(request({ signal: controller.signal })));
    setTimeout(() => controller.abort(), 10);
    expect(types(await pending)).toEqual(["text-delta", "usage"]);
  });

  it("stops promptly when the signal aborts mid-stream", async () => {
    const controller = new AbortController();
    const provider = new ScriptedProvider([{ text: "x".repeat(80) }], { chunkSize: 1 });
    const events: ProviderEvent[] = [];
    for await (const event of provider.stream(request({ signal: controller.signal }))) {
      events.push(event);
      if (events.length === 3) controller.abort();
    }
    expect(events).toHaveLength(3);
  });

  it("stops during a delay when the signal aborts", async () => {
    const controller = new AbortController();
    // A delay far past the test's timeout: only the abort can end this stream.
    const provider = new ScriptedProvider([{ text: "abcdef" }], { chunkSize: 1, delayMs: 3_600_000 });
    setTimeout(() => controller.abort(), 10);
    expect(await collect(provider.stream(request({ signal: controller.signal })))).toEqual([]);
  });

  it("an already-aborted signal yields nothing (and uses up the step)", async () => {
    const provider = ScriptedProvider.replies("a", "b");
    expect(await collect(provider.stream(request({ signal: AbortSignal.abort() })))).toEqual([]);
    expect(provider.remaining).toBe(1);
  });
});

describe("ScriptedProvider: request recording", () => {
  it("records cloned copies of system, summary, messages and tools, without the signal or execute", async () => {
    const provider = ScriptedProvider.replies("a");
    const messages = [userMessage(1, "hi")];
    const tool: Tool = { name: "search", description: "Search", inputSchema: { type: "object" }, execute: () => "ok" };
    await collect(provider.stream(request({ messages, summary: "prior", tools: [tool] })));
    expect(provider.requests).toHaveLength(1);
    const recorded = provider.requests[0]!;
    expect(recorded).toEqual({
      system: "Be brief.",
      summary: "prior",
      messages: [userMessage(1, "hi")],
      tools: [{ name: "search", description: "Search", inputSchema: { type: "object" } }],
    });
    expect("signal" in recorded).toBe(false);
    expect(recorded.messages).not.toBe(messages);
    // A later mutation of the caller's objects does not change the record.
    (messages[0]!.parts[0] as { text: string }).text = "changed";
    expect((recorded.messages[0]!.parts[0] as { text: string }).text).toBe("hi");
    // And the record itself is structured-clone safe.
    expect(structuredClone(recorded)).toEqual(recorded);
  });

  it("records and counts every call, refused and failed ones included, at stream() time", async () => {
    const provider = new ScriptedProvider([{ fail: "error" }, { text: "ok" }], { contextWindow: 50 });
    provider.stream(request({ messages: [userMessage(1, "x".repeat(1_000))] })); // not even iterated
    expect(provider.calls).toBe(1);
    expect(provider.requests).toHaveLength(1);
    await collectUntilError(provider.stream(request()));
    await collect(provider.stream(request()));
    expect(provider.calls).toBe(3);
    expect(provider.requests.map((r) => r.messages[0]!.parts[0])).toEqual([
      { sequence: 1, type: "text", text: "x".repeat(1_000) },
      { sequence: 1, type: "text", text: "hello there" },
      { sequence: 1, type: "text", text: "hello there" },
    ]);
  });
});
