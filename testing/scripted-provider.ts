/**
 * A deterministic, scripted {@linkcode Provider} for tests of the agent loop, of hosts
 * and of adapters. Each call to `stream()` plays one {@linkcode ScriptedStep}: it
 * streams the step's events in the order a real provider would (reasoning, reasoning
 * summary, text in small chunks, tool calls, files, provider context, usage last),
 * with realistic "auto" usage computed from the request by the core token estimate.
 *
 * It can also misbehave on purpose: throw before or in the middle of a stream, refuse
 * an over-long request with {@linkcode ContextLengthExceededError} like a real
 * provider does, or hang until the request is cancelled. It honours `request.signal`
 * between events, and records every request it receives.
 *
 * Uses web-standard APIs only (`setTimeout`, `structuredClone`, `AbortSignal`).
 *
 * @example
 * ```ts
 * import { ScriptedProvider } from "sessionfold/testing";
 *
 * const provider = new ScriptedProvider([
 *   { toolCalls: [{ name: "search", input: { q: "weather" } }] },
 *   { text: "It is sunny." },
 * ]);
 * // …run the agent loop with `provider`…
 * provider.calls; // 2
 * provider.requests[1]!.messages.length; // the user message, the tool call, …
 * ```
 * @module
 */
import {
  ContextLengthExceededError,
  estimateModelInputTokens,
  InvalidInputError,
  type ModelRequest,
  type Provider,
  type ProviderEvent,
  type ProviderIdentity,
  type ToolDefinition,
  type Usage,
} from "../core/mod.ts";

/**
 * A tool call a {@linkcode ScriptedStep} makes. Without `id`, the call gets the
 * deterministic id `call_<call number>_<index from 1>`.
 *
 * @example
 * ```ts
 * const call: ScriptedToolCall = { name: "read_file", input: { path: "README.md" } };
 * ```
 */
export interface ScriptedToolCall {
  readonly id?: string;
  readonly name: string;
  readonly input: unknown;
}

/**
 * A file a {@linkcode ScriptedStep} produces: inline base64 `data` or a `url`.
 *
 * @example
 * ```ts
 * const file: ScriptedFile = { mediaType: "text/plain", name: "a.txt", data: btoa("hello") };
 * ```
 */
export interface ScriptedFile {
  readonly mediaType: string;
  readonly name?: string;
  readonly data?: string;
  readonly url?: string;
}

/**
 * How a {@linkcode ScriptedStep} fails: an error of your own, `"context-length"` (a
 * {@linkcode ContextLengthExceededError}; the step then never reports usage) or
 * `"error"` (a plain `Error("scripted provider failure")`).
 *
 * @example
 * ```ts
 * const step: ScriptedStep = { fail: "context-length" };
 * ```
 */
export type ScriptedFailure = Error | "context-length" | "error";

/**
 * One provider step, as {@linkcode ScriptedProvider} plays it.
 *
 * Events are streamed in this order, each one only when the step has it:
 * `reasoning-delta`s (chunked), one `reasoning-summary`, `text-delta`s (chunked),
 * one `tool-call` per tool call, one `file` per file, one `provider-context`, and
 * `usage` last.
 *
 * Failure controls, checked before each event:
 * - `hangAfterEvents: n` — stream `n` events, then wait until `request.signal`
 *   aborts and end the stream quietly (no throw). An `n` at or past the number of
 *   events hangs after the last event (the stream never closes on its own).
 * - `failAfterEvents: n` — stream `n` events, then throw `fail` (default `"error"`).
 *   An `n` at or past the number of events throws after the last event. When both
 *   are set and equal, the hang wins.
 * - `fail` alone — throw before any event.
 *
 * An aborted `request.signal` ends the stream before the next event, whatever the
 * step says. Every played step, cancelled or failed, uses up its place in an array
 * script; only a context-window refusal does not.
 *
 * @example
 * ```ts
 * const steps: ScriptedStep[] = [
 *   { reasoning: "The user wants a haiku.", text: "Autumn moonlight…", usage: "auto" },
 *   { text: "partial answer", failAfterEvents: 1 }, // one text chunk, then Error
 *   { text: "never finishes", hangAfterEvents: 0 },  // waits for cancellation
 * ];
 * ```
 */
