import { InvalidInputError } from "../errors.ts";
import type { MessageRecord } from "../schema/mod.ts";

/** Which messages one compaction folds into the summary and which stay in Active. */
export interface CompactionPlan {
  /** The oldest `floor(n / 2)` messages of Active: summarized, then closed as a segment. */
  readonly selected: MessageRecord[];
  /** The newer messages: they stay in Active and are not part of the summary input. */
  readonly kept: MessageRecord[];
  /** The inclusive sequence range of `selected`: the new segment's name. */
  readonly range: { readonly start: number; readonly end: number };
}

/**
 * Plans one compaction (seed 000): the oldest `floor(n / 2)` messages of Active are
 * selected, the newer half is kept. Tool calls and their results are parts of the one
 * assistant message that made them, so every message boundary is a valid cut.
 * Pure; neither the array nor the messages are changed.
 *
 * @example
 * ```ts
 * import type { MessageRecord } from "sessionfold";
 * declare const active: MessageRecord[];
 * const plan = planCompaction(active); // active holds sequences 1..7
 * plan?.range; // { start: 1, end: 3 }
 * plan?.kept.length; // 4
 * planCompaction(active.slice(0, 1)); // undefined: nothing to compact
 * ```
 * @throws {InvalidInputError} when Active's sequences are not strictly increasing.
 */
export function planCompaction(active: readonly MessageRecord[]): CompactionPlan | undefined {
  assertIncreasing(active);
  const count = Math.floor(active.length / 2);
  const first = active[0];
  const last = active[count - 1];
  if (count === 0 || first === undefined || last === undefined) return undefined;
  return {
    selected: active.slice(0, count),
    kept: active.slice(count),
    range: { start: first.sequence, end: last.sequence },
  };
}

function assertIncreasing(active: readonly MessageRecord[]): void {
  for (let i = 1; i < active.length; i++) {
    const before = active[i - 1]!.sequence;
    const after = active[i]!.sequence;
    if (!(after > before)) {
      throw new InvalidInputError(`Active is out of order: sequence ${after} follows ${before}`, { index: i, before, after });
    }
  }
}
