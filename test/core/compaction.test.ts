import fc from "fast-check";
import { describe, expect, test } from "vitest";
import {
  accumulateCompaction,
  afterMessages,
  assertCompactionPolicy,
  atContextTokens,
  type CompactionPolicy,
  compactionTrigger,
  estimateModelInputTokens,
  estimateTextTokens,
  estimateTokens,
  FILE_DATA_TOKENS,
  foldModelInput,
  foldNote,
  manualOnly,
  MAX_FOLD_DEPTH,
  nextFold,
  planCompaction,
  realUsage,
  usageTokens,
  validateAfterCompaction,
} from "../../core/compaction/mod.ts";
import { ContextOverflowError, InvalidInputError } from "../../core/errors.ts";
import type { CompactionAccounting, MessageRecord } from "../../core/schema/mod.ts";
import type { ModelInput } from "../../core/model/mod.ts";

const AT = "2026-12-02T13:00:00.000Z";
function message(sequence: number, role: "user" | "assistant" = sequence % 2 ? "user" : "assistant", body = `message ${sequence}`): MessageRecord {
  return { record_type: "message", sequence, message_id: `m${sequence}`, role, created_at: AT, parts: [{ sequence: 1, type: "text", text: body }] };
}
const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => message(from + i));
const usage = (input: number, output = 0, total?: number) => ({
  input_tokens: input,
  output_tokens: output,
  ...(total === undefined ? {} : { total_tokens: total }),
});

describe("usageTokens", () => {
  test("reads total_tokens when present", () => {
    expect(usageTokens(usage(900, 120, 1030))).toBe(1030);
    expect(usageTokens(usage(900, 120, 0))).toBe(0);
  });
  test("falls back to input + output", () => {
    expect(usageTokens(usage(900, 120))).toBe(1020);
    expect(usageTokens({ input_tokens: 1, output_tokens: 2, total_tokens: null as unknown as number })).toBe(3);
  });
  test("rejects malformed counts", () => {
    expect(() => usageTokens({ input_tokens: -1, output_tokens: 0 })).toThrow(InvalidInputError);
    expect(() => usageTokens({ input_tokens: Number.NaN, output_tokens: 0 })).toThrow(InvalidInputError);
  });
});

describe("planCompaction", () => {
  test.each([
    [0, 0],
    [1, 0],
    [2, 1],
    [3, 2],
    [7, 4],
    [100, 50],
  ])("selects the oldest up to the turn boundary nearest floor(n/2) for n = %i alternating messages", (n, selected) => {
    const active = range(11, n);
    const snapshot = structuredClone(active);
    const plan = planCompaction(active);
    expect(active).toEqual(snapshot);
    if (selected === 0) return expect(plan).toBeUndefined();
    expect(plan!.selected).toEqual(active.slice(0, selected));
    expect(plan!.kept).toEqual(active.slice(selected));
    expect(plan!.range).toEqual({ start: 11, end: 10 + selected });
  });
  test("rejects out-of-order Active", () => {
    expect(() => planCompaction([message(2), message(1)])).toThrow(InvalidInputError);
  });
  test("cuts on a turn boundary: Active never starts with a reply whose question was summarized", () => {
    // Turns of one user message and 1–4 assistant steps (tool calls with their results inside a step).
    const roles = [
      "user",
      "assistant",
      "assistant",
      "assistant",
      "user",
      "assistant",
      "user",
      "assistant",
      "assistant",
      "assistant",
      "assistant",
      "user",
      "assistant",
    ] as const;
    const active = roles.map((role, i) => message(i + 1, role));
    for (let n = 3; n <= active.length; n++) {
      const plan = planCompaction(active.slice(0, n))!;
      const hasBoundary = active.slice(1, n).some((m) => m.role === "user");
      if (hasBoundary) expect(plan.kept[0]!.role, `n = ${n}`).toBe("user");
      else expect(plan.selected.length).toBe(Math.floor(n / 2));
    }
    // floor(13 / 2) = 6 is a step boundary; the nearest turn boundaries are 4 and 6 → 6 (user at index 6).
    expect(planCompaction(active)!.range).toEqual({ start: 1, end: 6 });
  });
  test("one turn of many steps (no turn boundary) is cut between steps at floor(n/2)", () => {
    const active = [message(1, "user"), ...Array.from({ length: 6 }, (_, i) => message(i + 2, "assistant"))];
    expect(planCompaction(active)!.selected.map((m) => m.sequence)).toEqual([1, 2, 3]);
  });
});

