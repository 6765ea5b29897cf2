/**
 * The agent turn, `Session.run()`'s loop: the user's input, then provider steps (each
 * streamed into a draft, `run-step.ts`) and tool calls until the model answers without
 * tool calls, with compaction between steps when the trigger asks for it.
 *
 * @module
 */
import { type CompactionOutcome, compactionTrigger, estimateTokens, nextFold, validateAfterCompaction } from "../compaction/mod.ts";
import { compose } from "../composer/mod.ts";
import { asSessionfoldError, CancelledError, ProviderError, SessionfoldError } from "../errors.ts";
import { type DraftRecord, type MessageRecord, nowTimestamp, type ToolPart, type Usage } from "../schema/records.ts";
import { publicRecord } from "./batch.ts";
import { newId } from "./ids.ts";
import { storedTokens } from "./lines.ts";
import { ContextLengthExceededError, type ModelInput, type Provider, type Tool, type ToolDefinition } from "../model/mod.ts";
import { runTool, streamStep } from "./run-step.ts";
import type { RunEvent, RunOutcome } from "./run-events.ts";
import { LAST_COMPACTED_FIELD, lastSequence, stoppedDraftMessages } from "./state.ts";
import { type NewMessage, toMessageRecord } from "./message-input.ts";
import type { LockedOperation } from "./locked-operation.ts";

/** What the user says to start a run: text, or parts (text, files). Omit it to let the model continue. */
export type RunInput = string | { readonly parts: NewMessage["parts"] } | undefined;

/** The host-supplied pieces of a run. */
export interface RunOptions {
  /** The model provider for every step of this run. */
  readonly provider: Provider;
  /** Tools the model may call; a failing tool becomes an `output-error` part and the loop goes on. */
  readonly tools?: readonly Tool[];
  /**
   * Cancellation: recoverable work is committed, then the run rejects with `CancelledError`.
   * The provider, the tools and the summarizer are handed the signal; one that ignores it is
   * not waited for past the abort (its own work may go on, and is dropped).
   */
  readonly signal?: AbortSignal;
  /** Called with every event as it happens (besides iterating the run). */
  readonly onEvent?: (event: RunEvent) => void;
}

/** Most compactions between two provider steps: compaction halves Active, so a few always suffice. */
const MAX_COMPACTIONS_PER_STEP = 4;

/**
 * The agent loop, run inside one locked mutating operation (see `Session.run`). It
 * follows this commit contract: success commits the user message, every step
 * and the final answer as one batch; cancellation commits recoverable work and a
 * `stopped` message without raw reasoning, then throws `CancelledError`; a fatal
 * provider, policy or run error commits nothing of the run; an automatic
 * compaction is its own commit and stays.
 */