export interface ScriptedStep {
  /** The answer text, streamed as `text-delta`s of `chunkSize` characters. */
  readonly text?: string;
  /** Raw reasoning, streamed as `reasoning-delta`s of `chunkSize` characters. */
  readonly reasoning?: string;
  /** A provider-produced reasoning summary, streamed as one event. */
  readonly reasoningSummary?: string;
  readonly toolCalls?: readonly ScriptedToolCall[];
  readonly files?: readonly ScriptedFile[];
  /** Opaque provider-native context; streamed when not `undefined`. */
  readonly providerContext?: unknown;
  /**
   * The usage event: a fixed `Usage`, `"none"` (no usage event), or `"auto"`
   * (default): `input_tokens = estimateModelInputTokens(request, request.tools)`,
   * `output_tokens = ceil(output characters / 4)` where the output characters are the
   * `.length` of the text, the reasoning, the reasoning summary and, for each tool
   * call, its name and the JSON of its input; `total_tokens` is their sum.
   */
  readonly usage?: Usage | "auto" | "none";
  /** Throw this instead of finishing; see {@linkcode ScriptedFailure}. */
  readonly fail?: ScriptedFailure;
  /** Stream this many events first, then throw `fail` (default `"error"`). */
  readonly failAfterEvents?: number;
  /** Stream this many events, then wait until `request.signal` aborts, then end the stream. */
  readonly hangAfterEvents?: number;
  /**
   * When the provider has a `contextWindow`, answer even if the request's estimate
   * exceeds it (as a provider with a larger real window would). Default `false`.
   */
  readonly ignoreContextWindow?: boolean;
}

/**
 * A script: a list of steps played one per call, or a function that returns the step
 * for each call (`call` counts from 1). A function is called once per call, including
 * calls the context window refuses.
 *
 * @example
 * ```ts
 * const echo: ScriptedProviderScript = (request, call) => ({
 *   text: `reply ${call} to ${request.messages.length} messages`,
 * });
 * ```
 */
export type ScriptedProviderScript = readonly ScriptedStep[] | ((request: ModelRequest, call: number) => ScriptedStep);

/**
 * Options of a {@linkcode ScriptedProvider}.
 *
 * @example
 * ```ts
 * const options: ScriptedProviderOptions = { contextWindow: 2_000, chunkSize: 4, delayMs: 5 };
 * ```
 */
export interface ScriptedProviderOptions {
  /** Default `{ provider: "scripted", api: "test", model: "scripted-1" }`. */
  readonly identity?: ProviderIdentity;
  /**
   * When set, a request whose `estimateModelInputTokens` exceeds it is refused with
   * {@linkcode ContextLengthExceededError} before any event, without using up a step
   * of an array script: the same step answers the (shorter) retry. A step with its
   * own `fail` or with `ignoreContextWindow` is played as scripted instead.
   */
  readonly contextWindow?: number;
  /** Characters (code points) per `text-delta` and `reasoning-delta`. Default 8. */
  readonly chunkSize?: number;
  /** Milliseconds to wait (with `setTimeout`) before each event. Default 0: no waiting. */
  readonly delayMs?: number;
}

/**
 * A request as {@linkcode ScriptedProvider.requests} records it: a structured-clone
 * copy of what the provider was given, without the signal. Tools are copied as their
 * definitions only (`name`, `description`, `inputSchema`), never their `execute`.
 *
 * @example
 * ```ts
 * import { ScriptedProvider } from "sessionfold/testing";
 * declare const provider: ScriptedProvider;
 *
 * const recorded: RecordedModelRequest = provider.requests[0]!;
 * recorded.messages.at(-1)?.role; // "user"
 * ```
 */
export type RecordedModelRequest = Omit<ModelRequest, "signal">;

/** The identity a {@linkcode ScriptedProvider} uses unless told otherwise. */
const DEFAULT_IDENTITY: ProviderIdentity = { provider: "scripted", api: "test", model: "scripted-1" };

/**
 * A deterministic provider that plays a script. See the module documentation and
 * {@linkcode ScriptedStep} for what one step streams.
 *
 * @example
 * ```ts
 * const provider = new ScriptedProvider([{ text: "Hello there!" }], { chunkSize: 5 });
 * const events = [];
 * for await (const event of provider.stream({ system: null, summary: null, messages: [], tools: [],
 *   signal: new AbortController().signal })) events.push(event);
 * // text-delta "Hello", text-delta " ther", text-delta "e!", usage {…}
 * ```
 */
export class ScriptedProvider implements Provider {
  /** The identity stamped on what this provider produces. */
  readonly identity: ProviderIdentity;
  /** Every request received, in order (copies without the signal). */
  readonly requests: RecordedModelRequest[] = [];
  readonly #script: ScriptedProviderScript;
  readonly #contextWindow: number | undefined;
  readonly #chunkSize: number;
  readonly #delayMs: number;
  #calls = 0;
  #next = 0;

