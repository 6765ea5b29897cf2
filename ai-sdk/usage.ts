import type { Usage } from "../core/mod.ts";

/** Usage as a v2 language model reports it: flat counts. */
interface FlatUsage {
  readonly inputTokens: number | undefined;
  readonly outputTokens: number | undefined;
  readonly totalTokens?: number | undefined;
  readonly reasoningTokens?: number | undefined;
  readonly cachedInputTokens?: number | undefined;
}

/** Usage as a v3 or v4 language model reports it: nested input and output counts. */
interface NestedUsage {
  readonly inputTokens: {
    readonly total: number | undefined;
    readonly noCache?: number | undefined;
    readonly cacheRead?: number | undefined;
    readonly cacheWrite?: number | undefined;
  };
  readonly outputTokens: { readonly total: number | undefined; readonly text?: number | undefined; readonly reasoning?: number | undefined };
}

/**
 * The stored {@linkcode Usage} for the usage an AI SDK language model reported in its
 * `finish` stream part, v2 (flat) or v3/v4 (nested). Only reported counts are stored;
 * nothing is estimated. `input_tokens` is the whole prompt (cache reads and writes
 * included), as the compaction trigger reads it. Returns `undefined` when the model
 * reported no input and no output count.
 *
 * | reported (v2) | reported (v3, v4) | stored |
 * | --- | --- | --- |
 * | `inputTokens` | `inputTokens.total` (else `noCache + cacheRead + cacheWrite`) | `input_tokens` |
 * | `outputTokens` | `outputTokens.total` (else `text + reasoning`) | `output_tokens` |
 * | `totalTokens` | (none: input + output) | `total_tokens` |
 * | `cachedInputTokens` | `inputTokens.cacheRead` | `cache_read_tokens` |
 * | (none) | `inputTokens.cacheWrite` | `cache_write_tokens` |
 * | `reasoningTokens` | `outputTokens.reasoning` | `reasoning_tokens` |
 *
 * @example
 * ```ts
 * import { storedUsage } from "sessionfold/ai-sdk";
 *
 * storedUsage({ inputTokens: { total: 1200, noCache: 200, cacheRead: 1000, cacheWrite: 0 }, outputTokens: { total: 40, text: 30, reasoning: 10 } });
 * // { input_tokens: 1200, output_tokens: 40, total_tokens: 1240, cache_read_tokens: 1000, cache_write_tokens: 0, reasoning_tokens: 10 }
 * ```
 */
export function storedUsage(usage: FlatUsage | NestedUsage | undefined): Usage | undefined {
  if (usage === undefined || usage === null) return undefined;
  if (typeof usage.inputTokens === "object" && usage.inputTokens !== null) return fromNested(usage as NestedUsage);
  return fromFlat(usage as FlatUsage);
}

function fromFlat(usage: FlatUsage): Usage | undefined {
  const input = count(usage.inputTokens);
  const output = count(usage.outputTokens);
  if (input === undefined && output === undefined) return undefined;
  const stored: Usage = { input_tokens: input ?? 0, output_tokens: output ?? 0, total_tokens: count(usage.totalTokens) ?? (input ?? 0) + (output ?? 0) };
  return withCounts(stored, { cache_read_tokens: count(usage.cachedInputTokens), reasoning_tokens: count(usage.reasoningTokens) });
}

function fromNested(usage: NestedUsage): Usage | undefined {
  const inputs = usage.inputTokens;
  const outputs = usage.outputTokens ?? { total: undefined };
  const input = count(inputs.total) ?? sum(inputs.noCache, inputs.cacheRead, inputs.cacheWrite);
  const output = count(outputs.total) ?? sum(outputs.text, outputs.reasoning);
  if (input === undefined && output === undefined) return undefined;
  const stored: Usage = { input_tokens: input ?? 0, output_tokens: output ?? 0, total_tokens: (input ?? 0) + (output ?? 0) };
  return withCounts(stored, {
    cache_read_tokens: count(inputs.cacheRead),
    cache_write_tokens: count(inputs.cacheWrite),
    reasoning_tokens: count(outputs.reasoning),
  });
}

function withCounts(usage: Usage, extra: Record<string, number | undefined>): Usage {
  const out: Record<string, unknown> = { ...usage };
  for (const [key, value] of Object.entries(extra)) if (value !== undefined) out[key] = value;
  return out as Usage;
}

/** A reported count: a non-negative safe integer, else `undefined` (never a guess). */
function count(value: unknown): number | undefined {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

function sum(...values: unknown[]): number | undefined {
  const counts = values.map(count).filter((v): v is number => v !== undefined);
  return counts.length === 0 ? undefined : counts.reduce((a, b) => a + b, 0);
}
