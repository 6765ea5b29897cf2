/**
 * The record checks' common case (core/schema/fast-check.ts): whether a record is valid and
 * zod would return it unchanged (its schema's fields first, in the schema's order, no
 * `__proto__`). One function, {@linkcode fitsAsIs}, walks a record's fields once in their
 * order against its {@linkcode Shape} (the schema's fields, each a kind of value), judging
 * each field in place; only a record that does not fit (invalid, reordered, `__proto__`)
 * reaches the rule tables of `fast-check.ts`, which say what zod returns or refuses. Every
 * line an open reads and every message appended passes here, `meta.json` first: a process's
 * first open compiles this one function for all of them and runs it in V8's interpreter,
 * where a call per field (a rule each) cost more than the comparison it made
 * (docs/decisions.md "The first open's cold code, a sixth round"). test/core/fast-check.test.ts
 * holds it to the schemas: every mutation zod returns unchanged fits, nothing zod refuses or
 * reorders does.
 *
 * @module
 */
import { isTimestampText } from "./timestamp-check.ts";
import { META_SCHEMA_VERSION } from "./version.ts";

type Plain = Record<string, unknown>;

/**
 * What a field holds: a kind of value, with its argument (a literal, the options, a nested
 * shape) where it has one. Numbers, so that {@linkcode fitsAsIs}'s `switch` over them is a
 * jump table in V8's bytecode (its cases are these literals, not names it would load).
 */
export const Kind = {
  /** Any string. */
  Text: 0,
  /** A non-empty string. */
  Name: 1,
  /** A `Timestamp`. */
  Time: 2,
  /** A safe integer ≥ 1. */
  Sequence: 3,
  /** A safe integer ≥ 0. */
  Count: 4,
  /** A safe integer. */
  Int: 5,
  /** Anything but `undefined`. */
  Present: 6,
  /** The argument itself. */
  Literal: 7,
  /** One of the argument's values. */
  OneOf: 8,
  /** An object of the argument's shape. */
  Object: 9,
  /** An array of message parts, each of the shape its `type` names, their sequences unique. */
  Parts: 10,
} as const;
export type Kind = (typeof Kind)[keyof typeof Kind];

/** An object's fields in the schema's order: parallel arrays, read by index in {@linkcode fitsAsIs}'s loop. */
export interface Shape {
  readonly keys: readonly string[];
  readonly kinds: readonly Kind[];
  readonly args: readonly unknown[];
  /** Bit `i` set when field `i` is required. */
  readonly required: number;
  /** A rule over the whole object (zod's `.refine`), when it has one. */
  readonly refine?: (value: Plain) => boolean;
}

type FieldSpec = readonly [key: string, kind: Kind, arg?: unknown, optional?: "optional"];

function shape(fields: readonly FieldSpec[], refine?: (value: Plain) => boolean): Shape {
  let required = 0;
  fields.forEach(([, , , optional], i) => (required |= optional ? 0 : 1 << i));
  return {
    keys: fields.map(([key]) => key),
    kinds: fields.map(([, kind]) => kind),
    args: fields.map(([, , arg]) => arg),
    required,
    ...(refine ? { refine } : {}),
  };
}

/**
 * Whether `value` is valid as an object of `shape` and zod returns it unchanged: its own
 * enumerable fields (in `for…in` order) are the shape's in its order, a required one never
 * skipped, unknown fields only after them (never `__proto__`), each field of its kind.
 *
 * @example
 * ```ts
 * const lock = { pid: 7, hostname: "h", runtime: "node", operation: "append", created_at: "2026-12-02T13:00:00Z" };
 * fitsAsIs(lock, LOCK_SHAPE); // true
 * const reordered = { hostname: "h", pid: 7, runtime: "node", operation: "append", created_at: "2026-12-02T13:00:00Z" };
 * fitsAsIs(reordered, LOCK_SHAPE); // false: zod would put pid first
 * ```
 */
