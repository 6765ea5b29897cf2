import {
  ContextLengthExceededError,
  estimateTextTokens,
  InvalidInputError,
  type MessageRecord,
  type Summarizer,
  type SummaryRequest,
  type SummaryResult,
  type Usage,
} from "../core/mod.ts";
import { type KnownFields, knownOptions } from "../core/internal.ts";
import { type AiSdkLanguageModel, aiSdkProvider } from "./provider.ts";

/**
 * Options of {@linkcode aiSdkSummarizer}.
 *
 * @example
 * ```ts
 * const options: AiSdkSummarizerOptions = { contextWindow: 128_000, maxOutputTokens: 2_000 };
 * ```
 */
export interface AiSdkSummarizerOptions {
  /** The summarizer model's own context window, in tokens (positive integer). */
  readonly contextWindow: number;
  /** Most tokens one summary may take (passed as `maxOutputTokens`). Default 2000; at most a quarter of `contextWindow`. */
  readonly maxOutputTokens?: number;
  /** The system instruction of every summary call. Default: a cumulative-summary instruction. */
  readonly instructions?: string;
  /** Extra call options for the model (`temperature`, `providerOptions`, …). */
  readonly callOptions?: Readonly<Record<string, unknown>>;
}

const SUMMARIZER_OPTION_FIELDS: KnownFields<AiSdkSummarizerOptions> = { contextWindow: true, maxOutputTokens: true, instructions: true, callOptions: true };

const DEFAULT_INSTRUCTIONS = [
  "You maintain the running summary of a conversation between a user and an AI assistant.",
  "You are given the previous summary (possibly empty) and the next part of the conversation.",
  "Write one new summary that replaces the previous one: keep every decision, fact, file, name, number,",
  "open task and the user's preferences; drop chit-chat. Write plain prose and short lists, no preamble.",
].join(" ");

/** Most characters of one tool input or output kept in the transcript. */
const TOOL_IO_CHARS = 2_000;
/** Times a call the model refused as too long is retried with half the chunk. */
const MAX_HALVINGS = 4;

/**
 * An LLM {@linkcode Summarizer} on any AI SDK language model. It keeps the
 * cumulative-summary contract: previous summary + the oldest half of Active → one
 * new summary, in one `summarize` call. It cannot fail for size: when the input does
 * not fit the model's own `contextWindow`, it summarizes the transcript in bounded
 * chunks, each folded into the running summary (a too-long previous summary is
 * condensed first). Raw reasoning and provider context never enter the prompt.
 * The usage it reports is the sum of its calls' reported usage.
 *
 * @example
 * ```ts
 * import { createOpenAI } from "@ai-sdk/openai";
 * import { MemoryStorage, Sessions } from "sessionfold";
 * import { aiSdkSummarizer } from "sessionfold/ai-sdk";
 *
 * const openai = createOpenAI({ apiKey: "sk-…" });
 * const sessions = new Sessions({
 *   storage: new MemoryStorage(),
 *   defaults: { summarizer: aiSdkSummarizer(openai("gpt-5-mini"), { contextWindow: 400_000 }), contextWindow: 400_000 },
 * });
 * ```
 * @throws {InvalidInputError} for `options` that are not an object or have a field it does not know, a `contextWindow` or
 * `maxOutputTokens` that is not a positive integer, or too small to chunk.
 */
