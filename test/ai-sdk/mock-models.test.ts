/**
 * aiSdkProvider and aiSdkSummarizer driven by the AI SDK's own test models
 * (`MockLanguageModelV3` / `V4` from `ai/test`) and a v2 model written to the v2
 * specification type (`ai/test` of `ai` 7 no longer ships a v2 mock): every usage
 * variant, the event mapping, provider context, tool loops, cancel, overflow.
 */
import type { LanguageModelV2, LanguageModelV2StreamPart, LanguageModelV3StreamPart } from "@ai-sdk/provider";
import { streamText } from "ai";
import { convertArrayToReadableStream, MockLanguageModelV3, MockLanguageModelV4 } from "ai/test";
import { describe, expect, it } from "vitest";
import { CancelledError, MemoryStorage, type RunEvent, type Tool } from "../../core/mod.ts";
import { aiSdkProvider, aiSdkSummarizer, storedUsage } from "../../ai-sdk/mod.ts";
import { createSession, drain } from "../run/support.ts";

const v3Usage = (input: number, output: number, extra: { cacheRead?: number; cacheWrite?: number; reasoning?: number } = {}) => ({
  inputTokens: { total: input, noCache: input - (extra.cacheRead ?? 0) - (extra.cacheWrite ?? 0), cacheRead: extra.cacheRead, cacheWrite: extra.cacheWrite },
  outputTokens: { total: output, text: output - (extra.reasoning ?? 0), reasoning: extra.reasoning },
});

function v3Model(steps: LanguageModelV3StreamPart[][]) {
  return new MockLanguageModelV3({ provider: "mock.chat", modelId: "m-3", doStream: steps.map((parts) => ({ stream: convertArrayToReadableStream(parts) })) });
}

function v2Model(steps: LanguageModelV2StreamPart[][]): LanguageModelV2 & { calls: unknown[] } {
  const calls: unknown[] = [];
  return {
    specificationVersion: "v2",
    provider: "mock.v2",
    modelId: "m-2",
    supportedUrls: {},
    calls,
    doGenerate: () => Promise.reject(new Error("not used")),
    doStream: async (options) => {
      calls.push(options);
      return { stream: convertArrayToReadableStream(steps[calls.length - 1]!) };
    },
  };
}

describe("usage mapping", () => {
  it("v2 flat usage is stored as reported", () => {
    expect(storedUsage({ inputTokens: 120, outputTokens: 30, totalTokens: 150, reasoningTokens: 10, cachedInputTokens: 100 })).toEqual({
      input_tokens: 120,
      output_tokens: 30,
      total_tokens: 150,
      cache_read_tokens: 100,
      reasoning_tokens: 10,
    });
    expect(storedUsage({ inputTokens: 5, outputTokens: 2, totalTokens: undefined })).toEqual({ input_tokens: 5, output_tokens: 2, total_tokens: 7 });
    expect(storedUsage({ inputTokens: undefined, outputTokens: undefined, totalTokens: undefined })).toBeUndefined();
  });

  it("v3/v4 nested usage: totals, else the sum of the details; cache and reasoning kept", () => {
    expect(storedUsage(v3Usage(1200, 40, { cacheRead: 1000, cacheWrite: 50, reasoning: 10 }))).toEqual({
      input_tokens: 1200,
      output_tokens: 40,
      total_tokens: 1240,
      cache_read_tokens: 1000,
      cache_write_tokens: 50,
      reasoning_tokens: 10,
    });
    expect(
      storedUsage({
        inputTokens: { total: undefined, noCache: 10, cacheRead: 90, cacheWrite: undefined },
        outputTokens: { total: undefined, text: 3, reasoning: 4 },
      }),
    ).toEqual({
      input_tokens: 100,
      output_tokens: 7,
      total_tokens: 107,
      cache_read_tokens: 90,
      reasoning_tokens: 4,
    });
    expect(
      storedUsage({
        inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
        outputTokens: { total: undefined, text: undefined, reasoning: undefined },
      }),
    ).toBeUndefined();
  });
});