describe("compactionTrigger", () => {
  const facts = { contextWindow: 200_000, activeCount: 10 };
  test("a context-length refusal since the last compaction compacts under every automatic policy, never under manual", () => {
    for (const policy of [realUsage(), afterMessages(1000), atContextTokens(1_000_000)]) {
      const decision = compactionTrigger(policy, { ...facts, lastUsage: usage(10), estimatedTokens: () => 10, contextRefused: true });
      expect(decision).toEqual({ compact: true, reason: "the provider refused a request as too long since the last compaction" });
    }
    expect(compactionTrigger(manualOnly(), { ...facts, contextRefused: true }).compact).toBe(false);
  });
  test("real usage triggers at exactly 95% and not below", () => {
    expect(compactionTrigger(realUsage(), { ...facts, lastUsage: usage(190_000) }).compact).toBe(true);
    expect(compactionTrigger(realUsage(), { ...facts, lastUsage: usage(189_999) }).compact).toBe(false);
    expect(compactionTrigger(realUsage(), { ...facts, lastUsage: usage(180_000, 10_000) }).compact).toBe(true);
    expect(compactionTrigger(realUsage(), { ...facts, lastUsage: usage(180_000, 10_000, 189_999) }).compact).toBe(false);
  });
  test("exactly 95% triggers for many window sizes", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10_000_000 }), (window) => {
        const threshold = Math.ceil((95 * window) / 100);
        const at = compactionTrigger(realUsage(), { contextWindow: window, activeCount: 2, lastUsage: usage(threshold) });
        const below = compactionTrigger(realUsage(), { contextWindow: window, activeCount: 2, lastUsage: usage(threshold - 1) });
        return at.compact && !below.compact;
      }),
    );
  });
  test("real usage never compacts without usage or a window, and never estimates", () => {
    const estimate = () => {
      throw new Error("must not estimate");
    };
    expect(compactionTrigger(realUsage(), { ...facts, estimatedTokens: estimate }).compact).toBe(false);
    expect(compactionTrigger(realUsage(), { activeCount: 10, lastUsage: usage(1e9), estimatedTokens: estimate }).compact).toBe(false);
  });
  test("after-messages triggers at n", () => {
    expect(compactionTrigger(afterMessages(4), { activeCount: 4 }).compact).toBe(true);
    expect(compactionTrigger(afterMessages(4), { activeCount: 3 }).compact).toBe(false);
  });
  test("at-context-tokens compares the estimate and needs one", () => {
    expect(compactionTrigger(atContextTokens(100), { activeCount: 4, estimatedTokens: () => 100 }).compact).toBe(true);
    expect(compactionTrigger(atContextTokens(100), { activeCount: 4, estimatedTokens: () => 99 }).compact).toBe(false);
    expect(() => compactionTrigger(atContextTokens(100), { activeCount: 4 })).toThrow(InvalidInputError);
  });
  test("manual never compacts, even with a pending deep compaction", () => {
    expect(compactionTrigger(manualOnly(), { ...facts, lastUsage: usage(200_000), deepCompactionPending: true }).compact).toBe(false);
  });
  test("a pending deep compaction compacts under automatic policies", () => {
    expect(compactionTrigger(realUsage(), { ...facts, deepCompactionPending: true }).compact).toBe(true);
    expect(compactionTrigger(afterMessages(100), { activeCount: 3, deepCompactionPending: true }).compact).toBe(true);
  });
  test("fewer than 2 messages never compact", () => {
    expect(compactionTrigger(afterMessages(1), { activeCount: 1 }).compact).toBe(false);
    expect(compactionTrigger(realUsage(), { contextWindow: 10, activeCount: 1, lastUsage: usage(10) }).compact).toBe(false);
  });
  test("every decision has a reason", () => {
    expect(compactionTrigger(realUsage(), { ...facts, lastUsage: usage(190_000) }).reason).toMatch(/190000/);
  });
  test("rejects invalid policies and facts", () => {
    expect(() => realUsage(0)).toThrow(InvalidInputError);
    expect(() => realUsage(1.5)).toThrow(InvalidInputError);
    expect(() => afterMessages(0)).toThrow(InvalidInputError);
    expect(() => assertCompactionPolicy({ kind: "sometimes" } as unknown as CompactionPolicy)).toThrow(InvalidInputError);
    expect(() => compactionTrigger({ kind: "at-context-tokens", tokens: -1 }, { activeCount: 2, estimatedTokens: () => 0 })).toThrow(InvalidInputError);
    expect(() => compactionTrigger(realUsage(), { contextWindow: 0, activeCount: 2 })).toThrow(InvalidInputError);
    expect(() => compactionTrigger(realUsage(), { activeCount: -1 })).toThrow(InvalidInputError);
  });
});

