/**
 * The server side of `useChat` on a durable session: a web-standard fetch handler for the
 * chat route (POST) and its resume endpoint (GET `{api}/{chatId}/stream`), replies that
 * resume without Redis.
 *
 * @module
 */
import type { UIMessage, UIMessageChunk } from "ai";
import { InvalidIdError, InvalidInputError, NotFoundError, type Provider, type Session, SessionBusyError, type Tool, WriterLockedError } from "../core/mod.ts";
import { assertFields, type HiddenFailureHook, hideFailure, type KnownFields, knownOptions } from "../core/internal.ts";
import { appendUIMessages, toUIMessages } from "./ui-messages.ts";
import { interruptedFinishReason, modelFailureText, stoppedReplyChunks, uiChunks, uiMessageStreamResponse } from "./ui-stream.ts";

/**
 * Options of {@linkcode chatRoute}.
 *
 * @example
 * ```ts
 * import type { Provider, Sessions } from "sessionfold";
 * declare const sessions: Sessions;
 * declare const provider: Provider;
 *
 * const options: ChatRouteOptions = {
 *   session: (chatId) => sessions.open({ agentId: "chat", workspaceId: "web", sessionId: chatId }),
 *   provider,
 * };
 * ```
 */
export interface ChatRouteOptions {
  /**
   * The chat's session. Authorize the request here: throw a `Response` (a 401, a 403, a
   * 404) to refuse it, and the route answers with it. The route never reads a session it
   * was not given. A chat id the store lacks (`NotFoundError`, as `Sessions#open` throws)
   * answers 404 and one it refuses (`InvalidIdError`) 400.
   */
  readonly session: (chatId: string, request: Request) => Promise<Session>;
  /** The model of every reply. */
  readonly provider: Provider;
  /** Tools the model may call. */
  readonly tools?: readonly Tool[];
  /**
   * Hears every failure the route hides from its client (a 500, or a reply's error chunk for a
   * failure neither the model's nor the client's): the whole error (message, stack, `cause`) and
   * the id the client was told, which tells it nothing else (docs/SYNC.md "Errors"). Default:
   * `console.error`, once per failure.
   */
  readonly onError?: HiddenFailureHook;
}

const CHAT_ROUTE_FIELDS: KnownFields<ChatRouteOptions> = { session: true, provider: true, tools: true, onError: true };

/** The two handlers of a `useChat` route. */
export interface ChatRoute {
  /**
   * `useChat`'s send: appends the new user message, runs, streams the reply (UI message stream).
   * A user message the session already holds is answered only when nothing follows it (a retry
   * after a failed reply); a reply stored after it is kept, so regenerating it answers 409. A reply
   * whose model fails streams the error chunk (`useChat`'s `error`, status `error`) and, if it showed
   * nothing yet, no message; the question stays stored, the failed reply is not.
   */
  POST(request: Request): Promise<Response>;
  /**
   * The resume endpoint, `GET {api}/{chatId}/stream` (`useChat({ resume: true })`): a reply
   * still streaming in this process is replayed from its start and followed live; a draft
   * whose producer is gone is finished as `stopped` and sent as an interrupted reply (finish
   * reason `interrupted` on `ai` 7, `other` on `ai` 5 and 6, whose clients refuse the former);
   * otherwise `204 No Content`.
   */
  GET(request: Request, chatId: string): Promise<Response>;
}

/** One reply being produced in this process: every chunk so far, and who waits for the next. */
class LiveReply {
  readonly chunks: UIMessageChunk[] = [];
  done = false;
  readonly #waiting = new Set<() => void>();

  push(chunk: UIMessageChunk): void {
    this.chunks.push(chunk);
    this.#wake();
  }

  end(): void {
    this.done = true;
    this.#wake();
  }

