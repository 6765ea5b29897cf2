/**
 * aiSdkProvider over real HTTP on 127.0.0.1: a local server speaks the OpenAI
 * chat-completions stream, the OpenAI Responses stream and Anthropic's messages
 * stream, driven through `@ai-sdk/openai`, `@ai-sdk/anthropic` and
 * `@ai-sdk/openai-compatible`. Usage variants, a tool loop, a cancel mid-stream that
 * commits `stopped` (the server sees the connection close), and each provider's real
 * context-length refusal (status and body), which folds the input and retries once.
 */
import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { afterEach, describe, expect, it } from "vitest";
import { CancelledError, MemoryStorage, type RunEvent, type Tool } from "../../core/mod.ts";
import { aiSdkProvider } from "../../ai-sdk/mod.ts";
import { createSession, drain } from "../run/support.ts";
import { anthropicEvent, chat, responsesEvent, startWireServer, type WireReply, type WireServer } from "./wire-server.ts";

let server: WireServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function serve(replies: readonly WireReply[]): Promise<WireServer> {
  server = await startWireServer(replies);
  return server;
}

const echo: Tool = {
  name: "echo",
  description: "echoes",
  inputSchema: { type: "object", properties: { say: { type: "string" } } },
  execute: (input) => ({ echoed: input }),
};

/** A session that already holds one exchange, so a fold has something to drop. */
async function sessionWithHistory() {
  const { session } = await createSession(new MemoryStorage());
  await session.append([{ role: "user", parts: [{ type: "text", text: "earlier question" }] }, {
    role: "assistant",
    parts: [{ type: "text", text: "earlier answer" }],
  }]);
  return session;
}

const chatAnswer = (text: string): WireReply => ({
  events: [
    chat.chunk({ role: "assistant", content: text }),
    chat.chunk({}, "stop"),
    chat.usage({ prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 }),
    chat.done,
  ],
});

describe("OpenAI chat-completions through @ai-sdk/openai", () => {
  it("a tool loop with usage (cached and reasoning details) stored as reported", async () => {
    const wire = await serve([
      {
        events: [
          chat.chunk({
            role: "assistant",
            content: null,
            tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "echo", arguments: "" } }],
          }),
          chat.chunk({ tool_calls: [{ index: 0, function: { arguments: '{"say":' } }] }),
          chat.chunk({ tool_calls: [{ index: 0, function: { arguments: '"hi"}' } }] }),
          chat.chunk({}, "tool_calls"),
          chat.usage({
            prompt_tokens: 200,
            completion_tokens: 20,
            total_tokens: 220,
            prompt_tokens_details: { cached_tokens: 150 },
            completion_tokens_details: { reasoning_tokens: 7 },
          }),
          chat.done,
        ],
      },
      chatAnswer("done"),
    ]);
    const model = createOpenAI({ baseURL: `${wire.baseUrl}/v1`, apiKey: "test-key" }).chat("gpt-test");
    const { session } = await createSession(new MemoryStorage());
    const { outcome, error } = await drain(session.run("call echo", { provider: aiSdkProvider(model), tools: [echo] }));
    expect(error).toBeUndefined();
    const [, step1, step2] = outcome!.messages;
    expect(step1!.provider).toEqual({ provider: "openai", api: "chat", model: "gpt-test" });
    expect(step1!.usage).toMatchObject({ input_tokens: 200, output_tokens: 20, total_tokens: 220, cache_read_tokens: 150, reasoning_tokens: 7 });
    expect(step1!.parts.find((p) => p.type === "tool")).toMatchObject({ tool_call_id: "call_1", input: { say: "hi" }, state: "output-available" });
    expect(step2!.usage).toMatchObject({ input_tokens: 12, output_tokens: 3, total_tokens: 15 });
    expect(wire.requests.map((r) => r.path)).toEqual(["/v1/chat/completions", "/v1/chat/completions"]);
    const second = wire.requests[1]!.body.messages as { role: string; tool_call_id?: string }[];
    expect(second.map((m) => m.role)).toEqual(["user", "assistant", "tool"]);
    expect(second[2]!.tool_call_id).toBe("call_1");
  });

  it("a 400 context_length_exceeded folds the input and retries once", async () => {
    const wire = await serve([
      {
        status: 400,
        body: {
          error: {
            message: "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
            type: "invalid_request_error",
            param: "messages",
            code: "context_length_exceeded",
          },
        },
      },
      chatAnswer("fits"),
    ]);
    const model = createOpenAI({ baseURL: `${wire.baseUrl}/v1`, apiKey: "k" }).chat("gpt-test");
    const session = await sessionWithHistory();
    const { events, outcome } = await drain(session.run("new question", { provider: aiSdkProvider(model) }));
    expect(events.filter((e) => e.type === "context-folded")).toHaveLength(1);
    expect(outcome!.messages.at(-1)!.parts.find((p) => p.type === "text")).toMatchObject({ text: "fits" });
    expect(wire.requests).toHaveLength(2);
    expect((wire.requests[1]!.body.messages as unknown[]).length).toBeLessThan((wire.requests[0]!.body.messages as unknown[]).length);
  });

  it("cancel mid-stream commits stopped and closes the connection", async () => {
    const wire = await serve([{ events: [chat.chunk({ role: "assistant", content: "partial " }), chat.chunk({ content: "answer" })], hang: true }]);
    const model = createOpenAI({ baseURL: `${wire.baseUrl}/v1`, apiKey: "k" }).chat("gpt-test");
    const { session } = await createSession(new MemoryStorage());
    const abort = new AbortController();
    let text = "";
    const onEvent = (e: RunEvent) => {
      if (e.type !== "text-delta") return;
      text += e.text;
      if (text === "partial answer") abort.abort();
    };
    const { error } = await drain(session.run("go", { provider: aiSdkProvider(model), signal: abort.signal, onEvent }));
    expect(error).toBeInstanceOf(CancelledError);
    await wire.disconnected;
    expect(session.active.at(-1)).toMatchObject({ role: "assistant", status: "stopped", parts: [{ type: "text", text: "partial answer" }] });
  });
});

