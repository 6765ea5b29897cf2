import type { Value } from "./shape.ts";

/** A tool result to join: the call id it answers and where it was read (for errors). */
export interface ToolResultRef {
  readonly id: string;
  /** The id's value, named by the error when no call waits for it. */
  readonly at: Value;
}

/**
 * Joins tool results to the calls that made them, as the formats store them apart
 * (DeepCode `tool_result` blocks in a later message, Rho `ToolResult` history entries):
 * a result answers the latest earlier call with its id that has no result yet. A result
 * with no such call is refused, never kept on its own.
 *
 * @example
 * ```ts
 * import { ToolPart } from "sessionfold";
 *
 * declare const part: ToolPart;
 * declare const at: Parameters<ToolCallJoiner<ToolPart>["take"]>[0][number]["at"];
 * const joiner = new ToolCallJoiner<ToolPart>("tool_use");
 * joiner.call("c1", part);
 * const [slot] = joiner.take([{ id: "c1", at }]); // slot === part
 * ```
 */
export class ToolCallJoiner<T> {
  readonly #label: string;
  readonly #open: Map<string, T[]>;

  constructor(label: string, open: Map<string, T[]> = new Map()) {
    this.#label = label;
    this.#open = open;
  }

  /** Records a call that waits for its result. */
  call(id: string, slot: T): void {
    const list = this.#open.get(id);
    if (list) list.push(slot);
    else this.#open.set(id, [slot]);
  }

  /**
   * The calls these results answer, in the results' order; the calls are then no longer open.
   * Atomic: when one result has no open call, nothing changes.
   *
   * @throws {FormatError} at the result's id when no earlier call with that id waits for a result.
   */
  take(results: readonly ToolResultRef[]): T[] {
    const taken = new Map<string, number>();
    const slots = results.map(({ id, at }) => {
      const open = this.#open.get(id) ?? [];
      const used = taken.get(id) ?? 0;
      if (used >= open.length) {
        const why = open.length === 0 && used === 0 ? "no earlier" : "no other earlier";
        at.fail(
          `the id of an earlier ${this.#label} that has no result yet`,
          `${JSON.stringify(id)}, but ${why} ${this.#label} with that id waits for a result`,
        );
      }
      taken.set(id, used + 1);
      return open[open.length - 1 - used]!;
    });
    for (const [id, count] of taken) {
      const open = this.#open.get(id)!;
      open.splice(open.length - count, count);
      if (open.length === 0) this.#open.delete(id);
    }
    return slots;
  }

  /** An independent copy (to try a whole record before keeping it). */
  clone(): ToolCallJoiner<T> {
    return new ToolCallJoiner(this.#label, new Map([...this.#open].map(([id, list]) => [id, [...list]])));
  }
}
