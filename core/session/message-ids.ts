/**
 * A session's message ids as an append checks them (docs/FORMAT.md "A message"): an id a host gives names one message,
 * so an append may not give one twice nor one Active already holds. Checked against an index of Active's ids kept beside
 * the handle's state, so the check costs what the batch holds, not what Active holds.
 *
 * @module
 */
import { InvalidInputError } from "../errors.ts";
import type { MessageRecord } from "../schema/records.ts";
import type { NewMessage } from "./message-input.ts";

/** Active's ids to their sequences, for the Active list they were read from, and how many of its messages they cover. */
interface ActiveIds {
  count: number;
  readonly sequences: Map<string, number>;
}

// By the list itself: Active only grows by appends to its list (a commit), and every other change of it (a reload, a
// compaction, a reset) is a new list, so an index is brought up to date by the messages past `count`, or built anew.
const indexes = new WeakMap<readonly MessageRecord[], ActiveIds>();

/**
 * Refuses an append whose messages give a `message_id` twice, or one a message in `active` already holds. A message
 * without one gets a new random id, which is not checked. Builds Active's index at the first append that gives an id
 * (one pass over what the open read), then adds each commit's messages.
 *
 * @example
 * ```ts
 * import type { MessageRecord } from "sessionfold";
 * declare const active: MessageRecord[];
 * assertNewMessageIds(active, [{ role: "user", parts: [], message_id: "m_new" }]);
 * ```
 * @throws {InvalidInputError} naming the message (`messages[i].message_id`), the id, and the message of the batch or
 * the sequence that holds it; nothing was written.
 */
export function assertNewMessageIds(active: readonly MessageRecord[], messages: readonly NewMessage[]): void {
  let batch: Map<string, number> | undefined;
  for (let index = 0; index < messages.length; index++) {
    const id = messages[index]!.message_id;
    if (id === undefined) continue;
    const earlier = batch?.get(id);
    if (earlier !== undefined) refuse(index, id, `is given twice in this append (messages[${earlier}] has it)`, {});
    const sequence = activeIds(active).get(id);
    if (sequence !== undefined) refuse(index, id, `is already in the session (sequence ${sequence})`, { sequence });
    (batch ??= new Map()).set(id, index);
  }
}

function activeIds(active: readonly MessageRecord[]): Map<string, number> {
  let index = indexes.get(active);
  if (!index || index.count > active.length) indexes.set(active, index = { count: 0, sequences: new Map() });
  for (; index.count < active.length; index.count++) {
    const message = active[index.count]!;
    index.sequences.set(message.message_id, message.sequence);
  }
  return index.sequences;
}

function refuse(index: number, id: string, what: string, details: Record<string, unknown>): never {
  throw new InvalidInputError(`messages[${index}].message_id: ${JSON.stringify(id)} ${what}; nothing was written`, {
    index,
    message_id: id,
    ...details,
  });
}
