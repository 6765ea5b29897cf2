import type { Value } from "../shape.ts";
import {
  RHO_MESSAGE_VARIANTS,
  RHO_PORTABLE_FALLBACK_KIND,
  RHO_USAGE_KEYS,
  type RhoAssistantExtras,
  type RhoBlock,
  type RhoContextBlock,
  type RhoEntry,
  type RhoIdentity,
  type RhoPartialToolCall,
  type RhoUsage,
} from "./types.ts";

/**
 * Validates a `ModelIdentity` `{provider, api, model}` (non-empty strings).
 *
 * @example
 * ```ts
 * declare const snapshot: { field(name: string): Parameters<typeof parseRhoIdentity>[0] };
 * parseRhoIdentity(snapshot.field("provider")); // { provider: "openai", api: "responses", model: "gpt-5" }
 * ```
 * @throws {FormatError} naming the path of the first invalid field.
 */
export function parseRhoIdentity(value: Value): RhoIdentity {
  value.object("a model identity {provider, api, model}");
  return {
    provider: value.field("provider").string({ nonEmpty: true }),
    api: value.field("api").string({ nonEmpty: true }),
    model: value.field("model").string({ nonEmpty: true }),
  };
}

/**
 * Validates one `history` entry: the externally tagged `Message` enum (`{"User": […]}` …).
 * Unknown fields are ignored, as Rho's serde reader does; an `AbortedAssistant`'s raw
 * `reasoning` is dropped (Rho clears it before any snapshot or import).
 *
 * @example
 * ```ts
 * declare const history: Parameters<typeof parseRhoEntry>[0][];
 * const entry = parseRhoEntry(history[0]!); // { kind: "User", content: [{ kind: "Text", text: "hi" }] }
 * ```
 * @throws {FormatError} naming the path of the first invalid value.
 */
export function parseRhoEntry(value: Value): RhoEntry {
  const { tag, content } = value.variant(RHO_MESSAGE_VARIANTS);
  switch (tag) {
    case "System":
      return { kind: "System", text: content.string() };
    case "User":
    case "Assistant":
      return { kind: tag, content: parseBlocks(content) };
    case "EnrichedAssistant": {
      content.object("an assistant message object {content, provenance?, reasoning_summary?, portable_fallback?, provider_context?}");
      return { kind: "EnrichedAssistant", ...extras(content, true) };
    }
    case "AbortedAssistant": {
      content.object("an aborted assistant object {content, reasoning, tool_calls, usage, …}");
      // `reasoning` is raw reasoning: checked to be text, then dropped (never imported).
      content.field("reasoning").optional()?.string();
      const calls = content.field("tool_calls").optional()?.array("an array of partial tool calls") ?? [];
      const usage = content.field("usage").optional();
      return { kind: "AbortedAssistant", ...extras(content, false), toolCalls: calls.map(parsePartialCall), usage: usage ? parseUsage(usage) : {} };
    }
    case "ToolResult": {
      content.object("a tool result object {id, ok, content}");
      const id = content.field("id");
      return { kind: "ToolResult", id: id.string({ nonEmpty: true }), ok: content.field("ok").boolean(), content: content.field("content").string(), at: id };
    }
  }
}

/**
 * The fields both assistant variants share. The portable fallback (Rho's
 * `with_portable_fallback`) is a `provider_context` block of its own kind; it is taken out of
 * the context, since no provider ever replays it. An older writer's `portable_fallback`
 * field (`legacyField`: an `EnrichedAssistant` only, Rho's `AbortedAssistant` has none) is
 * read as Rho's deserializer reads it: it replaces any fallback block.
 */
function extras(message: Value, legacyField: boolean): RhoAssistantExtras {
  const provenance = message.field("provenance").optional();
  const summary = message.field("reasoning_summary").optional()?.string();
  const legacyFallback = legacyField ? message.field("portable_fallback").optional()?.string() : undefined;
  const context = (message.field("provider_context").optional()?.array("an array of provider context blocks") ?? []).map(parseContextBlock);
  const fallback = legacyFallback ?? (context.find(isPortableFallback)?.data as string | undefined);
  return {
    content: parseBlocks(message.field("content")),
    ...(provenance ? { provenance: parseRhoIdentity(provenance) } : {}),
    ...(summary !== undefined ? { reasoningSummary: summary } : {}),
    providerContext: context.filter((block) => !isPortableFallback(block)),
    ...(fallback !== undefined ? { portableFallback: fallback } : {}),
  };
}

function parseBlocks(value: Value): RhoBlock[] {
  return value.array("an array of content blocks").map((block) => {
    const { tag, content } = block.variant(["Text", "Image", "ToolCall"] as const);
    switch (tag) {
      case "Text":
        return { kind: "Text", text: content.string() };
      case "Image":
        content.object("an image {data, mime_type}");
        return { kind: "Image", data: content.field("data").string(), mimeType: content.field("mime_type").string({ nonEmpty: true }) };
      case "ToolCall": {
        content.object("a tool call {id, name, arguments}");
        const args = content.field("arguments");
        if (args.raw === undefined) args.fail("the call's arguments (a JSON value)");
        return {
          kind: "ToolCall",
          id: content.field("id").string({ nonEmpty: true }),
          name: content.field("name").string({ nonEmpty: true }),
          arguments: args.raw,
        };
      }
    }
  });
}

/** Rho's `is_portable_fallback`: that kind, no position, text data (any other block of the kind is ordinary context). */
function isPortableFallback(block: { readonly kind: string; readonly position?: number; readonly data: unknown }): boolean {
  return block.kind === RHO_PORTABLE_FALLBACK_KIND && block.position === undefined && typeof block.data === "string";
}

function parseContextBlock(value: Value): RhoContextBlock {
  value.object("a provider context block {identity, kind, position?, data}");
  const data = value.field("data");
  if (data.raw === undefined) data.fail("the block's data (a JSON value)");
  const position = value.field("position").optional()?.count();
  const kind = value.field("kind").string();
  const block = { kind, ...(position !== undefined ? { position } : {}), data: data.raw };
  // A fallback written without provenance has the identity of three empty strings; it is
  // never replayed, so only its shape is checked. Any other block needs a real identity.
  const identity = isPortableFallback(block) ? parseIdentityShape(value.field("identity")) : parseRhoIdentity(value.field("identity"));
  return { identity, ...block };
}

function parseIdentityShape(value: Value): RhoIdentity {
  value.object("a model identity {provider, api, model}");
  return { provider: value.field("provider").string(), api: value.field("api").string(), model: value.field("model").string() };
}

function parsePartialCall(value: Value): RhoPartialToolCall {
  value.object("a partial tool call {id, name, arguments}");
  return {
    id: value.field("id").optional()?.string() ?? null,
    name: value.field("name").optional()?.string() ?? null,
    arguments: value.field("arguments").string(),
  };
}

function parseUsage(value: Value): RhoUsage {
  value.object("a usage object");
  const usage: RhoUsage = {};
  for (const key of RHO_USAGE_KEYS) {
    const field = value.field(key);
    if (field.raw !== undefined) usage[key] = field.optional()?.count() ?? null;
  }
  return usage;
}
