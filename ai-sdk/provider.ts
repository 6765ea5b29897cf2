import { ContextLengthExceededError, type ModelRequest, type Provider, type ProviderEvent, type ProviderIdentity } from "../core/mod.ts";
import { type KnownFields, knownOptions } from "../core/internal.ts";
import { isContextLengthRefusal } from "./context-length.ts";
import { type SpecificationVersion, type StoredProviderMetadata, toPrompt } from "./prompt.ts";
import { storedUsage } from "./usage.ts";

/**
 * Any AI SDK language model the adapter accepts: specification v2 (`ai` 5), v3 (`ai` 6)
 * or v4 (`ai` 7), as `@ai-sdk/provider`'s `LanguageModelV2`, `V3` and `V4` all are. Written
 * as the fields the adapter uses, so the entry's types hold whichever `@ai-sdk/provider`
 * major the app has (each declares only its own specification types).
 *
 * @example
 * ```ts
 * import { createOpenAI } from "@ai-sdk/openai";
 * const model: AiSdkLanguageModel = createOpenAI({ apiKey: "sk-…" })("gpt-5-mini");
 * ```
 */
export interface AiSdkLanguageModel {
  readonly specificationVersion: "v2" | "v3" | "v4";
  /** `openai.responses`, `anthropic.messages`, …: the default identity is read from it. */
  readonly provider: string;
  readonly modelId: string;
  /** The streaming call, one per engine step (its options and parts are read per specification). */
  doStream(options: never): PromiseLike<{ readonly stream: ReadableStream<unknown> }>;
}

/**
 * Options of {@linkcode aiSdkProvider}.
 *
 * @example
 * ```ts
 * const options: AiSdkProviderOptions = { callOptions: { maxOutputTokens: 2048, temperature: 0 } };
 * ```
 */
export interface AiSdkProviderOptions {
  /**
   * The identity stamped on messages and provider-context parts. Default: `provider`
   * is the model's provider up to the first dot (`openai` of `openai.responses`),
   * `api` the rest (`responses`; the specification version when there is none),
   * `model` the model id.
   */
  readonly identity?: ProviderIdentity;
  /**
   * Extra call options passed to every `doStream` (`maxOutputTokens`, `temperature`,
   * `providerOptions`, `headers`, …). `prompt`, `tools` and `abortSignal` are the adapter's.
   */
  readonly callOptions?: Readonly<Record<string, unknown>>;
  /**
   * Whether the model's reasoning stream is a provider-written summary (stored as one
   * `reasoning-summary` part per reasoning block) rather than raw reasoning. Default:
   * `true` for OpenAI's Responses API, whose reasoning deltas are its reasoning summaries.
   */
  readonly reasoningIsSummary?: boolean;
}

const PROVIDER_OPTION_FIELDS: KnownFields<AiSdkProviderOptions> = { identity: true, callOptions: true, reasoningIsSummary: true };

/**
 * A sessionfold `Provider` from any AI SDK language model (`@ai-sdk/openai`,
 * `@ai-sdk/anthropic`, `@ai-sdk/openai-compatible`, …; specification v2, v3 or v4),
 * calling its `doStream` once per step.
 *
 * Text, reasoning, tool calls, files and usage become the engine's events; usage is
 * stored exactly as reported ({@linkcode storedUsage}); provider metadata (encrypted
 * reasoning, signatures, item and response ids) becomes `provider-context` parts
 * stamped with the identity, so only the same model gets it back. An abort cancels the
 * HTTP stream at once; a context-length refusal throws `ContextLengthExceededError`,
 * so the engine folds the input and retries, and compacts before the next step.
 *
 * @example
 * ```ts
 * import { createOpenAI } from "@ai-sdk/openai";
 * import { aiSdkProvider } from "sessionfold/ai-sdk";
 *
 * const openai = createOpenAI({ apiKey: "sk-…" });
 * const provider = aiSdkProvider(openai("gpt-5-mini"));
 * provider.identity; // { provider: "openai", api: "responses", model: "gpt-5-mini" }
 * ```
 * @throws {InvalidInputError} when `options` is not an object, or has a field it does not know.
 */
