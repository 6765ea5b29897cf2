import { InvalidInputError } from "../errors.ts";
import { cumulativeSummary, type MessagePart, type MessageRecord, type ProviderIdentity } from "../schema/records.ts";
import { portableFallbackOf, RHO_EXTENSION_FIELD } from "../schema/portable-fallback.ts";
import { sameIdentity } from "./identity.ts";
import type { ClosedToolCall, ComposedInput, ComposerState, OmittedContext } from "./types.ts";

/** The `error` text of a tool call that is closed because it never produced an output. */
export const INTERRUPTED_TOOL_CALL_ERROR = "The tool call was interrupted before it produced an output.";

/**
 * Builds the model input of one request: instruction + the latest footer's text +
 * every message of Active (docs/FORMAT.md "What a model request reads"). Pure and O(size of Active):
 * it never mutates `state`; a message is copied only when it has to change, all
 * other messages are passed through as the same objects.
 *
 * Changes made for the provider, each reported:
 * - `provider-context` parts of any other provider / API / model are left out
 *   (`omittedContext`);
 * - tool parts still in state `input-available` are closed as `output-error` with
 *   {@linkcode INTERRUPTED_TOOL_CALL_ERROR}, so no provider sees a dangling call
 *   (`closedToolCalls`);
 * - a completed assistant message with a portable fallback (imported from Rho: `rho.portable_fallback`)
 *   none of whose provider context replays to this identity is sent with the fallback text
 *   as its last part and without its reasoning summaries, as Rho's handoff does
 *   (`portableFallbacks`);
 * - a message left with no parts is dropped (`droppedMessages`).
 *
 * Stopped and failed assistant messages are sent: their partial content is real history.
 *
 * @example
 * ```ts
 * import { MessageRecord } from "sessionfold";
 * declare const messages: MessageRecord[];
 *
 * const { input, omittedContext } = compose({
 *   instruction: "You are helpful.",
 *   footer: undefined,
 *   active: messages,
 *   identity: { provider: "openai", api: "responses", model: "gpt-5" },
 * });
 * input.summary; // null
 * ```
 * @throws {InvalidInputError} when `identity` is incomplete, or Active's sequences
 * are not strictly increasing and after the footer's `through_sequence`.
 */
export function compose(state: ComposerState): ComposedInput {
  const { instruction, footer, active, identity } = state;
  assertIdentity(identity);
  const omittedContext: OmittedContext[] = [];
  const closedToolCalls: ClosedToolCall[] = [];
  const droppedMessages: number[] = [];
  const portableFallbacks: number[] = [];
  const messages: MessageRecord[] = [];
  let previous = footer?.through_sequence ?? 0;
  for (let i = 0; i < active.length; i++) {
    const message = active[i]!;
    if (!(message.sequence > previous)) throw outOfOrder(message.sequence, previous, Boolean(footer));
    previous = message.sequence;
    let composed = composeMessage(message, identity, omittedContext, closedToolCalls);
    // Only a message with the extension field (imported from Rho) can have a fallback: no other runs (or compiles) its check.
    const fallback = (message as Record<string, unknown>)[RHO_EXTENSION_FIELD] === undefined ? undefined : portableFallback(message, identity);
    if (fallback !== undefined) {
      composed = withFallback(composed, fallback);
      portableFallbacks.push(message.sequence);
    }
    if (composed.parts.length === 0) droppedMessages.push(message.sequence);
    else messages.push(composed);
  }
  return {
    input: { system: instruction, summary: cumulativeSummary(footer), messages },
    omittedContext,
    closedToolCalls,
    droppedMessages,
    portableFallbacks,
  };
}

/**
 * The fallback text an assistant message is sent with instead of its provider context
 * (Rho's `prepare_assistant`): when it has non-blank text and none of the message's
 * provider context is for `identity` (also when it has none at all).
 */
function portableFallback(message: MessageRecord, identity: ProviderIdentity): string | undefined {
  // Rho's handoff lowers completed assistant messages only (an aborted one keeps no fallback).
  if (message.role !== "assistant" || message.status === "stopped" || message.status === "failed") return undefined;
  const text = portableFallbackOf(message);
  if (text === undefined || text.trim() === "") return undefined;
  if (message.parts.some((part) => part.type === "provider-context" && sameIdentity(part, identity))) return undefined;
  return text;
}

/** `message` with `text` as its last part; its reasoning summaries give way to the fallback, as in Rho. */
function withFallback(message: MessageRecord, text: string): MessageRecord {
  const sequence = message.parts.reduce((max, part) => Math.max(max, part.sequence), 0) + 1;
  const parts = message.parts.filter((part) => part.type !== "reasoning-summary");
  return { ...message, parts: [...parts, { sequence, type: "text", text }] };
}

/** Returns `message` itself when nothing changes, else a shallow copy with new parts. */
function composeMessage(
  message: MessageRecord,
  identity: ProviderIdentity,
  omittedContext: OmittedContext[],
  closedToolCalls: ClosedToolCall[],
): MessageRecord {
  let parts: MessagePart[] | undefined;
  for (let index = 0; index < message.parts.length; index++) {
    const part = message.parts[index]!;
    // Only provider context and tool calls can change (a session of text alone never compiles composePart).
    const replacement = part.type === "provider-context" || part.type === "tool"
      ? composePart(message.sequence, part, identity, omittedContext, closedToolCalls)
      : part;
    if (replacement === part && parts === undefined) continue;
    parts ??= message.parts.slice(0, index);
    if (replacement !== undefined) parts.push(replacement);
  }
  return parts === undefined ? message : { ...message, parts };
}

/** The part as sent (the same object when unchanged), or `undefined` when left out. */
function composePart(
  sequence: number,
  part: MessagePart,
  identity: ProviderIdentity,
  omittedContext: OmittedContext[],
  closedToolCalls: ClosedToolCall[],
): MessagePart | undefined {
  if (part.type === "provider-context" && !sameIdentity(part, identity)) {
    omittedContext.push({ sequence, partSequence: part.sequence, provider: part.provider, api: part.api, model: part.model });
    return undefined;
  }
  if (part.type === "tool" && part.state === "input-available") {
    closedToolCalls.push({ sequence, partSequence: part.sequence, toolCallId: part.tool_call_id });
    return { ...part, state: "output-error", error: INTERRUPTED_TOOL_CALL_ERROR };
  }
  return part;
}

/** The error for an Active message whose sequence is not after the one before it (apart: a sound session never runs it). */
function outOfOrder(sequence: number, previous: number, hasFooter: boolean): InvalidInputError {
  return new InvalidInputError(`Active message sequence ${sequence} is not after ${previous} (${hasFooter ? "footer or " : ""}previous message)`, {
    sequence,
    after: previous,
  });
}

function assertIdentity(identity: ProviderIdentity): void {
  const { provider, api, model } = identity ?? {};
  if (typeof provider === "string" && typeof api === "string" && typeof model === "string" && provider !== "" && api !== "" && model !== "") return;
  throw incompleteIdentity(identity);
}

/** The error of an identity {@linkcode assertIdentity} refused; apart: a compose with a full identity never compiles it. */
function incompleteIdentity(identity: ProviderIdentity): InvalidInputError {
  const fields = ["provider", "api", "model"] as const;
  const missing = fields.filter((field) => typeof identity?.[field] !== "string" || identity[field].length === 0);
  return new InvalidInputError(`compose: the receiving provider identity lacks ${missing.join(", ")}`, { missing });
}
