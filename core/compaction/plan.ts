import { InvalidInputError } from "../errors.ts";
import type { MessageRecord } from "../schema/mod.ts";

/** Which messages one compaction folds into the summary and which stay in Active. */
export interface CompactionPlan {
  /** The oldest messages of Active, about half (see {@linkcode planCompaction}): summarized, then closed as a segment. */
  readonly selected: MessageRecord[];
  /** The newer messages: they stay in Active and are not part of the summary input. */
  readonly kept: MessageRecord[];
  /** The inclusive sequence range of `selected`: the new segment's name. */
  readonly range: { readonly start: number; readonly end: number };
}

/**
 * Plans one compaction (docs/FORMAT.md "Compaction"): the oldest `floor(n / 2)` messages of Active, with the
 * cut moved to the nearest turn boundary (before a user message; a tie goes to the later
 * one, so at least half is summarized), so Active never starts with a reply whose
 * question went into the summary. A tool call and its result are parts of the one
 * assistant message that made them, so no cut separates them. Only when Active holds no
 * turn boundary (one turn of many steps) is the cut `floor(n / 2)`, between two steps.
 * Pure; neither the array nor the messages are changed.
 *
 * @example
 * ```ts
 * import type { MessageRecord } from "sessionfold";
 * declare const active: MessageRecord[];
 * const plan = planCompaction(active); // user, assistant, user, assistant, user, assistant, assistant
 * plan?.range; // { start: 1, end: 4 }: the cut before the third user message
 * plan?.kept.length; // 3
 * planCompaction(active.slice(0, 1)); // undefined: nothing to compact
 * ```
 * @throws {InvalidInputError} when Active's sequences are not strictly increasing.
 */
export function planCompaction(active: readonly MessageRecord[]): CompactionPlan | undefined {
  assertIncreasing(active);
  const count = turnBoundaryCut(active);
  const first = active[0];
  const last = active[count - 1];
  if (count === 0 || first === undefined || last === undefined) return undefined;
  return {
    selected: active.slice(0, count),
    kept: active.slice(count),
    range: { start: first.sequence, end: last.sequence },
  };
}

/** How many of the oldest messages to select: the turn boundary nearest `floor(n / 2)`, else `floor(n / 2)`. */
function turnBoundaryCut(active: readonly MessageRecord[]): number {
  const half = Math.floor(active.length / 2);
  let best: number | undefined;
  for (let index = 1; index < active.length; index++) {
    if (active[index]!.role !== "user") continue;
    if (best === undefined || Math.abs(index - half) <= Math.abs(best - half)) best = index;
    if (index > half) break;
  }
  return best ?? half;
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
