/**
 * chatRoute in process: the UI message stream a run produces, read by the AI SDK's own
 * `readUIMessageStream`, is the message `toUIMessages` gives after a reload (same id,
 * same parts, same metadata); the resume GET replays a live reply and follows it.
 */
import { DefaultChatTransport, readUIMessageStream, type UIMessage, type UIMessageChunk } from "ai";
import { describe, expect, it } from "vitest";
import { MemoryStorage, type Provider, type ProviderEvent, Sessions, type Tool } from "../../core/mod.ts";
import { chatRoute, toUIMessages } from "../../ai-sdk/mod.ts";
import { createSession } from "../run/support.ts";
import { REF, registry } from "../support/session.ts";
import { PARTIAL_REPLY, storeWithDeadReply } from "./dead-reply.ts";

/** A provider whose second step waits for `release()` after its first text delta. */
function gatedProvider() {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let midReply!: () => void;
  const reachedMidReply = new Promise<void>((resolve) => (midReply = resolve));
  let step = 0;
  const provider: Provider = {
    identity: { provider: "test", api: "chat", model: "gated" },
    async *stream(): AsyncGenerator<ProviderEvent> {
      step += 1;
      if (step === 1) {
        yield { type: "reasoning-delta", text: "Need the weather." };
        yield { type: "tool-call", toolCallId: "c1", toolName: "get_weather", input: { city: "Oslo" } };
        yield { type: "usage", usage: { input_tokens: 20, output_tokens: 5 } };
        return;
      }
      yield { type: "text-delta", text: "It is " };
      midReply();
      await released;
      yield { type: "text-delta", text: "-3 °C." };
      yield { type: "usage", usage: { input_tokens: 40, output_tokens: 4 } };
    },
  };
  return { provider, release, reachedMidReply };
}

const weather: Tool = { name: "get_weather", execute: () => ({ celsius: -3 }) };

async function chunksOf(response: Response): Promise<UIMessageChunk[]> {
  const text = await response.text();
  return text.split("\n\n").filter((event) => event.startsWith("data: ") && event !== "data: [DONE]").map((event) =>
    JSON.parse(event.slice(6)) as UIMessageChunk
  );
}

async function messageOf(chunks: UIMessageChunk[]): Promise<UIMessage> {
  const stream = new ReadableStream<UIMessageChunk>({ start: (c) => (chunks.forEach((chunk) => c.enqueue(chunk)), c.close()) });
  let last: UIMessage | undefined;
  for await (const message of readUIMessageStream({ stream })) last = message;
  return JSON.parse(JSON.stringify(last)) as UIMessage;
}

