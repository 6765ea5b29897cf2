/**
 * Case 11: the AI SDK adapter's cost per streamed delta. The same mock stream
 * (`MockLanguageModelV3` from `ai/test`, N text deltas and a finish part) is consumed
 * through `aiSdkProvider(model).stream()` (value) and through `streamText(...).textStream`
 * (baseline: what an AI SDK app pays anyway). Variants alternate run by run; the figure
 * is the median time per delta. Target: the adapter costs at most 5% more than `streamText`.
 *
 * @module
 */
import type { LanguageModelV3StreamPart } from "@ai-sdk/provider";
import { streamText } from "ai";
import { convertArrayToReadableStream, MockLanguageModelV3 } from "ai/test";
import { aiSdkProvider } from "../../../ai-sdk/mod.ts";
import type { CaseContext } from "../lib/result.ts";
import { median } from "../lib/stats.ts";

function mockStream(deltas: number): LanguageModelV3StreamPart[] {
  const parts: LanguageModelV3StreamPart[] = [{ type: "stream-start", warnings: [] }, { type: "text-start", id: "t" }];
  for (let i = 0; i < deltas; i++) parts.push({ type: "text-delta", id: "t", delta: `word${i % 97} ` });
  parts.push({ type: "text-end", id: "t" });
  parts.push({
    type: "finish",
    usage: { inputTokens: { total: 100, noCache: 100, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: deltas, text: deltas, reasoning: 0 } },
    finishReason: { unified: "stop", raw: "stop" },
  });
  return parts;
}

export async function aiSdkCase(ctx: CaseContext): Promise<void> {
  const deltas = ctx.quick ? 2_000 : 10_000;
  const reps = ctx.quick ? 7 : 15;
  const parts = mockStream(deltas);
  const model = () => new MockLanguageModelV3({ doStream: async () => ({ stream: convertArrayToReadableStream(parts) }) });
  const signal = new AbortController().signal;
  const viaAdapter = async (): Promise<number> => {
    const provider = aiSdkProvider(model());
    const t0 = performance.now();
    let n = 0;
    for await (const event of provider.stream({ system: null, summary: null, messages: [], tools: [], signal })) if (event.type === "text-delta") n++;
    if (n !== deltas) throw new Error(`case 11: the adapter streamed ${n} deltas, expected ${deltas}`);
    return (performance.now() - t0) / deltas;
  };
  const viaStreamText = async (): Promise<number> => {
    const m = model();
    const t0 = performance.now();
    let n = 0;
    for await (const _text of streamText({ model: m, prompt: "x" }).textStream) n++;
    if (n !== deltas) throw new Error(`case 11: streamText streamed ${n} deltas, expected ${deltas}`);
    return (performance.now() - t0) / deltas;
  };
  await viaAdapter();
  await viaStreamText();
  const adapter: number[] = [];
  const direct: number[] = [];
  for (let rep = 0; rep < reps; rep++) {
    adapter.push(await viaAdapter());
    direct.push(await viaStreamText());
  }
  const value = median(adapter) * 1000;
  const base = median(direct) * 1000;
  ctx.log(`case 11: adapter ${value.toFixed(2)} µs/delta, streamText ${base.toFixed(2)} µs/delta`);
  ctx.emit({
    case: 11,
    name: `ai-sdk.adapter(${deltas} deltas)`,
    value,
    unit: "µs/delta",
    baseline: base,
    baselineName: "the same mock stream consumed with streamText().textStream",
    ratio: value / base,
    ratioMeaning: "value / baseline",
    runs: reps,
    target: { op: "<=", limit: 1.05, text: "≤ 1.05 (≤ 5% overhead)" },
    note: "MockLanguageModelV3 from ai/test; the adapter calls doStream itself, streamText adds its own step machinery",
  });
}
