/**
 * The contracts everything above the schema is written against: what a provider, a tool
 * and a summarizer are, what a model request reads, and the format-neutral
 * {@linkcode PortableSession} that importers produce and exporters consume. This layer
 * imports only `schema/`, so the composer, compaction, formats, export and the session
 * all depend on it and never on each other's internals.
 *
 * @example
 * ```ts
 * import type { Provider, ProviderEvent } from "sessionfold";
 * const echo: Provider = {
 *   identity: { provider: "local", api: "echo", model: "echo-1" },
 *   async *stream(request): AsyncIterable<ProviderEvent> {
 *     yield { type: "text-delta", text: String(request.messages.length) };
 *   },
 * };
 * ```
 * @module
 */
export {
  ContextLengthExceededError,
  type ModelInput,
  type ModelRequest,
  type Provider,
  type ProviderEvent,
  type Tool,
  type ToolDefinition,
} from "./provider.ts";
export type { Summarizer, SummaryRequest, SummaryResult } from "./summarizer.ts";
export type { ImportedFrom, PortableSegment, PortableSession } from "./portable.ts";
