import type { CompactionOutcome } from "../compaction/mod.ts";
import { InternalError } from "../errors.ts";
import type { OmittedContext } from "../composer/mod.ts";
import type { MessageRecord, Usage } from "../schema/mod.ts";

/** What a run streams to its host, in order. */
export type RunEvent =
  /** A provider step begins; `messageId` is the `message_id` of the assistant message it produces. */
  | { readonly type: "step-started"; readonly step: number; readonly messageId: string }
  | { readonly type: "text-delta"; readonly text: string }
  | { readonly type: "reasoning-delta"; readonly text: string }
  | { readonly type: "reasoning-summary"; readonly text: string }
  | { readonly type: "tool-call"; readonly toolCallId: string; readonly toolName: string; readonly input: unknown }
  | { readonly type: "tool-result"; readonly toolCallId: string; readonly toolName: string; readonly output: unknown }
  | { readonly type: "tool-error"; readonly toolCallId: string; readonly toolName: string; readonly error: string }
  | { readonly type: "usage"; readonly usage: Usage }
  /**
   * This step's input differs from stored history for the provider's sake: provider-context
   * parts of another identity were left out (`omitted`), and assistant messages none of whose
   * context replays here were sent as their portable fallback text (`portableFallbacks`, their
   * sequences; see `ComposedInput`).
   */
  | { readonly type: "context-omitted"; readonly omitted: readonly OmittedContext[]; readonly portableFallbacks: readonly number[] }
  /** The provider refused the input as too long; it was folded in memory and retried. */
  | { readonly type: "context-folded"; readonly depth: number; readonly droppedMessages: number }
  | { readonly type: "compaction-started"; readonly reason: string }
  | { readonly type: "compaction-completed"; readonly outcome: CompactionOutcome }
  /** An automatic compaction failed; nothing changed and the run goes on. */
  | { readonly type: "compaction-failed"; readonly message: string }
  | { readonly type: "committed"; readonly revision: number; readonly sequences: readonly number[] };

/** How a run ended when it succeeded. */
export interface RunOutcome {
  /** The revision the run's commit produced. */
  readonly revision: number;
  /** The messages the run committed (user message, steps, final answer), with their sequences. */
  readonly messages: readonly MessageRecord[];
  /** Provider steps taken. */
  readonly steps: number;
  /** Real usage of the last step, when the provider reported it. */
  readonly usage: Usage | undefined;
  /** `final`: the model answered without tool calls; `max-steps`: the step limit ended the loop. */
  readonly stopReason: "final" | "max-steps";
}

/**
 * A running agent turn: iterate it for events; `result` settles with the outcome.
 * Iteration ends after the last event and throws the run's error, if any.
 *
 * @example
 * ```ts
 * import { Session } from "sessionfold";
 * declare const session: Session;
 *
 * import type { Provider, Tool } from "sessionfold";
 * declare const provider: Provider;
 * declare const tools: Tool[];
 * declare function write(text: string): void;
 * const run = session.run("What changed?", { provider, tools });
 * for await (const event of run) if (event.type === "text-delta") write(event.text);
 * const { revision } = await run.result;
 * ```
 */
export class RunHandle implements AsyncIterable<RunEvent> {
  /** Settles when the run ends: the outcome, or a typed error (`CancelledError` carries the revision). */
  readonly result: Promise<RunOutcome>;
  readonly #events: RunEvent[] = [];
  /** Every iterator waiting for the next event (several may iterate at once). */
  readonly #waiting = new Set<() => void>();
  #done = false;
  #error: unknown;
  #failed = false;

  /** @internal */
  constructor(start: (emit: (event: RunEvent) => void) => Promise<RunOutcome>, onEvent?: (event: RunEvent) => void) {
    const emit = (event: RunEvent) => {
      this.#events.push(event);
      this.#wake();
      if (!onEvent) return;
      try {
        onEvent(event);
      } catch (error) {
        // An event-delivery error is fatal to the run; typed, so it is never taken for a provider's.
        throw new InternalError(`onEvent failed on a "${event.type}" event: ${error instanceof Error ? error.message : String(error)}`, { event: event.type }, {
          cause: error,
        });
      }
    };
    this.result = start(emit).then(
      (outcome) => {
        this.#done = true;
        this.#wake();
        return outcome;
      },
      (error: unknown) => {
        this.#done = true;
        this.#failed = true;
        this.#error = error;
        this.#wake();
        throw error;
      },
    );
    // Hosts that only iterate still see the error there; avoid an unhandled rejection.
    this.result.catch(() => undefined);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<RunEvent> {
    let next = 0;
    for (;;) {
      while (next < this.#events.length) yield this.#events[next++]!;
      if (this.#done) break;
      await new Promise<void>((resolve) => this.#waiting.add(resolve));
    }
    if (this.#failed) throw this.#error;
  }

  #wake(): void {
    const waiting = [...this.#waiting];
    this.#waiting.clear();
    for (const resolve of waiting) resolve();
  }
}