describe("validateAfterCompaction", () => {
  test("exactly 50% passes, 50% + 1 token is deep", () => {
    expect(validateAfterCompaction(usage(100_000), 200_000)).toBe("pass");
    expect(validateAfterCompaction(usage(100_001), 200_000)).toBe("deep");
    expect(validateAfterCompaction(usage(90_000, 10_000), 200_000)).toBe("pass");
    expect(validateAfterCompaction(usage(0, 0, 100_001), 200_000)).toBe("deep");
  });
  test("rejects a bad window", () => {
    expect(() => validateAfterCompaction(usage(1), 0)).toThrow(InvalidInputError);
  });
});

describe("estimateTokens", () => {
  test("follows the documented rule", () => {
    const m = message(1, "user", "hi");
    const json = JSON.stringify(m.parts[0]);
    expect(estimateTokens([m])).toBe(4 + Math.ceil(json.length / 4));
    expect(estimateTokens([])).toBe(0);
  });
  test("counts UTF-8 bytes", () => {
    expect(estimateTextTokens("€€€€")).toBe(3);
    expect(estimateTextTokens("😀😀")).toBe(2);
    expect(estimateTextTokens(null)).toBe(0);
  });
  test("counts base64 images flat and text files by decoded size", () => {
    const image = { ...message(1), parts: [{ sequence: 1, type: "file" as const, media_type: "image/png", data: "A".repeat(400_000) }] };
    const meta = JSON.stringify({ sequence: 1, type: "file", media_type: "image/png" }).length;
    expect(estimateTokens([image])).toBe(4 + Math.ceil(meta / 4) + FILE_DATA_TOKENS);
    const textFile = { ...message(1), parts: [{ sequence: 1, type: "file" as const, media_type: "text/plain", data: btoa("x".repeat(400)) }] };
    const textMeta = JSON.stringify({ sequence: 1, type: "file", media_type: "text/plain" }).length;
    expect(estimateTokens([textFile])).toBe(4 + Math.ceil(textMeta / 4) + 100);
  });
  test("counts tools and whole inputs, deterministically", () => {
    const tools = [{ name: "read", description: "Read a file", inputSchema: { type: "object" } }];
    const messages = range(1, 5);
    const a = estimateTokens(messages, tools);
    expect(a).toBe(estimateTokens(structuredClone(messages), structuredClone(tools)));
    expect(a).toBeGreaterThan(estimateTokens(messages));
    const input: ModelInput = { system: "Be brief.", summary: "abcd", messages };
    expect(estimateModelInputTokens(input, tools)).toBe(3 + 1 + a);
  });
  test("rejects values that are not JSON", () => {
    const bad = {
      ...message(1),
      parts: [{ sequence: 1, type: "tool" as const, tool_call_id: "c", tool_name: "t", state: "input-available" as const, input: 1n }],
    };
    expect(() => estimateTokens([bad])).toThrow(InvalidInputError);
  });
});

describe("estimateTokens of text parts", () => {
  test("property: a text part counts exactly the UTF-8 bytes of its JSON, whatever it holds", () => {
    const utf8Bytes = (text: string) => new TextEncoder().encode(text).length;
    const text = fc.oneof(
      fc.string({ unit: "binary" }),
      fc.string({ unit: "grapheme" }),
      fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)) }),
      // ASCII, mostly printable: the whole-text test's path (plain) and its fall-back (a quote, a backslash, a control character, DEL).
      fc.string({ unit: fc.integer({ min: 0, max: 0x7f }).map((c) => String.fromCharCode(c)) }),
      fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 400 }),
    );
    fc.assert(
      fc.property(
        fc.constantFrom("text", "reasoning", "reasoning-summary"),
        text,
        fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
        (type, body, sequence) => {
          const part = { sequence, type, text: body } as MessageRecord["parts"][number];
          const m: MessageRecord = { ...message(1), parts: [part] };
          expect(estimateTokens([m])).toBe(4 + Math.ceil(utf8Bytes(JSON.stringify(part)) / 4));
        },
      ),
      { numRuns: 2000 },
    );
  });
  test("property: plain text counts exactly its UTF-8 bytes (lone surrogates as U+FFFD)", () => {
    const utf8Bytes = (text: string) => new TextEncoder().encode(text).length;
    const text = fc.oneof(
      fc.string({ unit: "binary" }),
      fc.string({ unit: "grapheme" }),
      fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)) }),
      // ASCII, mostly printable: the whole-text test's path (plain) and its fall-back (a quote, a backslash, a control character, DEL).
      fc.string({ unit: fc.integer({ min: 0, max: 0x7f }).map((c) => String.fromCharCode(c)) }),
      fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 400 }),
    );
    fc.assert(
      fc.property(text, (body) => {
        // ASCII padding 0–3 pins the byte count exactly, not just its quarter rounded up.
        for (let pad = 0; pad < 4; pad++) expect(estimateTextTokens(body + "a".repeat(pad))).toBe(Math.ceil((utf8Bytes(body) + pad) / 4));
      }),
      { numRuns: 2000 },
    );
  });
});