export async function runLoop(locked: LockedOperation, input: RunInput, options: RunOptions, emit: (event: RunEvent) => void): Promise<RunOutcome> {
  const { state, clock } = locked;
  const config = locked.options;
  const signal = options.signal ?? new AbortController().signal;
  const provider = options.provider;
  const tools = options.tools ?? [];
  const toolDefinitions: ToolDefinition[] = tools.map(({ name, description, inputSchema }) => ({ name, description, inputSchema }));
  const toolsByName = new Map(tools.map((tool) => [tool.name, tool]));

  // A draft left by an interrupted run is finished first, so generation order holds.
  if (state.draft) {
    const recovered = await locked.commit(stoppedDraftMessages(state.draft, false));
    await locked.removeDraft();
    emit({ type: "committed", revision: recovered.revision, sequences: recovered.sequences });
  }

  const candidate: MessageRecord[] = [];
  if (input !== undefined) {
    const parts = typeof input === "string" ? [{ type: "text" as const, text: input }] : input.parts;
    candidate.push({ ...toMessageRecord({ role: "user", parts }, clock, "input"), sequence: lastSequence(state) + 1 });
  }
  let current: DraftRecord | undefined;
  // Between steps the draft file holds only the run's pending messages (an empty draft).
  const between = newDraft(state, candidate, clock, provider);
  const drafts = locked.draftFlusher(() => ({
    draft: current ?? { ...between, sequence: lastSequence(state) + candidate.length + 1 },
    pending: candidate,
  }));
  if (candidate.length > 0) drafts.changed();

  const usage = usageSinceCompaction(state.active, state.meta.compaction?.[LAST_COMPACTED_FIELD]);
  let lastUsage = usage.lastUsage;
  // The outcome reports the usage of this run's last step, never one of an earlier run.
  let stepUsage: Usage | undefined;
  let validating = usage.validating;
  // A compaction validated as insufficient by an earlier run's step is still due (docs/FORMAT.md "Compaction").
  let deepPending = usage.validatedBy !== undefined && config.contextWindow !== undefined && config.summarizer !== undefined &&
    validateAfterCompaction(usage.validatedBy, config.contextWindow) === "deep";
  let compactionFailed = false;
  // A refusal for length since the last compaction: the next step compacts first (FORMAT.md).
  let refused = refusedSinceCompaction(state.active, state.meta.compaction?.[LAST_COMPACTED_FIELD]);
  let steps = 0;

  const cancel = async (reason: string): Promise<never> => {
    await drafts.close();
    if (current) {
      const stopped = stoppedDraftMessages({ record: current, pending: [] }, true);
      candidate.push(...stopped);
      current = undefined;
    }
    let revision = state.meta.revision;
    if (candidate.length > 0) {
      const committed = await commitCandidate();
      revision = committed.revision;
      emit({ type: "committed", revision, sequences: committed.sequences });
    }
    await locked.removeDraft();
    throw new CancelledError(`run on ${locked.ref.sessionId} was cancelled (${reason}); its recoverable work is committed at revision ${revision}`, {
      revision,
    });
  };

  // Set when the run's own commit failed: its draft then keeps the pending messages.
  let keepDraft = false;
  const commitCandidate = async () => {
    try {
      return await locked.commit(candidate);
    } catch (error) {
      keepDraft = true;
      // Best effort: leave the whole candidate recoverable in the draft file.
      const rescue = locked.draftFlusher(() => ({ draft: { ...between, sequence: lastSequence(state) + candidate.length + 1 }, pending: candidate }));
      rescue.changed();
      await rescue.flush().catch(() => undefined);
      throw error;
    }
  };

  const discard = async (error: unknown): Promise<never> => {
    await drafts.close();
    if (!keepDraft) await locked.removeDraft().catch(() => undefined);
    throw error;
  };

  try {
    while (steps < config.maxSteps) {
      if (signal.aborted) return await cancel("before a step");
      // Automatic compaction before the step: each one is its own commit.
      for (let round = 0; round < MAX_COMPACTIONS_PER_STEP && config.summarizer && !compactionFailed; round++) {
        const decision = compactionTrigger(config.policy, {
          ...(lastUsage ? { lastUsage } : {}),
          ...(config.contextWindow !== undefined ? { contextWindow: config.contextWindow } : {}),
          activeCount: state.active.length,
          estimatedTokens: () => storedTokens(state.active) + estimateTokens(candidate, toolDefinitions),
          deepCompactionPending: deepPending,
          contextRefused: refused,
        });
        if (!decision.compact) break;
        emit({ type: "compaction-started", reason: decision.reason });
        let outcome: CompactionOutcome | undefined;
        try {
          outcome = await locked.compact(config.summarizer, signal);
        } catch (error) {
          if (signal.aborted) return await cancel("during compaction");
          compactionFailed = true;
          emit({ type: "compaction-failed", message: asSessionfoldError(error, "compaction failed").message });
          break;
        }
        if (!outcome) break;
        // Outside the try: a failing event delivery is not a failed compaction (it committed).
        emit({ type: "compaction-completed", outcome });
        lastUsage = undefined;
        deepPending = false;
        validating = true;
        refused = clearRefusals(candidate);
      }

      steps += 1;
      current = newDraft(state, candidate, clock, provider);
      emit({ type: "step-started", step: steps, messageId: current.message_id });
      const composed = compose({ instruction: locked.system, footer: state.footer, active: [...state.active, ...candidate], identity: provider.identity });
      if (composed.omittedContext.length > 0 || composed.portableFallbacks.length > 0) {
        emit({ type: "context-omitted", omitted: composed.omittedContext, portableFallbacks: composed.portableFallbacks });
      }

      for (let attempt = 0;; attempt++) {
        const modelInput: ModelInput = attempt === 0 ? composed.input : nextFold(composed.input, attempt).input;
        if (attempt > 0) emit({ type: "context-folded", depth: attempt, droppedMessages: composed.input.messages.length - modelInput.messages.length });
        try {
          await streamStep(provider, modelInput, toolDefinitions, signal, current, emit, () => drafts.changed());
          if (attempt > 0) refused = markRefused(current);
          break;
        } catch (error) {
          if (signal.aborted) return await cancel("while streaming");
          if (error instanceof ContextLengthExceededError && current.parts.length === 0 && current.usage === undefined) continue;
          if (error instanceof SessionfoldError) throw error;
          const { provider: name, api, model } = provider.identity;
          throw new ProviderError(
            `provider ${name}/${api}/${model} failed at step ${steps}: ${
              error instanceof Error ? error.message : String(error)
            }; nothing of the run was committed`,
            { provider: name, api, model, step: steps },
            { cause: error },
          );
        }
      }
      if (signal.aborted) return await cancel("while streaming");

      stepUsage = current.usage;
      if (current.usage) {
        lastUsage = current.usage;
        if (validating && config.contextWindow !== undefined && config.summarizer) {
          deepPending = validateAfterCompaction(current.usage, config.contextWindow) === "deep";
        }
        validating = false;
      }

      const calls = current.parts.filter((part): part is ToolPart => part.type === "tool" && part.state === "input-available");
      for (const part of calls) {
        if (signal.aborted) return await cancel("between tool calls");
        await runTool(part, toolsByName.get(part.tool_name), signal, emit);
        drafts.changed();
        if (signal.aborted) return await cancel("during a tool call");
      }
      const finished: MessageRecord = { ...current, status: "completed", sequence: current.sequence };
      candidate.push(finished);
      current = undefined;
      drafts.changed();
      if (calls.length === 0) return await commitRun("final");
    }
    return await commitRun("max-steps");
  } catch (error) {
    // A cancellation has committed and removed its draft already.
    if (error instanceof CancelledError) throw error;
    return await discard(error);
  }

  async function commitRun(stopReason: RunOutcome["stopReason"]): Promise<RunOutcome> {
    await drafts.close();
    if (candidate.length === 0) {
      await locked.removeDraft();
      return { revision: state.meta.revision, messages: [], steps, usage: stepUsage, stopReason };
    }
    const committed = await commitCandidate();
    await locked.removeDraft();
    emit({ type: "committed", revision: committed.revision, sequences: committed.sequences });
    const messages = state.active.slice(-candidate.length).map(publicRecord);
    return { revision: committed.revision, messages, steps, usage: stepUsage, stopReason };
  }
}