describe("aiSdkProvider over the AI SDK's mock models", () => {
  it("v3: text, reasoning, tool loop, usage and provider context reach the store", async () => {
    const model = v3Model([
      [
        { type: "stream-start", warnings: [] },
        { type: "reasoning-start", id: "r1" },
        { type: "reasoning-delta", id: "r1", delta: "think " },
        { type: "reasoning-delta", id: "r1", delta: "hard" },
        { type: "reasoning-end", id: "r1", providerMetadata: { anthropic: { signature: "sig-1" } } },
        { type: "tool-call", toolCallId: "c1", toolName: "echo", input: '{"say":"hi"}' },
        { type: "finish", usage: v3Usage(100, 20, { reasoning: 5 }), finishReason: { unified: "tool-calls", raw: "tool_use" } },
      ],
      [
        { type: "text-start", id: "t1" },
        { type: "text-delta", id: "t1", delta: "Hello " },
        { type: "text-delta", id: "t1", delta: "there" },
        { type: "text-end", id: "t1" },
        { type: "finish", usage: v3Usage(140, 8, { cacheRead: 100 }), finishReason: { unified: "stop", raw: "end_turn" } },
      ],
    ]);
    const echo: Tool = { name: "echo", inputSchema: { type: "object" }, execute: (input) => ({ echoed: input }) };
    const { session } = await createSession(new MemoryStorage());
    const { events, outcome } = await drain(session.run("say hi", { provider: aiSdkProvider(model), tools: [echo] }));
    expect(outcome?.stopReason).toBe("final");
    const [, step1, step2] = outcome!.messages;
    expect(step1!.provider).toEqual({ provider: "mock", api: "chat", model: "m-3" });
    expect(step1!.usage).toEqual({ input_tokens: 100, output_tokens: 20, total_tokens: 120, reasoning_tokens: 5 });
    expect(step1!.parts.map((p) => p.type)).toEqual(["reasoning", "provider-context", "tool"]);
    expect(step1!.parts[2]).toMatchObject({ tool_name: "echo", input: { say: "hi" }, state: "output-available", output: { echoed: { say: "hi" } } });
    expect(step1!.parts[1]).toMatchObject({
      provider: "mock",
      api: "chat",
      model: "m-3",
      data: { part: "reasoning", key: 0, providerMetadata: { anthropic: { signature: "sig-1" } } },
    });
    expect(step2!.usage).toEqual({ input_tokens: 140, output_tokens: 8, total_tokens: 148, cache_read_tokens: 100 });
    expect(events.filter((e) => e.type === "text-delta").map((e) => (e as { text: string }).text).join("")).toBe("Hello there");
    // The second call got the signed reasoning back, the tool call and its result.
    const prompt = model.doStreamCalls[1]!.prompt;
    expect(prompt.map((m) => m.role)).toEqual(["user", "assistant", "tool"]);
    expect(prompt[1]!.content[0]).toEqual({ type: "reasoning", text: "think hard", providerOptions: { anthropic: { signature: "sig-1" } } });
    expect(prompt[2]!.content[0]).toMatchObject({ type: "tool-result", toolCallId: "c1", output: { type: "json", value: { echoed: { say: "hi" } } } });
    expect(model.doStreamCalls[0]!.tools).toEqual([{ type: "function", name: "echo", inputSchema: { type: "object" } }]);
  });

  it("empty provider metadata ({ loopback: {} } on every finish) stores no provider-context part", async () => {
    const model = v3Model([
      [
        { type: "text-start", id: "t1", providerMetadata: { loopback: {} } },
        { type: "text-delta", id: "t1", delta: "hi" },
        { type: "text-end", id: "t1", providerMetadata: { loopback: {} } },
        {
          type: "finish",
          usage: v3Usage(10, 1),
          finishReason: { unified: "stop", raw: "stop" },
          providerMetadata: { loopback: {}, other: { responseId: "r1" } },
        },
      ],
      [{ type: "finish", usage: v3Usage(12, 1), finishReason: { unified: "stop", raw: "stop" }, providerMetadata: { loopback: {} } }],
    ]);
    const { session } = await createSession(new MemoryStorage());
    const first = await drain(session.run("hi", { provider: aiSdkProvider(model) }));
    expect(first.outcome!.messages[1]!.parts).toMatchObject([{ type: "text", text: "hi" }, {
      type: "provider-context",
      data: { part: "finish", providerMetadata: { other: { responseId: "r1" } } },
    }]);
    expect(JSON.stringify(first.outcome!.messages[1]!.parts)).not.toContain("loopback");
    const second = await drain(session.run("again", { provider: aiSdkProvider(model) }));
    expect(second.outcome!.messages[1]!.parts).toEqual([]);
  });

  it("v2: flat usage, files and tool calls", async () => {
    const model = v2Model([
      [
        { type: "text-start", id: "t" },
        { type: "text-delta", id: "t", delta: "a picture:" },
        { type: "text-end", id: "t" },
        { type: "file", mediaType: "image/png", data: "iVBORw0KGgo=" },
        { type: "finish", usage: { inputTokens: 50, outputTokens: 9, totalTokens: 59, cachedInputTokens: 40 }, finishReason: "stop" },
      ],
    ]);
    const { session } = await createSession(new MemoryStorage());
    const { outcome } = await drain(session.run("draw", { provider: aiSdkProvider(model) }));
    const answer = outcome!.messages[1]!;
    expect(answer.provider).toEqual({ provider: "mock", api: "v2", model: "m-2" });
    expect(answer.usage).toEqual({ input_tokens: 50, output_tokens: 9, total_tokens: 59, cache_read_tokens: 40 });
    expect(answer.parts).toMatchObject([{ type: "text", text: "a picture:" }, { type: "file", media_type: "image/png", data: "iVBORw0KGgo=" }]);
  });

  it("v4: reasoning of OpenAI's Responses API is stored as a reasoning summary", async () => {
    const model = new MockLanguageModelV4({
      provider: "openai.responses",
      modelId: "gpt-x",
      doStream: {
        stream: convertArrayToReadableStream([
          { type: "reasoning-start", id: "rs_1" },
          { type: "reasoning-delta", id: "rs_1", delta: "Plan: " },
          { type: "reasoning-delta", id: "rs_1", delta: "answer briefly." },
          { type: "reasoning-end", id: "rs_1", providerMetadata: { openai: { itemId: "rs_1", reasoningEncryptedContent: "enc" } } },
          { type: "text-start", id: "t" },
          { type: "text-delta", id: "t", delta: "Yes." },
          { type: "text-end", id: "t", providerMetadata: { openai: { itemId: "msg_1" } } },
          {
            type: "finish",
            usage: v3Usage(10, 4),
            finishReason: { unified: "stop", raw: "completed" },
            providerMetadata: { openai: { responseId: "resp_1" } },
          },
        ]),
      },
    });
    const { session } = await createSession(new MemoryStorage());
    const { outcome } = await drain(session.run("ok?", { provider: aiSdkProvider(model) }));
    const answer = outcome!.messages[1]!;
    expect(answer.provider).toEqual({ provider: "openai", api: "responses", model: "gpt-x" });
    expect(answer.parts.map((p) => p.type)).toEqual(["reasoning-summary", "provider-context", "text", "provider-context", "provider-context"]);
    expect(answer.parts[0]).toMatchObject({ text: "Plan: answer briefly." });
    expect(answer.parts[4]).toMatchObject({ data: { part: "finish", providerMetadata: { openai: { responseId: "resp_1" } } } });
  });

  it("a handoff to another model leaves the first model's provider context out", async () => {
    const first = v3Model([[
      { type: "reasoning-start", id: "r" },
      { type: "reasoning-delta", id: "r", delta: "secret" },
      { type: "reasoning-end", id: "r", providerMetadata: { anthropic: { signature: "only-for-m-3" } } },
      { type: "text-start", id: "t" },
      { type: "text-delta", id: "t", delta: "one" },
      { type: "text-end", id: "t" },
      { type: "finish", usage: v3Usage(5, 2), finishReason: { unified: "stop", raw: "stop" } },
    ]]);
    const second = new MockLanguageModelV3({
      provider: "other.chat",
      modelId: "o-1",
      doStream: {
        stream: convertArrayToReadableStream<LanguageModelV3StreamPart>([{
          type: "finish",
          usage: v3Usage(5, 0),
          finishReason: { unified: "stop", raw: "stop" },
        }]),
      },
    });
    const { session } = await createSession(new MemoryStorage());
    await drain(session.run("one", { provider: aiSdkProvider(first) }));
    const { events } = await drain(session.run("two", { provider: aiSdkProvider(second) }));
    expect(events.some((e) => e.type === "context-omitted")).toBe(true);
    expect(JSON.stringify(second.doStreamCalls[0]!.prompt)).not.toContain("only-for-m-3");
  });

  it("cancel mid-stream commits the streamed text as stopped", async () => {
    let controller!: ReadableStreamDefaultController<LanguageModelV3StreamPart>;
    const model = new MockLanguageModelV3({
      doStream: async () => ({
        stream: new ReadableStream<LanguageModelV3StreamPart>({
          start(c) {
            controller = c;
            c.enqueue({ type: "text-start", id: "t" });
            c.enqueue({ type: "text-delta", id: "t", delta: "partial" });
          },
        }),
      }),
    });
    const abort = new AbortController();
    const { session } = await createSession(new MemoryStorage());
    const run = session.run("go", {
      provider: aiSdkProvider(model),
      signal: abort.signal,
      onEvent: (e: RunEvent) => {
        if (e.type === "text-delta") abort.abort();
      },
    });
    const { error } = await drain(run);
    expect(error).toBeInstanceOf(CancelledError);
    expect(controller).toBeDefined();
    const stored = session.active.at(-1)!;
    expect(stored).toMatchObject({ role: "assistant", status: "stopped", parts: [{ type: "text", text: "partial" }] });
  });

  it("a context-length error part folds the input and retries once", async () => {
    const model = v3Model([
      [{ type: "error", error: { type: "error", error: { type: "invalid_request_error", message: "prompt is too long: 210000 tokens > 200000 maximum" } } }],
      [{ type: "text-start", id: "t" }, { type: "text-delta", id: "t", delta: "fits now" }, { type: "text-end", id: "t" }, {
        type: "finish",
        usage: v3Usage(9, 2),
        finishReason: { unified: "stop", raw: "stop" },
      }],
    ]);
    const { session } = await createSession(new MemoryStorage());
    await session.append([{ role: "user", parts: [{ type: "text", text: "old" }] }, { role: "assistant", parts: [{ type: "text", text: "old answer" }] }]);
    const { events, outcome } = await drain(session.run("new", { provider: aiSdkProvider(model) }));
    expect(events.filter((e) => e.type === "context-folded")).toHaveLength(1);
    expect(model.doStreamCalls).toHaveLength(2);
    expect(outcome!.messages.at(-1)!.parts).toMatchObject([{ type: "text", text: "fits now" }]);
  });
});

