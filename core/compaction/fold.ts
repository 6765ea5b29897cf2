import { ContextOverflowError, InvalidInputError } from "../errors.ts";
import type { MessageRecord } from "../schema/mod.ts";
import type { ModelInput } from "../model/mod.ts";

/** How many in-memory folds one provider step may try after context-length errors. */
export const MAX_FOLD_DEPTH = 3;

/** A folded model input and how many of the original messages it leaves out. */
export interface FoldedInput {
  readonly input: ModelInput;
  /** Messages of the original input left out, in total over all `depth` folds. */
  readonly droppedMessages: number;
}

/**
 * The in-memory fold after a provider refused a request as too long without usage
 * (docs/FORMAT.md "Lines and records", `context_refused`). Always applied to the original composed input: fold `depth` halves its
 * messages `depth` times. Each halving leaves out the oldest `floor(m / 2)` messages,
 * moving the cut forward to the first user message of the kept half when there is
 * one, and never drops the newest message. Tool calls are parts of one assistant
 * message, so no cut leaves a dangling call. The summary gets a note saying how many
 * earlier messages were left out. Stored history is not touched.
 *
 * @example
 * ```ts
 * import type { MessageRecord, ModelInput } from "sessionfold";
 * declare const input: ModelInput;
 * declare const one: MessageRecord;
 * const folded = foldModelInput(input, 1); // input has 10 messages
 * folded?.droppedMessages; // 5 (or more, to start at a user message)
 * foldModelInput({ system: null, summary: null, messages: [one] }, 1); // undefined
 * ```
 * @returns `undefined` when fold `depth` can leave out nothing more than fold `depth - 1`.
 * @throws {InvalidInputError} when `depth` is not a positive integer.
 */
export function foldModelInput(input: ModelInput, depth: number): FoldedInput | undefined {
  if (!Number.isSafeInteger(depth) || depth < 1) {
    throw new InvalidInputError(`fold depth ${String(depth)} is not a positive integer`, { depth });
  }
  let kept: readonly MessageRecord[] = input.messages;
  for (let i = 0; i < depth; i++) {
    if (kept.length <= 1) return undefined;
    kept = kept.slice(foldCut(kept));
  }
  const droppedMessages = input.messages.length - kept.length;
  const note = foldNote(droppedMessages);
  return {
    input: { ...input, summary: input.summary ? `${input.summary}\n\n${note}` : note, messages: kept },
    droppedMessages,
  };
}

/**
 * The fold to send after the `attempt`-th context-length error of one step: the
 * bounded loop decision. Attempts past {@linkcode MAX_FOLD_DEPTH}, or when nothing is
 * left to fold, end in {@linkcode ContextOverflowError}.
 *
 * @example
 * ```ts
 * import { ContextLengthExceededError } from "sessionfold";
 *
 * import type { ModelInput } from "sessionfold";
 * declare const composed: ModelInput;
 * declare function send(input: ModelInput): Promise<string>;
 * async function sendFolding(): Promise<string> {
 * for (let attempt = 0; ; attempt++) {
 *   const request = attempt === 0 ? composed : nextFold(composed, attempt).input;
 *   try { return await send(request); } catch (e) { if (!(e instanceof ContextLengthExceededError)) throw e; }
 * }
 * }
 * ```
 * @throws {ContextOverflowError} when `attempt > MAX_FOLD_DEPTH` or nothing more can be folded.
 * @throws {InvalidInputError} when `attempt` is not a positive integer.
 */
export function nextFold(original: ModelInput, attempt: number, maxDepth = MAX_FOLD_DEPTH): FoldedInput {
  const folded = attempt <= maxDepth ? foldModelInput(original, attempt) : undefined;
  if (folded === undefined) {
    throw new ContextOverflowError(
      `the model input still exceeds the context window after ${attempt - 1} in-memory fold(s) of ${original.messages.length} messages`,
      { folds: attempt - 1, maxDepth, messages: original.messages.length },
    );
  }
  return folded;
}

/**
 * The note a fold appends to the summary.
 *
 * @example
 * ```ts
 * foldNote(3); // "[3 earlier messages were left out of this request to fit the context window]"
 * ```
 */
export function foldNote(droppedMessages: number): string {
  const what = droppedMessages === 1 ? "1 earlier message was" : `${droppedMessages} earlier messages were`;
  return `[${what} left out of this request to fit the context window]`;
}

/** Index of the first kept message of one halving; 1 ≤ cut ≤ length - 1 for length ≥ 2. */
function foldCut(messages: readonly MessageRecord[]): number {
  const half = Math.floor(messages.length / 2);
  for (let i = half; i < messages.length; i++) if (messages[i]!.role === "user") return i;
  return half;
}
