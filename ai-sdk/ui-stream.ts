/**
 * A run as the AI SDK's UI message stream (what `streamText(…).toUIMessageStream()` sends
 * to `useChat`), and that stream as a `Response` of the AI SDK's shape. Imports nothing of
 * `ai` at run time: the chunks are plain objects of its protocol, typed by its types.
 *
 * @module
 */
import type { UIMessage, UIMessageChunk } from "ai";
import { CancelledError, ContextOverflowError, type MessageRecord, ProviderError, type RunEvent, type RunHandle } from "../core/mod.ts";
import { assertFields, hideFailure, type KnownFields, knownOptions } from "../core/internal.ts";
import { chatPartId, groupTurns, type SessionfoldUIMetadata } from "./ui-messages.ts";

/** The headers of `createUIMessageStreamResponse` (UI message stream protocol v1). */
const UI_MESSAGE_STREAM_HEADERS = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache",
  connection: "keep-alive",
  "x-vercel-ai-ui-message-stream": "v1",
  "x-accel-buffering": "no",
} as const;

/** The run events that put something in the reply's message (the others only frame it or are not shown). */
const SHOWN_EVENTS: ReadonlySet<RunEvent["type"]> = new Set(["text-delta", "reasoning-delta", "reasoning-summary", "tool-call", "tool-result", "tool-error"]);

/** The mark a reasoning summary carries in the UI (as `toUIMessages` gives it). */
const SUMMARY_METADATA = { sessionfold: { kind: "reasoning-summary" } };

/**
 * Turns run events into UI message chunks, one turn's assistant message: `start` (its id
 * the first step's `message_id`, the id `toUIMessages` gives the turn after a reload),
 * a `start-step` … `finish-step` per step, text, reasoning and tool chunks, and at the end
 * `finish` with the turn's {@linkcode SessionfoldUIMetadata}. The message opens with its first
 * chunk to show: a run that fails before it sends only the `error` chunk, so `useChat` is left
 * with no empty reply that a reload would not have. Stateful: feed events in order.
 */
class UIChunkMapper {
  #started = false;
  /** The message's opening chunks (`start`, `start-step`), held until it has something to show. */
  #held: UIMessageChunk[] | undefined;
  #inStep = false;
  #open: { kind: "text" | "reasoning"; id: string } | undefined;
  #parts = 0;

