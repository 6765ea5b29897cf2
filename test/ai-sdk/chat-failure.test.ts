/**
 * A provider that fails under `useChat` (ai 7): the AI SDK's own test model fails the reply,
 * the route is served on loopback, the client is the AI SDK's own chat and transport. The
 * failure reaches it as the error chunk (status `error`, the provider's message), with no
 * empty reply; what it shows is what a reload reads; its retry answers. A failure after text was
 * shown leaves that text beside the error (the stream cannot withdraw a message) and nothing stored.
 */
import type { LanguageModelV3StreamPart } from "@ai-sdk/provider";
import { convertArrayToReadableStream, MockLanguageModelV3 } from "ai/test";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryStorage } from "../../core/mod.ts";
import { aiSdkProvider, chatRoute, toUIMessages } from "../../ai-sdk/mod.ts";
import type { FetchServer } from "../../runtime-node/mod.ts";
import { createSession } from "../run/support.ts";
import { HELLO_ANSWER, serveChatRoute, TestChat } from "./chat-client.ts";

/** A model whose first call fails as `failure` says, then answers. */
function failingOnce(failure: "rejects" | "error part" | "mid-reply") {
  let calls = 0;
  return new MockLanguageModelV3({
    provider: "mock.chat",
    modelId: "m-3",
    doStream: async () => {
      calls += 1;
      if (calls > 1) return { stream: convertArrayToReadableStream(HELLO_ANSWER) };
      if (failure === "rejects") throw new Error("429 rate limited, retry later");
      const shown = failure === "mid-reply" ? HELLO_ANSWER.slice(0, 2) : [];
      const parts: LanguageModelV3StreamPart[] = [{ type: "stream-start", warnings: [] }, ...shown, { type: "error", error: new Error("overloaded") }];
      return { stream: convertArrayToReadableStream(parts) };
    },
  });
}

let server: FetchServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("a failing provider under useChat", () => {
  for (const [failure, said] of [["rejects", "429 rate limited, retry later"], ["error part", "overloaded"]] as const) {
    it(`(${failure}) sets useChat's error with the provider's message, shows no empty reply, and keeps what a reload reads; the retry answers`, async () => {
      const { session } = await createSession(new MemoryStorage());
      server = await serveChatRoute(chatRoute({ session: async () => session, provider: aiSdkProvider(failingOnce(failure)) }));
      const chat = new TestChat("c1", `${server.url}/api/chat`);
      await chat.sendMessage({ text: "Hi?" });
      expect(chat.view.status).toBe("error");
      expect(chat.view.error?.message).toBe(`provider mock/chat/m-3 failed at step 1: ${said}; nothing of the run was committed`);
      expect(chat.view.messages.map((m) => m.role)).toEqual(["user"]);
      // The reload (useChat({ messages: toUIMessages(…) })) reads what the client shows: the question, kept.
      expect(await toUIMessages(session)).toEqual(JSON.parse(JSON.stringify(chat.view.messages)));

      await chat.regenerate();
      expect(chat.view.status).toBe("ready");
      expect(chat.view.messages.map((m) => [m.role, m.parts.filter((p) => p.type === "text").map((p) => p.text)])).toEqual([
        ["user", ["Hi?"]],
        ["assistant", ["Hello."]],
      ]);
      expect((await toUIMessages(session)).map((m) => m.id)).toEqual(chat.view.messages.map((m) => m.id));
    });
  }

  it("(mid-reply) keeps what the client showed beside the error, as useChat does; the reload reads the question alone, and the retry replaces it", async () => {
    const { session } = await createSession(new MemoryStorage());
    server = await serveChatRoute(chatRoute({ session: async () => session, provider: aiSdkProvider(failingOnce("mid-reply")) }));
    const chat = new TestChat("c1", `${server.url}/api/chat`);
    await chat.sendMessage({ text: "Hi?" });
    expect(chat.view.status).toBe("error");
    expect(chat.view.error?.message).toBe("provider mock/chat/m-3 failed at step 1: overloaded; nothing of the run was committed");
    expect(chat.view.messages.map((m) => [m.role, m.parts.filter((p) => p.type === "text").map((p) => p.text)])).toEqual([
      ["user", ["Hi?"]],
      ["assistant", ["Hello."]],
    ]);
    // Nothing of a failed run is stored (docs/decisions.md "A failed reply in useChat").
    expect((await toUIMessages(session)).map((m) => m.id)).toEqual([chat.view.messages[0]!.id]);
    await chat.regenerate();
    expect(chat.view.status).toBe("ready");
    expect(chat.view.messages).toHaveLength(2);
    expect((await toUIMessages(session)).map((m) => m.id)).toEqual(chat.view.messages.map((m) => m.id));
  });
});
