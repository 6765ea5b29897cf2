/**
 * sessionfold on the Vercel AI SDK: the persistence layer an AI SDK app adds in a few
 * lines. `ai` (5, 6 or 7) is an optional peer dependency of sessionfold, loaded only by
 * `appendUIMessages`: `aiSdkProvider` and `aiSdkSummarizer` take any AI SDK language model
 * and import nothing of the AI SDK; the core never imports it.
 *
 * - {@linkcode aiSdkProvider}: a `Provider` from any AI SDK language model (v2, v3, v4).
 * - {@linkcode aiSdkSummarizer}: an LLM summarizer that cannot fail for size.
 * - {@linkcode toUIMessages} / {@linkcode appendUIMessages}: `useChat` UI messages in and out, exactly.
 * - {@linkcode chatRoute}: a `useChat` route (POST and the resume GET) as web-standard fetch
 *   handlers; {@linkcode runToUIMessageStream} / {@linkcode uiMessageStreamResponse}: a run as
 *   the AI SDK's UI message stream and its `Response`.
 *
 * @example
 * ```ts
 * import { createOpenAI } from "@ai-sdk/openai";
 * import { MemoryStorage, Sessions } from "sessionfold";
 * import { aiSdkProvider, aiSdkSummarizer } from "sessionfold/ai-sdk";
 *
 * const model = createOpenAI({ apiKey: "sk-…" })("gpt-5-mini");
 * const sessions = new Sessions({ storage: new MemoryStorage(), defaults: { summarizer: aiSdkSummarizer(model, { contextWindow: 400_000 }), contextWindow: 400_000 } });
 * const session = await sessions.create({ agentId: "chat", workspaceId: "default" });
 * const run = session.run("Hello!", { provider: aiSdkProvider(model) });
 * for await (const event of run) if (event.type === "text-delta") console.log(event.text);
 * ```
 * @module
 */
export { type AiSdkLanguageModel, aiSdkProvider, type AiSdkProviderOptions } from "./provider.ts";
export { aiSdkSummarizer, type AiSdkSummarizerOptions } from "./summarizer.ts";
export { appendUIMessages, type AppendUIMessagesOptions, type SessionfoldUIMetadata, toUIMessages, type UIMessageSource } from "./ui-messages.ts";
export { storedUsage } from "./usage.ts";
export { isContextLengthRefusal } from "./context-length.ts";
export type { StoredProviderMetadata } from "./prompt.ts";
export { modelFailureText, runToUIMessageStream, type RunToUIMessageStreamOptions, uiMessageStreamResponse } from "./ui-stream.ts";
export type { HiddenFailureHook } from "../core/internal.ts";
export { type ChatRoute, chatRoute, type ChatRouteOptions } from "./chat-route.ts";