describe("foldModelInput", () => {
  const input = (messages: MessageRecord[], summary: string | null = "old summary"): ModelInput => ({ system: "sys", summary, messages });

  test("halves the messages and notes it in the summary", () => {
    const messages = [message(1, "user"), message(2, "assistant"), message(3, "assistant"), message(4, "assistant")];
    const folded = foldModelInput(input(messages), 1)!;
    expect(folded.droppedMessages).toBe(2);
    expect(folded.input.messages).toEqual(messages.slice(2));
    expect(folded.input.summary).toBe(`old summary\n\n${foldNote(2)}`);
    expect(folded.input.system).toBe("sys");
    expect(foldModelInput(input(messages, null), 1)!.input.summary).toBe(foldNote(2));
  });
  test("starts the kept part at a user message when the kept half has one", () => {
    const messages = [
      message(1, "user"),
      message(2, "assistant"),
      message(3, "assistant"),
      message(4, "user"),
      message(5, "assistant"),
      message(6, "assistant"),
    ];
    expect(foldModelInput(input(messages), 1)!.input.messages.map((m) => m.sequence)).toEqual([4, 5, 6]);
    const later = [message(1, "user"), message(2, "assistant"), message(3, "assistant"), message(4, "assistant"), message(5, "user"), message(6, "assistant")];
    expect(foldModelInput(input(later), 1)!.input.messages.map((m) => m.sequence)).toEqual([5, 6]);
  });
  test("never drops the newest message", () => {
    const messages = [message(1, "user"), message(2, "user")];
    expect(foldModelInput(input(messages), 1)!.input.messages).toEqual([messages[1]]);
  });
  test("deeper folds halve again, then stop", () => {
    const messages = range(1, 8).map((m) => ({ ...m, role: "assistant" as const }));
    const original = input(messages);
    const snapshot = structuredClone(original);
    expect(foldModelInput(original, 1)!.droppedMessages).toBe(4);
    expect(foldModelInput(original, 2)!.droppedMessages).toBe(6);
    expect(foldModelInput(original, 3)!.droppedMessages).toBe(7);
    expect(foldModelInput(original, 3)!.input.messages).toEqual([messages[7]]);
    expect(foldModelInput(original, 4)).toBeUndefined();
    expect(foldModelInput(input([message(1)]), 1)).toBeUndefined();
    expect(foldModelInput(input([]), 1)).toBeUndefined();
    expect(original).toEqual(snapshot);
  });
  test("nextFold bounds the depth with ContextOverflowError", () => {
    const original = input(range(1, 100));
    for (let attempt = 1; attempt <= MAX_FOLD_DEPTH; attempt++) expect(nextFold(original, attempt).input.messages.length).toBeGreaterThan(0);
    expect(() => nextFold(original, MAX_FOLD_DEPTH + 1)).toThrow(ContextOverflowError);
    expect(() => nextFold(input([message(1)]), 1)).toThrow(ContextOverflowError);
    expect(() => foldModelInput(original, 0)).toThrow(InvalidInputError);
  });
});