  /**
   * @example
   * ```ts
   * new ScriptedProvider([{ text: "hi" }]);
   * new ScriptedProvider((request, call) => ({ text: `call ${call}` }), { identity: { provider: "p", api: "a", model: "m" } });
   * ```
   * @throws {InvalidInputError} when `chunkSize` is not a positive integer, or `delayMs` /
   * `contextWindow` is negative or not finite.
   */
  constructor(script: ScriptedProviderScript, options: ScriptedProviderOptions = {}) {
    const chunkSize = options.chunkSize ?? 8;
    if (!Number.isInteger(chunkSize) || chunkSize < 1) throw new InvalidInputError(`chunkSize must be a positive integer, got ${chunkSize}`);
    const delayMs = options.delayMs ?? 0;
    if (!Number.isFinite(delayMs) || delayMs < 0) throw new InvalidInputError(`delayMs must be a finite number ≥ 0, got ${delayMs}`);
    const window = options.contextWindow;
    if (window !== undefined && (!Number.isFinite(window) || window < 0)) {
      throw new InvalidInputError(`contextWindow must be a finite number ≥ 0, got ${window}`);
    }
    this.#script = typeof script === "function" ? script : [...script];
    this.identity = { ...(options.identity ?? DEFAULT_IDENTITY) };
    this.#contextWindow = window;
    this.#chunkSize = chunkSize;
    this.#delayMs = delayMs;
  }

  /**
   * A provider that answers each call with the next text, in order.
   *
   * @example
   * ```ts
   * const provider = ScriptedProvider.replies("Hello!", "Goodbye!");
   * ```
   */
  static replies(...texts: string[]): ScriptedProvider {
    return new ScriptedProvider(texts.map((text) => ({ text })));
  }

  /**
   * How many times `stream()` was called, refused and failed calls included.
   *
   * @example
   * ```ts
   * import { ScriptedProvider } from "sessionfold/testing";
   * declare const provider: ScriptedProvider;
   *
   * provider.calls; // 0 before the first step
   * ```
   */
  get calls(): number {
    return this.#calls;
  }

  /**
   * Steps of an array script not yet played (`Infinity` for a function script).
   *
   * @example
   * ```ts
   * ScriptedProvider.replies("a", "b").remaining; // 2
   * ```
   */
  get remaining(): number {
    return typeof this.#script === "function" ? Infinity : this.#script.length - this.#next;
  }

  /**
   * Plays the next step for `request`. The request is recorded and counted at once;
   * any error (an exhausted script, a refusal, a scripted failure) surfaces while
   * iterating.
   *
   * @example
   * ```ts
   * import { ScriptedProvider } from "sessionfold/testing";
   * declare const provider: ScriptedProvider;
   *
   * import type { ModelRequest } from "sessionfold";
   * declare const request: ModelRequest;
   * let out = "";
   * for await (const event of provider.stream(request)) if (event.type === "text-delta") out += event.text;
   * ```
   */
  stream(request: ModelRequest): AsyncIterable<ProviderEvent> {
    const call = ++this.#calls;
    this.requests.push(recordRequest(request));
    return this.#play(request, call);
  }

