/**
 * The Model tab's "OpenAI-compatible endpoint": `@ai-sdk/openai-compatible`'s chat model
 * behind sessionfold's AI SDK adapter (`sessionfold/ai-sdk`).
 *
 * The API key lives only in memory, inside the AI SDK provider this creates: it is sent in
 * the `Authorization` header and nowhere else — never stored (IndexedDB, localStorage),
 * never part of an identity, a message, an error message or a log line. Reload the page
 * and it is gone.
 */
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { aiSdkProvider } from "../ai-sdk/mod.ts";
import type { Provider } from "../core/mod.ts";

/** Where and what to call. */
export interface EndpointSettings {
  /** e.g. `https://api.openai.com/v1` (the part before `/chat/completions`). */
  readonly baseUrl: string;
  readonly model: string;
  /** Held in memory only. May be empty for local servers that need none. */
  readonly apiKey: string;
}

/** A provider for an OpenAI-compatible endpoint, with the endpoint's origin for display. */
export interface EndpointProvider extends Provider {
  readonly origin: string;
}

/**
 * Builds the endpoint provider; throws a plain `Error` with a message for the form when
 * the base URL or the model is not usable.
 */
export function createEndpointProvider(settings: EndpointSettings): EndpointProvider {
  const base = settings.baseUrl.trim().replace(/\/+$/, "");
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw new Error("the base URL is not a URL");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") throw new Error("the base URL must be http(s)");
  if (url.username || url.password) throw new Error("put the key in the API key field, not in the URL");
  const model = settings.model.trim();
  if (model === "") throw new Error("a model name is required");
  const endpoint = createOpenAICompatible({
    name: "openai-compatible",
    baseURL: base,
    ...(settings.apiKey !== "" ? { apiKey: settings.apiKey } : {}),
    includeUsage: true,
    // No cookies and no referrer go to a third-party endpoint.
    fetch: (input, init) => fetch(input, { ...init, credentials: "omit", referrerPolicy: "no-referrer" }),
  });
  const provider = aiSdkProvider(endpoint.chatModel(model), { identity: { provider: "openai-compatible", api: "chat-completions", model } });
  return { ...provider, origin: url.origin };
}
