/**
 * UI messages round-trip exactly (appendUIMessages then toUIMessages gives the same list),
 * and the model input composed from them keeps every tool result after its call, one
 * assistant prompt message per step. The assistant message under test is the AI SDK's own
 * `readUIMessageStream` output; the property test runs over generated UI messages.
 */
import { readUIMessageStream, type UIMessage, type UIMessageChunk, validateUIMessages } from "ai";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MemoryStorage, type Provider, type ProviderEvent, type ProviderIdentity } from "../../core/mod.ts";
import { appendUIMessages, runToUIMessageStream, toUIMessages } from "../../ai-sdk/mod.ts";
import { toPrompt } from "../../ai-sdk/prompt.ts";
import { createSession } from "../run/support.ts";
import { millisecondClock, REF, registry } from "../support/session.ts";
import { noticingDraft } from "./dead-reply.ts";

const ANTHROPIC: ProviderIdentity = { provider: "anthropic", api: "messages", model: "claude-sonnet-4-5" };

/** The chunks streamText sends for: think, call get_weather, think, answer with a source, a data part and metadata. */
function weatherChunks(): UIMessageChunk[] {
  return [
    { type: "start", messageId: "a1", messageMetadata: { model: "claude" } },
    { type: "start-step" },
    { type: "reasoning-start", id: "r1" },
    { type: "reasoning-delta", id: "r1", delta: "Need the weather." },
    { type: "reasoning-end", id: "r1", providerMetadata: { anthropic: { signature: "sig-1" } } },
    { type: "tool-input-available", toolCallId: "c1", toolName: "get_weather", input: { city: "Oslo" } },
    { type: "tool-output-available", toolCallId: "c1", output: { celsius: -3 } },
    { type: "finish-step" },
    { type: "start-step" },
    { type: "reasoning-start", id: "r2" },
    { type: "reasoning-delta", id: "r2", delta: "It is cold." },
    { type: "reasoning-end", id: "r2", providerMetadata: { anthropic: { signature: "sig-2" } } },
    { type: "source-url", sourceId: "s1", url: "https://weather.example/oslo", title: "Oslo" },
    { type: "data-weather", id: "w1", data: { city: "Oslo", celsius: -3 } },
    { type: "text-start", id: "t1" },
    { type: "text-delta", id: "t1", delta: "It is -3 °C in Oslo." },
    { type: "text-end", id: "t1" },
    { type: "source-document", sourceId: "d1", mediaType: "application/pdf", title: "Forecast", filename: "forecast.pdf" },
    { type: "finish-step" },
    { type: "finish", messageMetadata: { model: "claude", done: true } },
  ];
}

async function streamedMessage(chunks: UIMessageChunk[]): Promise<UIMessage> {
  const stream = new ReadableStream<UIMessageChunk>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
  let last: UIMessage | undefined;
  for await (const message of readUIMessageStream({ stream })) last = message;
  return structuredClone(last!);
}

/** Checks the model's view: one assistant prompt message per step, each tool call's result in the next message. */
function expectResultsAfterCalls(prompt: ReturnType<typeof toPrompt>): void {
  prompt.forEach((message, index) => {
    if (message.role !== "assistant") return;
    const calls = (message.content as { type: string; toolCallId?: string }[]).filter((p) => p.type === "tool-call").map((p) => p.toolCallId);
    if (calls.length === 0) return;
    const next = prompt[index + 1];
    expect(next?.role).toBe("tool");
    expect((next!.content as { toolCallId: string }[]).map((p) => p.toolCallId)).toEqual(calls);
  });
}

/** A provider that streams `before`, waits for `release()`, then streams `after`: a reply held mid-stream. */
function heldReply(before: readonly ProviderEvent[], after: readonly ProviderEvent[] = []): { provider: Provider; release: () => void } {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const provider: Provider = {
    identity: { provider: "p", api: "a", model: "m" },
    async *stream() {
      yield* before;
      await released;
      yield* after;
    },
  };
  return { provider, release };
}

