/**
 * The nesting depth of a JSON value, measured without recursion (docs/FORMAT.md "Limits"):
 * the walkers that come after it (schema validation, `JSON.stringify`, redaction, size
 * estimates) recurse, so a value is measured first and refused when it is too deep.
 *
 * @module
 */
import { LimitExceededError } from "../errors.ts";

/**
 * The deepest nesting of arrays and objects a value of the store may have: 512 levels. Every
 * reader and writer checks it (iteratively) before a recursive walker (schema validation,
 * `JSON.stringify`, redaction, size estimates) sees the value, so no input can exhaust the
 * stack; a deeper value is a typed refusal naming the file and line, never a `RangeError`.
 */
export const MAX_JSON_DEPTH: number = 512;

/**
 * The depth at which `value` goes past `max` levels of arrays and objects (`max + 1`), or
 * `undefined` when it stays within them. A scalar is depth 0, `[]` and `{}` depth 1. Walks
 * with an explicit stack, so a value nested 100,000 deep is measured like any other.
 *
 * @example
 * ```ts
 * jsonDepthOver({ a: [1, [2]] }); // undefined
 * jsonDepthOver([[[]]], 2); // 3
 * ```
 */
export function jsonDepthOver(value: unknown, max: number = MAX_JSON_DEPTH): number | undefined {
  if (value === null || typeof value !== "object") return undefined;
  // Two stacks of plain values and no list of each object's values: every commit measures its
  // messages, and a record per node and `Object.values` per object were most of this walk's cost.
  const nodes: object[] = [value];
  const depths: number[] = [1];
  while (nodes.length > 0) {
    const node = nodes.pop()!;
    const depth = depths.pop()!;
    if (depth > max) return max + 1;
    if (Array.isArray(node)) {
      for (const child of node) if (child !== null && typeof child === "object") (nodes.push(child), depths.push(depth + 1));
      continue;
    }
    for (const key in node) {
      if (!Object.hasOwn(node, key)) continue; // own fields, as `Object.values` gives them
      const child: unknown = (node as Record<string, unknown>)[key];
      if (child !== null && typeof child === "object") (nodes.push(child), depths.push(depth + 1));
    }
  }
  return undefined;
}

/**
 * Refuses a value nested deeper than {@linkcode MAX_JSON_DEPTH} before a recursive walker
 * sees it.
 *
 * @example
 * ```ts
 * assertJsonDepth({ role: "user", parts: [] }, "messages[0]"); // fine
 * ```
 * @throws {LimitExceededError} naming `where` (a file and line, or an argument) and the limit.
 */
export function assertJsonDepth(value: unknown, where: string, location: { file?: string; line?: number | null } = {}, max: number = MAX_JSON_DEPTH): void {
  const found = jsonDepthOver(value, max);
  if (found === undefined) return;
  throw new LimitExceededError(`${where}: nested deeper than ${max} levels of arrays and objects (MAX_JSON_DEPTH)`, {
    limit: "MAX_JSON_DEPTH",
    max,
    found,
    ...location,
  });
}