describe("accumulateCompaction", () => {
  test("accumulates over several steps", () => {
    let accounting: CompactionAccounting | undefined;
    accounting = accumulateCompaction(accounting, { removedMessages: 450, removedTokensEstimate: 90_000, beforeTokens: 121_600, afterTokens: 40_100 });
    expect(accounting).toEqual({
      completed: 1,
      removed_messages: 450,
      removed_tokens_estimate: 90_000,
      last_before_tokens: 121_600,
      last_after_tokens: 40_100,
    });
    expect("cost_usd_micros" in accounting).toBe(false);
    accounting = accumulateCompaction(accounting, {
      removedMessages: 300,
      removedTokensEstimate: 60_000,
      costUsdMicros: 700,
      beforeTokens: 120_000,
      afterTokens: 39_000,
    });
    accounting = accumulateCompaction(accounting, { removedMessages: 150, removedTokensEstimate: 30_000, beforeTokens: 118_000, afterTokens: 41_000 });
    accounting = accumulateCompaction(accounting, { removedMessages: 0, removedTokensEstimate: 0, costUsdMicros: 500, beforeTokens: 1, afterTokens: 1 });
    expect(accounting).toEqual({
      completed: 4,
      removed_messages: 900,
      removed_tokens_estimate: 180_000,
      cost_usd_micros: 1_200,
      last_before_tokens: 1,
      last_after_tokens: 1,
    });
  });
  test("preserves unknown fields and does not mutate the previous value", () => {
    const previous = { completed: 1, removed_messages: 2, removed_tokens_estimate: 3, future_field: "x" };
    const snapshot = structuredClone(previous);
    const next = accumulateCompaction(previous, { removedMessages: 1, removedTokensEstimate: 1, beforeTokens: 5, afterTokens: 4 });
    expect(next).toMatchObject({ future_field: "x", completed: 2 });
    expect(previous).toEqual(snapshot);
  });
  test("rejects bad figures", () => {
    expect(() => accumulateCompaction(undefined, { removedMessages: -1, removedTokensEstimate: 0, beforeTokens: 0, afterTokens: 0 })).toThrow(
      InvalidInputError,
    );
    expect(() => accumulateCompaction(undefined, { removedMessages: 1, removedTokensEstimate: 0.5, beforeTokens: 0, afterTokens: 0 })).toThrow(
      InvalidInputError,
    );
  });
});

describe("repeated compaction stays bounded", () => {
  const MAX_BATCH = 40;

  test("100 plan → apply cycles with new messages in between keep Active bounded", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: MAX_BATCH }), { minLength: 100, maxLength: 100 }),
        fc.integer({ min: 2, max: 60 }),
        (appends, threshold) => {
          // One compaction per cycle keeps Active ≤ max(threshold - 1, MAX_BATCH):
          // ceil((M + MAX_BATCH) / 2) ≤ M once M ≥ MAX_BATCH.
          const bound = Math.max(threshold - 1, MAX_BATCH);
          const policy = afterMessages(threshold);
          let active: MessageRecord[] = [];
          let next = 1;
          let segmentEnd = 0;
          for (const count of appends) {
            for (let i = 0; i < count; i++) active.push(message(next++));
            if (compactionTrigger(policy, { activeCount: active.length }).compact) {
              const plan = planCompaction(active)!;
              expect(plan.selected.length).toBeGreaterThanOrEqual(Math.floor(active.length / 2));
              if (active.length >= 3) expect(plan.kept[0]!.role).toBe("user");
              expect(plan.range.start).toBe(segmentEnd + 1); // segments are contiguous
              segmentEnd = plan.range.end;
              active = plan.kept;
            }
            expect(active.length).toBeLessThanOrEqual(bound);
          }
          // Nothing lost: segments then Active cover 1..next-1 exactly once.
          expect(active.map((m) => m.sequence)).toEqual(Array.from({ length: next - 1 - segmentEnd }, (_, i) => segmentEnd + 1 + i));
        },
      ),
    );
  });

  test("the default real-usage policy with deep compaction keeps the context under the window", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 300 }), { minLength: 100, maxLength: 100 }), (sizes) => {
        const contextWindow = 20_000;
        const policy = realUsage();
        let active: MessageRecord[] = [];
        let summary = "";
        let next = 1;
        // A stand-in provider whose real usage is the estimate of what it was sent.
        const usageOf = () => usage(estimateTextTokens(summary) + estimateTokens(active));
        for (const size of sizes) {
          active.push(message(next++, "user", "x".repeat(size * 4)));
          let deep = false;
          while (compactionTrigger(policy, { lastUsage: usageOf(), contextWindow, activeCount: active.length, deepCompactionPending: deep }).compact) {
            const plan = planCompaction(active)!;
            summary = `summary through ${plan.range.end}`;
            active = plan.kept;
            deep = validateAfterCompaction(usageOf(), contextWindow) === "deep";
          }
          expect(usageTokens(usageOf())).toBeLessThan(0.95 * contextWindow);
        }
      }),
      { numRuns: 30 },
    );
  }, 60_000);
});
