import type { MessagePart, MessageRecord, ModelInput, ProviderContextPart, ToolPart } from "../core/mod.ts";

/** The language-model specification versions the adapter speaks. */
export type SpecificationVersion = "v2" | "v3" | "v4";

/** One prompt message in the shape v2, v3 and v4 share (file data differs; see `fileData`). */
export type PromptMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: unknown[] }
  | { role: "assistant"; content: unknown[] }
  | { role: "tool"; content: unknown[] };

/**
 * What the adapter stores in a `provider-context` part's `data`: the provider metadata
 * the model attached to one of its output parts, to give back to the same model as
 * that part's `providerOptions` (encrypted reasoning, signatures, item and response ids).
 */
export interface StoredProviderMetadata {
  /** The output part it belongs to; `finish` for the step's own metadata. */
  readonly part: "text" | "reasoning" | "tool-call" | "file" | "finish";
  /** Position among the step's parts of that kind (from 0); the tool call id for a tool call. */
  readonly key: number | string;
  readonly providerMetadata: Record<string, unknown>;
}

/**
 * The model input as an AI SDK prompt: system (with the cumulative summary), then
 * Active, a tool message after each assistant message with tool parts. Provider
 * context the composer kept (it matches this model's identity) goes back as
 * `providerOptions` on the part it came with.
 */
export function toPrompt(input: ModelInput, version: SpecificationVersion): PromptMessage[] {
  const prompt: PromptMessage[] = [];
  const system = [input.system ?? "", input.summary ? `Summary of the earlier conversation:\n${input.summary}` : ""].filter((s) => s !== "").join("\n\n");
  if (system !== "") prompt.push({ role: "system", content: system });
  for (const message of input.messages) {
    if (message.role === "user") {
      const content = message.parts.flatMap((part) => userPart(part, version));
      if (content.length > 0) prompt.push({ role: "user", content });
    } else prompt.push(...assistantMessages(message, version));
  }
  return prompt;
}

function userPart(part: MessagePart, version: SpecificationVersion): unknown[] {
  if (part.type === "text") return [{ type: "text", text: part.text }];
  if (part.type === "file") return [{ type: "file", mediaType: part.media_type, ...(part.name ? { filename: part.name } : {}), data: fileData(part, version) }];
  return [];
}

function fileData(part: { data?: string; url?: string }, version: SpecificationVersion): unknown {
  if (version === "v4") return part.data !== undefined ? { type: "data", data: part.data } : { type: "url", url: new URL(part.url!) };
  return part.data !== undefined ? part.data : new URL(part.url!);
}

function assistantMessages(message: MessageRecord, version: SpecificationVersion): PromptMessage[] {
  const metadata = storedMetadata(message.parts);
  const counters = { text: 0, reasoning: 0 };
  const content: unknown[] = [];
  const results: unknown[] = [];
  for (const part of message.parts) {
    if (part.type === "text" || part.type === "reasoning") {
      const options = metadata.get(`${part.type}:${counters[part.type]++}`);
      content.push({ type: part.type, text: part.text, ...(options ? { providerOptions: options } : {}) });
    } else if (part.type === "reasoning-summary") {
      // Not sent, but numbered as the adapter numbers reasoning blocks (one per reasoning-end).
      counters.reasoning++;
    } else if (part.type === "tool") {
      const options = metadata.get(`tool-call:${part.tool_call_id}`);
      content.push({
        type: "tool-call",
        toolCallId: part.tool_call_id,
        toolName: part.tool_name,
        input: part.input ?? {},
        ...(options ? { providerOptions: options } : {}),
      });
      results.push({ type: "tool-result", toolCallId: part.tool_call_id, toolName: part.tool_name, output: toolOutput(part) });
    } else if (part.type === "file") {
      content.push({ type: "file", mediaType: part.media_type, ...(part.name ? { filename: part.name } : {}), data: fileData(part, version) });
    }
  }
  const out: PromptMessage[] = [];
  if (content.length > 0) out.push({ role: "assistant", content });
  if (results.length > 0) out.push({ role: "tool", content: results });
  return out;
}

function toolOutput(part: ToolPart): unknown {
  if (part.state === "output-available") return { type: "json", value: part.output ?? null };
  return { type: "error-text", value: part.error ?? "the tool call did not complete" };
}

/** `part:key` → provider metadata, from a message's provider-context parts in the adapter's shape. */
export function storedMetadata(parts: readonly MessagePart[]): Map<string, Record<string, unknown>> {
  const out = new Map<string, Record<string, unknown>>();
  for (const part of parts) {
    if (part.type !== "provider-context") continue;
    const data = (part as ProviderContextPart).data as Partial<StoredProviderMetadata> | undefined;
    if (data && typeof data.part === "string" && data.key !== undefined && typeof data.providerMetadata === "object" && data.providerMetadata !== null) {
      out.set(`${data.part}:${data.key}`, data.providerMetadata);
    }
  }
  return out;
}