  /** A reader of the whole reply: what was streamed so far, then the rest live. Cancelling it stops only this reader. */
  stream(): ReadableStream<UIMessageChunk> {
    let next = 0;
    return new ReadableStream<UIMessageChunk>({
      pull: async (controller) => {
        while (next >= this.chunks.length && !this.done) await new Promise<void>((resolve) => this.#waiting.add(resolve));
        if (next < this.chunks.length) controller.enqueue(this.chunks[next++]!);
        else controller.close();
      },
    });
  }

  #wake(): void {
    const waiting = [...this.#waiting];
    this.#waiting.clear();
    for (const resolve of waiting) resolve();
  }
}

/**
 * A `useChat` route on durable sessions, as web-standard fetch handlers (Hono, Next.js
 * route handlers, Deno, Bun, Workers). The client keeps `useChat` unchanged (default
 * transport, `resume: true` for resumable replies); message ids are the stored ones, and
 * the commit is the run's own. A reply keeps running when its client goes away (a
 * reload, a closed tab): any client of the chat reconnects to it with the GET.
 *
 * @example
 * ```ts
 * import type { Provider, Sessions } from "sessionfold";
 * import { chatRoute } from "sessionfold/ai-sdk";
 * declare const sessions: Sessions;
 * declare const provider: Provider;
 *
 * const chat = chatRoute({ session: (id) => sessions.open({ agentId: "chat", workspaceId: "web", sessionId: id }), provider });
 * // POST /api/chat → chat.POST(request); GET /api/chat/:id/stream → chat.GET(request, id)
 * ```
 * @throws {InvalidInputError} when `options` is not an object with a `session` function and a `provider`, has a
 * field it does not know, or an `onError` that is not a function.
 */
export function chatRoute(options: ChatRouteOptions): ChatRoute {
  assertFields(knownOptions(options, "chatRoute(options)", CHAT_ROUTE_FIELDS), "chatRoute(options)", {
    session: "function!",
    provider: "object!",
    onError: "function",
  });
  const replies = new Map<string, LiveReply>();
  return {
    async POST(request) {
      let body: { id?: unknown; messages?: unknown } | null;
      try {
        body = (await request.json()) as typeof body;
      } catch {
        return problem(400, "the body is not JSON");
      }
      if (typeof body !== "object" || body === null || Array.isArray(body)) {
        return problem(400, `the body is not a JSON object (${Array.isArray(body) ? "an array" : kindOf(body)})`);
      }
      const chatId = body.id;
      if (typeof chatId !== "string" || chatId === "") return problem(400, "the body has no chat id (`id`)");
      if (!Array.isArray(body.messages)) return problem(400, `the body's \`messages\` is not a list of UI messages (${kindOf(body.messages)})`);
      const last = body.messages.at(-1) as UIMessage | undefined;
      if (last?.role !== "user") return problem(400, "the last message is not a user message: only a new user message starts a reply");
      if (replies.get(chatId)?.done === false) return problem(409, `chat ${chatId} is still replying; reconnect with GET …/${chatId}/stream`);
      try {
        const session = await options.session(chatId, request);
        const { sequences } = await appendUIMessages(session, [last]);
        // A user message already stored (useChat's regenerate sends it again) runs only while nothing follows it: with a
        // reply stored after it, the run would go on after that reply, which a reload shows merged into it.
        if (sequences.length === 0 && (await session.messages()).at(-1)?.message_id !== last.id) {
          return problem(
            409,
            `chat ${chatId} already has a reply to message ${JSON.stringify(last.id)}: a stored reply is kept, not regenerated; send a new message`,
          );
        }
        const live = new LiveReply();
        replies.set(chatId, live);
        const run = session.run(undefined, { provider: options.provider, ...(options.tools ? { tools: options.tools } : {}) });
        void (async () => {
          for await (const chunk of uiChunks(run, (error) => replyFailureText(error, request, options.onError))) live.push(chunk);
          live.end();
          if (replies.get(chatId) === live) replies.delete(chatId);
        })();
        return uiMessageStreamResponse(live.stream());
      } catch (error) {
        return failure(error, chatId, request, options.onError);
      }
    },

    async GET(request, chatId) {
      const live = replies.get(chatId);
      if (live && !live.done) return uiMessageStreamResponse(live.stream());
      try {
        const session = await options.session(chatId, request);
        if (!session.draft) return new Response(null, { status: 204 });
        // No reply runs here: its producer died. The draft becomes what it is, a stopped reply.
        await session.finishDraft().catch((error: unknown) => {
          // Another live process holds the session: send the draft as it stands.
          if (!(error instanceof WriterLockedError || error instanceof SessionBusyError)) throw error;
        });
        const turn = (await toUIMessages(session)).at(-1);
        if (turn?.role !== "assistant") return new Response(null, { status: 204 });
        const chunks = stoppedReplyChunks(turn, await interruptedFinishReason());
        return uiMessageStreamResponse(new ReadableStream({ start: (controller) => (chunks.forEach((c) => controller.enqueue(c)), controller.close()) }));
      } catch (error) {
        return failure(error, chatId, request, options.onError);
      }
    },
  };
}

/** What a body field that should be a list is instead, for the refusal. */
function kindOf(value: unknown): string {
  if (value === undefined) return "missing";
  if (value === null) return "null";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

function problem(status: number, message: string): Response {
  return Response.json({ error: message }, { status });
}

/**
 * A refusal `Response` as it is; a typed error as an HTTP answer: a chat the store does not have
 * 404, naming only the chat id the client sent (the store's agent and workspace are the host's);
 * an id the store refuses, or other refused input, 400; a busy session 409, naming only the chat
 * (the lock's message names the server's process, host and file); anything else is the server's
 * failure, a 500 that says only its id (docs/SYNC.md "Errors").
 */
function failure(error: unknown, chatId: string, request: Request, onError: HiddenFailureHook | undefined): Response {
  if (error instanceof Response) return error;
  if (error instanceof NotFoundError) return problem(404, `no chat ${JSON.stringify(chatId)}`);
  if (error instanceof InvalidIdError || error instanceof InvalidInputError) return problem(400, error.message);
  if (error instanceof SessionBusyError || error instanceof WriterLockedError) {
    return problem(409, `chat ${JSON.stringify(chatId)} is busy: another writer holds its session; try again later`);
  }
  return problem(500, hideFailure(error, "chat request failed", "chat route", { request, onError }).message);
}

/** A failed reply's error chunk: the model's failure as it is ({@linkcode modelFailureText}); anything else says only its id. */
function replyFailureText(error: unknown, request: Request, onError: HiddenFailureHook | undefined): string {
  return modelFailureText(error) ?? hideFailure(error, "chat reply failed", "chat route", { request, onError }).message;
}
