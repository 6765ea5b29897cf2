import type { MessageRecord, ProviderIdentity, Usage } from "../schema/mod.ts";

/** A tool the model may call, as the provider sees it. */
export interface ToolDefinition {
  readonly name: string;
  readonly description?: string;
  /** JSON Schema of the tool's input. */
  readonly inputSchema?: unknown;
}

/** A host-supplied tool: its definition plus the code that runs it. */
export interface Tool extends ToolDefinition {
  /**
   * Runs the tool. A thrown error or a rejected promise becomes an `output-error`
   * tool part and the loop goes on; it never fails the run.
   */
  execute(input: unknown, context: { readonly toolCallId: string; readonly signal: AbortSignal }): Promise<unknown> | unknown;
}

/** Exactly what a model request reads (docs/FORMAT.md "What a model request reads"), ready for a provider adapter. */
export interface ModelInput {
  /** `instruction.md`, or the agent's current instruction when absent; `null` when there is none. */
  readonly system: string | null;
  /** The latest segment footer's cumulative summary, or `null` before the first compaction. */
  readonly summary: string | null;
  /** Active's messages, with foreign provider context left out and interrupted tool calls closed. */
  readonly messages: readonly MessageRecord[];
}

/** One provider call. */
export interface ModelRequest extends ModelInput {
  readonly tools: readonly ToolDefinition[];
  readonly signal: AbortSignal;
}

/** What a provider streams back for one step. */
export type ProviderEvent =
  | { readonly type: "text-delta"; readonly text: string }
  | { readonly type: "reasoning-delta"; readonly text: string }
  | { readonly type: "reasoning-summary"; readonly text: string }
  | { readonly type: "tool-call"; readonly toolCallId: string; readonly toolName: string; readonly input: unknown }
  | { readonly type: "file"; readonly mediaType: string; readonly name?: string; readonly data?: string; readonly url?: string }
  | { readonly type: "provider-context"; readonly data: unknown }
  | { readonly type: "usage"; readonly usage: Usage };

/**
 * A model provider, provider-neutral: it streams events for one step. It must stop
 * soon after `request.signal` aborts. A context-length refusal is signalled by
 * throwing {@linkcode ContextLengthExceededError}.
 */
export interface Provider {
  /** The exact identity stamped on messages and provider-context parts it produces. */
  readonly identity: ProviderIdentity;
  stream(request: ModelRequest): AsyncIterable<ProviderEvent>;
}

/**
 * Thrown by a provider adapter when the provider refused the request as too long
 * and reported no usage. The engine folds the input in memory and retries.
 *
 * @example
 * ```ts
 * declare function callModel(): Promise<Response>;
 * const response = await callModel();
 * if (response.status === 400 && (await response.text()).includes("context_length_exceeded")) throw new ContextLengthExceededError();
 * ```
 */
export class ContextLengthExceededError extends Error {
  readonly code = "context-length-exceeded";
  constructor(message = "the provider refused the request: context length exceeded") {
    super(message);
    this.name = "ContextLengthExceededError";
  }
}