export function aiSdkProvider(model: AiSdkLanguageModel, options: AiSdkProviderOptions = {}): Provider {
  knownOptions(options, "aiSdkProvider(model, options)", PROVIDER_OPTION_FIELDS);
  const identity = options.identity ?? defaultIdentity(model);
  const reasoningIsSummary = options.reasoningIsSummary ?? model.provider === "openai.responses";
  return {
    identity,
    stream: (request) => streamModel(model, request, options.callOptions ?? {}, reasoningIsSummary),
  };
}

function defaultIdentity(model: AiSdkLanguageModel): ProviderIdentity {
  const dot = model.provider.indexOf(".");
  const provider = dot === -1 ? model.provider : model.provider.slice(0, dot);
  const api = dot === -1 ? model.specificationVersion : model.provider.slice(dot + 1);
  return { provider: provider || "ai-sdk", api: api || model.specificationVersion, model: model.modelId || "unknown" };
}

/** A stream part as v2, v3 and v4 share it, read field by field. */
interface StreamPart {
  readonly type: string;
  readonly id?: string;
  readonly delta?: string;
  readonly providerMetadata?: Record<string, unknown>;
  readonly toolCallId?: string;
  readonly toolName?: string;
  readonly input?: unknown;
  readonly providerExecuted?: boolean;
  readonly mediaType?: string;
  readonly data?: unknown;
  readonly usage?: Parameters<typeof storedUsage>[0];
  readonly error?: unknown;
}

async function* streamModel(
  model: AiSdkLanguageModel,
  request: ModelRequest,
  callOptions: Readonly<Record<string, unknown>>,
  reasoningIsSummary: boolean,
): AsyncGenerator<ProviderEvent> {
  const signal = request.signal;
  if (signal.aborted) return;
  const version = model.specificationVersion as SpecificationVersion;
  const options = {
    ...callOptions,
    prompt: toPrompt(request, version),
    ...(request.tools.length > 0
      ? {
        tools: request.tools.map((t) => ({
          type: "function",
          name: t.name,
          ...(t.description ? { description: t.description } : {}),
          inputSchema: t.inputSchema ?? { type: "object", properties: {} },
        })),
      }
      : {}),
    abortSignal: signal,
  };
  let stream: ReadableStream<StreamPart>;
  try {
    ({ stream } = await (model.doStream as (o: unknown) => PromiseLike<{ stream: ReadableStream<StreamPart> }>)(options));
  } catch (error) {
    if (signal.aborted) return;
    throw providerFailure(error);
  }
  const reader = stream.getReader();
  const onAbort = () => void reader.cancel().catch(() => undefined);
  signal.addEventListener("abort", onAbort, { once: true });
  const counters = { text: 0, reasoning: 0, file: 0 };
  const summaries = new Map<string, string>();
  // Metadata some providers attach to deltas (Anthropic's thinking signature), merged into the block's end.
  const blockMetadata = new Map<string, Record<string, unknown>>();
  const remember = (id: string | undefined, metadata: Record<string, unknown> | undefined) => {
    if (metadata) blockMetadata.set(id ?? "", mergeMetadata(blockMetadata.get(id ?? ""), metadata));
  };
  const takeMetadata = (id: string | undefined, metadata: Record<string, unknown> | undefined) => {
    const merged = mergeMetadata(blockMetadata.get(id ?? ""), metadata ?? {});
    blockMetadata.delete(id ?? "");
    return merged;
  };
  const context = (part: StoredProviderMetadata["part"], key: number | string, metadata: Record<string, unknown> | undefined): ProviderEvent | undefined => {
    const kept = meaningfulMetadata(metadata);
    return kept ? { type: "provider-context", data: { part, key, providerMetadata: kept } satisfies StoredProviderMetadata } : undefined;
  };
  try {
    for (;;) {
      const next = await reader.read().catch((error: unknown) => {
        if (signal.aborted) return { done: true as const, value: undefined };
        throw providerFailure(error);
      });
      if (next.done || signal.aborted) return;
      const part = next.value;
      let event: ProviderEvent | undefined;
      switch (part.type) {
        case "text-delta":
          remember(part.id, part.providerMetadata);
          if (part.delta) yield { type: "text-delta", text: part.delta };
          break;
        case "text-end":
          event = context("text", counters.text++, takeMetadata(part.id, part.providerMetadata));
          break;
        case "reasoning-delta":
          remember(part.id, part.providerMetadata);
          if (!part.delta) break;
          if (reasoningIsSummary) summaries.set(part.id ?? "", (summaries.get(part.id ?? "") ?? "") + part.delta);
          else yield { type: "reasoning-delta", text: part.delta };
          break;
        case "reasoning-end": {
          const summary = summaries.get(part.id ?? "");
          summaries.delete(part.id ?? "");
          if (summary) yield { type: "reasoning-summary", text: summary };
          event = context("reasoning", counters.reasoning++, takeMetadata(part.id, part.providerMetadata));
          break;
        }
        case "tool-call":
          if (part.providerExecuted) break;
          yield { type: "tool-call", toolCallId: part.toolCallId ?? "", toolName: part.toolName ?? "", input: parseToolInput(part.input) };
          event = context("tool-call", part.toolCallId ?? "", part.providerMetadata);
          break;
        case "file":
          yield { type: "file", mediaType: part.mediaType ?? "application/octet-stream", ...fileContent(part.data) };
          event = context("file", counters.file++, part.providerMetadata);
          break;
        case "finish": {
          const usage = storedUsage(part.usage);
          if (usage) yield { type: "usage", usage };
          event = context("finish", 0, part.providerMetadata);
          break;
        }
        case "error":
          throw providerFailure(part.error);
      }
      if (event) yield event;
    }
  } finally {
    signal.removeEventListener("abort", onAbort);
    // Ends the HTTP stream when the consumer stops early (the engine aborted or threw).
    await reader.cancel().catch(() => undefined);
  }
}