  /** The chunks for one run event (none for events the UI does not show). */
  chunks(event: RunEvent): UIMessageChunk[] {
    const out: UIMessageChunk[] = [];
    if (SHOWN_EVENTS.has(event.type)) this.#release(out);
    switch (event.type) {
      case "step-started":
        this.#closeStep(out);
        if (this.#started) out.push({ type: "start-step" });
        else this.#held = [{ type: "start", messageId: event.messageId }, { type: "start-step" }];
        this.#started = true;
        this.#inStep = true;
        break;
      case "text-delta":
      case "reasoning-delta": {
        const kind = event.type === "text-delta" ? "text" : "reasoning";
        const id = this.#openPart(kind, out);
        out.push(kind === "text" ? { type: "text-delta", id, delta: event.text } : { type: "reasoning-delta", id, delta: event.text });
        break;
      }
      case "reasoning-summary": {
        this.#closePart(out);
        const id = chatPartId(this.#parts++);
        out.push({ type: "reasoning-start", id, providerMetadata: SUMMARY_METADATA }, { type: "reasoning-delta", id, delta: event.text }, {
          type: "reasoning-end",
          id,
          providerMetadata: SUMMARY_METADATA,
        });
        break;
      }
      case "tool-call":
        this.#closePart(out);
        out.push({ type: "tool-input-available", toolCallId: event.toolCallId, toolName: event.toolName, input: event.input });
        break;
      case "tool-result":
        out.push({ type: "tool-output-available", toolCallId: event.toolCallId, output: event.output });
        break;
      case "tool-error":
        out.push({ type: "tool-output-error", toolCallId: event.toolCallId, errorText: event.error });
        break;
    }
    return out;
  }

  /**
   * The closing chunks: the last step's end and `finish` with the turn's metadata
   * (`committed`: the run's assistant messages as committed, or the stopped draft).
   */
  finish(committed: readonly MessageRecord[]): UIMessageChunk[] {
    const out: UIMessageChunk[] = [];
    this.#closeStep(out);
    const turn = groupTurns(committed.filter((m) => m.role === "assistant")).at(-1);
    out.push({ type: "finish", finishReason: "stop", ...(turn?.metadata ? { messageMetadata: turn.metadata } : {}) });
    return out;
  }

  /**
   * The chunks of a failed run: the `error` chunk (`useChat` sets its `error` and status `error`),
   * then, when the message was shown, its closing with finish reason `error`. A message never
   * shown stays unsent: nothing of a failed run is stored (docs/decisions.md "A failed reply in useChat").
   */
  fail(errorText: string): UIMessageChunk[] {
    const out: UIMessageChunk[] = [{ type: "error", errorText }];
    if (this.#held) return out;
    this.#closeStep(out);
    if (this.#started) out.push({ type: "finish", finishReason: "error" });
    return out;
  }

  /** Sends the held opening chunks: the message has something to show. */
  #release(out: UIMessageChunk[]): void {
    if (this.#held) out.push(...this.#held);
    this.#held = undefined;
  }

  #openPart(kind: "text" | "reasoning", out: UIMessageChunk[]): string {
    if (this.#open?.kind === kind) return this.#open.id;
    this.#closePart(out);
    const id = chatPartId(this.#parts++);
    out.push({ type: kind === "text" ? "text-start" : "reasoning-start", id });
    this.#open = { kind, id };
    return id;
  }

  #closePart(out: UIMessageChunk[]): void {
    if (!this.#open) return;
    out.push({ type: this.#open.kind === "text" ? "text-end" : "reasoning-end", id: this.#open.id });
    this.#open = undefined;
  }

  #closeStep(out: UIMessageChunk[]): void {
    this.#release(out);
    this.#closePart(out);
    if (this.#inStep) out.push({ type: "finish-step" });
    this.#inStep = false;
  }
}

/**
 * Options of {@linkcode runToUIMessageStream}.
 *
 * @example
 * ```ts
 * import type { RunToUIMessageStreamOptions } from "sessionfold/ai-sdk";
 *
 * const options: RunToUIMessageStreamOptions = { onError: (error) => (error instanceof Error ? error.message : String(error)) };
 * ```
 */
export interface RunToUIMessageStreamOptions {
  /**
   * The text of the `error` chunk a failed run ends with, as the AI SDK's own `onError` of
   * `toUIMessageStream` (whose default says only "An error occurred." so that the server's
   * details stay on the server). Default: the model's failure as it is
   * ({@linkcode modelFailureText}); anything else `internal error (id err_…)`, the whole error
   * going to `console.error` under that id (docs/SYNC.md "Errors").
   */
  readonly onError?: (error: unknown) => string;
}

/**
 * The text a client may see of a run's failure that is the model's: a `ProviderError` (the
 * provider's own message, about the model), a conversation over the model's window, a
 * cancelled run; `undefined` for anything else (the store failing mid-reply names the
 * server's files, a busy session its process).
 *
 * @example
 * ```ts
 * import { InternalError, ProviderError } from "sessionfold";
 *
 * modelFailureText(new ProviderError("the provider answered 429")); // "the provider answered 429"
 * modelFailureText(new InternalError("EIO: read '/srv/store/a1/…'")); // undefined
 * ```
 */
export function modelFailureText(error: unknown): string | undefined {
  if (error instanceof ProviderError || error instanceof ContextOverflowError || error instanceof CancelledError) return error.message;
  return undefined;
}

const UI_MESSAGE_STREAM_FIELDS: KnownFields<RunToUIMessageStreamOptions> = { onError: true };

/** The default `onError` of {@linkcode runToUIMessageStream}: the model's failure as it is, anything else hidden. */
const hiddenRunFailure = (error: unknown): string => modelFailureText(error) ?? hideFailure(error, "run failed", "UI message stream").message;

/**
 * A run as the AI SDK's UI message stream: the chunks `useChat` reads. The commit is the
 * run's own (no `onFinish` needed); a failed run ends the stream with an `error` chunk whose
 * text `options.onError` gives (by default nothing of a failure that is not the model's).
 *
 * @example
 * ```ts
 * import type { Provider, Session } from "sessionfold";
 * import { runToUIMessageStream } from "sessionfold/ai-sdk";
 * declare const session: Session;
 * declare const provider: Provider;
 *
 * const stream = runToUIMessageStream(session.run("Hello!", { provider }));
 * ```
 * @throws {InvalidInputError} when `options` is not an object, has a field it does not know, or an `onError` that is not a function.
 */
export function runToUIMessageStream(run: RunHandle, options?: RunToUIMessageStreamOptions): ReadableStream<UIMessageChunk> {
  const where = "runToUIMessageStream(run, options)";
  const checked = knownOptions(options ?? {}, where, UI_MESSAGE_STREAM_FIELDS);
  assertFields(checked, where, { onError: "function" });
  const iterator = uiChunks(run, checked.onError ?? hiddenRunFailure)[Symbol.asyncIterator]();
  return new ReadableStream<UIMessageChunk>({
    async pull(controller) {
      const next = await iterator.next();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
    async cancel() {
      await iterator.return?.(undefined);
    },
  });
}

/**
 * The chunks of a run, in order (an async generator the stream and the chat replies share); a
 * failure's error chunk says what `errorText` makes of it.
 */
export async function* uiChunks(run: RunHandle, errorText: (error: unknown) => string): AsyncGenerator<UIMessageChunk> {
  const mapper = new UIChunkMapper();
  try {
    for await (const event of run) yield* mapper.chunks(event);
    const outcome = await run.result;
    yield* mapper.finish(outcome.messages);
  } catch (error) {
    yield* mapper.fail(errorText(error));
  }
}

/** What a `finish` chunk says of a reply cut short: `ai` 7's `interrupted`, or `other` for the `ai` 5 and 6 that lack it. */
export type InterruptedFinishReason = "interrupted" | "other";

let interruptedReason: Promise<InterruptedFinishReason> | undefined;

/**
 * The finish reason the installed `ai` accepts for a reply cut short: `interrupted` where its
 * chunk schema has it (`ai` 7), else `other`. `ai` 5 and 6 refuse a `finish` chunk with a
 * reason they do not know, so `useChat`'s resume would fail on the whole reply; without `ai`
 * installed, `other`, which every version reads. Asked of `ai` once.
 */
export function interruptedFinishReason(): Promise<InterruptedFinishReason> {
  interruptedReason ??= import("ai").then(
    async ({ uiMessageChunkSchema }) => {
      const checked = await uiMessageChunkSchema().validate?.({ type: "finish", finishReason: "interrupted" });
      return checked?.success ? "interrupted" : "other";
    },
    () => "other",
  );
  return interruptedReason;
}

/**
 * The chunks of a reply that will not go on (its producer is gone): the draft's assistant
 * turn replayed as one message, ended with `finishReason` (see {@linkcode interruptedFinishReason})
 * and status `stopped`, what `useChat({ resume: true })` shows for a reply cut short.
 */
export function stoppedReplyChunks(turn: UIMessage<SessionfoldUIMetadata>, finishReason: InterruptedFinishReason): UIMessageChunk[] {
  const out: UIMessageChunk[] = [{ type: "start", messageId: turn.id }];
  let parts = 0;
  let inStep = false;
  for (const part of turn.parts) {
    if (part.type === "step-start") {
      if (inStep) out.push({ type: "finish-step" });
      out.push({ type: "start-step" });
      inStep = true;
    } else if (part.type === "text" || part.type === "reasoning") {
      const id = chatPartId(parts++);
      const meta = part.providerMetadata ? { providerMetadata: part.providerMetadata } : {};
      if (part.type === "text") out.push({ type: "text-start", id }, { type: "text-delta", id, delta: part.text }, { type: "text-end", id });
      else out.push({ type: "reasoning-start", id, ...meta }, { type: "reasoning-delta", id, delta: part.text }, { type: "reasoning-end", id, ...meta });
    } else if (part.type.startsWith("tool-")) {
      const tool = part as { type: string; toolCallId: string; state: string; input: unknown; output?: unknown; errorText?: string };
      out.push({ type: "tool-input-available", toolCallId: tool.toolCallId, toolName: tool.type.slice("tool-".length), input: tool.input });
      if (tool.state === "output-available") out.push({ type: "tool-output-available", toolCallId: tool.toolCallId, output: tool.output });
      else if (tool.state === "output-error") out.push({ type: "tool-output-error", toolCallId: tool.toolCallId, errorText: tool.errorText ?? "" });
    }
  }
  if (inStep) out.push({ type: "finish-step" });
  out.push({ type: "finish", finishReason, messageMetadata: { ...turn.metadata!, status: "stopped" } });
  return out;
}

/**
 * A UI message stream as a `Response`, the shape of the AI SDK's
 * `createUIMessageStreamResponse` / `result.toUIMessageStreamResponse()`: server-sent
 * events, one `data:` line of JSON per chunk, then `data: [DONE]`.
 *
 * @example
 * ```ts
 * import type { Provider, Session } from "sessionfold";
 * import { runToUIMessageStream, uiMessageStreamResponse } from "sessionfold/ai-sdk";
 * declare const session: Session;
 * declare const provider: Provider;
 *
 * const response = uiMessageStreamResponse(runToUIMessageStream(session.run("Hello!", { provider })));
 * ```
 */
export function uiMessageStreamResponse(stream: ReadableStream<UIMessageChunk>, init: ResponseInit = {}): Response {
  const sse = stream.pipeThrough(
    new TransformStream<UIMessageChunk, string>({
      transform(chunk, controller) {
        controller.enqueue(`data: ${JSON.stringify(chunk)}\n\n`);
      },
      flush(controller) {
        controller.enqueue("data: [DONE]\n\n");
      },
    }),
  );
  const headers = new Headers(init.headers);
  for (const [name, value] of Object.entries(UI_MESSAGE_STREAM_HEADERS)) if (!headers.has(name)) headers.set(name, value);
  return new Response(sse.pipeThrough(new TextEncoderStream()), { ...init, headers });
}