describe("OpenAI Responses through @ai-sdk/openai", () => {
  it("reasoning summary, encrypted reasoning and the response id; usage with cache details", async () => {
    let n = 0;
    const wire = await serve([
      {
        events: [
          responsesEvent("response.created", { response: { id: "resp_1", created_at: 1_700_000_000, model: "gpt-test" } }, n++),
          responsesEvent(
            "response.output_item.added",
            { output_index: 0, item: { type: "reasoning", id: "rs_1", encrypted_content: "enc-1", summary: [] } },
            n++,
          ),
          responsesEvent("response.reasoning_summary_part.added", {
            item_id: "rs_1",
            output_index: 0,
            summary_index: 0,
            part: { type: "summary_text", text: "" },
          }, n++),
          responsesEvent("response.reasoning_summary_text.delta", { item_id: "rs_1", output_index: 0, summary_index: 0, delta: "Check the facts." }, n++),
          responsesEvent("response.reasoning_summary_part.done", {
            item_id: "rs_1",
            output_index: 0,
            summary_index: 0,
            part: { type: "summary_text", text: "Check the facts." },
          }, n++),
          responsesEvent("response.output_item.done", {
            output_index: 0,
            item: { type: "reasoning", id: "rs_1", encrypted_content: "enc-1", summary: [{ type: "summary_text", text: "Check the facts." }] },
          }, n++),
          responsesEvent("response.output_item.added", {
            output_index: 1,
            item: { type: "message", id: "msg_1", role: "assistant", status: "in_progress", content: [] },
          }, n++),
          responsesEvent("response.output_text.delta", { item_id: "msg_1", output_index: 1, content_index: 0, delta: "Paris." }, n++),
          responsesEvent("response.output_item.done", {
            output_index: 1,
            item: { type: "message", id: "msg_1", role: "assistant", status: "completed", content: [{ type: "output_text", text: "Paris.", annotations: [] }] },
          }, n++),
          responsesEvent("response.completed", {
            response: {
              id: "resp_1",
              status: "completed",
              usage: {
                input_tokens: 300,
                input_tokens_details: { cached_tokens: 200 },
                output_tokens: 40,
                output_tokens_details: { reasoning_tokens: 30 },
                total_tokens: 340,
              },
            },
          }, n++),
        ],
      },
    ]);
    const model = createOpenAI({ baseURL: `${wire.baseUrl}/v1`, apiKey: "k" }).responses("gpt-test");
    const { session } = await createSession(new MemoryStorage());
    const { outcome, error } = await drain(session.run("capital of France?", { provider: aiSdkProvider(model) }));
    expect(error).toBeUndefined();
    const answer = outcome!.messages[1]!;
    expect(answer.provider).toEqual({ provider: "openai", api: "responses", model: "gpt-test" });
    expect(answer.usage).toMatchObject({ input_tokens: 300, output_tokens: 40, total_tokens: 340, cache_read_tokens: 200, reasoning_tokens: 30 });
    expect(answer.parts.find((p) => p.type === "reasoning-summary")).toMatchObject({ text: "Check the facts." });
    expect(answer.parts.find((p) => p.type === "text")).toMatchObject({ text: "Paris." });
    const context = JSON.stringify(answer.parts.filter((p) => p.type === "provider-context"));
    expect(context).toContain("enc-1");
    expect(context).toContain("resp_1");
    expect(wire.requests[0]!.path).toBe("/v1/responses");
  });

  it("a 400 context_length_exceeded from the Responses API folds and retries", async () => {
    let n = 0;
    const wire = await serve([
      {
        status: 400,
        body: {
          error: {
            message: "Your input exceeds the context window of this model. Please adjust your input and try again.",
            type: "invalid_request_error",
            param: "input",
            code: "context_length_exceeded",
          },
        },
      },
      {
        events: [
          responsesEvent("response.created", { response: { id: "resp_2", created_at: 1_700_000_000, model: "gpt-test" } }, n++),
          responsesEvent("response.output_item.added", {
            output_index: 0,
            item: { type: "message", id: "msg_2", role: "assistant", status: "in_progress", content: [] },
          }, n++),
          responsesEvent("response.output_text.delta", { item_id: "msg_2", output_index: 0, content_index: 0, delta: "ok" }, n++),
          responsesEvent("response.output_item.done", {
            output_index: 0,
            item: { type: "message", id: "msg_2", role: "assistant", status: "completed", content: [] },
          }, n++),
          responsesEvent("response.completed", { response: { id: "resp_2", status: "completed", usage: { input_tokens: 10, output_tokens: 1 } } }, n++),
        ],
      },
    ]);
    const model = createOpenAI({ baseURL: `${wire.baseUrl}/v1`, apiKey: "k" }).responses("gpt-test");
    const session = await sessionWithHistory();
    const { events, outcome, error } = await drain(session.run("again", { provider: aiSdkProvider(model) }));
    expect(error).toBeUndefined();
    expect(events.filter((e) => e.type === "context-folded")).toHaveLength(1);
    expect(outcome!.messages.at(-1)!.usage).toMatchObject({ input_tokens: 10, output_tokens: 1 });
  });
});

