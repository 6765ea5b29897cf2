/**
 * A shallow copy of a plain object that fields can then be added to at the cost of a
 * literal's. In V8 (Node 20), an object made by a spread (`{ ...value }`, or
 * `{ ...value, field }`) takes each field added after its copied ones on a slow path,
 * about half a microsecond each, and a private field (`lines.ts` remembers a line in one)
 * about a microsecond: a commit's line, which gets its `revision` last and then its bytes,
 * paid that on every commit (docs/decisions.md, "The commit path's own CPU"). `Object.assign`
 * onto an empty literal copies the same fields, in the same order, getters read the same way,
 * and leaves the copy on the fast path. Only a value with an own `__proto__` field is copied
 * with a spread, which keeps it a field where `Object.assign` would set the prototype.
 *
 * @module
 */

/**
 * A shallow copy of `value` (its own enumerable fields, in their order), as `{ ...value }`.
 *
 * @example
 * ```ts
 * const line: Record<string, unknown> = plainClone({ role: "user", sequence: 1 });
 * line["revision"] = 2;
 * JSON.stringify(line); // '{"role":"user","sequence":1,"revision":2}'
 * ```
 */
export function plainClone<T extends object>(value: T): T {
  return Object.hasOwn(value, "__proto__") ? { ...value } : Object.assign({}, value);
}
