import { validateUIMessages, type UIMessage } from "ai";
import { InvalidInputError, type MessagePart, type MessageRecord, type NewMessage, type Session } from "../core/mod.ts";

/** What {@linkcode toUIMessages} puts in each UI message's `metadata`. */
export interface SessionfoldUIMetadata {
  readonly sequence: number;
  readonly createdAt: string;
  readonly status?: string;
  readonly usage?: MessageRecord["usage"];
}

/** The history a UI message function reads: a `Session`, or anything with its `messages` paging. */
export type UIMessageSource = Pick<Session, "messages">;

/** Marks a UI reasoning part that came from a `reasoning-summary` part, so it goes back as one. */
const SUMMARY_MARK = { sessionfold: { kind: "reasoning-summary" } } as const;

/**
 * The session's whole history (every segment and Active, oldest first) as AI SDK UI
 * messages (`useChat`'s `messages`): one UI message per stored message, with its
 * `message_id` as `id`. Text, reasoning, reasoning summaries, files (inline data as a
 * `data:` URL) and tool calls (`dynamic-tool` parts) carry over; provider context stays
 * in the store. The result passes the AI SDK's own `validateUIMessages`.
 *
 * @example
 * ```ts
 * import type { Session } from "sessionfold";
 * import { toUIMessages } from "sessionfold/ai-sdk";
 * declare const session: Session;
 *
 * const messages = await toUIMessages(session); // hand to useChat({ messages })
 * ```
 * @throws {CorruptSessionError} when a segment has an invalid line (from `session.messages`).
 */
export async function toUIMessages(session: UIMessageSource): Promise<UIMessage<SessionfoldUIMetadata>[]> {
  const pages: MessageRecord[][] = [];
  let page = await session.messages();
  while (page.length > 0) {
    pages.unshift(page);
    page = await session.messages({ beforeSequence: page[0]!.sequence });
  }
  return pages.flat().map(toUIMessage);
}

function toUIMessage(message: MessageRecord): UIMessage<SessionfoldUIMetadata> {
  const parts: UIMessage["parts"] = [];
  for (const part of message.parts) {
    if (part.type === "text") parts.push({ type: "text", text: part.text, state: "done" });
    else if (part.type === "reasoning") parts.push({ type: "reasoning", text: part.text, state: "done" });
    else if (part.type === "reasoning-summary") parts.push({ type: "reasoning", text: part.text, state: "done", providerMetadata: SUMMARY_MARK });
    else if (part.type === "file") {
      const url = part.data !== undefined ? `data:${part.media_type};base64,${part.data}` : part.url!;
      parts.push({ type: "file", mediaType: part.media_type, ...(part.name ? { filename: part.name } : {}), url });
    } else if (part.type === "tool") {
      const base = { type: "dynamic-tool" as const, toolName: part.tool_name, toolCallId: part.tool_call_id, input: part.input ?? {} };
      if (part.state === "output-available") parts.push({ ...base, state: "output-available", output: part.output ?? null });
      else if (part.state === "output-error") parts.push({ ...base, state: "output-error", errorText: part.error ?? "the tool call failed" });
      else parts.push({ ...base, state: "input-available" });
    }
  }
  const metadata: SessionfoldUIMetadata = {
    sequence: message.sequence,
    createdAt: message.created_at,
    ...(message.status ? { status: message.status } : {}),
    ...(message.usage ? { usage: message.usage } : {}),
  };
  return { id: message.message_id, role: message.role, metadata, parts };
}

