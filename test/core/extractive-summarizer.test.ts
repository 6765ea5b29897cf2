import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { InvalidInputError } from "../../core/errors.ts";
import type { MessagePart, MessageRecord } from "../../core/schema/mod.ts";
import { DEFAULT_SUMMARY_MAX_CHARS, ExtractiveSummarizer } from "../../core/summarizer/mod.ts";

const AT = "2026-12-02T13:00:00.000Z";
type NewPart = MessagePart extends infer P ? (P extends unknown ? Omit<P, "sequence"> : never) : never;

function msg(sequence: number, role: "user" | "assistant", parts: NewPart[], extra: Partial<MessageRecord> = {}): MessageRecord {
  return {
    record_type: "message",
    sequence,
    message_id: `m${sequence}`,
    role,
    created_at: AT,
    parts: parts.map((part, i) => ({ ...part, sequence: i + 1 }) as MessagePart),
    ...extra,
  };
}
const say = (sequence: number, text: string, role: "user" | "assistant" = sequence % 2 ? "user" : "assistant") => msg(sequence, role, [{ type: "text", text }]);
const signal = () => new AbortController().signal;

async function summarize(
  messages: readonly MessageRecord[],
  previousSummary: string | null = null,
  summarizer = new ExtractiveSummarizer(),
): Promise<string> {
  const result = await summarizer.summarize({ previousSummary, messages, signal: signal() });
  expect(result.usage).toBeUndefined(); // extractive: no cost to account
  return result.text;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/u;

describe("ExtractiveSummarizer: lines", () => {
  test("one line per message, one per tool call, in part order", async () => {
    const messages = [
      say(1, "Please fix the failing build.\n\nIt broke   after the upgrade."),
      msg(2, "assistant", [
        { type: "reasoning", text: "thinking hard" },
        { type: "text", text: "Running the tests." },
        { type: "tool", tool_call_id: "c1", tool_name: "bash", state: "output-available", input: { cmd: "npm test" }, output: "3 passed" },
        { type: "tool", tool_call_id: "c2", tool_name: "read", state: "output-error", input: { path: "x.ts" }, error: "ENOENT" },
        { type: "tool", tool_call_id: "c3", tool_name: "write", state: "input-available", input: { path: "y.ts" } },
      ]),
      msg(3, "assistant", [{ type: "text", text: "Partial answer" }], { status: "stopped" }),
    ];
    expect(await summarize(messages)).toBe(
      [
        "#1 user: Please fix the failing build. It broke after the upgrade.",
        "#2 assistant: Running the tests.",
        '#2 tool bash({"cmd":"npm test"}) → ok',
        '#2 tool read({"path":"x.ts"}) → error',
        '#2 tool write({"path":"y.ts"}) → no result',
        "#3 assistant (stopped): Partial answer",
      ].join("\n"),
    );
  });

  test("long text keeps its first sentences within ~160 characters", async () => {
    const sentence = "This sentence is exactly fifty characters long ok. ";
    const line = await summarize([say(1, sentence.repeat(10))]);
    expect(line).toBe(`#1 user: ${sentence.repeat(3).trim()} …`);
    const noStop = await summarize([say(1, "word ".repeat(100))]);
    expect(noStop.length).toBeLessThanOrEqual("#1 user: ".length + 161);
    expect(noStop.endsWith("…")).toBe(true);
    const tool = await summarize([
      msg(1, "assistant", [{ type: "tool", tool_call_id: "c", tool_name: "t", state: "output-available", input: { long: "x".repeat(500) } }]),
    ]);
    expect(tool.length).toBeLessThan(100);
    expect(tool).toMatch(/^#1 tool t\(\{"long":"x+…\) → ok$/);
  });

  test("is deterministic", async () => {
    const messages = Array.from({ length: 50 }, (_, i) => say(i + 1, `Message ${i + 1} says something. And more.`));
    const a = await summarize(messages, "before");
    const b = await summarize(structuredClone(messages), "before", new ExtractiveSummarizer());
    expect(a).toBe(b);
  });

  test("never lets raw reasoning, file data, URLs, tool output or provider context in", async () => {
    const messages = [
      msg(1, "user", [
        { type: "text", text: "See the attachment." },
        { type: "file", media_type: "application/pdf", name: "report.pdf", data: "U0VDUkVUX0ZJTEVfREFUQQ==" },
        { type: "file", media_type: "image/png", url: "https://secret.example/SECRET_URL.png" },
      ]),
      msg(2, "assistant", [
        { type: "reasoning", text: "SECRET_REASONING step by step" },
        { type: "provider-context", provider: "p", api: "a", model: "m", data: { blob: "SECRET_CONTEXT" } },
        { type: "tool", tool_call_id: "c", tool_name: "read", state: "output-available", input: {}, output: "SECRET_OUTPUT" },
        { type: "text", text: "Read it." },
      ]),
    ];
    const text = await summarize(messages, null);
    for (const secret of ["SECRET_REASONING", "U0VDUkVUX0ZJTEVfREFUQQ", "SECRET_URL", "SECRET_CONTEXT", "SECRET_OUTPUT"]) {
      expect(text).not.toContain(secret);
    }
    expect(text).toContain("[file report.pdf]");
    expect(text).toContain("[file image/png]");
  });
});

describe("ExtractiveSummarizer: never empty", () => {
  test("messages without any text get a fallback line", async () => {
    const reasoningOnly = (n: number) => msg(n, "assistant", [{ type: "reasoning", text: "SECRET_REASONING" }]);
    expect(await summarize([reasoningOnly(4)])).toBe("#4 (1 message without text)");
    expect(await summarize([reasoningOnly(3), msg(4, "user", []), reasoningOnly(5)])).toBe("#3-#5 (3 messages without text)");
    expect(await summarize([reasoningOnly(3)], "so far")).toBe("so far\n#3 (1 message without text)");
  });

  test("no messages: the previous summary, or a placeholder", async () => {
    expect(await summarize([], "so far")).toBe("so far");
    expect((await summarize([], null)).length).toBeGreaterThan(0);
  });
});

describe("ExtractiveSummarizer: cumulative and bounded", () => {
  test("keeps the previous summary first, then the new lines", async () => {
    expect(await summarize([say(5, "Next.")], "#1 user: First.")).toBe("#1 user: First.\n#5 user: Next.");
  });

  test("over budget the previous summary loses its oldest lines, marked, and keeps a share", async () => {
    const summarizer = new ExtractiveSummarizer({ maxChars: 400 });
    const previous = Array.from({ length: 40 }, (_, i) => `#${i + 1} user: old line ${i + 1}`).join("\n");
    const newer = Array.from({ length: 60 }, (_, i) => say(100 + i, `New message number ${100 + i}.`));
    const text = await summarize(newer, previous, summarizer);
    expect(text.length).toBeLessThanOrEqual(400);
    expect(text.startsWith("… (earlier summary trimmed)\n")).toBe(true);
    expect(text).toContain("old line 40"); // the newest of the previous summary survives
    expect(text).not.toContain("old line 1\n");
    expect(text).toMatch(/… \(#100-#\d+ omitted\)/);
    expect(text.endsWith("#159 user: New message number 159.")).toBe(true);
  });

  test("200 compactions with growing inputs stay bounded, non-empty and cumulative", async () => {
    const maxChars = 1500;
    const summarizer = new ExtractiveSummarizer({ maxChars });
    let previous: string | null = null;
    let sequence = 0;
    for (let call = 1; call <= 200; call++) {
      const batch = Array.from({ length: call }, () => {
        sequence += 1;
        return say(sequence, `Call ${call} message ${sequence}: ${"detail ".repeat(call % 40)}done. Trailing words.`);
      });
      const text = await summarize(batch, previous, summarizer);
      expect(text.length).toBeLessThanOrEqual(maxChars);
      expect(text.length).toBeGreaterThan(0);
      expect(text).toContain(`#${sequence} `); // the newest message is always there
      if (previous !== null) {
        // a trace of the previous summary: its last line (or the tail of it) is kept
        const lastPrevious = previous.split("\n").at(-1)!;
        expect(text).toContain(lastPrevious.slice(-40));
      }
      expect(text.match(/… \(earlier summary trimmed\)/g)?.length ?? 0).toBeLessThanOrEqual(1);
      previous = text;
    }
  });

  test("bounded for any maxChars, without splitting surrogate pairs (property)", async () => {
    const part = fc.oneof(
      fc.record({ type: fc.constant("text" as const), text: fc.string({ unit: "grapheme", maxLength: 400 }) }),
      fc.record({ type: fc.constant("reasoning" as const), text: fc.string({ maxLength: 50 }) }),
      fc.record({
        type: fc.constant("tool" as const),
        tool_call_id: fc.constant("c"),
        tool_name: fc.constantFrom("read", "bash"),
        state: fc.constantFrom("input-available" as const, "output-available" as const, "output-error" as const),
        input: fc.jsonValue(),
      }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(part, { maxLength: 4 }), { minLength: 1, maxLength: 30 }),
        fc.option(fc.string({ unit: "grapheme", maxLength: 3000 }), { nil: null }),
        fc.oneof(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 2000 })),
        async (partsList, previous, maxChars) => {
          const messages = partsList.map((parts, i) => msg(i + 1, i % 2 ? "assistant" : "user", parts as NewPart[]));
          const text = await summarize(messages, previous, new ExtractiveSummarizer({ maxChars }));
          expect(text.length).toBeGreaterThan(0);
          expect(text.length).toBeLessThanOrEqual(maxChars);
          expect(LONE_SURROGATE.test(text)).toBe(false);
        },
      ),
      { numRuns: Number(process.env.FC_RUNS ?? 300) },
    );
  }, 600_000);
});

describe("ExtractiveSummarizer: options and cancellation", () => {
  test("maxChars defaults to 4000 and must be a positive integer", () => {
    expect(new ExtractiveSummarizer().maxChars).toBe(DEFAULT_SUMMARY_MAX_CHARS);
    expect(DEFAULT_SUMMARY_MAX_CHARS).toBe(4000);
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => new ExtractiveSummarizer({ maxChars: bad })).toThrow(InvalidInputError);
    }
  });

  test("an aborted signal rejects with the signal's reason", async () => {
    const controller = new AbortController();
    const reason = new Error("user cancelled");
    controller.abort(reason);
    const summarizer = new ExtractiveSummarizer();
    await expect(summarizer.summarize({ previousSummary: null, messages: [say(1, "hi")], signal: controller.signal })).rejects.toBe(reason);
    const plain = new AbortController();
    plain.abort();
    await expect(summarizer.summarize({ previousSummary: null, messages: [say(1, "hi")], signal: plain.signal })).rejects.toMatchObject({
      name: "AbortError",
    });
  });
});

describe("trimming a previous summary whose newest line alone is over budget", () => {
  test("keeps that line's head (#seq role:) and shortens its end, never starting mid-line", async () => {
    const summarizer = new ExtractiveSummarizer({ maxChars: 400 });
    const previous = `#1 user: short\n#2 assistant: ${"long ".repeat(200)}end`;
    const { text } = await summarizer.summarize({ previousSummary: previous, messages: [say(3, "next question")], signal: signal() });
    expect(text.length).toBeLessThanOrEqual(400);
    const lines = text.split("\n");
    expect(lines[0]).toBe("… (earlier summary trimmed)");
    expect(lines[1]).toMatch(/^#2 assistant: long long/);
    expect(text).toContain("#3 user: next question");
  });
});