it("a Responses stream that fails with context_length_exceeded folds and retries", async () => {
  let n = 0;
  const wire = await serve([
    {
      events: [
        responsesEvent("response.created", { response: { id: "resp_3", created_at: 1_700_000_000, model: "gpt-test" } }, n++),
        responsesEvent("error", {
          error: {
            type: "invalid_request_error",
            code: "context_length_exceeded",
            message: "Your input exceeds the context window of this model.",
            param: null,
          },
        }, n++),
      ],
    },
    {
      events: [
        responsesEvent("response.created", { response: { id: "resp_4", created_at: 1_700_000_000, model: "gpt-test" } }, n++),
        responsesEvent("response.output_item.added", {
          output_index: 0,
          item: { type: "message", id: "msg_4", role: "assistant", status: "in_progress", content: [] },
        }, n++),
        responsesEvent("response.output_text.delta", { item_id: "msg_4", output_index: 0, content_index: 0, delta: "ok" }, n++),
        responsesEvent("response.output_item.done", {
          output_index: 0,
          item: { type: "message", id: "msg_4", role: "assistant", status: "completed", content: [] },
        }, n++),
        responsesEvent("response.completed", { response: { id: "resp_4", status: "completed", usage: { input_tokens: 10, output_tokens: 1 } } }, n++),
      ],
    },
  ]);
  const model = createOpenAI({ baseURL: `${wire.baseUrl}/v1`, apiKey: "k" }).responses("gpt-test");
  const session = await sessionWithHistory();
  const { events, error } = await drain(session.run("again", { provider: aiSdkProvider(model) }));
  expect(error).toBeUndefined();
  expect(events.filter((e) => e.type === "context-folded")).toHaveLength(1);
  expect(wire.requests).toHaveLength(2);
});

