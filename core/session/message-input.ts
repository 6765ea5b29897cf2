/**
 * What a host hands to `append()` and what the run loop builds: a message whose sequence,
 * id, time and part sequences are filled in on commit, and its validation into a record.
 *
 * @module
 */
import { InvalidInputError } from "../errors.ts";
import { isPlainObject, wrongArgument } from "../schema/arguments.ts";
import { messageCheck, type MessagePart, type MessageRecord, nowTimestamp, type ProviderIdentity, type Usage } from "../schema/records.ts";
import { assertJsonValue } from "../schema/json-depth.ts";
import { newId } from "./ids.ts";

/** A message to commit: sequence, id, time and part sequences are filled in when absent. */
export interface NewMessage {
  readonly role: "user" | "assistant";
  readonly parts: readonly (Omit<MessagePart, "sequence"> & { sequence?: number })[];
  readonly status?: "completed" | "stopped" | "failed";
  readonly usage?: Usage;
  readonly provider?: ProviderIdentity;
  readonly message_id?: string;
  readonly created_at?: string;
  readonly [extra: string]: unknown;
}

type Plain = Record<string, unknown>;

/** The message schema's fields, which {@linkcode toMessageRecord} sets by name; a host's other fields follow them. */
const SCHEMA_FIELDS = new Set(["record_type", "sequence", "message_id", "role", "created_at", "status", "parts", "usage", "provider"]);

/**
 * Validates a {@linkcode NewMessage} and fills in what is missing.
 *
 * @example
 * ```ts
 * const record = toMessageRecord({ role: "user", parts: [{ type: "text", text: "hi" }] }, Date.now);
 * record.parts[0]?.sequence; // 1
 * ```
 * @throws {InvalidInputError} naming the field that is not valid.
 * @throws {InvalidInputError} naming the path of a value that is not JSON (a function, `NaN`, a `Date` …).
 * @throws {LimitExceededError} when it is nested deeper than `MAX_JSON_DEPTH` (checked before the schema walks it).
 */
export function toMessageRecord(message: NewMessage, clock: () => number, where = "message"): MessageRecord {
  if (!isPlainObject(message)) throw wrongArgument(where, "a message object { role, parts }", message);
  assertJsonValue(message, where); // a host's own fields are kept as given, so they must be JSON (docs/FORMAT.md "A message")
  // Built field by field in the order the schema returns (its fields in its order, then the
  // host's own in theirs; each part with its sequence first), so the hand-written check
  // (core/schema/fast-check.ts) takes it as it is, without a copy: every commit pays for
  // this, and spreads into literals with other fields were most of its cost. The check says
  // what is wrong, as zod would. An optional field left `undefined` is left out, as in the line.
  const record: Plain = { record_type: "message", sequence: 1, message_id: message.message_id ?? newId("m") };
  if (message.role !== undefined) record["role"] = message.role;
  record["created_at"] = message.created_at ?? nowTimestamp(clock);
  if (message.status !== undefined) record["status"] = message.status;
  else if (message.role === "assistant") record["status"] = "completed";
  record["parts"] = numberedParts(message.parts);
  if (message.usage !== undefined) record["usage"] = message.usage;
  if (message.provider !== undefined) record["provider"] = message.provider;
  copyFields(message, record, SCHEMA_FIELDS);
  const parsed = messageCheck.safeParse(record);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new InvalidInputError(`${where}.${issue.path.join(".")}: ${issue.message}`, { path: issue.path.map(String) });
  }
  return parsed.data;
}

/**
 * Copies of `parts` with their sequences first (the index from 1 where a part has none); anything that is not a part
 * (or no `parts` at all: a message record requires them, docs/FORMAT.md "A message") as it is, for the check to name.
 */
function numberedParts(parts: unknown): unknown {
  if (!Array.isArray(parts)) return parts;
  const numbered: unknown[] = new Array(parts.length);
  for (let i = 0; i < parts.length; i++) {
    const part: unknown = parts[i];
    if (typeof part !== "object" || part === null) {
      numbered[i] = part;
      continue;
    }
    const copy: Plain = { sequence: (part as Plain)["sequence"] ?? i + 1 };
    copyFields(part as Plain, copy, PART_SEQUENCE);
    numbered[i] = copy;
  }
  return numbered;
}

const PART_SEQUENCE = new Set(["sequence"]);

/**
 * Copies the own enumerable fields of `from` not in `skip` to `to`, in their order (as a spread would; `__proto__` as a
 * field, never the prototype). A field left `undefined` is left out, as JSON leaves it out of the line.
 */
function copyFields(from: object, to: Plain, skip: ReadonlySet<string>): void {
  for (const key of Object.keys(from)) {
    if (skip.has(key)) continue;
    const value = (from as Plain)[key];
    if (value === undefined) continue;
    if (key === "__proto__") Object.defineProperty(to, key, { value, enumerable: true, writable: true, configurable: true });
    else to[key] = value;
  }
}
