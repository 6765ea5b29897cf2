/**
 * An OpenAI-compatible `/chat/completions` endpoint as a {@linkcode Provider}: `fetch`
 * with `stream: true`, the server-sent events parsed as they arrive.
 *
 * The API key lives only in this object's private field, in memory: it is sent in the
 * `Authorization` header and nowhere else — never stored (IndexedDB, localStorage),
 * never part of an identity, a message, an error message or a log line. Reload the page
 * and it is gone.
 */
import {
  ContextLengthExceededError,
  type MessageRecord,
  type ModelRequest,
  type Provider,
  type ProviderEvent,
  type ProviderIdentity,
} from "../core/mod.ts";

/** Where and what to call. */
export interface OpenAiEndpoint {
  /** e.g. `https://api.openai.com/v1` (the part before `/chat/completions`). */
  readonly baseUrl: string;
  readonly model: string;
  /** Held in memory only. May be empty for local servers that need none. */
  readonly apiKey: string;
}

type ChatMessage =
  | { role: "system" | "user"; content: string }
  | { role: "assistant"; content: string | null; tool_calls?: { id: string; type: "function"; function: { name: string; arguments: string } }[] }
  | { role: "tool"; tool_call_id: string; content: string };

/** A chat-completions provider. */
export class OpenAiCompatibleProvider implements Provider {
  readonly identity: ProviderIdentity;
  readonly #url: string;
  readonly #model: string;
  readonly #apiKey: string;