describe("UI messages round-trip exactly", () => {
  it("readUIMessageStream's multi-step message comes back the same, and the model reads it in order", async () => {
    const assistant = await streamedMessage(weatherChunks());
    expect(assistant.parts.map((p) => p.type)).toEqual([
      "step-start",
      "reasoning",
      "tool-get_weather",
      "step-start",
      "reasoning",
      "source-url",
      "data-weather",
      "text",
      "source-document",
    ]);
    const user: UIMessage = { id: "u1", role: "user", metadata: { sentAt: 1 }, parts: [{ type: "text", text: "Weather in Oslo?" }] };
    const list = [user, assistant];
    const { session } = await createSession(new MemoryStorage());
    await appendUIMessages(session, list, { identity: ANTHROPIC });

    const back = await toUIMessages(session);
    // What the client sends is JSON: fields left undefined by readUIMessageStream are not there.
    expect(back).toStrictEqual(JSON.parse(JSON.stringify(await validateUIMessages({ messages: list }))));
    expect(back[1]!.parts[2]!.type).toBe("tool-get_weather");

    // Two stored steps: the call and its result, then the answer.
    expect(session.active.map((m) => m.message_id)).toEqual(["u1", "a1", "a1-step-2"]);
    const prompt = toPrompt(session.compose(ANTHROPIC).input, "v4");
    expect(prompt.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(prompt[1]!.content).toEqual([
      { type: "reasoning", text: "Need the weather.", providerOptions: { anthropic: { signature: "sig-1" } } },
      { type: "tool-call", toolCallId: "c1", toolName: "get_weather", input: { city: "Oslo" } },
    ]);
    expect(prompt[3]!.content).toEqual([
      { type: "reasoning", text: "It is cold.", providerOptions: { anthropic: { signature: "sig-2" } } },
      { type: "text", text: "It is -3 °C in Oslo." },
    ]);
    expectResultsAfterCalls(prompt);
  });

  it("a run's turn is one assistant UI message of step-start-opened steps with static tool parts", async () => {
    const { session } = await createSession(new MemoryStorage());
    await session.append([
      { role: "user", message_id: "u1", parts: [{ type: "text", text: "Weather?" }] },
      {
        role: "assistant",
        message_id: "m1",
        parts: [{ type: "tool", tool_call_id: "c1", tool_name: "get_weather", state: "output-available", input: {}, output: 1 }],
        usage: { input_tokens: 10, output_tokens: 1 },
      },
      { role: "assistant", message_id: "m2", parts: [{ type: "text", text: "Cold." }], usage: { input_tokens: 12, output_tokens: 2 } },
    ]);
    const ui = await toUIMessages(session);
    expect(ui.map((m) => m.id)).toEqual(["u1", "m1"]);
    expect(ui[1]!.parts.map((p) => p.type)).toEqual(["step-start", "tool-get_weather", "step-start", "text"]);
    expect(ui[1]!.metadata).toEqual({
      sequence: 2,
      createdAt: session.active[1]!.created_at,
      status: "completed",
      usage: { input_tokens: 12, output_tokens: 2 },
    });
    expect(await validateUIMessages({ messages: ui })).toEqual(ui);
  });

  it("property: append then read gives the same list; the composed input keeps every tool result after its call", async () => {
    const json = fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.parse(JSON.stringify(v)) as unknown);
    const metadata = fc.option(fc.dictionary(fc.string({ minLength: 1, maxLength: 4 }), fc.string({ maxLength: 5 }), { maxKeys: 2 }), { nil: undefined });
    const providerMetadata = fc.option(fc.constant({ anthropic: { signature: "sig" } }), { nil: undefined });
    const text = fc.record({
      type: fc.constant("text" as const),
      text: fc.string({ maxLength: 8 }),
      state: fc.option(fc.constantFrom("done" as const, "streaming" as const), { nil: undefined }),
      providerMetadata,
    });
    const reasoning = fc.record({
      type: fc.constant("reasoning" as const),
      text: fc.string({ maxLength: 8 }),
      state: fc.option(fc.constant("done" as const), { nil: undefined }),
      providerMetadata,
    });
    const file = fc.record({
      type: fc.constant("file" as const),
      mediaType: fc.constantFrom("image/png", "text/plain"),
      url: fc.constantFrom("data:image/png;base64,iVBORw0KGgo=", "https://x.example/a.png", "data:text/plain,hi"),
    });
    const source = fc.record({
      type: fc.constant("source-url" as const),
      sourceId: fc.string({ minLength: 1, maxLength: 4 }),
      url: fc.constant("https://s.example/"),
    });
    const document = fc.record({
      type: fc.constant("source-document" as const),
      sourceId: fc.constant("d"),
      mediaType: fc.constant("application/pdf"),
      title: fc.string({ maxLength: 4 }),
    });
    const data = fc.record({ type: fc.constantFrom("data-weather" as const, "data-status" as const), data: json });
    const tool = fc.tuple(
      fc.constantFrom("get_weather", "search"),
      fc.boolean(),
      fc.constantFrom("input-available", "output-available", "output-error", "output-denied"),
      json,
      providerMetadata,
    ).map(([name, dynamic, state, value, meta]) => {
      const base = {
        ...(dynamic ? { type: "dynamic-tool", toolName: name } : { type: `tool-${name}` }),
        toolCallId: "",
        input: { q: "x" },
        ...(meta ? { callProviderMetadata: meta } : {}),
      };
      if (state === "output-available") return { ...base, state, output: value };
      if (state === "output-error") return { ...base, state, errorText: "boom" };
      if (state === "output-denied") return { ...base, state, approval: { id: "ap", approved: false, reason: "no" } };
      return { ...base, state };
    });
    const assistantPart = fc.oneof(text, reasoning, file, source, document, data, tool, fc.constant({ type: "step-start" as const }));
    const userPart = fc.oneof(text, file, data);
    const message = fc.oneof(
      fc.record({ role: fc.constant("user" as const), parts: fc.array(userPart, { minLength: 1, maxLength: 4 }), metadata }),
      fc.record({ role: fc.constant("assistant" as const), parts: fc.array(assistantPart, { minLength: 1, maxLength: 8 }), metadata }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(message, { minLength: 1, maxLength: 6 }), async (generated) => {
        let calls = 0;
        const list = generated.map((m, i) => ({
          id: `m${i}`,
          role: m.role,
          ...(m.metadata !== undefined ? { metadata: m.metadata } : {}),
          parts: m.parts.map((p) => ("toolCallId" in p ? { ...p, toolCallId: `call${calls++}` } : p)),
        })) as UIMessage[];
        const valid = JSON.parse(JSON.stringify(await validateUIMessages({ messages: list }))) as UIMessage[];
        const { session } = await createSession(new MemoryStorage());
        await appendUIMessages(session, valid, { identity: ANTHROPIC });
        expect(await toUIMessages(session)).toStrictEqual(valid);
        expectResultsAfterCalls(toPrompt(session.compose(ANTHROPIC).input, "v4"));
      }),
      { numRuns: 150, seed: 20261204 },
    );
  });

  it("after a reload, toUIMessages includes the recovered draft: the pending question and the partial reply", async () => {
    const memory = new MemoryStorage();
    const { storage, drafted: draftWritten } = noticingDraft(memory, "Half an ans");
    const { session } = await createSession(storage);
    const { provider, release } = heldReply([{ type: "text-delta", text: "Half an ans" }]);
    const run = session.run("Tell me everything", { provider });
    await draftWritten;
    const reloaded = await registry(memory, {}, millisecondClock()).open(REF);
    const ui = await toUIMessages(reloaded);
    expect(ui.map((m) => [m.role, m.parts.filter((p) => p.type === "text").map((p) => (p as { text: string }).text)])).toEqual([
      ["user", ["Tell me everything"]],
      ["assistant", ["Half an ans"]],
    ]);
    expect(ui[1]!.id).toBe(reloaded.draft!.record.message_id);
    expect(ui[1]!.metadata).toMatchObject({ status: "streaming" });
    release();
    await run.result;
  });

  it("a draft still streaming reads as the AI SDK's own message does mid-stream: its open part `streaming`, the ended ones `done`", async () => {
    const memory = new MemoryStorage();
    const { storage, drafted } = noticingDraft(memory, "Half an ans");
    const { session } = await createSession(storage);
    const { provider, release } = heldReply([{ type: "reasoning-delta", text: "Think first." }, { type: "text-delta", text: "Half an ans" }], [{
      type: "text-delta",
      text: "wer.",
    }]);
    const run = session.run("Tell me everything", { provider });
    // The client's view: the AI SDK's own reader of the chat stream, up to the text the draft holds.
    const client = readUIMessageStream({ stream: runToUIMessageStream(run) })[Symbol.asyncIterator]();
    let live: UIMessage | undefined;
    while (!live?.parts.some((p) => p.type === "text" && p.text === "Half an ans")) live = (await client.next()).value as UIMessage;
    await drafted;
    const states = (message: UIMessage) => message.parts.map((p) => [p.type, "state" in p ? p.state : undefined]);
    const draftTurn = (await toUIMessages(await registry(memory, {}, millisecondClock()).open(REF))).at(-1)!;
    expect(states(draftTurn)).toEqual([["step-start", undefined], ["reasoning", "done"], ["text", "streaming"]]);
    expect(states(draftTurn)).toEqual(states(live));
    release();
    while (!(await client.next()).done);
    expect(states((await toUIMessages(session)).at(-1)!)).toEqual([["step-start", undefined], ["reasoning", "done"], ["text", "done"]]);
  });
});
