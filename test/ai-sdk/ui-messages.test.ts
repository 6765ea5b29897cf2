/**
 * toUIMessages / appendUIMessages: the AI SDK UI message shape (`useChat`) in and out
 * of a session, checked with the AI SDK's own `validateUIMessages`.
 */
import { type UIMessage, validateUIMessages } from "ai";
import { describe, expect, it } from "vitest";
import { InvalidInputError, MemoryStorage } from "../../core/mod.ts";
import { appendUIMessages, toUIMessages } from "../../ai-sdk/mod.ts";
import { createSession } from "../run/support.ts";

describe("UI messages", () => {
  it("a session's history becomes valid UI messages and comes back unchanged", async () => {
    const { session } = await createSession(new MemoryStorage());
    await session.append([
      {
        role: "user",
        message_id: "u1",
        parts: [{ type: "text", text: "look" }, { type: "file", media_type: "image/png", name: "a.png", data: "iVBORw0KGgo=" }],
      },
      {
        role: "assistant",
        message_id: "a1",
        status: "completed",
        parts: [
          { type: "reasoning", text: "thinking" },
          { type: "reasoning-summary", text: "summary" },
          { type: "tool", tool_call_id: "c1", tool_name: "search", state: "output-available", input: { q: "x" }, output: { hits: 1 } },
          { type: "tool", tool_call_id: "c2", tool_name: "fetch", state: "output-error", input: {}, error: "timeout" },
          { type: "provider-context", provider: "p", api: "a", model: "m", data: { secret: 1 } },
          { type: "text", text: "done" },
        ],
        usage: { input_tokens: 5, output_tokens: 2 },
      },
    ]);
    const ui = await toUIMessages(session);
    expect(await validateUIMessages({ messages: ui })).toEqual(ui);
    expect(ui.map((m) => m.id)).toEqual(["u1", "a1"]);
    expect(ui[1]!.parts.map((p) => p.type)).toEqual(["step-start", "reasoning", "reasoning", "tool-search", "tool-fetch", "text"]);
    expect(JSON.stringify(ui)).not.toContain("secret");
    expect(ui[1]!.metadata).toMatchObject({ sequence: 2, status: "completed", usage: { input_tokens: 5, output_tokens: 2 } });

    const { session: copy } = await createSession(new MemoryStorage());
    await appendUIMessages(copy, ui);
    const back = copy.active;
    expect(back.map((m) => m.message_id)).toEqual(["u1", "a1"]);
    expect(back[0]!.parts).toMatchObject([{ type: "text", text: "look" }, { type: "file", media_type: "image/png", name: "a.png", data: "iVBORw0KGgo=" }]);
    expect(back[1]!.parts.map((p) => p.type)).toEqual(["reasoning", "reasoning-summary", "tool", "tool", "text"]);
    expect(back[1]!.parts[3]).toMatchObject({ state: "output-error", error: "timeout" });
  });

  it("useChat's whole list each time: only new messages are appended", async () => {
    const { session } = await createSession(new MemoryStorage());
    const first: UIMessage[] = [{ id: "u1", role: "user", parts: [{ type: "text", text: "hi" }] }];
    expect((await appendUIMessages(session, first)).sequences).toEqual([1]);
    const second: UIMessage[] = [
      ...first,
      {
        id: "a1",
        role: "assistant",
        parts: [{ type: "step-start" }, { type: "text", text: "hello" }, {
          type: "tool-weather",
          toolCallId: "w1",
          state: "output-available",
          input: { city: "Oslo" },
          output: "cold",
        }],
      },
    ];
    expect((await appendUIMessages(session, second)).sequences).toEqual([2]);
    expect(session.active[1]!.parts).toMatchObject([{ type: "text", text: "hello" }, {
      type: "tool",
      tool_name: "weather",
      tool_call_id: "w1",
      output: "cold",
    }]);
    expect((await appendUIMessages(session, second)).sequences).toEqual([]);
  });

  it("invalid UI messages and system messages are refused with a typed error; nothing is written", async () => {
    const { session } = await createSession(new MemoryStorage());
    await expect(appendUIMessages(session, [{ id: "x", role: "user" }])).rejects.toBeInstanceOf(InvalidInputError);
    await expect(appendUIMessages(session, [{ id: "s", role: "system", parts: [{ type: "text", text: "be nice" }] }])).rejects.toThrow(/messages\[0\].*system/);
    expect(session.active).toHaveLength(0);
  });

  it("one UI message id given twice is refused naming both UI indexes, not the stored messages'; nothing is written", async () => {
    const { session } = await createSession(new MemoryStorage());
    const reply = (id: string): UIMessage => ({
      id,
      role: "assistant",
      parts: [{ type: "step-start" }, { type: "text", text: "one" }, { type: "step-start" }, { type: "text", text: "two" }],
    });
    const question: UIMessage = { id: "u1", role: "user", parts: [{ type: "text", text: "hi" }] };
    // The first reply is two stored messages (one per step), so a stored index would read messages[3].
    const refused = appendUIMessages(session, [question, reply("a1"), reply("a1")]);
    await expect(refused).rejects.toBeInstanceOf(InvalidInputError);
    await expect(refused).rejects.toThrow('messages[2].id "a1" is given twice (messages[1] has it); nothing was written');
    await expect(refused).rejects.toMatchObject({ details: { index: 2, id: "a1", earlier: 1 } });
    expect(session.active).toHaveLength(0);
  });
});
