import { describe, expect, test } from "vitest";
import { compose, type ComposerState, INTERRUPTED_TOOL_CALL_ERROR, sameIdentity } from "../../core/composer/mod.ts";
import { InvalidInputError } from "../../core/errors.ts";
import type { MessagePart, MessageRecord, ProviderIdentity, SummaryRecord } from "../../core/schema/mod.ts";

const GPT: ProviderIdentity = { provider: "openai", api: "responses", model: "gpt-5" };
const AT = "2026-12-02T13:00:00.000Z";

function message(sequence: number, role: "user" | "assistant", parts: MessagePart[], extra: Partial<MessageRecord> = {}): MessageRecord {
  return { record_type: "message", sequence, message_id: `m${sequence}`, role, created_at: AT, parts, ...extra };
}
const text = (sequence: number, value: string): MessagePart => ({ sequence, type: "text", text: value });
const context = (sequence: number, identity: ProviderIdentity, data: unknown = "blob"): MessagePart => ({
  sequence,
  type: "provider-context",
  ...identity,
  data,
});
const footer: SummaryRecord = {
  record_type: "summary",
  session_id: "s1",
  summary_id: "sum_1",
  through_sequence: 4,
  text: "Earlier: the user asked for a plan.",
  created_at: AT,
};

function state(active: MessageRecord[], extra: Partial<ComposerState> = {}): ComposerState {
  return { instruction: "You are helpful.", footer, active, identity: GPT, ...extra };
}

describe("compose", () => {
  test("is exactly instruction + footer text + Active", () => {
    const active = [
      message(5, "user", [text(1, "hello")]),
      message(6, "assistant", [text(1, "hi")], { status: "completed", usage: { input_tokens: 10, output_tokens: 2 }, provider: GPT }),
    ];
    const result = compose(state(active));
    expect(result.input).toEqual({ system: "You are helpful.", summary: footer.text, messages: active });
    expect(result.input.messages[0]).toBe(active[0]);
    expect(result.input.messages[1]).toBe(active[1]);
    expect(result).toMatchObject({ omittedContext: [], closedToolCalls: [], droppedMessages: [] });
  });

  test("without instruction or footer gives null system and summary", () => {
    const result = compose(state([message(1, "user", [text(1, "hello")])], { instruction: null, footer: undefined }));
    expect(result.input.system).toBeNull();
    expect(result.input.summary).toBeNull();
    expect(result.input.messages).toHaveLength(1);
  });

  test("empty Active gives no messages", () => {
    expect(compose(state([])).input.messages).toEqual([]);
  });

  test("keeps provider context of the exact receiving identity", () => {
    const active = [message(5, "assistant", [context(1, GPT), text(2, "done")], { status: "completed" })];
    const result = compose(state(active));
    expect(result.input.messages[0]).toBe(active[0]);
    expect(result.omittedContext).toEqual([]);
  });

  test.each([
    ["another provider", { provider: "anthropic", api: "messages", model: "claude" }],
    ["same provider, another api", { provider: "openai", api: "chat", model: "gpt-5" }],
    ["same provider and api, another model", { provider: "openai", api: "responses", model: "gpt-5-mini" }],
  ])("leaves out and reports provider context of %s", (_label, foreign) => {
    const active = [
      message(5, "user", [text(1, "q")]),
      message(6, "assistant", [context(1, foreign), text(2, "a"), context(3, GPT)], { status: "completed" }),
    ];
    const result = compose(state(active));
    expect(result.input.messages[1]!.parts).toEqual([text(2, "a"), context(3, GPT)]);
    expect(result.input.messages[0]).toBe(active[0]);
    expect(result.omittedContext).toEqual([{ sequence: 6, partSequence: 1, ...foreign }]);
    expect(active[1]!.parts).toHaveLength(3);
  });

  test("drops a message whose parts were all foreign context, and reports it", () => {
    const other = { provider: "anthropic", api: "messages", model: "claude" };
    const active = [
      message(5, "user", [text(1, "q")]),
      message(6, "assistant", [context(1, other)], { status: "stopped" }),
      message(7, "user", [text(1, "again")]),
    ];
    const result = compose(state(active));
    expect(result.input.messages.map((m) => m.sequence)).toEqual([5, 7]);
    expect(result.omittedContext).toEqual([{ sequence: 6, partSequence: 1, ...other }]);
    expect(result.droppedMessages).toEqual([6]);
  });

  test("drops a message that has no parts at all", () => {
    const active = [message(5, "user", [text(1, "q")]), message(6, "assistant", [], { status: "failed" })];
    const result = compose(state(active));
    expect(result.input.messages.map((m) => m.sequence)).toEqual([5]);
    expect(result.droppedMessages).toEqual([6]);
  });

  test("closes interrupted tool calls as output-error and reports them", () => {
    const dangling: MessagePart = { sequence: 2, type: "tool", tool_call_id: "c2", tool_name: "read", state: "input-available", input: { path: "a" } };
    const finished: MessagePart = { sequence: 3, type: "tool", tool_call_id: "c3", tool_name: "read", state: "output-available", input: {}, output: "x" };
    const active = [message(5, "assistant", [text(1, "reading"), dangling, finished], { status: "stopped" })];
    const result = compose(state(active));
    const parts = result.input.messages[0]!.parts;
    expect(parts[1]).toEqual({ ...dangling, state: "output-error", error: INTERRUPTED_TOOL_CALL_ERROR });
    expect(parts[0]).toBe(active[0]!.parts[0]);
    expect(parts[2]).toBe(finished);
    expect(result.closedToolCalls).toEqual([{ sequence: 5, partSequence: 2, toolCallId: "c2" }]);
    expect(dangling.state).toBe("input-available");
  });

  test("sends stopped and failed assistant messages with their partial content", () => {
    const active = [
      message(5, "user", [text(1, "q")]),
      message(6, "assistant", [text(1, "partial")], { status: "stopped" }),
      message(7, "assistant", [text(1, "half")], { status: "failed" }),
    ];
    expect(compose(state(active)).input.messages).toEqual(active);
  });

  test("never mutates its input", () => {
    const other = { provider: "anthropic", api: "messages", model: "claude" };
    const active = [
      message(5, "user", [text(1, "q"), { sequence: 2, type: "file", media_type: "image/png", data: "iVBORw0KGgo=" }]),
      message(6, "assistant", [context(1, other), {
        sequence: 2,
        type: "tool",
        tool_call_id: "c",
        tool_name: "t",
        state: "input-available",
        input: { a: [1] },
      }], {
        status: "stopped",
        custom_field: { keep: true },
      }),
      message(7, "assistant", [context(1, other)], { status: "completed" }),
    ];
    const input = state(active);
    const snapshot = structuredClone(input);
    const result = compose(input);
    expect(input).toEqual(snapshot);
    expect(result.input.messages[1]).toMatchObject({ custom_field: { keep: true } });
    // The composed output shares nothing mutable that was changed.
    expect(result.input.messages[1]).not.toBe(active[1]);
  });

  test("rejects out-of-order Active and an incomplete identity with typed errors", () => {
    expect(() => compose(state([message(6, "user", [text(1, "a")]), message(6, "user", [text(1, "b")])]))).toThrow(InvalidInputError);
    expect(() => compose(state([message(4, "user", [text(1, "a")])]))).toThrow(InvalidInputError);
    expect(() => compose(state([], { identity: { provider: "openai", api: "", model: "gpt-5" } }))).toThrow(InvalidInputError);
  });

  test("sameIdentity compares all three fields", () => {
    expect(sameIdentity(GPT, { ...GPT })).toBe(true);
    expect(sameIdentity(GPT, { ...GPT, model: "x" })).toBe(false);
  });

  test("is linear: ten times the messages cost exactly ten times the reads (counted, not timed)", () => {
    // Every property read of the input (the Active array, each message, each part) is counted through a Proxy.
    const reads = (n: number): number => {
      let count = 0;
      const counted = <T extends object>(value: T): T =>
        new Proxy(value, {
          get(target, key, receiver) {
            count += 1;
            const found = Reflect.get(target, key, receiver) as unknown;
            return found !== null && typeof found === "object" ? counted(found) : found;
          },
        });
      const active = Array.from({ length: n }, (_, i) => message(i + 5, i % 2 ? "assistant" : "user", [text(1, `m${i % 10}`)]));
      const result = compose(state(counted(active)));
      expect(result.input.messages).toHaveLength(n);
      return count;
    };
    const small = reads(1_000);
    expect(small).toBeGreaterThan(1_000);
    expect(reads(10_000) - reads(0)).toBe(10 * (small - reads(0)));
  });
});