/**
 * Persists AI SDK UI messages (what `useChat` sends): validates them with the AI SDK's
 * own `validateUIMessages`, skips those whose `id` the session already holds (so a chat
 * app may send its whole list each time), and appends the rest in one commit, each
 * keeping its `id` as `message_id`. Text, reasoning, files (a `data:` URL becomes inline
 * data) and tool parts (`tool-<name>` and `dynamic-tool`) are stored; `step-start`,
 * sources and data parts are UI-only and dropped. Returns the appended sequences.
 *
 * @example
 * ```ts
 * import type { UIMessage } from "ai";
 * import type { Session } from "sessionfold";
 * import { appendUIMessages } from "sessionfold/ai-sdk";
 * declare const session: Session;
 * declare const messages: UIMessage[];
 *
 * const { sequences } = await appendUIMessages(session, messages);
 * ```
 * @throws {InvalidInputError} naming the message index when a message is not a valid UI message or has the `system` role (the instruction is not a message in sessionfold).
 */
export async function appendUIMessages(session: UIMessageSource & Pick<Session, "append">, messages: readonly unknown[]): Promise<{ sequences: number[]; revision?: number }> {
  let valid: UIMessage[];
  try {
    valid = await validateUIMessages({ messages });
  } catch (error) {
    throw new InvalidInputError(`appendUIMessages: the messages are not valid AI SDK UI messages: ${error instanceof Error ? error.message : String(error)}`, {});
  }
  const known = await knownIds(session, valid.map((m) => m.id));
  const fresh: NewMessage[] = [];
  valid.forEach((message, index) => {
    if (known.has(message.id)) return;
    if (message.role === "system") throw new InvalidInputError(`appendUIMessages: messages[${index}] (${message.id}) has role "system"; put the instruction in the session's instruction instead`, { index, id: message.id });
    fresh.push({ role: message.role, message_id: message.id, parts: message.parts.flatMap(fromUIPart), ...(message.role === "assistant" ? { status: "completed" as const } : {}) });
  });
  if (fresh.length === 0) return { sequences: [] };
  return await session.append(fresh);
}

/** The ids among `ids` the session already stores, paging back only while some are unresolved. */
async function knownIds(session: UIMessageSource, ids: readonly string[]): Promise<Set<string>> {
  const wanted = new Set(ids);
  const found = new Set<string>();
  let page = await session.messages();
  while (page.length > 0 && found.size < wanted.size) {
    for (const message of page) if (wanted.has(message.message_id)) found.add(message.message_id);
    page = await session.messages({ beforeSequence: page[0]!.sequence });
  }
  return found;
}

type StoredPart = Omit<MessagePart, "sequence">;

function fromUIPart(part: UIMessage["parts"][number]): StoredPart[] {
  switch (part.type) {
    case "text":
      return [{ type: "text", text: part.text }];
    case "reasoning": {
      const summary = (part.providerMetadata as { sessionfold?: { kind?: string } } | undefined)?.sessionfold?.kind === "reasoning-summary";
      return [{ type: summary ? "reasoning-summary" : "reasoning", text: part.text }];
    }
    case "file": {
      const inline = /^data:([^;,]*)(;base64)?,(.*)$/s.exec(part.url);
      const data = inline ? (inline[2] ? inline[3]! : btoa(unescape(encodeURIComponent(decodeURIComponent(inline[3]!))))) : undefined;
      return [{ type: "file", media_type: part.mediaType, ...(part.filename ? { name: part.filename } : {}), ...(data !== undefined ? { data } : { url: part.url }) }];
    }
  }
  if (part.type === "dynamic-tool" || part.type.startsWith("tool-")) {
    const tool = part as { type: string; toolName?: string; toolCallId: string; state: string; input?: unknown; output?: unknown; errorText?: string };
    const name = tool.type === "dynamic-tool" ? tool.toolName! : tool.type.slice("tool-".length);
    const base = { type: "tool" as const, tool_call_id: tool.toolCallId, tool_name: name, input: tool.input ?? {} };
    if (tool.state === "output-available") return [{ ...base, state: "output-available", output: tool.output ?? null }];
    if (tool.state === "output-error" || tool.state === "output-denied") return [{ ...base, state: "output-error", error: tool.errorText ?? "the tool call was denied" }];
    return [{ ...base, state: "input-available" }];
  }
  return [];
}