export function aiSdkSummarizer(model: AiSdkLanguageModel, options: AiSdkSummarizerOptions): Summarizer {
  knownOptions(options, "aiSdkSummarizer(model, options)", SUMMARIZER_OPTION_FIELDS);
  const window = options.contextWindow;
  const maxOutput = options.maxOutputTokens ?? Math.min(2_000, Math.floor(window / 4));
  if (!Number.isSafeInteger(window) || window <= 0) {
    throw new InvalidInputError(`aiSdkSummarizer: contextWindow must be a positive integer, found ${String(window)}`, { contextWindow: window });
  }
  if (!Number.isSafeInteger(maxOutput) || maxOutput <= 0 || maxOutput * 4 > window) {
    throw new InvalidInputError(
      `aiSdkSummarizer: maxOutputTokens must be a positive integer of at most a quarter of contextWindow (${window}), found ${String(maxOutput)}`,
      { maxOutputTokens: maxOutput },
    );
  }
  const instructions = options.instructions ?? DEFAULT_INSTRUCTIONS;
  const provider = aiSdkProvider(model, { callOptions: { ...options.callOptions, maxOutputTokens: maxOutput } });
  // What a call's user message may take: the window less the instruction and the answer.
  const inputBudget = window - maxOutput - estimateTextTokens(instructions) - 64;
  if (inputBudget < maxOutput * 2) {
    throw new InvalidInputError(`aiSdkSummarizer: contextWindow ${window} leaves no room for a chunk next to the instruction and a ${maxOutput}-token answer`, {
      contextWindow: window,
    });
  }

  return {
    async summarize(request: SummaryRequest): Promise<SummaryResult> {
      const usage: Usage = { input_tokens: 0, output_tokens: 0, total_tokens: 0 };
      const call = async (previous: string | null, text: string): Promise<string> => {
        const prompt = `${previous ? `Previous summary:\n${previous}\n\n` : ""}Conversation:\n${text}`;
        let answer = "";
        const step = await collect(
          provider.stream({ system: instructions, summary: null, messages: [userMessage(prompt)], tools: [], signal: request.signal }),
        );
        answer = step.text.trim();
        if (step.usage) addUsage(usage, step.usage);
        if (request.signal.aborted) throw request.signal.reason ?? new Error("summary cancelled");
        if (answer === "") throw new Error(`the summarizer model ${provider.identity.model} returned no text`);
        return answer;
      };
      // Folds `pieces` into `summary`, each call within the budget; a refused call halves the chunk.
      const fold = async (summary: string | null, pieces: readonly string[], budget: number, halvings = 0): Promise<string | null> => {
        if (summary !== null && estimateTextTokens(summary) > budget / 2) summary = await fold(null, [summary], budget, halvings);
        const room = budget - (summary === null ? 0 : estimateTextTokens(summary));
        for (const chunk of chunks(pieces, room)) {
          try {
            summary = await call(summary, chunk);
          } catch (error) {
            if (!(error instanceof ContextLengthExceededError) || halvings >= MAX_HALVINGS) throw error;
            summary = await fold(summary, [chunk], Math.floor(budget / 2), halvings + 1);
          }
        }
        return summary;
      };
      const lines = request.messages.map(transcriptLine).filter((line) => line !== "");
      const summary = await fold(request.previousSummary, lines, inputBudget);
      if (summary === null) throw new InvalidInputError("aiSdkSummarizer: nothing to summarize (no previous summary and no message text)");
      return { text: summary, usage };
    },
  };
}

/** Groups lines into chunks of at most `budget` estimated tokens; a longer line is cut. */
function* chunks(lines: readonly string[], budget: number): Generator<string> {
  let current: string[] = [];
  let tokens = 0;
  for (const line of lines.flatMap((l) => cut(l, budget))) {
    const size = estimateTextTokens(line) + 1;
    if (tokens + size > budget && current.length > 0) {
      yield current.join("\n");
      current = [];
      tokens = 0;
    }
    current.push(line);
    tokens += size;
  }
  if (current.length > 0) yield current.join("\n");
}

function cut(line: string, budget: number): string[] {
  const tokens = estimateTextTokens(line) + 1;
  if (tokens <= budget) return [line];
  const size = Math.max(1, Math.floor((line.length * budget) / tokens / 2));
  const out: string[] = [];
  for (let i = 0; i < line.length; i += size) out.push(line.slice(i, i + size));
  return out;
}

/** One message as transcript text: what was said and done, never raw reasoning or provider context. */
function transcriptLine(message: MessageRecord): string {
  const out: string[] = [];
  for (const part of message.parts) {
    if (part.type === "text" && part.text.trim() !== "") out.push(part.text);
    else if (part.type === "reasoning-summary") out.push(`(reasoning summary) ${part.text}`);
    else if (part.type === "file") out.push(`[file ${part.name ?? part.media_type}]`);
    else if (part.type === "tool") {
      const result = part.state === "output-available"
        ? `→ ${clip(JSON.stringify(part.output ?? null))}`
        : part.state === "output-error"
        ? `→ error: ${clip(part.error ?? "")}`
        : "";
      out.push(`tool ${part.tool_name}(${clip(JSON.stringify(part.input ?? {}))}) ${result}`.trim());
    }
  }
  return out.length === 0 ? "" : `#${message.sequence} ${message.role}: ${out.join("\n")}`;
}

function clip(text: string): string {
  return text.length <= TOOL_IO_CHARS ? text : `${text.slice(0, TOOL_IO_CHARS)}…`;
}

function userMessage(text: string): MessageRecord {
  return {
    record_type: "message",
    sequence: 1,
    message_id: "summary-input",
    role: "user",
    created_at: new Date(0).toISOString(),
    parts: [{ sequence: 1, type: "text", text }],
  };
}

async function collect(events: AsyncIterable<import("../core/mod.ts").ProviderEvent>): Promise<{ text: string; usage?: Usage }> {
  let text = "";
  let usage: Usage | undefined;
  for await (const event of events) {
    if (event.type === "text-delta") text += event.text;
    else if (event.type === "usage") usage = event.usage;
  }
  return usage ? { text, usage } : { text };
}

function addUsage(total: Usage, step: Usage): void {
  const sum = total as { input_tokens: number; output_tokens: number; total_tokens: number };
  sum.input_tokens += step.input_tokens;
  sum.output_tokens += step.output_tokens;
  sum.total_tokens += step.total_tokens ?? step.input_tokens + step.output_tokens;
}