export function fitsAsIs(value: unknown, shape: Shape): boolean {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const { keys, kinds, args, required } = shape;
  let next = 0;
  for (const key in value) {
    while (next < keys.length && keys[next] !== key) {
      if ((required >> next) & 1) return false;
      next++;
    }
    if (next === keys.length) {
      // Not a field still ahead: an unknown field (every field after it must be unknown too), or one out of order.
      if (key === "__proto__" || keys.includes(key)) return false;
      continue;
    }
    const at = next++;
    const field = (value as Plain)[key];
    if (field === undefined && !((required >> at) & 1)) continue;
    switch (kinds[at]) {
      case 0: // Kind.Text
        if (typeof field !== "string") return false;
        break;
      case 1: // Kind.Name
        if (typeof field !== "string" || field.length === 0) return false;
        break;
      case 2: // Kind.Time
        if (typeof field !== "string" || !isTimestampText(field)) return false;
        break;
      case 3: // Kind.Sequence
        if (!Number.isSafeInteger(field) || (field as number) < 1) return false;
        break;
      case 4: // Kind.Count
        if (!Number.isSafeInteger(field) || (field as number) < 0) return false;
        break;
      case 5: // Kind.Int
        if (!Number.isSafeInteger(field)) return false;
        break;
      case 6: // Kind.Present
        if (field === undefined) return false;
        break;
      case 7: // Kind.Literal
        if (field !== args[at]) return false;
        break;
      case 8: // Kind.OneOf
        if (!(args[at] as unknown[]).includes(field)) return false;
        break;
      case 9: // Kind.Object
        if (!fitsAsIs(field, args[at] as Shape)) return false;
        break;
      case 10: // Kind.Parts
        if (!Array.isArray(field)) return false;
        for (let i = 0; i < field.length; i++) {
          const part = field[i];
          const partShape = typeof part === "object" && part !== null ? PART_SHAPES.get((part as Plain)["type"]) : undefined;
          if (partShape === undefined || !fitsAsIs(part, partShape)) return false;
        }
        if (!uniqueParts(field)) return false;
        break;
    }
  }
  for (; next < keys.length; next++) if ((required >> next) & 1) return false;
  return shape.refine === undefined || shape.refine(value as Plain);
}

/**
 * Whether the parts' sequences are unique (a message's refinement).
 *
 * @example
 * ```ts
 * uniqueParts([{ sequence: 1 }, { sequence: 1 }]); // false
 * ```
 */
export function uniqueParts(parts: readonly Plain[]): boolean {
  // One part, most messages, is unique without a set.
  if (parts.length < 2) return true;
  const seen = new Set<unknown>();
  for (let i = 0; i < parts.length; i++) seen.add(parts[i]!["sequence"]);
  return seen.size === parts.length;
}

/**
 * Whether a file part carries its content (`data` or `url`): the part's refinement.
 *
 * @example
 * ```ts
 * fileHasContent({ type: "file", media_type: "a/b" }); // false
 * ```
 */
export function fileHasContent(part: Plain): boolean {
  return part["data"] !== undefined || part["url"] !== undefined;
}

/**
 * Whether a committed message does not stream (status `streaming` is the draft's alone).
 *
 * @example
 * ```ts
 * notStreaming({ status: "completed" }); // true
 * ```
 */
export function notStreaming(message: Plain): boolean {
  return message["status"] !== "streaming";
}

const textLike = (type: string) => shape([["sequence", Kind.Sequence], ["type", Kind.Literal, type], ["text", Kind.Text]]);

/** Each part's shape by its `type` (`MessagePart`, core/schema/message.ts). */
export const PART_SHAPES: ReadonlyMap<unknown, Shape> = new Map<unknown, Shape>([
  ["text", textLike("text")],
  ["reasoning", textLike("reasoning")],
  ["reasoning-summary", textLike("reasoning-summary")],
  [
    "tool",
    shape([
      ["sequence", Kind.Sequence],
      ["type", Kind.Literal, "tool"],
      ["tool_call_id", Kind.Name],
      ["tool_name", Kind.Name],
      ["state", Kind.OneOf, ["input-available", "output-available", "output-error"]],
      ["input", Kind.Present],
      ["output", Kind.Present, undefined, "optional"],
      ["error", Kind.Text, undefined, "optional"],
    ]),
  ],
  [
    "file",
    shape([
      ["sequence", Kind.Sequence],
      ["type", Kind.Literal, "file"],
      ["media_type", Kind.Name],
      ["name", Kind.Text, undefined, "optional"],
      ["data", Kind.Text, undefined, "optional"],
      ["url", Kind.Text, undefined, "optional"],
    ], fileHasContent),
  ],
  [
    "provider-context",
    shape([
      ["sequence", Kind.Sequence],
      ["type", Kind.Literal, "provider-context"],
      ["provider", Kind.Name],
      ["api", Kind.Name],
      ["model", Kind.Name],
      ["data", Kind.Present],
    ]),
  ],
]);

