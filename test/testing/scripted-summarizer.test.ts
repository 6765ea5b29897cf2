import { describe, expect, it } from "vitest";
import { estimateTextTokens, estimateTokens, InvalidInputError, type MessageRecord, type SummaryRequest } from "../../core/mod.ts";
import { SCRIPTED_SUMMARY_MAX_CHARS, ScriptedSummarizer, scriptedSummaryText } from "../../testing/scripted-summarizer.ts";

const TS = "2026-12-02T13:00:00.000Z";

function textMessage(sequence: number, role: "user" | "assistant", text: string): MessageRecord {
  return { record_type: "message", sequence, message_id: `m_${sequence}`, role, created_at: TS, parts: [{ sequence: 1, type: "text", text }] };
}

function toolMessage(sequence: number): MessageRecord {
  return {
    record_type: "message",
    sequence,
    message_id: `m_${sequence}`,
    role: "assistant",
    created_at: TS,
    parts: [{ sequence: 1, type: "tool", tool_call_id: "c1", tool_name: "search", state: "output-available", input: {}, output: "r" }],
  };
}

function req(messages: MessageRecord[], previousSummary: string | null = null, signal = new AbortController().signal): SummaryRequest {
  return { previousSummary, messages, signal };
}

const conversation = [
  textMessage(3, "user", "Plan a trip to Lisbon in May please"),
  textMessage(4, "assistant", "Sure."),
  toolMessage(5),
];

describe("ScriptedSummarizer: default summary", () => {
  it("names the last sequence, the count, and the first words of each message", async () => {
    const { text } = await new ScriptedSummarizer().summarize(req(conversation));
    expect(text).toBe('Summary through #5: 3 messages; #3 user: "Plan a trip to Lisbon in…"; #4 assistant: "Sure."; #5 assistant: [tool search]');
  });

  it("is deterministic", async () => {
    const a = await new ScriptedSummarizer().summarize(req(conversation, "before"));
    const b = await new ScriptedSummarizer().summarize(req(conversation, "before"));
    expect(a).toEqual(b);
  });

  it("carries the previous summary after the new information", async () => {
    const { text } = await new ScriptedSummarizer().summarize(req([textMessage(7, "user", "hi")], "Summary through #6: older"));
    expect(text).toBe('Summary through #7: 1 message; #7 user: "hi". Earlier: Summary through #6: older');
  });

  it("reports realistic usage, with cost only when configured", async () => {
    const request = req(conversation, "prior");
    const plain = await new ScriptedSummarizer().summarize(request);
    const input = estimateTextTokens("prior") + estimateTokens(conversation);
    const output = Math.ceil(plain.text.length / 4);
    expect(plain.usage).toEqual({ input_tokens: input, output_tokens: output, total_tokens: input + output });
    const paid = await new ScriptedSummarizer({ costUsdMicros: 1_250 }).summarize(request);
    expect(paid.usage?.cost_usd_micros).toBe(1_250);
  });

  it("caps the text at maxChars (default 2000)", async () => {
    const many = Array.from({ length: 400 }, (_, i) => textMessage(i + 1, "user", `message number ${i + 1} with some words`));
    const { text } = await new ScriptedSummarizer().summarize(req(many));
    expect(text.length).toBe(SCRIPTED_SUMMARY_MAX_CHARS);
    expect(text.endsWith("…")).toBe(true);
    expect(text.startsWith("Summary through #400: 400 messages;")).toBe(true);
    const short = await new ScriptedSummarizer({ maxChars: 50 }).summarize(req(many));
    expect(short.text.length).toBeLessThanOrEqual(50);
  });

  it("stays bounded over repeated compactions, newest first", async () => {
    const summarizer = new ScriptedSummarizer({ maxChars: 300 });
    let previous: string | null = null;
    let sequence = 0;
    for (let round = 0; round < 50; round++) {
      const batch = Array.from({ length: 5 }, () => textMessage(++sequence, "user", `round ${round} says something fairly long here`));
      previous = (await summarizer.summarize(req(batch, previous))).text;
      expect(previous.length).toBeLessThanOrEqual(300);
    }
    expect(previous!.startsWith(`Summary through #${sequence}: 5 messages`)).toBe(true);
    expect(summarizer.calls).toHaveLength(50);
  });

  it("never cuts inside a surrogate pair", () => {
    const text = scriptedSummaryText(null, [textMessage(1, "user", "😀".repeat(100))], 40);
    expect(text.length).toBeLessThanOrEqual(40);
    expect(text.endsWith("…")).toBe(true);
    expect(() => encodeURIComponent(text)).not.toThrow(); // throws on a lone surrogate
  });

  it("handles an empty message list and messages without parts", () => {
    expect(scriptedSummaryText(null, [])).toBe("Summary through #0: 0 messages");
    const empty: MessageRecord = { ...textMessage(2, "assistant", ""), parts: [] };
    expect(scriptedSummaryText(null, [empty])).toBe("Summary through #2: 1 message; #2 assistant: [empty]");
  });

  it("uses a custom text function, still capped", async () => {
    const summarizer = new ScriptedSummarizer({ maxChars: 10, text: (request, call) => `call ${call} of ${request.messages.length} messages` });
    expect((await summarizer.summarize(req(conversation))).text).toBe("call 1 of…");
  });
});

