/**
 * Hand-written checks of the records a store is read by (a message line, a segment's footer,
 * `meta.json`, the draft, `writer.lock`), without zod: the read path (an open, `show`) loads
 * neither zod nor the schemas (docs/decisions.md "zod off the read path"). Each check takes
 * exactly what its zod schema (core/schema/message.ts, meta.ts, summary.ts) takes and returns
 * what the schema returns: the value itself when its fields are already in the schema's
 * order, else a copy with the schema's fields first, in its order, then the others
 * (`__proto__` dropped, as zod drops it). What it refuses gets zod's issues, same path and
 * same wording, the first of them at least. Each record's fields are written once, as its
 * shape (`as-is.ts`, whose `fitsAsIs` takes the common case); the rules here are made from
 * the shapes. The schemas stay the public contract;
 * test/core/fast-check.test.ts holds each check to its schema on a corpus of records and
 * their mutations (JSON values: what a reader gets from `JSON.parse`, or a host's message).
 *
 * @module
 */
import type { DraftRecord, MessageRecord } from "./message.ts";
import type { SessionMeta, WriterLockRecord } from "./meta.ts";
import type { SummaryRecord } from "./summary.ts";
import {
  DRAFT_SHAPE,
  fileHasContent,
  fitsAsIs,
  Kind,
  LOCK_SHAPE,
  MESSAGE_SHAPE,
  META_SHAPE,
  notStreaming,
  PART_SHAPES,
  type Shape,
  SUMMARY_SHAPE,
  uniqueParts,
} from "./as-is.ts";
import { isTimestampText } from "./timestamp-check.ts";

/** What a check refused, as zod words an issue: where (the path from the record) and what was expected. */
export interface CheckIssue {
  readonly path: (string | number)[];
  readonly message: string;
}

/** What {@linkcode RecordCheck.safeParse} returns: the shape of zod's `safeParse` result. */
export type CheckResult<T> = { success: true; data: T; error?: undefined } | { success: false; data?: undefined; error: { issues: CheckIssue[] } };

/** A record's hand-written check, called as its zod schema's `safeParse` is. */
export interface RecordCheck<T> {
  safeParse(value: unknown): CheckResult<T>;
}

type Plain = Record<string, unknown>;
type Path = (string | number)[];

/**
 * One rule of a record: whether a value passes, the issues of one that does not, and what zod
 * returns of one that does, made from the record's shape (`as-is.ts`). Whether zod returns a
 * record unchanged, the common case, is judged before any rule, by one function over the
 * shape (`fitsAsIs`).
 */
interface Rule {
  valid(value: unknown): boolean;
  explain(value: unknown, path: Path, into: CheckIssue[]): void;
  /** zod's output of a valid value: the value itself when nothing in it is reordered; absent for a leaf. */
  readonly output?: (value: unknown) => unknown;
}

/** zod's name of what it received. */
function received(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isNaN(value) ? "NaN" : Number.isFinite(value) ? "number" : value > 0 ? "Infinity" : "-Infinity";
  return typeof value;
}

const wrongType = (expected: string, value: unknown) => `Invalid input: expected ${expected}, received ${received(value)}`;

/** A rule of a leaf value: one judgement, one message (`message` only asked of a refused value). */
function leaf(valid: (value: unknown) => boolean, message: (value: unknown) => string): Rule {
  return { valid, explain: (value, path, into) => void into.push({ path, message: message(value) }) };
}

const text = leaf((v) => typeof v === "string", (v) => wrongType("string", v));
const name = leaf(
  (v) => typeof v === "string" && v.length > 0,
  (v) => (typeof v === "string" ? "Too small: expected string to have >=1 characters" : wrongType("string", v)),
);
const time = leaf((v) => typeof v === "string" && isTimestampText(v), (v) => (typeof v === "string" ? "Invalid ISO datetime" : wrongType("string", v)));
/** Anything but `undefined` (a required field of any JSON value). */
const present = leaf((v) => v !== undefined, (v) => wrongType("nonoptional", v));
const literal = (expected: string | number) => leaf((v) => v === expected, () => `Invalid input: expected ${JSON.stringify(expected)}`);
function oneOf(...values: string[]): Rule {
  const set = new Set<unknown>(values);
  return leaf((v) => set.has(v), () => `Invalid option: expected one of ${values.map((v) => JSON.stringify(v)).join("|")}`);
}

/** `z.int()`, with `.min(min)` when given: a safe integer. */
function int(min?: number): Rule {
  const valid = (v: unknown) => Number.isSafeInteger(v) && (min === undefined || (v as number) >= min);
  return {
    valid,
    explain(v, path, into) {
      if (typeof v !== "number" || !Number.isFinite(v)) return void into.push({ path, message: wrongType("number", v) });
      if (!Number.isInteger(v)) return void into.push({ path, message: wrongType("int", v) });
      if (v > Number.MAX_SAFE_INTEGER) into.push({ path, message: `Too big: expected int to be <=${Number.MAX_SAFE_INTEGER}` });
      if (v < Number.MIN_SAFE_INTEGER) into.push({ path, message: `Too small: expected int to be >=${Number.MIN_SAFE_INTEGER}` });
      if (min !== undefined && v < min) into.push({ path, message: `Too small: expected number to be >=${min}` });
    },
  };
}
const count = int(0);
const sequence = int(1);