describe("Anthropic messages through @ai-sdk/anthropic", () => {
  const start = (usage: Record<string, unknown>) =>
    anthropicEvent("message_start", {
      message: { id: "msg_01", type: "message", role: "assistant", model: "claude-test", content: [], stop_reason: null, stop_sequence: null, usage },
    });

  it("thinking with its signature, a tool loop, and cache usage", async () => {
    const wire = await serve([
      {
        events: [
          start({ input_tokens: 50, cache_creation_input_tokens: 20, cache_read_input_tokens: 100, output_tokens: 1 }),
          anthropicEvent("content_block_start", { index: 0, content_block: { type: "thinking", thinking: "", signature: "" } }),
          anthropicEvent("content_block_delta", { index: 0, delta: { type: "thinking_delta", thinking: "Use the tool." } }),
          anthropicEvent("content_block_delta", { index: 0, delta: { type: "signature_delta", signature: "sig-abc" } }),
          anthropicEvent("content_block_stop", { index: 0 }),
          anthropicEvent("content_block_start", { index: 1, content_block: { type: "tool_use", id: "toolu_1", name: "echo", input: {} } }),
          anthropicEvent("content_block_delta", { index: 1, delta: { type: "input_json_delta", partial_json: '{"say":"hi"}' } }),
          anthropicEvent("content_block_stop", { index: 1 }),
          anthropicEvent("message_delta", { delta: { stop_reason: "tool_use", stop_sequence: null }, usage: { output_tokens: 30 } }),
          anthropicEvent("message_stop"),
        ],
      },
      {
        events: [
          start({ input_tokens: 80, output_tokens: 1 }),
          anthropicEvent("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
          anthropicEvent("content_block_delta", { index: 0, delta: { type: "text_delta", text: "Done." } }),
          anthropicEvent("content_block_stop", { index: 0 }),
          anthropicEvent("message_delta", { delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 4 } }),
          anthropicEvent("message_stop"),
        ],
      },
    ]);
    const model = createAnthropic({ baseURL: `${wire.baseUrl}/v1`, apiKey: "k" })("claude-test");
    const { session } = await createSession(new MemoryStorage());
    const { outcome, error } = await drain(session.run("use echo", { provider: aiSdkProvider(model), tools: [echo] }));
    expect(error).toBeUndefined();
    const [, step1, step2] = outcome!.messages;
    expect(step1!.provider).toEqual({ provider: "anthropic", api: "messages", model: "claude-test" });
    expect(step1!.usage).toMatchObject({ input_tokens: 170, output_tokens: 30, cache_read_tokens: 100, cache_write_tokens: 20 });
    expect(step1!.parts.find((p) => p.type === "reasoning")).toMatchObject({ text: "Use the tool." });
    expect(step1!.parts.find((p) => p.type === "tool")).toMatchObject({ tool_call_id: "toolu_1", input: { say: "hi" }, state: "output-available" });
    expect(step2!.usage).toMatchObject({ input_tokens: 80, output_tokens: 4 });
    // The signature went back to the same model with the thinking block.
    const sent = JSON.stringify(wire.requests[1]!.body.messages);
    expect(sent).toContain("sig-abc");
    expect(sent).toContain("toolu_1");
  });

  it("a 400 'prompt is too long' folds and retries", async () => {
    const wire = await serve([
      { status: 400, body: { type: "error", error: { type: "invalid_request_error", message: "prompt is too long: 210345 tokens > 200000 maximum" } } },
      {
        events: [
          start({ input_tokens: 9, output_tokens: 1 }),
          anthropicEvent("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
          anthropicEvent("content_block_delta", { index: 0, delta: { type: "text_delta", text: "short now" } }),
          anthropicEvent("content_block_stop", { index: 0 }),
          anthropicEvent("message_delta", { delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 2 } }),
          anthropicEvent("message_stop"),
        ],
      },
    ]);
    const model = createAnthropic({ baseURL: `${wire.baseUrl}/v1`, apiKey: "k" })("claude-test");
    const session = await sessionWithHistory();
    const { events, outcome, error } = await drain(session.run("again", { provider: aiSdkProvider(model) }));
    expect(error).toBeUndefined();
    expect(events.filter((e) => e.type === "context-folded")).toHaveLength(1);
    expect(outcome!.messages.at(-1)!.parts.find((p) => p.type === "text")).toMatchObject({ text: "short now" });
  });
});

