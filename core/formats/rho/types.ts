import type { Value } from "../shape.ts";

/** Rho's `ModelIdentity`: the exact provider / API / model. */
export interface RhoIdentity {
  readonly provider: string;
  readonly api: string;
  readonly model: string;
}

/** Rho's `ContentBlock` (externally tagged: `{"Text": …}`, `{"Image": …}`, `{"ToolCall": …}`). */
export type RhoBlock =
  | { readonly kind: "Text"; readonly text: string }
  | { readonly kind: "Image"; readonly data: string; readonly mimeType: string }
  | { readonly kind: "ToolCall"; readonly id: string; readonly name: string; readonly arguments: unknown };

/** Rho's `ProviderContextBlock`: opaque data scoped to the exact identity that produced it. */
export interface RhoContextBlock {
  readonly identity: RhoIdentity;
  readonly kind: string;
  readonly position?: number;
  readonly data: unknown;
}

/** The keys of Rho's `ModelUsage` (each an optional `u64`). */
export const RHO_USAGE_KEYS = [
  "input_tokens",
  "output_tokens",
  "cache_read_tokens",
  "cache_write_tokens",
  "total_tokens",
  "context_window",
  "cost_usd_micros",
] as const;

/** Rho's `ModelUsage`: every key optional (`null` when unknown). */
export type RhoUsage = Partial<Record<(typeof RHO_USAGE_KEYS)[number], number | null>>;

/** Rho's `PartialToolCall`, kept as written (a tool call cut short by cancellation). */
export interface RhoPartialToolCall {
  readonly id: string | null;
  readonly name: string | null;
  readonly arguments: string;
}

/** What `EnrichedAssistant` and `AbortedAssistant` carry besides their content. */
export interface RhoAssistantExtras {
  readonly content: readonly RhoBlock[];
  readonly provenance?: RhoIdentity;
  readonly reasoningSummary?: string;
  /** Provider context, the portable fallback block taken out. */
  readonly providerContext: readonly RhoContextBlock[];
  /** The portable fallback text (`with_portable_fallback`): what another model is sent instead of this context. */
  readonly portableFallback?: string;
}

/** One entry of Rho's `history`: its `Message` enum, validated. Raw reasoning is never kept. */
export type RhoEntry =
  | { readonly kind: "System"; readonly text: string }
  | { readonly kind: "User"; readonly content: readonly RhoBlock[] }
  | { readonly kind: "Assistant"; readonly content: readonly RhoBlock[] }
  | ({ readonly kind: "EnrichedAssistant" } & RhoAssistantExtras)
  | ({ readonly kind: "AbortedAssistant"; readonly toolCalls: readonly RhoPartialToolCall[]; readonly usage: RhoUsage } & RhoAssistantExtras)
  | { readonly kind: "ToolResult"; readonly id: string; readonly ok: boolean; readonly content: string; readonly at: Value };

/** The variants of Rho's `Message` enum. */
export const RHO_MESSAGE_VARIANTS = ["System", "User", "Assistant", "EnrichedAssistant", "AbortedAssistant", "ToolResult"] as const;

/**
 * The sessionfold extension field a message record carries for what only Rho has, so an
 * export gives it back: a mid-history `System` entry, an assistant message's portable
 * fallback (the composer sends it to other models, docs/FORMAT.md "What a model request
 * reads"), an `AbortedAssistant`'s partial tool calls and a usage that has no
 * input/output token counts.
 */
export interface RhoMessageExtension {
  /** `"System"` on a user message that was a `System` entry after the first. */
  entry?: "System";
  /** The text another model is sent instead of this message's provider context. */
  portable_fallback?: string;
  partial_tool_calls?: RhoPartialToolCall[];
  usage?: RhoUsage;
}

/** The `kind` of the `provider_context` block in which Rho keeps a message's portable fallback (`with_portable_fallback`). */
export const RHO_PORTABLE_FALLBACK_KIND = "rho.sdk.portable_fallback.v1";

// The field's name lives with the message records: the composer reads the fallback too.
export { RHO_EXTENSION_FIELD } from "../../schema/portable-fallback.ts";