const isObject = (v: unknown): v is Plain => typeof v === "object" && v !== null && !Array.isArray(v);

/** A field of an object: its rule, and whether it may be absent (or `undefined`). */
type Field = readonly [key: string, rule: Rule, optional?: "optional"];
/** A refinement run when every field passed: zod's `.refine`, with its message and path. */
interface Refinement {
  readonly holds: (value: Plain) => boolean;
  readonly message: string;
  readonly path: Path;
}

/** `z.looseObject(fields)` with its refinements. */
function object(fields: readonly Field[], refinements: readonly Refinement[] = []): Rule {
  const place = new Map(fields.map(([key], i) => [key, i]));
  // Parallel arrays and index loops: the check runs for every line an open reads and every message appended.
  const keys = fields.map(([key]) => key);
  const rules = fields.map(([, rule]) => rule);
  const optional = fields.map(([, , optional]) => optional !== undefined);
  const nested = fields.filter(([, rule]) => rule.output !== undefined).map(([key, rule]) => [key, rule.output!] as const);
  const output = (v: Plain, key: string, out: ((value: unknown) => unknown) | undefined) => (out && key in v ? out(v[key]) : v[key]);
  return {
    valid(v) {
      if (!isObject(v)) return false;
      for (let i = 0; i < keys.length; i++) {
        const field = v[keys[i]!];
        if (!(optional[i] && field === undefined) && !rules[i]!.valid(field)) return false;
      }
      for (let i = 0; i < refinements.length; i++) if (!refinements[i]!.holds(v)) return false;
      return true;
    },
    explain(v, path, into) {
      if (!isObject(v)) return void into.push({ path, message: wrongType("object", v) });
      const before = into.length;
      for (const [key, rule, optional] of fields) {
        const field = v[key];
        if (!(optional && field === undefined) && !rule.valid(field)) rule.explain(field, [...path, key], into);
      }
      if (into.length > before) return;
      for (const r of refinements) if (!r.holds(v)) into.push({ path: [...path, ...r.path], message: r.message });
    },
    output(value) {
      const v = value as Plain;
      let same = inOrder(v, place);
      for (let i = 0; same && i < nested.length; i++) {
        const [key, out] = nested[i]!;
        if (key in v && out(v[key]) !== v[key]) same = false;
      }
      if (same) return v;
      // A copy, as zod returns it: the schema's fields in its order (nested objects likewise), then the others.
      const copy: Plain = {};
      for (const [key, rule] of fields) if (key in v) copy[key] = output(v, key, rule.output);
      for (const key in v) if (!place.has(key) && key !== "__proto__") copy[key] = v[key];
      return copy;
    },
  };
}

/** `true` when the object's schema fields come first, in the schema's order, and it has no `__proto__` field. */
function inOrder(value: Plain, place: ReadonlyMap<string, number>): boolean {
  let last = -1;
  let extra = false;
  for (const key in value) {
    const at = place.get(key);
    if (at === undefined) {
      if (key === "__proto__") return false;
      extra = true;
    } else {
      if (extra || at < last) return false;
      last = at;
    }
  }
  return true;
}

/** `z.array(rule)`. */
function array(rule: Rule): Rule {
  return {
    valid(v) {
      if (!Array.isArray(v)) return false;
      for (let i = 0; i < v.length; i++) if (!rule.valid(v[i])) return false;
      return true;
    },
    explain(v, path, into) {
      if (!Array.isArray(v)) return void into.push({ path, message: wrongType("array", v) });
      for (const [i, item] of v.entries()) if (!rule.valid(item)) rule.explain(item, [...path, i], into);
    },
    output(value) {
      const v = value as unknown[];
      let copy: unknown[] | undefined;
      for (let i = 0; i < v.length; i++) {
        const out = rule.output!(v[i]);
        if (out !== v[i]) (copy ??= v.slice())[i] = out;
      }
      return copy ?? v;
    },
  };
}

/** `z.discriminatedUnion("type", …)`: the rule of each `type`. */
function byType(options: Readonly<Record<string, Rule>>): Rule {
  const types = Object.keys(options);
  const optionOf = (v: Plain) => (typeof v["type"] === "string" && Object.hasOwn(options, v["type"]) ? options[v["type"]] : undefined);
  return {
    valid: (v) => isObject(v) && optionOf(v)?.valid(v) === true,
    explain(v, path, into) {
      if (!isObject(v)) return void into.push({ path, message: wrongType("object", v) });
      const option = optionOf(v);
      if (option) return option.explain(v, path, into);
      into.push({ path: [...path, "type"], message: `Invalid discriminator value. Expected ${types.map((t) => `'${t}'`).join(" | ")}` });
    },
    output: (v) => optionOf(v as Plain)!.output!(v),
  };
}

