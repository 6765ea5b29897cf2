/**
 * `useChat`'s client without a UI framework: the AI SDK's own `AbstractChat` (what `@ai-sdk/react`,
 * `vue` and `svelte` wrap) over a plain state, with its `DefaultChatTransport`, talking to a
 * `chatRoute` served by `serveFetchHandler` on loopback. Not a test file itself.
 */
import type { LanguageModelV3StreamPart } from "@ai-sdk/provider";
import { AbstractChat, type ChatState, type ChatStatus, DefaultChatTransport, type UIMessage } from "ai";
import type { ChatRoute } from "../../ai-sdk/mod.ts";
import { type FetchServer, serveFetchHandler } from "../../runtime-node/mod.ts";

/** The state a framework would keep reactive, kept as plain fields. */
class PlainChatState implements ChatState<UIMessage> {
  status: ChatStatus = "ready";
  error: Error | undefined = undefined;
  messages: UIMessage[] = [];
  pushMessage = (message: UIMessage): void => void (this.messages = [...this.messages, message]);
  popMessage = (): void => void (this.messages = this.messages.slice(0, -1));
  replaceMessage = (index: number, message: UIMessage): void => void (this.messages = this.messages.map((m, i) => (i === index ? message : m)));
  snapshot = <T>(value: T): T => structuredClone(value);
}

/** A chat client whose status, error and messages the test reads. */
export class TestChat extends AbstractChat<UIMessage> {
  readonly view: PlainChatState;
  constructor(id: string, api: string) {
    const state = new PlainChatState();
    super({ id, transport: new DefaultChatTransport({ api }), state });
    this.view = state;
  }
}

/** Serves `route` at `{url}/api/chat` (POST) and `{url}/api/chat/{id}/stream` (GET). */
export function serveChatRoute(route: ChatRoute): Promise<FetchServer> {
  return serveFetchHandler(async (request) => {
    if (request.method === "POST") return route.POST(request);
    const [, api, chat, id, stream] = new URL(request.url).pathname.split("/");
    return api === "api" && chat === "chat" && stream === "stream" ? route.GET(request, id!) : new Response(null, { status: 404 });
  });
}

const usage = { inputTokens: { total: 3, noCache: 3, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: 2, text: 2, reasoning: undefined } };

/** A model's whole answer, "Hello.", as the AI SDK's test model streams it. */
export const HELLO_ANSWER: LanguageModelV3StreamPart[] = [
  { type: "text-start", id: "t" },
  { type: "text-delta", id: "t", delta: "Hello." },
  { type: "text-end", id: "t" },
  { type: "finish", finishReason: { unified: "stop", raw: "stop" }, usage },
];
