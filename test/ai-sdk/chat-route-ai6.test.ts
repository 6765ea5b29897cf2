/**
 * chatRoute where the app's `ai` is 6, which the peer range admits: the real `ai` 6 package
 * (the dev dependency `ai-v6`) stands in for `ai` in this file, for the route and for the
 * client alike. Its UI message stream refuses a `finish` chunk whose reason it does not know.
 */
import { DefaultChatTransport, type UIMessageChunk } from "ai";
import { MockLanguageModelV3 } from "ai-v6/test";
import { describe, expect, it, vi } from "vitest";
import { MemoryStorage, type Provider } from "../../core/mod.ts";
import { aiSdkProvider, chatRoute, toUIMessages } from "../../ai-sdk/mod.ts";
import { createSession } from "../run/support.ts";
import { REF, registry } from "../support/session.ts";
import { serveChatRoute, TestChat } from "./chat-client.ts";
import { PARTIAL_REPLY, storeWithDeadReply } from "./dead-reply.ts";

vi.mock("ai", () => import("ai-v6"));

const unused: Provider = { identity: { provider: "test", api: "chat", model: "unused" }, stream: () => ({ async *[Symbol.asyncIterator]() {} }) };

describe("chatRoute on ai 6", () => {
  it("GET sends a reply whose server died as a stopped reply that ai 6's useChat transport reads (finish reason `other`)", async () => {
    const sessions = registry(await storeWithDeadReply());
    const route = chatRoute({ session: () => sessions.open(REF), provider: unused });
    const transport = new DefaultChatTransport({ api: "http://chat.test/api/chat", fetch: (url, init) => route.GET(new Request(url, init), "s1") });
    const chunks: UIMessageChunk[] = [];
    for await (const chunk of (await transport.reconnectToStream({ chatId: "s1" }))!) chunks.push(chunk);
    expect(chunks.at(-1)).toMatchObject({ type: "finish", finishReason: "other", messageMetadata: { status: "stopped" } });
    expect(chunks).toContainEqual({ type: "text-delta", id: "p0", delta: PARTIAL_REPLY });
  });

  it("a failing provider sets ai 6's useChat error and leaves no empty reply; a reload reads the same question", async () => {
    const { session } = await createSession(new MemoryStorage());
    const model = new MockLanguageModelV3({ provider: "mock.chat", modelId: "m-3", doStream: () => Promise.reject(new Error("503 upstream unavailable")) });
    const server = await serveChatRoute(chatRoute({ session: async () => session, provider: aiSdkProvider(model) }));
    try {
      const chat = new TestChat("c1", `${server.url}/api/chat`);
      await chat.sendMessage({ text: "Hi?" });
      expect(chat.view.status).toBe("error");
      expect(chat.view.error?.message).toBe("provider mock/chat/m-3 failed at step 1: 503 upstream unavailable; nothing of the run was committed");
      expect(chat.view.messages.map((m) => m.role)).toEqual(["user"]);
      expect(await toUIMessages(session)).toEqual(JSON.parse(JSON.stringify(chat.view.messages)));
    } finally {
      await server.close();
    }
  });
});