/**
 * The newest real usage reported after the last compaction, whether the next usage still
 * has to validate that compaction, and the first usage after it (the one that validated
 * it: a deep compaction it asked for stays scheduled across runs until one happens).
 */
function usageSinceCompaction(
  active: readonly MessageRecord[],
  lastCompacted: unknown,
): { lastUsage: Usage | undefined; validating: boolean; validatedBy: Usage | undefined } {
  const boundary = typeof lastCompacted === "number" ? lastCompacted : 0;
  let lastUsage: Usage | undefined;
  let firstUsage: Usage | undefined;
  for (let i = active.length - 1; i >= 0 && active[i]!.sequence > boundary; i--) {
    const usage = active[i]!.usage;
    if (!usage) continue;
    lastUsage ??= usage;
    firstUsage = usage;
  }
  if (lastUsage) return { lastUsage, validating: false, validatedBy: boundary > 0 ? firstUsage : undefined };
  return { lastUsage: undefined, validating: boundary > 0, validatedBy: undefined };
}

/** The message field that records a context-length refusal answered from a folded input (FORMAT.md). */
const CONTEXT_REFUSED_FIELD = "context_refused";

/** Whether a message committed after the last compaction records a context-length refusal. */
function refusedSinceCompaction(active: readonly MessageRecord[], lastCompacted: unknown): boolean {
  const boundary = typeof lastCompacted === "number" ? lastCompacted : 0;
  return active.some((message) => message.sequence > boundary && message[CONTEXT_REFUSED_FIELD] === true);
}

/** Records on the step's message that its full input was refused as too long; returns `true`. */
function markRefused(message: DraftRecord): true {
  (message as Record<string, unknown>)[CONTEXT_REFUSED_FIELD] = true;
  return true;
}

/** A compaction answered the run's refusals: its uncommitted messages no longer ask for one; returns `false`. */
function clearRefusals(candidate: readonly MessageRecord[]): false {
  for (const message of candidate) delete (message as Record<string, unknown>)[CONTEXT_REFUSED_FIELD];
  return false;
}

function newDraft(state: LockedOperation["state"], candidate: readonly MessageRecord[], clock: () => number, provider: Provider): DraftRecord {
  return {
    record_type: "message",
    sequence: lastSequence(state) + candidate.length + 1,
    message_id: newId("m"),
    role: "assistant",
    created_at: nowTimestamp(clock),
    status: "streaming",
    parts: [],
    provider: { ...provider.identity },
  };
}
