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
export type FieldKind = "string" | "function" | "boolean" | "array" | "object" | "abort-signal";

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
  "abort-signal": "an AbortSignal { aborted, addEventListener, removeEventListener }",
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
    case "abort-signal":
      return isAbortSignal(value);
  }
}

/**
 * `true` for what a run or a compaction uses of a signal: `aborted` a boolean, and the listener
 * calls. Checked by shape, never by class: a signal of another realm (a frame, a worker's
 * `vm` context) or a polyfill's is not an instance of this realm's `AbortSignal`.
 *
 * @example
 * ```ts
 * isAbortSignal(new AbortController().signal); // true
 * isAbortSignal({ aborted: "no" }); // false
 * ```
 */
export function isAbortSignal(value: unknown): value is AbortSignal {
  if (typeof value !== "object" || value === null) return false;
  const signal = value as Record<string, unknown>;
  return typeof signal["aborted"] === "boolean" && typeof signal["addEventListener"] === "function" &&
    typeof signal["removeEventListener"] === "function";
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

/**
 * Every field an options object of type `T` may have, each `true`: typed so that the compiler
 * refuses a list that misses a field of `T` or names one `T` lacks, and the list cannot drift
 * from the type it checks. Lists compose by spreading (`{ ...SESSION_OPTION_FIELDS, hold: true }`).
 */
export type KnownFields<T> = { readonly [K in keyof T]-?: true };

/**
 * Refuses a field of an options object that is not one of `known` (docs/decisions.md "Unknown
 * option fields are refused"): a misspelt option (`signl`, `lazymeta`) from plain JavaScript
 * would otherwise be ignored, and the call would do something other than what was asked. A
 * field whose value is `undefined` says nothing and passes. One lookup per field given.
 *
 * @example
 * ```ts
 * const RUN_FIELDS: KnownFields<{ provider: unknown; signal?: unknown }> = { provider: true, signal: true };
 * assertKnownFields({ provider: {}, signl: 1 }, "run(input, options)", RUN_FIELDS);
 * // throws: run(input, options): unknown field "signl" (did you mean "signal"?); the fields are provider, signal
 * ```
 * @throws {InvalidInputError} naming the first unknown field, where it was given, the fields there are, and the
 * nearest of them when one is close (`details`: `argument`, `field`, `known`, `suggestion`).
 */
export function assertKnownFields(value: object, where: string, known: Readonly<Record<string, true>>): void {
  // `for…in` sees inherited fields too: they are read like own ones (`options.signal` of an object made by `Object.create`).
  for (const key in value) {
    if (!Object.hasOwn(known, key) && (value as Record<string, unknown>)[key] !== undefined) throw unknownField(where, key, Object.keys(known));
  }
}

/**
 * `value` as an options object whose fields are all `known`; `expected` says what it should have been, when it is no object.
 *
 * @example
 * ```ts
 * knownOptions({ archived: true }, "delete(ref, options)", { archived: true }); // { archived: true }
 * knownOptions({ archive: true }, "delete(ref, options)", { archived: true }); // throws InvalidInputError: … unknown field "archive" (did you mean "archived"?) …
 * ```
 * @throws {InvalidInputError} when it is not an object, or has a field not `known`.
 */
export function knownOptions<T extends object>(value: T | undefined, where: string, known: Readonly<Record<string, true>>, expected = "an object"): T {
  const options = objectArgument(value, where, expected);
  assertKnownFields(options, where, known);
  return options;
}

function unknownField(where: string, field: string, known: readonly string[]): InvalidInputError {
  const suggestion = nearestName(field, known);
  const hint = suggestion === undefined ? "" : ` (did you mean ${JSON.stringify(suggestion)}?)`;
  return new InvalidInputError(`${where}: unknown field ${JSON.stringify(field)}${hint}; the fields are ${known.join(", ")}`, {
    argument: where,
    field,
    known,
    ...(suggestion === undefined ? {} : { suggestion }),
  });
}

/**
 * The name of `names` closest to `name`, case aside: one it begins (`before` → `beforeSequence`), else the nearest within
 * two edits or a third of its letters, if any.
 */
function nearestName(name: string, names: readonly string[]): string | undefined {
  const wanted = name.toLowerCase();
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(name.length / 3)) + 1;
  for (const candidate of names) {
    const known = candidate.toLowerCase();
    const distance = wanted.length >= 4 && known.startsWith(wanted) ? 1 : editDistance(wanted, known);
    if (distance < bestDistance) [best, bestDistance] = [candidate, distance];
  }
  return best;
}

/** The fewest letters inserted, deleted, replaced or swapped with their neighbour to turn `a` into `b` (`titel` → `title`: 1). */
function editDistance(a: string, b: string): number {
  const rows: number[][] = [Array.from({ length: b.length + 1 }, (_, j) => j)];
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row[j] = Math.min(rows[i - 1]![j]! + 1, row[j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) row[j] = Math.min(row[j]!, rows[i - 2]![j - 2]! + 1);
    }
    rows.push(row);
  }
  return rows[a.length]![b.length]!;
}
