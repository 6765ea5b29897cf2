/**
 * The nesting depth of a JSON value, measured without recursion (docs/FORMAT.md "Limits"):
 * the walkers that come after it (schema validation, `JSON.stringify`, redaction, size
 * estimates) recurse, so a value is measured first and refused when it is too deep. The same
 * walk checks that a value given to be stored is JSON (`assertJsonValue`, docs/FORMAT.md
 * "A message"), so an append measures its messages once.
 *
 * @module
 */
import { InvalidInputError, LimitExceededError } from "../errors.ts";

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
  const found = walk(value, max, undefined);
  return found === NOT_JSON ? undefined : found;
}

/** What {@linkcode walk} returns for a value JSON would not give back as it is. */
const NOT_JSON = -1;

/**
 * The depth past `max` (`max + 1`), or with `strict` ({@linkcode assertJsonValue}'s walk) {@linkcode NOT_JSON} at the
 * first value that is not JSON, its path then in `strict.path`; `undefined` when the value passes. One walk for both, so
 * a commit measures its messages once. `strict.trail` (only when refusing) keeps each node's path beside it.
 */
function walk(value: unknown, max: number, strict: { trail?: (string | number)[][]; path?: (string | number)[] } | undefined): number | undefined {
  if (value === null || typeof value !== "object") return undefined;
  // Two stacks of plain values and no list of each object's values: every commit measures its
  // messages, and a record per node and `Object.values` per object were most of this walk's cost.
  const nodes: object[] = [value];
  const depths: number[] = [1];
  const trail = strict?.trail;
  trail?.push([]);
  while (nodes.length > 0) {
    const node = nodes.pop()!;
    const depth = depths.pop()!;
    const at = trail?.pop();
    if (depth > max) return max + 1;
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        const child: unknown = node[i];
        if (child !== null && typeof child === "object") {
          if (strict && !isJsonContainer(child)) return notJson(strict, at, i);
          nodes.push(child), depths.push(depth + 1), trail?.push([...at!, i]);
        } else if (strict && !isJsonScalar(child)) return notJson(strict, at, i);
      }
      continue;
    }
    for (const key in node) {
      if (!Object.hasOwn(node, key)) continue; // own fields, as `Object.values` gives them
      const child: unknown = (node as Record<string, unknown>)[key];
      if (child !== null && typeof child === "object") {
        if (strict && !isJsonContainer(child)) return notJson(strict, at, key);
        nodes.push(child), depths.push(depth + 1), trail?.push([...at!, key]);
      } else if (strict && child !== undefined && !isJsonScalar(child)) return notJson(strict, at, key); // `undefined` fields JSON leaves out, as absent
    }
  }
  return undefined;
}

function notJson(strict: { path?: (string | number)[] }, at: (string | number)[] | undefined, key: string | number): number {
  if (at) strict.path = [...at, key];
  return NOT_JSON;
}

/** A value JSON writes as it is: `null`, a string, a boolean or a finite number (`NaN` and the infinities become `null`). */
function isJsonScalar(value: unknown): boolean {
  return value === null || typeof value === "string" || typeof value === "boolean" || (typeof value === "number" && Number.isFinite(value));
}

/** An array, or an object JSON writes field by field: no `toJSON` of its own kind (a `Date`), not a `Map`, `Set` or typed array. */
function isJsonContainer(value: object): boolean {
  if (Array.isArray(value)) return true;
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto === Object.prototype || proto === null) return true;
  // Another realm's plain object, or a class instance JSON writes by its own fields.
  return Object.prototype.toString.call(value) === "[object Object]" && typeof (value as { toJSON?: unknown }).toJSON !== "function";
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

/**
 * Refuses a value that is nested deeper than {@linkcode MAX_JSON_DEPTH}, or that holds what JSON would write as something
 * else or leave out (a function, a symbol, a BigInt, `NaN` or an infinity, a hole in a list, a `Date`, a `Map`, an
 * object with its own `toJSON`): what is acknowledged must be what a reader of the line gets back. A field whose value
 * is `undefined` passes (JSON leaves it out, as an absent field). One walk, the depth check's.
 *
 * @example
 * ```ts
 * assertJsonValue({ role: "user", parts: [], x_host: { n: 1 } }, "messages[0]"); // fine
 * ```
 * @throws {LimitExceededError} when it is nested too deep (as {@linkcode assertJsonDepth}).
 * @throws {InvalidInputError} naming `where` and the path of the first value that is not JSON, with what it is.
 */
export function assertJsonValue(value: unknown, where: string, details: Record<string, unknown> = {}, max: number = MAX_JSON_DEPTH): void {
  const found = walk(value, max, {});
  if (found === undefined) return;
  if (found !== NOT_JSON) assertJsonDepth(value, where, {}, max);
  // Walked again keeping paths, only to name what is refused.
  const named: { trail: (string | number)[][]; path?: (string | number)[] } = { trail: [] };
  walk(value, max, named);
  const path = named.path ?? [];
  let bad: unknown = value;
  for (const key of path) bad = (bad as Record<string | number, unknown>)[key];
  throw new InvalidInputError(`${[where, ...path].join(".")}: expected a JSON value, found ${kindOf(bad)}`, { ...details, path: path.map(String) });
}

/** What a value JSON refuses is, for the error: `a Date`, `a Map`, `NaN`, `a function`, `nothing` (a hole). */
function kindOf(value: unknown): string {
  if (value === undefined) return "nothing";
  if (typeof value === "number") return String(value);
  if (typeof value !== "object" || value === null) return `a ${typeof value}`;
  const tag = Object.prototype.toString.call(value).slice(8, -1);
  return tag === "Object" ? "an object with a toJSON method" : `a ${tag}`;
}