describe("OpenAI-compatible servers through @ai-sdk/openai-compatible", () => {
  const compatible = (wire: WireServer) =>
    createOpenAICompatible({ name: "local", baseURL: `${wire.baseUrl}/v1`, apiKey: "k", includeUsage: true }).chatModel("qwen-test");

  it("reasoning_content, text and usage", async () => {
    const wire = await serve([
      {
        events: [
          chat.chunk({ role: "assistant", reasoning_content: "hmm" }),
          chat.chunk({ content: "answer" }),
          chat.chunk({}, "stop"),
          chat.usage({ prompt_tokens: 30, completion_tokens: 6, total_tokens: 36 }),
          chat.done,
        ],
      },
    ]);
    const { session } = await createSession(new MemoryStorage());
    const { outcome, error } = await drain(session.run("q", { provider: aiSdkProvider(compatible(wire)) }));
    expect(error).toBeUndefined();
    const answer = outcome!.messages[1]!;
    expect(answer.provider).toEqual({ provider: "local", api: "chat", model: "qwen-test" });
    expect(answer.usage).toMatchObject({ input_tokens: 30, output_tokens: 6, total_tokens: 36 });
    expect(answer.parts.map((p) => p.type).filter((t) => t !== "provider-context")).toEqual(["reasoning", "text"]);
  });

  it.each([
    ["vLLM", {
      object: "error",
      message:
        "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.",
      type: "BadRequestError",
      param: null,
      code: 400,
    }],
    ["llama.cpp", {
      error: {
        code: 400,
        message: "the request exceeds the available context size, try increasing it",
        type: "exceed_context_size_error",
        n_prompt_tokens: 5000,
        n_ctx: 4096,
      },
    }],
  ])("a %s context-size refusal folds and retries", async (_name, body) => {
    const wire = await serve([{ status: 400, body }, chatAnswer("ok")]);
    const session = await sessionWithHistory();
    const { events, error } = await drain(session.run("again", { provider: aiSdkProvider(compatible(wire)) }));
    expect(error).toBeUndefined();
    expect(events.filter((e) => e.type === "context-folded")).toHaveLength(1);
    expect(wire.requests).toHaveLength(2);
  });

  it("another 400 is a provider error, not a fold", async () => {
    const wire = await serve([{ status: 400, body: { error: { message: "unknown model qwen-test", type: "invalid_request_error" } } }]);
    const { session } = await createSession(new MemoryStorage());
    const { events, error } = await drain(session.run("q", { provider: aiSdkProvider(compatible(wire)) }));
    expect((error as Error).name).toBe("ProviderError");
    expect(events.some((e) => e.type === "context-folded")).toBe(false);
    expect(wire.requests).toHaveLength(1);
  });
});
