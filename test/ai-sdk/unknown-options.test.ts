/**
 * The AI SDK adapter's option objects from plain JavaScript (docs/decisions.md "Unknown option fields are refused"):
 * a field `aiSdkProvider`, `aiSdkSummarizer`, `appendUIMessages` or `chatRoute` does not know is an
 * `InvalidInputError` naming it and the fields there are, before any model call or write.
 */
import { MockLanguageModelV3 } from "ai/test";
import { describe, expect, test } from "vitest";
import { invalidInput } from "../support/invalid-input.ts";
import { MemoryStorage, Sessions } from "../../core/mod.ts";
import { aiSdkProvider, aiSdkSummarizer, appendUIMessages, chatRoute } from "../../ai-sdk/mod.ts";

describe("the AI SDK adapter refuses a field it does not know", () => {
  const model = new MockLanguageModelV3({ provider: "mock.chat", modelId: "m-3" });

  test("aiSdkProvider and aiSdkSummarizer", async () => {
    expect((await invalidInput(() => aiSdkProvider(model, { calloptions: { temperature: 0 } } as never))).message).toMatch(
      /^aiSdkProvider\(model, options\): unknown field "calloptions" \(did you mean "callOptions"\?\); the fields are identity, callOptions, reasoningIsSummary$/,
    );
    expect((await invalidInput(() => aiSdkSummarizer(model, { contextWindow: 100_000, maxTokens: 100 } as never))).message).toMatch(
      /^aiSdkSummarizer\(model, options\): unknown field "maxTokens"; the fields are contextWindow, maxOutputTokens, instructions, callOptions$/,
    );
  });

  test("appendUIMessages: nothing is appended", async () => {
    const session = await new Sessions({ storage: new MemoryStorage() }).create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
    const message = { id: "u1", role: "user", parts: [{ type: "text", text: "hi" }] };
    expect((await invalidInput(() => appendUIMessages(session, [message], { identiy: undefined, provider: "x" } as never))).message).toMatch(
      /^appendUIMessages\(session, messages, options\): unknown field "provider"; the fields are identity$/,
    );
    expect(session.revision).toBe(0);
  });

  test("chatRoute", async () => {
    const provider = aiSdkProvider(model);
    const session = () => Promise.reject(new Error("not reached"));
    expect((await invalidInput(() => chatRoute({ session, provider, tool: [] } as never))).message).toMatch(
      /^chatRoute\(options\): unknown field "tool" \(did you mean "tools"\?\); the fields are session, provider, tools, onError$/,
    );
    expect((await invalidInput(() => chatRoute({ session, model: provider } as never))).message).toMatch(/^chatRoute\(options\): unknown field "model"/);
  });
});