  constructor(endpoint: OpenAiEndpoint) {
    const base = endpoint.baseUrl.trim().replace(/\/+$/, "");
    const url = new URL(`${base}/chat/completions`);
    if (url.protocol !== "https:" && url.protocol !== "http:") throw new Error("the base URL must be http(s)");
    if (url.username || url.password) throw new Error("put the key in the API key field, not in the URL");
    this.#url = url.href;
    this.#model = endpoint.model.trim();
    if (this.#model === "") throw new Error("a model name is required");
    this.#apiKey = endpoint.apiKey;
    this.identity = { provider: "openai-compatible", api: "chat-completions", model: this.#model };
  }

  /** The endpoint's origin, for display. */
  get origin(): string {
    return new URL(this.#url).origin;
  }

  async *stream(request: ModelRequest): AsyncIterable<ProviderEvent> {
    const body = {
      model: this.#model,
      stream: true,
      stream_options: { include_usage: true },
      messages: toChatMessages(request),
      ...(request.tools.length > 0
        ? {
            tools: request.tools.map((t) => ({
              type: "function",
              function: { name: t.name, ...(t.description ? { description: t.description } : {}), parameters: t.inputSchema ?? { type: "object", properties: {} } },
            })),
          }
        : {}),
    };
    const headers: Record<string, string> = { "content-type": "application/json", accept: "text/event-stream" };
    if (this.#apiKey !== "") headers["authorization"] = `Bearer ${this.#apiKey}`;
    let response: Response;
    try {
      response = await fetch(this.#url, { method: "POST", headers, body: JSON.stringify(body), signal: request.signal, credentials: "omit", referrerPolicy: "no-referrer" });
    } catch (error) {
      if (request.signal.aborted) return;
      throw new Error(`could not reach ${this.origin}: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (!response.ok) throw await httpError(response, this.#apiKey);
    if (!response.body) throw new Error(`${this.origin} answered without a body`);

    const calls = new Map<number, { id: string; name: string; arguments: string }>();
    for await (const data of serverSentEvents(response.body, request.signal)) {
      if (data === "[DONE]") break;
      let chunk: ChatChunk;
      try {
        chunk = JSON.parse(data) as ChatChunk;
      } catch {
        throw new Error(`${this.origin} sent an event that is not JSON`);
      }
      if (chunk.error) throw new Error(`${this.origin}: ${safeText(chunk.error.message ?? "stream error", this.#apiKey)}`);
      for (const choice of chunk.choices ?? []) {
        const delta = choice.delta ?? {};
        if (typeof delta.reasoning_content === "string" && delta.reasoning_content !== "") yield { type: "reasoning-delta", text: delta.reasoning_content };
        if (typeof delta.content === "string" && delta.content !== "") yield { type: "text-delta", text: delta.content };
        for (const call of delta.tool_calls ?? []) {
          const index = call.index ?? 0;
          const entry = calls.get(index) ?? { id: "", name: "", arguments: "" };
          if (call.id) entry.id = call.id;
          if (call.function?.name) entry.name += call.function.name;
          if (call.function?.arguments) entry.arguments += call.function.arguments;
          calls.set(index, entry);
        }
      }
      if (chunk.usage) {
        const input = chunk.usage.prompt_tokens ?? 0;
        const output = chunk.usage.completion_tokens ?? 0;
        yield { type: "usage", usage: { input_tokens: input, output_tokens: output, total_tokens: chunk.usage.total_tokens ?? input + output } };
      }
    }
    if (request.signal.aborted) return;
    for (const [index, call] of [...calls.entries()].sort((a, b) => a[0] - b[0])) {
      let input: unknown = {};
      try {
        input = call.arguments.trim() === "" ? {} : JSON.parse(call.arguments);
      } catch {
        input = { unparsed_arguments: call.arguments };
      }
      yield { type: "tool-call", toolCallId: call.id || `call_${index}`, toolName: call.name, input };
    }
  }
}

interface ChatChunk {
  choices?: { delta?: { content?: string | null; reasoning_content?: string | null; tool_calls?: { index?: number; id?: string; function?: { name?: string; arguments?: string } }[] } }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number; total_tokens?: number } | null;
  error?: { message?: string };
}

/** The model input as chat messages: system (+ summary), then Active with tool results as `tool` messages. */
export function toChatMessages(input: Pick<ModelRequest, "system" | "summary" | "messages">): ChatMessage[] {
  const out: ChatMessage[] = [];
  const system = [input.system ?? "", input.summary ? `Summary of the earlier conversation:\n${input.summary}` : ""].filter((s) => s !== "").join("\n\n");
  if (system !== "") out.push({ role: "system", content: system });
  for (const message of input.messages) out.push(...fromRecord(message));
  return out;
}

function fromRecord(message: MessageRecord): ChatMessage[] {
  const text = message.parts
    .map((p) => (p.type === "text" ? p.text : p.type === "reasoning-summary" ? "" : p.type === "file" ? `[file ${p.name ?? p.media_type}]` : ""))
    .filter((t) => t !== "")
    .join("\n");
  if (message.role === "user") return [{ role: "user", content: text }];
  const tools = message.parts.filter((p) => p.type === "tool");
  const out: ChatMessage[] = [
    {
      role: "assistant",
      content: text === "" ? null : text,
      ...(tools.length > 0
        ? { tool_calls: tools.map((t) => ({ id: t.tool_call_id, type: "function" as const, function: { name: t.tool_name, arguments: JSON.stringify(t.input ?? {}) } })) }
        : {}),
    },
  ];
  for (const tool of tools) {
    const content = tool.state === "output-available" ? JSON.stringify(tool.output ?? null) : `error: ${tool.error ?? "the call did not complete"}`;
    out.push({ role: "tool", tool_call_id: tool.tool_call_id, content });
  }
  return out;
}

/** Yields the `data:` payload of each server-sent event. */
export async function* serverSentEvents(body: ReadableStream<Uint8Array>, signal: AbortSignal): AsyncGenerator<string> {
  const reader = body.pipeThrough(new TextDecoderStream() as unknown as TransformStream<Uint8Array, string>).getReader();
  const onAbort = () => void reader.cancel().catch(() => undefined);
  signal.addEventListener("abort", onAbort, { once: true });
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read().catch((error: unknown) => {
        if (signal.aborted) return { value: undefined, done: true as const };
        throw error;
      });
      if (done) break;
      buffer += value.replace(/\r\n?/g, "\n");
      let end: number;
      while ((end = buffer.indexOf("\n\n")) !== -1) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = event
          .split("\n")
          .filter((line) => line.startsWith("data:"))
          .map((line) => line.slice(5).replace(/^ /, ""))
          .join("\n");
        if (data !== "") yield data;
      }
    }
    const rest = buffer.trim();
    if (rest.startsWith("data:")) yield rest.slice(5).trim();
  } finally {
    signal.removeEventListener("abort", onAbort);
    reader.releaseLock();
  }
}

/** An error for a non-2xx answer; a context-length refusal becomes {@linkcode ContextLengthExceededError}. */
async function httpError(response: Response, secret: string): Promise<Error> {
  let message = "";
  let code = "";
  try {
    const json = (await response.json()) as { error?: { message?: string; code?: string } };
    message = json.error?.message ?? "";
    code = json.error?.code ?? "";
  } catch {
    // Not JSON: the status says enough.
  }
  if (code === "context_length_exceeded" || /context length|maximum context|too many tokens/i.test(message)) {
    return new ContextLengthExceededError(`the endpoint refused the request as too long: ${safeText(message, secret)}`);
  }
  return new Error(`HTTP ${response.status}${message ? `: ${safeText(message, secret)}` : ""}`);
}

/** Server text shown to the user: bounded, and with anything that looks like a key masked. */
function safeText(text: string, secret: string): string {
  const masked = secret.length >= 4 ? text.split(secret).join("[key]") : text;
  return masked.replace(/\b(sk-[A-Za-z0-9_-]{4})[A-Za-z0-9_-]+/g, "$1…").slice(0, 300);
}