  async *#play(request: ModelRequest, call: number): AsyncGenerator<ProviderEvent, void, undefined> {
    const { signal } = request;
    const step = this.#stepFor(request, call);
    const fail = step.fail ?? (step.failAfterEvents !== undefined ? "error" : undefined);
    if (fail === undefined && !step.ignoreContextWindow && this.#contextWindow !== undefined) {
      const estimate = inputEstimate(request);
      if (estimate > this.#contextWindow) {
        throw new ContextLengthExceededError(
          `scripted provider: call ${call} refused: the request is about ${estimate} tokens, over the ${this.#contextWindow}-token context window`,
        );
      }
    }
    if (typeof this.#script !== "function") this.#next++;

    const refusal = fail === "context-length" || fail instanceof ContextLengthExceededError;
    const events = this.#events(step, request, call, refusal);
    // Positions past the end mean "after the last event".
    const hangAt = step.hangAfterEvents === undefined ? undefined : Math.min(step.hangAfterEvents, events.length);
    const failAt = fail === undefined ? undefined : Math.min(step.failAfterEvents ?? 0, events.length);
    for (let index = 0;; index++) {
      if (signal.aborted) return;
      if (hangAt === index) {
        await untilAborted(signal);
        return;
      }
      if (failAt === index && fail !== undefined) throw failure(fail);
      const event = events[index];
      if (event === undefined) return;
      if (this.#delayMs > 0) {
        await sleep(this.#delayMs, signal);
        if (signal.aborted) return;
      }
      yield event;
    }
  }

  #stepFor(request: ModelRequest, call: number): ScriptedStep {
    if (typeof this.#script === "function") return this.#script(request, call);
    const step = this.#script[this.#next];
    if (step === undefined) {
      throw new Error(
        `ScriptedProvider: call ${call} has no scripted step (the script has ${this.#script.length} step${this.#script.length === 1 ? "" : "s"})`,
      );
    }
    return step;
  }

  #events(step: ScriptedStep, request: ModelRequest, call: number, noUsage: boolean): ProviderEvent[] {
    const events: ProviderEvent[] = [];
    for (const text of chunks(step.reasoning ?? "", this.#chunkSize)) events.push({ type: "reasoning-delta", text });
    if (step.reasoningSummary !== undefined) events.push({ type: "reasoning-summary", text: step.reasoningSummary });
    for (const text of chunks(step.text ?? "", this.#chunkSize)) events.push({ type: "text-delta", text });
    (step.toolCalls ?? []).forEach((toolCall, index) => {
      events.push({ type: "tool-call", toolCallId: toolCall.id ?? `call_${call}_${index + 1}`, toolName: toolCall.name, input: toolCall.input });
    });
    for (const file of step.files ?? []) {
      events.push({
        type: "file",
        mediaType: file.mediaType,
        ...(file.name !== undefined ? { name: file.name } : {}),
        ...(file.data !== undefined ? { data: file.data } : {}),
        ...(file.url !== undefined ? { url: file.url } : {}),
      });
    }
    if (step.providerContext !== undefined) events.push({ type: "provider-context", data: step.providerContext });
    const usage = step.usage ?? "auto";
    if (!noUsage && usage !== "none") events.push({ type: "usage", usage: usage === "auto" ? scriptedAutoUsage(step, request) : { ...usage } });
    return events;
  }
}

/**
 * The usage {@linkcode ScriptedProvider} reports for `"auto"`: the core input estimate
 * of the request, and a quarter of the output characters.
 *
 * @example
 * ```ts
 * scriptedAutoUsage({ text: "12345678" }, { system: "Be brief.", summary: null, messages: [], tools: [] });
 * // { input_tokens: 3, output_tokens: 2, total_tokens: 5 }
 * ```
 */
export function scriptedAutoUsage(step: ScriptedStep, request: Omit<ModelRequest, "signal">): Usage {
  const input_tokens = inputEstimate(request);
  const output_tokens = Math.ceil(outputChars(step) / 4);
  return { input_tokens, output_tokens, total_tokens: input_tokens + output_tokens };
}

function inputEstimate(request: Omit<ModelRequest, "signal">): number {
  return estimateModelInputTokens({ system: request.system, summary: request.summary, messages: request.messages }, request.tools);
}

function outputChars(step: ScriptedStep): number {
  let chars = (step.text ?? "").length + (step.reasoning ?? "").length + (step.reasoningSummary ?? "").length;
  for (const toolCall of step.toolCalls ?? []) chars += toolCall.name.length + (JSON.stringify(toolCall.input) ?? "").length;
  return chars;
}

function failure(fail: ScriptedFailure): Error {
  if (fail instanceof Error) return fail;
  if (fail === "context-length") return new ContextLengthExceededError();
  return new Error("scripted provider failure");
}

/** Splits on code points, so a chunk never ends inside a surrogate pair. */
function chunks(text: string, size: number): string[] {
  const points = Array.from(text);
  const out: string[] = [];
  for (let i = 0; i < points.length; i += size) out.push(points.slice(i, i + size).join(""));
  return out;
}

function recordRequest(request: ModelRequest): RecordedModelRequest {
  const tools: ToolDefinition[] = request.tools.map((tool) => ({
    name: tool.name,
    ...(tool.description !== undefined ? { description: tool.description } : {}),
    ...(tool.inputSchema !== undefined ? { inputSchema: tool.inputSchema } : {}),
  }));
  return structuredClone({ system: request.system, summary: request.summary, messages: request.messages, tools });
}

function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    signal.addEventListener("abort", () => resolve(), { once: true });
  });
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
