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
  const stack: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  while (stack.length > 0) {
    const { value: node, depth } = stack.pop()!;
    if (node === null || typeof node !== "object") continue;
    if (depth + 1 > max) return max + 1;
    const children = Array.isArray(node) ? node : Object.values(node);
    for (const child of children) if (child !== null && typeof child === "object") stack.push({ value: child, depth: depth + 1 });
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
