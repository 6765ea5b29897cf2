/**
 * A deterministic {@linkcode Summarizer} for compaction tests. By default it builds a
 * short, readable cumulative summary from the messages it is given and the previous
 * summary, capped at `maxChars` so that repeated compaction stays bounded. It can also
 * fail, answer with an empty summary, or hang until the compaction is cancelled, and
 * it records every request it receives.
 *
 * Uses web-standard APIs only (`structuredClone`, `AbortSignal`).
 *
 * @example
 * ```ts
 * import { Session } from "sessionfold";
 * declare const session: Session;
 *
 * import { ScriptedSummarizer } from "sessionfold/testing";
 *
 * const summarizer = new ScriptedSummarizer({ costUsdMicros: 250 });
 * await session.compact({ summarizer });
 * summarizer.calls.length; // 1
 * summarizer.calls[0]!.messages.map((m) => m.sequence); // the oldest half of Active
 * ```
 * @module
 */
import {
  estimateTextTokens,
  estimateTokens,
  InvalidInputError,
  type MessageRecord,
  type Summarizer,
  type SummaryRequest,
  type SummaryResult,
  type Usage,
} from "../core/mod.ts";

/**
 * How a {@linkcode ScriptedSummarizer} misbehaves: reject with your own error or with
 * `Error("scripted summarizer failure")` (`"error"`), resolve with an empty summary
 * (`"empty"`), or wait until the signal aborts and reject with its reason (`"hang"`).
 *
 * @example
 * ```ts
 * const mode: ScriptedSummarizerFailure = "hang";
 * ```
 */
export type ScriptedSummarizerFailure = Error | "error" | "empty" | "hang";

/**
 * Options of a {@linkcode ScriptedSummarizer}.
 *
 * @example
 * ```ts
 * const options: ScriptedSummarizerOptions = { maxChars: 500, costUsdMicros: 1_200 };
 * ```
 */
export interface ScriptedSummarizerOptions {
  /** Misbehave on every call; see {@linkcode ScriptedSummarizerFailure}. */
  readonly fail?: ScriptedSummarizerFailure;
  /** Reported as `usage.cost_usd_micros` (left out when not set). */
  readonly costUsdMicros?: number;
  /** Upper bound on the summary's `.length`. Default 2000. */
  readonly maxChars?: number;
  /**
   * Your own summary text instead of the default one (`call` counts from 1). It is
   * still capped at `maxChars`.
   */
  readonly text?: (request: RecordedSummaryRequest, call: number) => string;
}

/**
 * A request as {@linkcode ScriptedSummarizer.calls} records it: a structured-clone copy
 * without the signal.
 *
 * @example
 * ```ts
 * import { ScriptedSummarizer } from "sessionfold/testing";
 * declare const summarizer: ScriptedSummarizer;
 *
 * const request: RecordedSummaryRequest = summarizer.calls[0]!;
 * request.previousSummary; // null on the first compaction
 * ```
 */
export type RecordedSummaryRequest = Omit<SummaryRequest, "signal">;

/** The default cap on a {@linkcode ScriptedSummarizer} summary. */
export const SCRIPTED_SUMMARY_MAX_CHARS = 2_000;

/** Words of each message's text kept by the default summary. */
const SNIPPET_WORDS = 6;

/**
 * A deterministic summarizer. Each call resolves (or fails) as its options say; the
 * default summary is {@linkcode scriptedSummaryText}, with realistic usage: the core
 * estimate of the previous summary and the messages as input, a quarter of the summary
 * characters as output.
 *
 * If the signal is already aborted when `summarize()` is called, it rejects with the
 * signal's reason, whatever the mode.
 *
 * @example
 * ```ts
 * const summarizer = new ScriptedSummarizer();
 * import type { MessageRecord } from "sessionfold";
 * declare const messages: MessageRecord[];
 * const result = await summarizer.summarize({ previousSummary: null, messages, signal: new AbortController().signal });
 * result.text; // 'Summary through #4: 4 messages; #1 user: "Plan a trip to Lisbon"; …'
 * ```
 */
export class ScriptedSummarizer implements Summarizer {
  /** Every request received, in order (copies without the signal). */
  readonly calls: RecordedSummaryRequest[] = [];
  readonly #fail: ScriptedSummarizerFailure | undefined;
  readonly #cost: number | undefined;
  readonly #maxChars: number;
  readonly #text: ((request: RecordedSummaryRequest, call: number) => string) | undefined;

  /**
   * @example
   * ```ts
   * new ScriptedSummarizer();
   * new ScriptedSummarizer({ maxChars: 200, costUsdMicros: 90 });
   * new ScriptedSummarizer({ text: (request, call) => `summary ${call}` });
   * ```
   * @throws {InvalidInputError} when `maxChars` is not a positive integer or `costUsdMicros`
   * is not a non-negative integer.
   */
  constructor(options: ScriptedSummarizerOptions = {}) {
    const maxChars = options.maxChars ?? SCRIPTED_SUMMARY_MAX_CHARS;
    if (!Number.isInteger(maxChars) || maxChars < 1) throw new InvalidInputError(`maxChars must be a positive integer, got ${maxChars}`);
    const cost = options.costUsdMicros;
    if (cost !== undefined && (!Number.isInteger(cost) || cost < 0)) {
      throw new InvalidInputError(`costUsdMicros must be a non-negative integer, got ${cost}`);
    }
    this.#fail = options.fail;
    this.#cost = cost;
    this.#maxChars = maxChars;
    this.#text = options.text;
  }