/**
 * The providers' entries that say something: OpenAI-compatible providers attach
 * `{ <name>: {} }` to every finish, which would otherwise be stored on every message.
 */
function meaningfulMetadata(metadata: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (!metadata) return undefined;
  const kept = Object.entries(metadata).filter(([, value]) =>
    value !== undefined && value !== null && !(typeof value === "object" && Object.keys(value).length === 0)
  );
  return kept.length > 0 ? Object.fromEntries(kept) : undefined;
}

/** Provider metadata merged one level deep: each provider's keys, later values winning. */
function mergeMetadata(base: Record<string, unknown> | undefined, next: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [provider, value] of Object.entries(next)) {
    const earlier = out[provider];
    out[provider] = typeof earlier === "object" && earlier !== null && typeof value === "object" && value !== null ? { ...earlier, ...value } : value;
  }
  return out;
}

/** A tool call's input arrives as JSON text; text that does not parse is kept as it came. */
function parseToolInput(input: unknown): unknown {
  if (typeof input !== "string") return input ?? {};
  if (input.trim() === "") return {};
  try {
    return JSON.parse(input);
  } catch {
    return input;
  }
}

function fileContent(data: unknown): { data: string } | { url: string } {
  if (typeof data === "string") return { data };
  if (data instanceof Uint8Array) return { data: base64(data) };
  if (typeof data === "object" && data !== null) {
    const shaped = data as { type?: string; data?: unknown; url?: unknown };
    if (shaped.type === "url") return { url: String(shaped.url) };
    if (shaped.type === "data") return fileContent(shaped.data);
  }
  return { data: "" };
}

function base64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

/** The engine's error for a failed call: a context-length refusal, or the provider's own error. */
function providerFailure(error: unknown): Error {
  if (isContextLengthRefusal(error)) return new ContextLengthExceededError(`the provider refused the request as too long: ${describe(error)}`);
  if (error instanceof Error) return error;
  return new Error(`the provider streamed an error: ${describe(error)}`);
}

function describe(error: unknown): string {
  const text = error instanceof Error ? error.message : typeof error === "string" ? error : JSON.stringify(error);
  return (text ?? String(error)).slice(0, 300);
}
