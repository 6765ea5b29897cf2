/**
 * What a host hands to `append()` and what the run loop builds: a message whose sequence,
 * id, time and part sequences are filled in on commit, and its validation into a record.
 *
 * @module
 */
import { InvalidInputError } from "../errors.ts";
import { fastParse, inMessageOrder } from "../schema/fast-check.ts";
import { assertJsonDepth } from "../schema/json-depth.ts";
import { type MessagePart, MessageRecord, nowTimestamp, type ProviderIdentity, type Usage } from "../schema/mod.ts";
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

/**
 * Validates a {@linkcode NewMessage} and fills in what is missing.
 *
 * @throws {InvalidInputError} naming the field that is not valid.
 * @throws {LimitExceededError} when it is nested deeper than `MAX_JSON_DEPTH` (checked before the schema walks it).
 */
export function toMessageRecord(message: NewMessage, clock: () => number, where = "message"): MessageRecord {
  assertJsonDepth(message, where);
  // Each part with its sequence first and the message in the schema's order, as zod returns
  // them: a message in that shape passes the hand-written check and skips zod (which would
  // return an equal value; anything else still goes to zod, which says what is wrong).
  const parts = (message.parts ?? []).map((part, i) => {
    const sequence = part.sequence ?? i + 1;
    const copy = { sequence, ...part };
    copy.sequence = sequence;
    return copy;
  });
  const candidate = inMessageOrder({
    ...message,
    record_type: "message",
    sequence: 1,
    message_id: message.message_id ?? newId("m"),
    created_at: message.created_at ?? nowTimestamp(clock),
    ...(message.role === "assistant" && message.status === undefined ? { status: "completed" } : {}),
    parts,
  });
  const parsed = fastParse(MessageRecord, candidate);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new InvalidInputError(`${where}.${issue.path.join(".")}: ${issue.message}`, { path: issue.path.map(String) });
  }
  return parsed.data;
}
