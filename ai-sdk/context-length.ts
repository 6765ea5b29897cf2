/**
 * Recognises a provider's "the prompt is too long" refusal in what an AI SDK model
 * throws (an `APICallError` with `statusCode` and `responseBody`) or streams (an
 * `error` part whose `error` is the provider's JSON), so the adapter can turn it into
 * `ContextLengthExceededError` and the engine compacts and retries.
 *
 * Recognised (status and shape each provider really returns):
 * - OpenAI chat-completions and Responses: HTTP 400 with `error.code: "context_length_exceeded"`
 *   ("This model's maximum context length is … tokens", "Your input exceeds the context
 *   window of this model"); the Responses stream's `error` / `response.failed` event with that code.
 * - Anthropic messages: HTTP 400 `invalid_request_error` "prompt is too long: N tokens > M maximum"
 *   or "input length and `max_tokens` exceed context limit"; HTTP 413 `request_too_large`.
 * - Google Gemini: HTTP 400 `INVALID_ARGUMENT` "The input token count (N) exceeds the maximum
 *   number of tokens allowed (M)".
 * - OpenAI-compatible servers: vLLM and DeepSeek ("maximum context length is"), llama.cpp
 *   (`exceed_context_size_error`, "exceeds the available context size"), Mistral ("too large
 *   for model with N maximum context length"), Groq/OpenRouter (`context_length_exceeded`).
 */

/** Status codes a context-length refusal comes with; other statuses are never one. */
const REFUSAL_STATUSES = new Set([400, 413, 422]);

const TOO_LONG = [
  /context[_ ]length[_ ]exceeded/i,
  /maximum context length/i,
  /exceeds? the context window/i,
  /prompt is too long/i,
  /exceed context limit/i,
  /request_too_large/i,
  /input token count \(\d+\) exceeds the maximum/i,
  /exceed_context_size_error/i,
  /exceeds the available context size/i,
  /too large for model with \d+ maximum context length/i,
  /reduce the length of the (messages|prompt)/i,
];

/**
 * Whether `error` (thrown by `doStream`, or the `error` of a streamed error part) is a
 * context-length refusal.
 *
 * @example
 * ```ts
 * import { isContextLengthRefusal } from "sessionfold/ai-sdk";
 *
 * isContextLengthRefusal({ statusCode: 400, responseBody: '{"error":{"code":"context_length_exceeded"}}' }); // true
 * isContextLengthRefusal({ statusCode: 500, responseBody: "maximum context length" }); // false
 * ```
 */
export function isContextLengthRefusal(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return typeof error === "string" && matches(error);
  const status = (error as { statusCode?: unknown }).statusCode;
  if (typeof status === "number") {
    if (!REFUSAL_STATUSES.has(status)) return false;
    const body = (error as { responseBody?: unknown }).responseBody;
    return matches(typeof body === "string" ? body : "") || matches(messageOf(error));
  }
  // A streamed error part carries the provider's JSON (or an Error) without a status.
  return matches(messageOf(error)) || matches(safeJson(error));
}

function matches(text: string): boolean {
  return text !== "" && TOO_LONG.some((pattern) => pattern.test(text));
}

function messageOf(error: object): string {
  const message = (error as { message?: unknown }).message;
  return typeof message === "string" ? message : "";
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? "";
  } catch {
    return "";
  }
}