describe("ScriptedSummarizer: failure modes", () => {
  it("error rejects with a plain Error", async () => {
    await expect(new ScriptedSummarizer({ fail: "error" }).summarize(req(conversation))).rejects.toThrow("scripted summarizer failure");
    await expect(ScriptedSummarizer.failing().summarize(req(conversation))).rejects.toThrow("scripted summarizer failure");
  });

  it("failing(error) rejects with that very error", async () => {
    const mine = new TypeError("nope");
    await expect(ScriptedSummarizer.failing(mine).summarize(req(conversation))).rejects.toBe(mine);
  });

  it("empty resolves with an empty summary", async () => {
    const result = await ScriptedSummarizer.empty().summarize(req(conversation));
    expect(result.text).toBe("");
    expect(result.usage?.output_tokens).toBe(0);
    expect((await new ScriptedSummarizer({ fail: "empty" }).summarize(req(conversation))).text).toBe("");
  });

  it("hang waits until the signal aborts, then rejects with the abort reason", async () => {
    const controller = new AbortController();
    const summarizer = ScriptedSummarizer.hanging();
    const pending = summarizer.summarize(req(conversation, null, controller.signal));
    let settled = false;
    pending.then(
      () => (settled = true),
      () => (settled = true),
    );
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(settled).toBe(false);
    const reason = new Error("user cancelled");
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    expect(summarizer.calls).toHaveLength(1);
  });

  it("rejects with the reason when the signal is already aborted, whatever the mode", async () => {
    const reason = new Error("too late");
    await expect(new ScriptedSummarizer().summarize(req(conversation, null, AbortSignal.abort(reason)))).rejects.toBe(reason);
    await expect(ScriptedSummarizer.hanging().summarize(req(conversation, null, AbortSignal.abort(reason)))).rejects.toBe(reason);
  });

  it("rejects invalid options", () => {
    expect(() => new ScriptedSummarizer({ maxChars: 0 })).toThrow(InvalidInputError);
    expect(() => new ScriptedSummarizer({ costUsdMicros: -1 })).toThrow(InvalidInputError);
    expect(() => new ScriptedSummarizer({ costUsdMicros: 1.5 })).toThrow(InvalidInputError);
  });
});

describe("ScriptedSummarizer: recording", () => {
  it("records cloned requests without the signal, failed calls included", async () => {
    const messages = [textMessage(1, "user", "hello")];
    const summarizer = ScriptedSummarizer.failing();
    await expect(summarizer.summarize(req(messages, "prev"))).rejects.toThrow();
    expect(summarizer.calls).toEqual([{ previousSummary: "prev", messages: [textMessage(1, "user", "hello")] }]);
    expect("signal" in summarizer.calls[0]!).toBe(false);
    (messages[0]!.parts[0] as { text: string }).text = "changed";
    expect((summarizer.calls[0]!.messages[0]!.parts[0] as { text: string }).text).toBe("hello");
  });
});