  /**
   * A summarizer whose every call rejects, with `error` or
   * `Error("scripted summarizer failure")`.
   *
   * @example
   * ```ts
   * import { CompactionFailedError, Session } from "sessionfold";
   * declare const session: Session;
   *
   * await expect(session.compact({ summarizer: ScriptedSummarizer.failing() })).rejects.toThrow(CompactionFailedError);
   * ```
   */
  static failing(error?: Error): ScriptedSummarizer {
    return new ScriptedSummarizer({ fail: error ?? "error" });
  }

  /**
   * A summarizer whose every call resolves with an empty summary.
   *
   * @example
   * ```ts
   * const summarizer = ScriptedSummarizer.empty(); // compaction must refuse its answer
   * ```
   */
  static empty(): ScriptedSummarizer {
    return new ScriptedSummarizer({ fail: "empty" });
  }

  /**
   * A summarizer whose every call waits until its signal aborts, then rejects with
   * the abort reason: for cancellation tests.
   *
   * @example
   * ```ts
   * import { Session } from "sessionfold";
   * declare const session: Session;
   *
   * const controller = new AbortController();
   * const pending = session.compact({ summarizer: ScriptedSummarizer.hanging(), signal: controller.signal });
   * controller.abort();
   * await expect(pending).rejects.toThrow();
   * ```
   */
  static hanging(): ScriptedSummarizer {
    return new ScriptedSummarizer({ fail: "hang" });
  }

  /**
   * Summarizes as the options say. The request is recorded first, whatever happens.
   *
   * @example
   * ```ts
   * import { ScriptedSummarizer } from "sessionfold/testing";
   * declare const summarizer: ScriptedSummarizer;
   *
   * import type { MessageRecord } from "sessionfold";
   * declare const messages: MessageRecord[];
   * const signal = new AbortController().signal;
   * const { text, usage } = await summarizer.summarize({ previousSummary: "Earlier: …", messages, signal });
   * ```
   */
  async summarize(request: SummaryRequest): Promise<SummaryResult> {
    const recorded: RecordedSummaryRequest = structuredClone({ previousSummary: request.previousSummary, messages: request.messages });
    this.calls.push(recorded);
    const call = this.calls.length;
    const { signal } = request;
    if (signal.aborted) throw signal.reason;
    const fail = this.#fail;
    if (fail instanceof Error) throw fail;
    if (fail === "error") throw new Error("scripted summarizer failure");
    if (fail === "hang") {
      await new Promise<void>((resolve) => {
        if (signal.aborted) return resolve();
        signal.addEventListener("abort", () => resolve(), { once: true });
      });
      throw signal.reason;
    }
    const raw = fail === "empty"
      ? ""
      : this.#text
      ? this.#text(recorded, call)
      : scriptedSummaryText(request.previousSummary, request.messages, this.#maxChars);
    const text = capText(raw, this.#maxChars);
    const input_tokens = estimateTextTokens(request.previousSummary) + estimateTokens(request.messages);
    const output_tokens = Math.ceil(text.length / 4);
    const usage: Usage = {
      input_tokens,
      output_tokens,
      total_tokens: input_tokens + output_tokens,
      ...(this.#cost !== undefined ? { cost_usd_micros: this.#cost } : {}),
    };
    return { text, usage };
  }
}

/**
 * The default {@linkcode ScriptedSummarizer} text:
 * `Summary through #<last sequence>: <n> messages; #<seq> <role>: "<first words>"; …`
 * followed by `Earlier: <previous summary>` when there is one, and cut to `maxChars`
 * (ending in `…` when cut). The newest information comes first, so a cut drops the
 * oldest: the summary stays bounded however many compactions run. A message without
 * text is described by its parts, e.g. `[tool search]`.
 *
 * @example
 * ```ts
 * import type { MessageRecord } from "sessionfold";
 * declare function userMessage(sequence: number, text: string): MessageRecord;
 * scriptedSummaryText(null, [userMessage(1, "Plan a trip to Lisbon in May please")]);
 * // 'Summary through #1: 1 message; #1 user: "Plan a trip to Lisbon in…"'
 * ```
 */
export function scriptedSummaryText(
  previousSummary: string | null,
  messages: readonly MessageRecord[],
  maxChars: number = SCRIPTED_SUMMARY_MAX_CHARS,
): string {
  const last = messages.at(-1)?.sequence ?? 0;
  const head = `Summary through #${last}: ${messages.length} message${messages.length === 1 ? "" : "s"}`;
  const items = messages.map((message) => `#${message.sequence} ${message.role}: ${snippet(message)}`);
  let text = [head, ...items].join("; ");
  if (previousSummary) text += `. Earlier: ${previousSummary}`;
  return capText(text, maxChars);
}

function snippet(message: MessageRecord): string {
  const text = message.parts
    .flatMap((part) => (part.type === "text" ? [part.text] : []))
    .join(" ")
    .trim();
  if (text !== "") {
    const words = text.split(/\s+/);
    const head = words.slice(0, SNIPPET_WORDS).join(" ");
    return `"${head}${words.length > SNIPPET_WORDS ? "…" : ""}"`;
  }
  if (message.parts.length === 0) return "[empty]";
  return message.parts
    .map((part) => {
      if (part.type === "tool") return `[tool ${part.tool_name}]`;
      if (part.type === "file") return `[file ${part.name ?? part.media_type}]`;
      return `[${part.type}]`;
    })
    .join(" ");
}

/** Cuts `text` to at most `max` UTF-16 units, never inside a surrogate pair, marking the cut with `…`. */
function capText(text: string, max: number): string {
  if (text.length <= max) return text;
  let cut = max - 1;
  const code = text.charCodeAt(cut - 1);
  if (cut > 0 && code >= 0xd800 && code <= 0xdbff) cut--;
  return `${text.slice(0, cut)}…`;
}
