import type { MessageRecord, ToolPart } from "../../schema/message.ts";
import type { PortableSession } from "../../model/mod.ts";
import type { FormatWriteOptions } from "../omission.ts";
import { RHO_EXTENSION_FIELD, RHO_PORTABLE_FALLBACK_KIND, RHO_USAGE_KEYS, type RhoMessageExtension, type RhoPartialToolCall } from "./types.ts";

type Json = Record<string, unknown>;

/** The `kind` written for a provider-context part that has none of its own. */
const DEFAULT_CONTEXT_KIND = "opaque";

/**
 * Turns sessionfold messages into a Rho `history`, the inverse of `rhoEntriesToMessages`:
 * the system prompt becomes a first `System` entry; a user message is `User` (or `System`
 * again when marked `rho.entry = "System"`); a completed assistant message is `Assistant`,
 * or `EnrichedAssistant` when it has a provider, a reasoning summary, provider context or a
 * portable fallback; a stopped or failed one is `AbortedAssistant` (with `reasoning: ""`).
 * Each tool part is a `ToolCall` block, and its result a `ToolResult` entry right after the
 * message (non-string outputs as JSON text). Raw reasoning parts are never written.
 * Reasoning summaries are joined with a blank line into `reasoning_summary`. Parts Rho has
 * no place for are left out and reported to `onOmitted`.
 *
 * @example
 * ```ts
 * import { type PortableSession } from "sessionfold";
 * declare const portable: PortableSession;
 *
 * const history = messagesToRhoHistory(portable, {});
 * ```
 */
export function messagesToRhoHistory(session: PortableSession, options: FormatWriteOptions): Json[] {
  const history: Json[] = [];
  if (session.system) history.push({ System: session.system });
  session.messages.forEach((message, index) => {
    const omit = (sequence: number, type: string, reason: string): void => options.onOmitted?.({ message: index, part: sequence, type, reason });
    const extension = extensionOf(message);
    const onlyText = message.parts.length === 1 && message.parts[0]!.type === "text";
    if (message.role === "user" && extension.entry === "System" && onlyText) {
      history.push({ System: (message.parts[0] as { text: string }).text });
      return;
    }
    const content: Json[] = [];
    const results: Json[] = [];
    const summaries: string[] = [];
    const context: Json[] = [];
    for (const part of message.parts) {
      switch (part.type) {
        case "text":
          content.push({ Text: part.text });
          break;
        case "file":
          if (part.data !== undefined && part.media_type.startsWith("image/")) content.push({ Image: { data: part.data, mime_type: part.media_type } });
          else omit(part.sequence, part.type, "Rho holds only inline base64 images");
          break;
        case "tool":
          content.push({ ToolCall: { id: part.tool_call_id, name: part.tool_name, arguments: part.input ?? null } });
          if (part.state !== "input-available") results.push({ ToolResult: toolResult(part) });
          break;
        case "reasoning":
          omit(part.sequence, part.type, "raw reasoning is never written to a Rho snapshot");
          break;
        case "reasoning-summary":
          if (message.role === "assistant") summaries.push(part.text);
          else omit(part.sequence, part.type, "Rho keeps reasoning summaries only on assistant messages");
          break;
        case "provider-context":
          if (message.role === "assistant") context.push(contextBlock(part));
          else omit(part.sequence, part.type, "Rho keeps provider context only on assistant messages");
          break;
      }
    }
    history.push(message.role === "user" ? { User: content } : assistantEntry(message, extension, content, summaries, context));
    history.push(...results);
  });
  return history;
}

function assistantEntry(message: MessageRecord, extension: RhoMessageExtension, content: Json[], summaries: string[], context: Json[]): Json {
  const identity = message.provider ? { provider: message.provider.provider, api: message.provider.api, model: message.provider.model } : undefined;
  const provenance = identity ? { provenance: identity } : {};
  const summary = summaries.length > 0 ? { reasoning_summary: summaries.join("\n\n") } : {};
  // The portable fallback as Rho's `with_portable_fallback` writes it: the last
  // provider_context block, its identity the provenance or three empty strings.
  const blocks = extension.portable_fallback === undefined
    ? context
    : [...context, { identity: identity ?? { provider: "", api: "", model: "" }, kind: RHO_PORTABLE_FALLBACK_KIND, data: extension.portable_fallback }];
  const providerContext = blocks.length > 0 ? { provider_context: blocks } : {};
  if (message.status === "stopped" || message.status === "failed") {
    return {
      AbortedAssistant: {
        content,
        reasoning: "",
        ...provenance,
        ...summary,
        ...providerContext,
        tool_calls: extension.partial_tool_calls ?? [],
        usage: usageOf(message, extension),
      },
    };
  }
  if (identity === undefined && summaries.length + blocks.length === 0) return { Assistant: content };
  return { EnrichedAssistant: { content, ...provenance, ...summary, ...providerContext } };
}

function toolResult(part: ToolPart): Json {
  if (part.state === "output-error") return { id: part.tool_call_id, ok: false, content: part.error ?? "" };
  return { id: part.tool_call_id, ok: true, content: typeof part.output === "string" ? part.output : JSON.stringify(part.output ?? null) };
}

function contextBlock(part: { provider: string; api: string; model: string; data: unknown; [extra: string]: unknown }): Json {
  const kind = typeof part.kind === "string" ? part.kind : DEFAULT_CONTEXT_KIND;
  const position = typeof part.position === "number" && Number.isSafeInteger(part.position) && part.position >= 0 ? { position: part.position } : {};
  return { identity: { provider: part.provider, api: part.api, model: part.model }, kind, ...position, data: part.data ?? null };
}

/** Rho's `ModelUsage` (all seven keys, `null` when unknown) of a stopped message. */
function usageOf(message: MessageRecord, extension: RhoMessageExtension): Json {
  const source: Record<string, unknown> = extension.usage ?? message.usage ?? {};
  const usage: Json = {};
  for (const key of RHO_USAGE_KEYS) {
    const value = source[key];
    usage[key] = typeof value === "number" && Number.isSafeInteger(value) && value >= 0 ? value : null;
  }
  return usage;
}

/** The `rho` extension field of a message, keeping only well-formed values. */
function extensionOf(message: MessageRecord): RhoMessageExtension {
  const raw = (message as Record<string, unknown>)[RHO_EXTENSION_FIELD];
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return {};
  const { entry, portable_fallback: fallback, partial_tool_calls: calls, usage } = raw as Record<string, unknown>;
  const out: RhoMessageExtension = {};
  if (entry === "System") out.entry = "System";
  if (typeof fallback === "string") out.portable_fallback = fallback;
  if (Array.isArray(calls) && calls.every(isPartialCall)) {
    out.partial_tool_calls = calls.map((call) => ({ id: call.id, name: call.name, arguments: call.arguments }));
  }
  if (typeof usage === "object" && usage !== null && !Array.isArray(usage)) out.usage = usage as RhoMessageExtension["usage"];
  return out;
}

function isPartialCall(value: unknown): value is RhoPartialToolCall {
  if (typeof value !== "object" || value === null) return false;
  const { id, name, arguments: args } = value as Record<string, unknown>;
  return (id === null || typeof id === "string") && (name === null || typeof name === "string") && typeof args === "string";
}