describe("chatRoute", () => {
  it("streams a run as useChat's UI message stream; the client's message is what a reload reads; GET resumes a live reply", async () => {
    const { session } = await createSession(new MemoryStorage());
    const { provider, release, reachedMidReply } = gatedProvider();
    const route = chatRoute({ session: async () => session, provider, tools: [weather] });
    const user: UIMessage = { id: "u1", role: "user", parts: [{ type: "text", text: "Weather in Oslo?" }] };
    const response = await route.POST(
      new Request("http://chat.test/api/chat", { method: "POST", body: JSON.stringify({ id: "c1", messages: [user], trigger: "submit-message" }) }),
    );
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    expect(response.headers.get("x-vercel-ai-ui-message-stream")).toBe("v1");

    await reachedMidReply;
    // One reply at a time per chat.
    const again = await route.POST(
      new Request("http://chat.test/api/chat", { method: "POST", body: JSON.stringify({ id: "c1", messages: [{ ...user, id: "u2" }] }) }),
    );
    expect(again.status).toBe(409);
    // A second client (a reload, another tab) reconnects while the reply streams.
    const resumed = await route.GET(new Request("http://chat.test/api/chat/c1/stream"), "c1");
    expect(resumed.status).toBe(200);
    release();
    const [sent, replayed] = await Promise.all([chunksOf(response), chunksOf(resumed)]);
    expect(replayed).toEqual(sent);

    const streamed = await messageOf(sent);
    const stored = await toUIMessages(session);
    expect(stored.map((m) => m.id)).toEqual(["u1", streamed.id]);
    expect(streamed).toEqual(stored[1]);
    expect(streamed.parts.map((p) => p.type)).toEqual(["step-start", "reasoning", "tool-get_weather", "step-start", "text"]);
    expect(streamed.metadata).toMatchObject({ status: "completed", usage: { input_tokens: 40, output_tokens: 4 } });
    // Nothing streams any more: the resume endpoint answers 204.
    expect((await route.GET(new Request("http://chat.test/api/chat/c1/stream"), "c1")).status).toBe(204);
  });

  it("answers with the Response the session callback throws (the host's authorization), reading nothing", async () => {
    const route = chatRoute({ session: () => Promise.reject(new Response("forbidden", { status: 403 })), provider: gatedProvider().provider });
    const user: UIMessage = { id: "u1", role: "user", parts: [{ type: "text", text: "hi" }] };
    expect((await route.POST(new Request("http://chat.test/api/chat", { method: "POST", body: JSON.stringify({ id: "other", messages: [user] }) }))).status)
      .toBe(403);
    expect((await route.GET(new Request("http://chat.test/api/chat/other/stream"), "other")).status).toBe(403);
  });

  it("answers a chat the store lacks 404 and an id it refuses 400, on POST and GET, naming only the chat id", async () => {
    const sessions = new Sessions({ storage: new MemoryStorage() });
    const route = chatRoute({
      session: (id) => sessions.open({ agentId: "chat", workspaceId: "web", sessionId: id }),
      provider: gatedProvider().provider,
    });
    const user: UIMessage = { id: "u1", role: "user", parts: [{ type: "text", text: "hi" }] };
    const post = (id: string) => route.POST(new Request("http://chat.test/api/chat", { method: "POST", body: JSON.stringify({ id, messages: [user] }) }));
    for (const response of [await post("nope"), await route.GET(new Request("http://chat.test/api/chat/nope/stream"), "nope")]) {
      expect(response.status).toBe(404);
      const { error } = (await response.json()) as { error: string };
      expect(error).toBe('no chat "nope"');
    }
    for (const response of [await post("../x"), await route.GET(new Request("http://chat.test/api/chat/x/stream"), "../x")]) {
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: string }).error).toMatch(/invalid session_id "\.\.\/x"/);
    }
    expect(await sessions.list({ agentId: "chat", workspaceId: "web" })).toEqual([]);
  });

  it("refuses a body without a user message last, naming it", async () => {
    const { session } = await createSession(new MemoryStorage());
    const route = chatRoute({ session: async () => session, provider: gatedProvider().provider });
    const response = await route.POST(new Request("http://chat.test/api/chat", { method: "POST", body: JSON.stringify({ id: "c1", messages: [] }) }));
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: string }).error).toMatch(/last message is not a user message/);
    const nullBody = await route.POST(new Request("http://chat.test/api/chat", { method: "POST", body: "null" }));
    expect(nullBody.status).toBe(400);
    expect(((await nullBody.json()) as { error: string }).error).toBe("the body is not a JSON object (null)");
    for (const [messages, found] of [["hi", "a string"], [undefined, "missing"], [{ id: "u1" }, "an object"]] as const) {
      const refused = await route.POST(new Request("http://chat.test/api/chat", { method: "POST", body: JSON.stringify({ id: "c1", messages }) }));
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as { error: string }).error).toBe(`the body's \`messages\` is not a list of UI messages (${found})`);
    }
  });

  it("refuses to regenerate a stored reply (409, naming the message; the history stays as it was), and answers a question left without one", async () => {
    const { session } = await createSession(new MemoryStorage());
    let calls = 0;
    const provider: Provider = {
      identity: { provider: "test", api: "chat", model: "counts" },
      async *stream() {
        calls += 1;
        if (calls === 1) throw new Error("the model is down");
        yield { type: "text-delta", text: `Answer ${calls}.` };
      },
    };
    const route = chatRoute({ session: async () => session, provider });
    const user: UIMessage = { id: "u1", role: "user", parts: [{ type: "text", text: "Hi?" }] };
    const post = async (trigger: string) =>
      route.POST(new Request("http://chat.test/api/chat", { method: "POST", body: JSON.stringify({ id: "c1", messages: [user], trigger }) }));
    // The first reply fails; useChat's retry (regenerate) of a question without a reply runs.
    expect(await chunksOf(await post("submit-message"))).toContainEqual(expect.objectContaining({ type: "error" }));
    expect(await messageOf(await chunksOf(await post("regenerate-message")))).toMatchObject({ parts: [{ type: "step-start" }, { text: "Answer 2." }] });
    const before = await toUIMessages(session);
    // A reply is stored after u1 now: regenerating it would run on after it, a continuation the reload shows merged into it.
    const refused = await post("regenerate-message");
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as { error: string }).error).toMatch(/already has a reply to message "u1"/);
    expect(await toUIMessages(session)).toEqual(before);
    expect(calls).toBe(2);
  });

  it("GET sends a reply whose server died as a stopped reply ending `interrupted`, which useChat's own transport reads (ai 7)", async () => {
    const sessions = registry(await storeWithDeadReply());
    const route = chatRoute({ session: () => sessions.open(REF), provider: gatedProvider().provider });
    const transport = new DefaultChatTransport({ api: "http://chat.test/api/chat", fetch: (url, init) => route.GET(new Request(url, init), "s1") });
    const chunks: UIMessageChunk[] = [];
    for await (const chunk of (await transport.reconnectToStream({ chatId: "s1" }))!) chunks.push(chunk);
    expect(chunks.at(-1)).toMatchObject({ type: "finish", finishReason: "interrupted", messageMetadata: { status: "stopped" } });
    expect(chunks).toContainEqual({ type: "text-delta", id: "p0", delta: PARTIAL_REPLY });
    expect((await toUIMessages(await sessions.open(REF))).at(-1)?.metadata).toMatchObject({ status: "stopped" });
  });
});