/** What zod says of a refinement that fails, by the shape's predicate (`as-is.ts`). */
const REFINEMENT_ISSUES = new Map<(value: Plain) => boolean, Omit<Refinement, "holds">>([
  [notStreaming, { message: 'status "streaming" exists only in assistant_message.json', path: ["status"] }],
  [fileHasContent, { message: "a file part needs data or url", path: [] }],
]);
const UNIQUE_PARTS: Refinement = {
  holds: (m) => uniqueParts(m["parts"] as Plain[]),
  message: "part sequences must be unique within a message",
  path: ["parts"],
};

/** The fields of an object of `shape`, each with the rule of its kind. */
function fieldsOf(shape: Shape): Field[] {
  return shape.keys.map((key, i): Field => {
    const rule = kindRule(shape.kinds[i]!, shape.args[i]);
    return (shape.required >> i) & 1 ? [key, rule] : [key, rule, "optional"];
  });
}

/** The rule of an object of `shape`: its fields' rules, then its refinement and, for a message, its parts' unique sequences. */
function ruleOf(shape: Shape): Rule {
  const refinements: Refinement[] = [];
  if (shape.refine) refinements.push({ holds: shape.refine, ...REFINEMENT_ISSUES.get(shape.refine)! });
  if (shape.kinds.includes(Kind.Parts)) refinements.push(UNIQUE_PARTS);
  return object(fieldsOf(shape), refinements);
}

/** The rule of a field of `kind` (its argument `arg`, where it has one). */
function kindRule(kind: Kind, arg: unknown): Rule {
  switch (kind) {
    case Kind.Text:
      return text;
    case Kind.Name:
      return name;
    case Kind.Time:
      return time;
    case Kind.Sequence:
      return sequence;
    case Kind.Count:
      return count;
    case Kind.Int:
      return int();
    case Kind.Present:
      return present;
    case Kind.Literal:
      return literal(arg as string | number);
    case Kind.OneOf:
      return oneOf(...(arg as string[]));
    case Kind.Object:
      return ruleOf(arg as Shape);
    case Kind.Parts:
      return array(part);
  }
}

const part = byType(Object.fromEntries([...PART_SHAPES].map(([type, shape]) => [type as string, ruleOf(shape)])));

/** A record's check: whether it fits its `shape` as is (zod would return it unchanged) first, then its rule. */
function check<T>(rule: Rule, shape: Shape): RecordCheck<T> {
  return {
    safeParse: (value) => fitsAsIs(value, shape) ? { success: true, data: value as T } : byRule<T>(rule, value),
  };
}

/** What zod's `safeParse` returns of a value that does not fit its shape as is: a reordered copy, or the rule's issues (apart: a sound record never runs it). */
function byRule<T>(rule: Rule, value: unknown): CheckResult<T> {
  if (rule.valid(value)) return { success: true, data: rule.output!(value) as T };
  const issues: CheckIssue[] = [];
  rule.explain(value, [], issues);
  return { success: false, error: { issues } };
}

/** {@linkcode MessageRecord}'s check: a committed message. */
export const messageCheck: RecordCheck<MessageRecord> = check(ruleOf(MESSAGE_SHAPE), MESSAGE_SHAPE);
/** {@linkcode DraftRecord}'s check: the streaming draft. */
export const draftCheck: RecordCheck<DraftRecord> = check(ruleOf(DRAFT_SHAPE), DRAFT_SHAPE);
/** {@linkcode SummaryRecord}'s check: a segment's footer. */
export const summaryCheck: RecordCheck<SummaryRecord> = check(ruleOf(SUMMARY_SHAPE), SUMMARY_SHAPE);
/** {@linkcode SessionMeta}'s check: `meta.json`. */
export const metaCheck: RecordCheck<SessionMeta> = check(ruleOf(META_SHAPE), META_SHAPE);
/** {@linkcode WriterLockRecord}'s check: `writer.lock`. */
export const lockCheck: RecordCheck<WriterLockRecord> = check(ruleOf(LOCK_SHAPE), LOCK_SHAPE);

const META_FIELD_RULES = new Map(
  fieldsOf(META_SHAPE).map(([key, rule, optional]) => [key, optional ? (v: unknown) => v === undefined || rule.valid(v) : rule.valid]),
);

/**
 * Whether `value` is valid as `meta.json`'s field `key` on its own (`true` for a field the
 * schema does not name: it is kept as is): what a repair salvages of an unreadable `meta.json`.
 *
 * @example
 * ```ts
 * metaFieldValid("title", "Notes"); // true
 * metaFieldValid("title", 7); // false
 * ```
 */
export function metaFieldValid(key: string, value: unknown): boolean {
  return META_FIELD_RULES.get(key)?.(value) ?? true;
}
