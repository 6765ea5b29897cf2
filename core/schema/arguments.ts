/**
 * The check of a caller's arguments at the public API: a value of the wrong kind from plain
 * JavaScript (no argument, `null`, a number for a string, an object without the methods an
 * interface needs) is an `InvalidInputError` naming the argument, what was expected and what
 * was found, before anything is read or written: never a `TypeError` from deeper down. One
 * `typeof` per argument, nothing per byte (the held append is on the hot path, issue 31).
 *
 * @module
 */
import { InvalidInputError } from "../errors.ts";
import { describeValue } from "./excerpt.ts";

/**
 * The error for an argument `where` that is not `expected`.
 *
 * @example
 * ```ts
 * throw wrongArgument("create(input)", "an object { agentId, workspaceId, … }", undefined);
 * // create(input): expected an object { agentId, workspaceId, … }, found nothing
 * ```
 */
export function wrongArgument(where: string, expected: string, found: unknown): InvalidInputError {
  return new InvalidInputError(`${where}: expected ${expected}, found ${describeValue(found)}`, { argument: where, expected, found: describeValue(found) });
}

/** `true` for an object that is not an array (what every options argument is). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * `value` as an object argument (options, an input record); `{}` when it is absent and `optional`.
 *
 * @example
 * ```ts
 * objectArgument(undefined, "list(options)", "an object", true); // {}
 * objectArgument(null as unknown as object, "create(input)", "an object { agentId, workspaceId }"); // throws InvalidInputError
 * ```
 * @throws {InvalidInputError} when it is anything but an object (or absent, when `optional`).
 */
export function objectArgument<T extends object>(value: T | undefined, where: string, expected: string, optional = false): T {
  if (isPlainObject(value)) return value;
  if (optional && value === undefined) return {} as T;
  throw wrongArgument(where, expected, value);
}

/** The kinds of field {@linkcode assertFields} checks. */
export type FieldKind = "string" | "function" | "boolean" | "array" | "object";

/**
 * Refuses a field of `value` that is present (not `undefined`) but not of its kind, or, for
 * a kind listed as required (`"string!"`), absent.
 *
 * @example
 * ```ts
 * assertFields({ title: 5 }, "create(input)", { title: "string" }); // throws: create(input).title: expected a string, found 5
 * ```
 * @throws {InvalidInputError} naming the first field that is wrong.
 */
export function assertFields(value: object, where: string, kinds: Readonly<Record<string, FieldKind | `${FieldKind}!`>>): void {
  for (const key in kinds) {
    const wanted = kinds[key]!;
    const required = wanted.endsWith("!");
    const kind = (required ? wanted.slice(0, -1) : wanted) as FieldKind;
    const field = (value as Record<string, unknown>)[key];
    if (field === undefined ? required : !isKind(field, kind)) throw wrongArgument(`${where}.${key}`, KIND_NAMES[kind], field);
  }
}

const KIND_NAMES: Readonly<Record<FieldKind, string>> = {
  string: "a string",
  function: "a function",
  boolean: "true or false",
  array: "an array",
  object: "an object",
};

function isKind(value: unknown, kind: FieldKind): boolean {
  switch (kind) {
    case "string":
      return typeof value === "string";
    case "function":
      return typeof value === "function";
    case "boolean":
      return typeof value === "boolean";
    case "array":
      return Array.isArray(value);
    case "object":
      return isPlainObject(value);
  }
}

/**
 * Refuses an argument that is not an object with the methods an interface needs (a storage
 * port, a key provider, a provider).
 *
 * @example
 * ```ts
 * declare const storage: unknown;
 * assertMethods(storage, "new Sessions(options).storage", "a StoragePort", ["read", "list", "replace"]);
 * ```
 * @throws {InvalidInputError} naming the argument and the first method it lacks.
 */
export function assertMethods(value: unknown, where: string, expected: string, methods: readonly string[]): void {
  if (typeof value !== "object" || value === null) throw wrongArgument(where, expected, value);
  for (const method of methods) {
    const found = (value as Record<string, unknown>)[method];
    if (typeof found !== "function") throw wrongArgument(`${where}.${method}`, `a function (${expected})`, found);
  }
}
