import type { MessageRecord, ProviderIdentity, SummaryRecord } from "../schema/mod.ts";
import type { ModelInput } from "../model/mod.ts";

/** A snapshot of everything one model request reads (docs/FORMAT.md "What a model request reads"). */
export interface ComposerState {
  /** `instruction.md`, or the agent's current instruction when absent; `null` when there is none. */
  readonly instruction: string | null;
  /** The latest segment's cumulative summary footer; `undefined` before the first compaction. */
  readonly footer: SummaryRecord | undefined;
  /** Every message of Active, oldest first (strictly increasing sequences). */
  readonly active: readonly MessageRecord[];
  /** The provider that will receive the request; only its own provider context is sent. */
  readonly identity: ProviderIdentity;
}

/** A `provider-context` part left out because another provider / API / model produced it. */
export interface OmittedContext {
  /** Sequence of the message holding the part. */
  readonly sequence: number;
  /** Sequence of the part inside that message. */
  readonly partSequence: number;
  readonly provider: string;
  readonly api: string;
  readonly model: string;
}

/** A tool call without an output, closed in the input as `output-error`. */
export interface ClosedToolCall {
  /** Sequence of the assistant message that made the call. */
  readonly sequence: number;
  /** Sequence of the tool part inside that message. */
  readonly partSequence: number;
  readonly toolCallId: string;
}

/** What {@linkcode compose} returns: the model input and what it had to change to build it. */
export interface ComposedInput {
  /** System + summary + messages, ready for a provider adapter. */
  readonly input: ModelInput;
  /** Foreign provider context left out of `input` (stored history still holds it). */
  readonly omittedContext: OmittedContext[];
  /** Dangling tool calls closed as `output-error` in `input` (stored history is unchanged). */
  readonly closedToolCalls: ClosedToolCall[];
  /** Sequences of Active messages left out entirely because no part of them remained. */
  readonly droppedMessages: number[];
  /**
   * Sequences of assistant messages sent with their portable fallback text (a last text
   * part, their reasoning summaries left out) because none of their provider context is for
   * the receiving identity (Rho's handoff; docs/FORMAT.md "What a model request reads").
   */
  readonly portableFallbacks: number[];
}