/** `Usage`. */
const USAGE_SHAPE: Shape = shape([
  ["input_tokens", Kind.Count],
  ["output_tokens", Kind.Count],
  ["total_tokens", Kind.Count, undefined, "optional"],
  ["cost_usd_micros", Kind.Count, undefined, "optional"],
]);
const IDENTITY_SHAPE = shape([["provider", Kind.Name], ["api", Kind.Name], ["model", Kind.Name]]);

function messageShape(draft: boolean): Shape {
  return shape([
    ["record_type", Kind.Literal, "message"],
    ["sequence", Kind.Sequence],
    ["message_id", Kind.Name],
    draft ? ["role", Kind.Literal, "assistant"] : ["role", Kind.OneOf, ["user", "assistant"]],
    ["created_at", Kind.Time],
    draft ? ["status", Kind.Literal, "streaming"] : ["status", Kind.OneOf, ["completed", "stopped", "failed", "streaming"], "optional"],
    ["parts", Kind.Parts],
    ["usage", Kind.Object, USAGE_SHAPE, "optional"],
    ["provider", Kind.Object, IDENTITY_SHAPE, "optional"],
  ], draft ? undefined : notStreaming);
}

/** `MessageRecord`: a committed message. */
export const MESSAGE_SHAPE: Shape = messageShape(false);
/** `DraftRecord`: the streaming draft. */
export const DRAFT_SHAPE: Shape = messageShape(true);
/** `SummaryRecord`: a segment's footer. */
export const SUMMARY_SHAPE: Shape = shape([
  ["record_type", Kind.Literal, "summary"],
  ["session_id", Kind.Name],
  ["summary_id", Kind.Name],
  ["through_sequence", Kind.Sequence],
  ["text", Kind.Name],
  ["created_at", Kind.Time],
]);
/** `SessionMeta`: `meta.json`. */
export const META_SHAPE: Shape = shape([
  ["schema_version", Kind.Literal, META_SCHEMA_VERSION],
  ["session_id", Kind.Name],
  ["agent_id", Kind.Name],
  ["workspace_id", Kind.Name],
  ["title", Kind.Text, undefined, "optional"],
  ["model_label", Kind.Text, undefined, "optional"],
  ["created_at", Kind.Time],
  ["updated_at", Kind.Time],
  ["message_count", Kind.Count],
  ["history_bytes", Kind.Count],
  ["timezone", Kind.Text, undefined, "optional"],
  ["revision", Kind.Count],
  ["forked_from", Kind.Object, shape([["session_id", Kind.Name], ["through_sequence", Kind.Count]]), "optional"],
  [
    "compaction",
    Kind.Object,
    shape([
      ["completed", Kind.Count],
      ["removed_messages", Kind.Count],
      ["removed_tokens_estimate", Kind.Count],
      ["cost_usd_micros", Kind.Count, undefined, "optional"],
      ["last_before_tokens", Kind.Count, undefined, "optional"],
      ["last_after_tokens", Kind.Count, undefined, "optional"],
      ["summary_usage", Kind.Object, USAGE_SHAPE, "optional"],
    ]),
    "optional",
  ],
  ["provider", Kind.Object, IDENTITY_SHAPE, "optional"],
]);
/** `WriterLockRecord`: `writer.lock`. */
export const LOCK_SHAPE: Shape = shape([
  ["pid", Kind.Int],
  ["hostname", Kind.Text],
  ["runtime", Kind.Name],
  ["operation", Kind.Name],
  ["created_at", Kind.Time],
]);