describe("compose: a portable fallback (Rho's handoff)", () => {
  const CLAUDE: ProviderIdentity = { provider: "anthropic", api: "messages", model: "claude" };
  const withFallback = (sequence: number, fallback: string, extra: Partial<MessageRecord> = {}): MessageRecord =>
    ({
      ...message(sequence, "assistant", [{ sequence: 1, type: "reasoning-summary", text: "thought" }, context(2, GPT), text(3, "done")], {
        status: "completed",
        provider: GPT,
        ...extra,
      }),
      rho: { portable_fallback: fallback },
    }) as MessageRecord;

  test("is sent as a last text part instead of foreign context, the summary giving way", () => {
    const active = [message(5, "user", [text(1, "go")]), withFallback(6, "the gist")];
    const result = compose(state(active, { identity: CLAUDE }));
    expect(result.input.messages[1]!.parts).toEqual([text(3, "done"), text(4, "the gist")]);
    expect(result.portableFallbacks).toEqual([6]);
    expect(result.omittedContext).toHaveLength(1);
    expect(active[1]!.parts).toHaveLength(3); // stored history unchanged
  });

  test("is not sent to the identity its context replays to, when blank, or for a stopped message", () => {
    expect(compose(state([withFallback(5, "the gist")])).portableFallbacks).toEqual([]);
    expect(compose(state([withFallback(5, " \n")], { identity: CLAUDE })).portableFallbacks).toEqual([]);
    expect(compose(state([withFallback(5, "the gist", { status: "stopped" })], { identity: CLAUDE })).portableFallbacks).toEqual([]);
  });
});
