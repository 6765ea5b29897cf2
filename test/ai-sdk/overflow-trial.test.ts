/**
 * The overflow trial: 40 turns through aiSdkProvider against a model that refuses any
 * prompt over its context window (HTTP 400 `context_length_exceeded`, as OpenAI and
 * OpenAI-compatible servers answer) and otherwise reports the prompt's size as usage.
 * Every sixth turn pastes a large block, so Active overflows before the real usage reaches
 * 95%. A refusal is answered from a folded input whose usage is low; the next step must
 * compact first, so no two turns in a row pay a refusal.
 */
import type { LanguageModelV3StreamPart } from "@ai-sdk/provider";
import { convertArrayToReadableStream, MockLanguageModelV3 } from "ai/test";
import { describe, expect, it } from "vitest";
import { estimateTextTokens, ExtractiveSummarizer, MemoryStorage } from "../../core/mod.ts";
import { aiSdkProvider } from "../../ai-sdk/mod.ts";
import { createSession, drain } from "../run/support.ts";

const WINDOW = 3_000;

/** Refusals per turn over the 40-turn trial. */
async function trial(): Promise<{ refusals: number[]; compactions: number; replyFirst: number; requests: number }> {
  let refusedNow = 0;
  let replyFirst = 0;
  let requests = 0;
  const model = new MockLanguageModelV3({
    provider: "loopback.chat",
    modelId: "small-window",
    doStream: async ({ prompt }) => {
      const tokens = estimateTextTokens(JSON.stringify(prompt));
      requests += 1;
      // Active (after the system message) starting with a reply whose question went into the summary.
      if (prompt.find((m) => m.role !== "system")?.role !== "user") replyFirst += 1;
      if (tokens > WINDOW) {
        refusedNow += 1;
        throw Object.assign(new Error("Bad Request"), {
          statusCode: 400,
          responseBody: JSON.stringify({
            error: {
              code: "context_length_exceeded",
              message: `This model's maximum context length is ${WINDOW} tokens. However, your messages resulted in ${tokens} tokens.`,
            },
          }),
        });
      }
      return {
        stream: convertArrayToReadableStream<LanguageModelV3StreamPart>([
          { type: "text-start", id: "t" },
          { type: "text-delta", id: "t", delta: `Answer: ${"noted ".repeat(30)}` },
          { type: "text-end", id: "t" },
          {
            type: "finish",
            usage: {
              inputTokens: { total: tokens, noCache: tokens, cacheRead: undefined, cacheWrite: undefined },
              outputTokens: { total: 50, text: 50, reasoning: undefined },
            },
            finishReason: { unified: "stop", raw: "stop" },
          },
        ]),
      };
    },
  });
  const { session } = await createSession(new MemoryStorage(), { contextWindow: WINDOW, summarizer: new ExtractiveSummarizer({ maxChars: 1_200 }) });
  const provider = aiSdkProvider(model);
  const refusals: number[] = [];
  let compactions = 0;
  for (let turn = 1; turn <= 40; turn++) {
    const text = turn % 6 === 0
      ? `Here is the file for turn ${turn}:\n${"const value = compute(input);\n".repeat(120)}`
      : `Question ${turn}: ${"tell me more ".repeat(12)}`;
    refusedNow = 0;
    const { events, error } = await drain(session.run(text, { provider }));
    expect(error).toBeUndefined();
    compactions += events.filter((e) => e.type === "compaction-completed").length;
    refusals.push(refusedNow);
  }
  return { refusals, compactions, replyFirst, requests };
}

describe("a context-length refusal leads to a compaction", () => {
  it("40 turns: after a refused turn the next step compacts first, so no two turns in a row pay a refusal", async () => {
    const { refusals, compactions, replyFirst, requests } = await trial();
    const refusedTurns = refusals.map((count, i) => (count > 0 ? i + 1 : 0)).filter((turn) => turn > 0);
    // The trial is deterministic (scripted model, fixed pastes): it overflows on these turns.
    expect(refusedTurns).toEqual([12, 24, 36]);
    for (let i = 1; i < refusals.length; i++) {
      expect(refusals[i - 1]! > 0 && refusals[i]! > 0, `turns ${i} and ${i + 1} both refused: ${refusals.join(",")}`).toBe(false);
    }
    expect(compactions).toBeGreaterThanOrEqual(refusedTurns.length);
    // Every compaction cut on a turn boundary: no request starts with a reply.
    expect(replyFirst).toBe(0);
    // Figures for the report (refusals per turn, turn 1 first).
    console.info(
      `overflow trial: refusals per turn ${
        refusals.join(",")
      }; refused turns ${refusedTurns.length}/40; compactions ${compactions}; requests starting with a reply ${replyFirst}/${requests}`,
    );
  });
});
