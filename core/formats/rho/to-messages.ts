import type { MessagePart, MessageRecord, Usage } from "../../schema/message.ts";
import { ToolCallJoiner } from "../tool-joiner.ts";
import type { MutableToolPart } from "../mutable.ts";
import { RHO_EXTENSION_FIELD, type RhoAssistantExtras, type RhoBlock, type RhoEntry, type RhoMessageExtension, type RhoUsage } from "./types.ts";

/** What a Rho history becomes: the system prompt and sessionfold messages. */
export interface RhoHistoryMessages {
  /** The first entry's text when it is `System`. */
  readonly system?: string;
  readonly messages: MessageRecord[];
}

/**
 * Checks that every `ToolResult` of `entries` answers an earlier `ToolCall`, continuing
 * the calls `joiner` already knows (pass a clone to keep the original unchanged).
 *
 * @example
 * ```ts
 * declare const entries: Parameters<typeof checkRhoToolResults>[0];
 * declare const joiner: Parameters<typeof checkRhoToolResults>[1];
 * checkRhoToolResults(entries, joiner);
 * ```
 * @throws {FormatError} at the first result's `id` whose call is missing or already answered.
 */
export function checkRhoToolResults(entries: readonly RhoEntry[], joiner: ToolCallJoiner<true>): void {
  for (const entry of entries) {
    if (entry.kind === "ToolResult") joiner.take([{ id: entry.id, at: entry.at }]);
    else if (entry.kind !== "System") { for (const block of entry.content) if (block.kind === "ToolCall") joiner.call(block.id, true); }
  }
}

/**
 * Turns a Rho history into sessionfold messages. A first `System` entry is the system
 * prompt; a later one becomes a user message marked `rho.entry = "System"`. `User` is a user
 * message; `Assistant` and `EnrichedAssistant` are completed assistant messages
 * (`provenance` → `provider`); `AbortedAssistant` is a `stopped` one. Parts: the reasoning
 * summary first, then the provider-context blocks (identity, `kind`, `position` and `data`
 * kept exactly), then the content blocks in order (`Text` → text, `Image` → file,
 * `ToolCall` → tool). A `ToolResult` is joined to its call (`ok` → output-available with
 * the content, else output-error) and is not a message of its own.
 *
 * @param stamp the `created_at` of the message made from `entries[i]`.
 * @example
 * ```ts
 * declare const entries: Parameters<typeof rhoEntriesToMessages>[0];
 * const { system, messages } = rhoEntriesToMessages(entries, () => "2026-12-02T13:00:00.000Z");
 * ```
 * @throws {FormatError} when a `ToolResult` has no earlier `ToolCall` waiting for it.
 */
export function rhoEntriesToMessages(entries: readonly RhoEntry[], stamp: (index: number) => string): RhoHistoryMessages {
  const joiner = new ToolCallJoiner<MutableToolPart>("ToolCall");
  const messages: MessageRecord[] = [];
  let system: string | undefined;
  entries.forEach((entry, index) => {
    const base = { record_type: "message" as const, sequence: messages.length + 1, message_id: `m_rho_${index}`, created_at: stamp(index) };
    switch (entry.kind) {
      case "System":
        if (index === 0) system = entry.text;
        else messages.push({ ...base, role: "user", parts: [{ sequence: 1, type: "text", text: entry.text }], [RHO_EXTENSION_FIELD]: { entry: "System" } });
        return;
      case "User":
        messages.push({ ...base, role: "user", parts: contentParts(entry.content, [], joiner) });
        return;
      case "Assistant":
        messages.push({ ...base, role: "assistant", status: "completed", parts: contentParts(entry.content, [], joiner) });
        return;
      case "EnrichedAssistant": {
        const extension: RhoMessageExtension = fallbackOf(entry);
        messages.push({
          ...base,
          role: "assistant",
          status: "completed",
          ...(entry.provenance ? { provider: { ...entry.provenance } } : {}),
          parts: contentParts(entry.content, extraParts(entry), joiner),
          ...withExtension(extension),
        });
        return;
      }
      case "AbortedAssistant": {
        const { usage, raw } = mapUsage(entry.usage);
        const extension: RhoMessageExtension = {
          ...fallbackOf(entry),
          ...(entry.toolCalls.length > 0 ? { partial_tool_calls: entry.toolCalls.map((call) => ({ ...call })) } : {}),
          ...(raw ? { usage: raw } : {}),
        };
        messages.push({
          ...base,
          role: "assistant",
          status: "stopped",
          ...(entry.provenance ? { provider: { ...entry.provenance } } : {}),
          ...(usage ? { usage } : {}),
          parts: contentParts(entry.content, extraParts(entry), joiner),
          ...withExtension(extension),
        });
        return;
      }
      case "ToolResult": {
        const [part] = joiner.take([{ id: entry.id, at: entry.at }]);
        if (entry.ok) {
          part!.state = "output-available";
          part!.output = entry.content;
        } else {
          part!.state = "output-error";
          part!.error = entry.content;
        }
        return;
      }
    }
  });
  return { ...(system !== undefined ? { system } : {}), messages };
}

function fallbackOf(entry: RhoAssistantExtras): RhoMessageExtension {
  return entry.portableFallback !== undefined ? { portable_fallback: entry.portableFallback } : {};
}

function withExtension(extension: RhoMessageExtension): Record<string, RhoMessageExtension> {
  return Object.keys(extension).length > 0 ? { [RHO_EXTENSION_FIELD]: extension } : {};
}

/** The reasoning summary and provider-context blocks, as parts without sequences yet. */
function extraParts(entry: RhoAssistantExtras): Omit<MessagePart, "sequence">[] {
  const parts: Omit<MessagePart, "sequence">[] = [];
  if (entry.reasoningSummary !== undefined) parts.push({ type: "reasoning-summary", text: entry.reasoningSummary });
  for (const block of entry.providerContext) {
    parts.push({
      type: "provider-context",
      provider: block.identity.provider,
      api: block.identity.api,
      model: block.identity.model,
      data: block.data,
      kind: block.kind,
      ...(block.position !== undefined ? { position: block.position } : {}),
    });
  }
  return parts;
}

function contentParts(content: readonly RhoBlock[], leading: Omit<MessagePart, "sequence">[], joiner: ToolCallJoiner<MutableToolPart>): MessagePart[] {
  const parts = leading.map((part, i) => ({ sequence: i + 1, ...part }) as MessagePart);
  for (const block of content) {
    const sequence = parts.length + 1;
    switch (block.kind) {
      case "Text":
        parts.push({ sequence, type: "text", text: block.text });
        break;
      case "Image":
        parts.push({ sequence, type: "file", media_type: block.mimeType, data: block.data });
        break;
      case "ToolCall": {
        const part: MutableToolPart = {
          sequence,
          type: "tool",
          tool_call_id: block.id,
          tool_name: block.name,
          state: "input-available",
          input: block.arguments,
        };
        joiner.call(block.id, part);
        parts.push(part);
        break;
      }
    }
  }
  return parts;
}

/** A sessionfold usage when Rho's has input and output counts; otherwise Rho's as it is. */
function mapUsage(usage: RhoUsage): { usage?: Usage; raw?: RhoUsage } {
  const { input_tokens: input, output_tokens: output } = usage;
  if (typeof input === "number" && typeof output === "number") {
    const out: Record<string, number> = { input_tokens: input, output_tokens: output };
    for (const [key, value] of Object.entries(usage)) if (typeof value === "number") out[key] = value;
    return { usage: out as Usage };
  }
  return Object.values(usage).some((value) => value !== null && value !== undefined) ? { raw: { ...usage } } : {};
}