describe("aiSdkSummarizer", () => {
  it("an input ten times its window is summarized in bounded chunks, then folded", async () => {
    const window = 2_000;
    const prompts: string[] = [];
    const model = new MockLanguageModelV3({
      doStream: async (options) => {
        const text = JSON.stringify(options.prompt);
        prompts.push(text);
        return {
          stream: convertArrayToReadableStream<LanguageModelV3StreamPart>([
            { type: "text-start", id: "t" },
            { type: "text-delta", id: "t", delta: `summary ${prompts.length}` },
            { type: "text-end", id: "t" },
            { type: "finish", usage: v3Usage(Math.ceil(text.length / 4), 3), finishReason: { unified: "stop", raw: "stop" } },
          ]),
        };
      },
    });
    const summarizer = aiSdkSummarizer(model, { contextWindow: window, maxOutputTokens: 200 });
    const messages = Array.from({ length: 40 }, (_, i) => ({
      record_type: "message" as const,
      sequence: i + 1,
      message_id: `m${i}`,
      role: i % 2 === 0 ? ("user" as const) : ("assistant" as const),
      created_at: "2026-01-01T00:00:00.000Z",
      parts: [{ sequence: 1, type: "text" as const, text: `message ${i} ${"word ".repeat(400)}` }],
    }));
    const totalChars = messages.reduce((n, m) => n + m.parts[0]!.text.length, 0);
    expect(totalChars / 4).toBeGreaterThan(window * 10);
    const result = await summarizer.summarize({ previousSummary: "earlier summary", messages, signal: new AbortController().signal });
    expect(prompts.length).toBeGreaterThan(10);
    for (const prompt of prompts) expect(prompt.length / 4).toBeLessThan(window);
    expect(prompts[0]).toContain("earlier summary");
    expect(prompts[1]).toContain("summary 1");
    expect(result.text).toBe(`summary ${prompts.length}`);
    expect(result.usage!.output_tokens).toBe(3 * prompts.length);
  });
});

describe("the summarizer's own usage", () => {
  it("is stored in meta.json's compaction accounting (summary_usage, summed) and in the outcome", async () => {
    let call = 0;
    const model = new MockLanguageModelV3({
      doStream: async () => {
        call += 1;
        return {
          stream: convertArrayToReadableStream<LanguageModelV3StreamPart>([
            { type: "text-start", id: "t" },
            { type: "text-delta", id: "t", delta: `summary ${call}` },
            { type: "text-end", id: "t" },
            { type: "finish", usage: v3Usage(100 * call, 10 * call, {}), finishReason: { unified: "stop", raw: "stop" } },
          ]),
        };
      },
    });
    const { session } = await createSession(new MemoryStorage(), { summarizer: aiSdkSummarizer(model, { contextWindow: 8_000 }) });
    const turn = (
      i: number,
    ) => [{ role: "user" as const, parts: [{ type: "text" as const, text: `q${i}` }] }, {
      role: "assistant" as const,
      parts: [{ type: "text" as const, text: `a${i}` }],
    }];
    await session.append([...turn(1), ...turn(2)]);
    const first = await session.compact();
    expect(first).toMatchObject({ summaryUsage: { input_tokens: 100, output_tokens: 10, total_tokens: 110 } });
    await session.append([...turn(3), ...turn(4)]);
    await session.compact();
    expect(session.meta.compaction?.summary_usage).toEqual({ input_tokens: 300, output_tokens: 30, total_tokens: 330 });
  });
});

describe("the same mock stream through streamText", () => {
  it("streamText and the adapter read the same text and usage", async () => {
    const parts: LanguageModelV3StreamPart[] = [
      { type: "text-start", id: "t" },
      { type: "text-delta", id: "t", delta: "same" },
      { type: "text-end", id: "t" },
      { type: "finish", usage: v3Usage(3, 1), finishReason: { unified: "stop", raw: "stop" } },
    ];
    const direct = streamText({ model: new MockLanguageModelV3({ doStream: { stream: convertArrayToReadableStream(parts) } }), prompt: "x" });
    expect(await direct.text).toBe("same");
    const events: string[] = [];
    for await (
      const e of aiSdkProvider(new MockLanguageModelV3({ doStream: { stream: convertArrayToReadableStream(parts) } })).stream({
        system: null,
        summary: null,
        messages: [],
        tools: [],
        signal: new AbortController().signal,
      })
    ) events.push(e.type);
    expect(events).toEqual(["text-delta", "usage"]);
    expect((await direct.usage).inputTokens).toBe(3);
  });
});
