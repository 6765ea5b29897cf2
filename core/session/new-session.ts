/**
 * A new empty session's files from `Sessions.create`'s input: its ref, `meta.json` (revision 0)
 * and `instruction.md`, each checked before anything is written against what an open reads
 * back (docs/FORMAT.md "The write limits are the read limits").
 *
 * @module
 */
import { type SessionRef, sessionRef } from "../layout/ids.ts";
import { assertFields, objectArgument } from "../schema/arguments.ts";
import type { SessionMeta } from "../schema/records.ts";
import { assertFileFits, MAX_FILE_BYTES } from "../storage/limits.ts";
import type { StoragePort } from "../storage/port.ts";
import { newId } from "./ids.ts";
import type { CreateSessionInput } from "./registry-options.ts";
import { newMetaDocument } from "./staging.ts";

/** The bytes of a new session's files. */
export interface NewSessionFiles {
  readonly meta: Uint8Array;
  /** Absent without an `instruction`. */
  readonly instruction?: Uint8Array;
}

/**
 * The ref `create` makes: its ids, the session's a new random one unless given.
 *
 * @throws {InvalidInputError} when `input` is not an object, or `sessionId` or `instruction` is given and not a string.
 * @throws {InvalidIdError} when an id is not valid.
 */
export function createdRef(input: CreateSessionInput): SessionRef {
  objectArgument(input, "create(input)", "an object { agentId, workspaceId, … }");
  assertFields(input, "create(input)", { sessionId: "string", instruction: "string" });
  return sessionRef(input.agentId, input.workspaceId, input.sessionId ?? newId("s"));
}

/**
 * `meta.json` and `instruction.md` of the new session `ref`, created at `now`.
 *
 * @throws {InvalidInputError} naming a field `meta.json` cannot hold (`create(input).title: found 5, …`).
 * @throws {LimitExceededError} when either file would be over the store's file limit.
 */
export function newSessionFiles(storage: StoragePort, ref: SessionRef, input: CreateSessionInput, now: string): NewSessionFiles {
  const meta: SessionMeta = {
    schema_version: 1,
    session_id: ref.sessionId,
    agent_id: ref.agentId,
    workspace_id: ref.workspaceId,
    ...(input.title !== undefined ? { title: input.title } : {}),
    ...(input.modelLabel !== undefined ? { model_label: input.modelLabel } : {}),
    created_at: now,
    updated_at: now,
    message_count: 0,
    history_bytes: 0,
    ...(input.timezone !== undefined ? { timezone: input.timezone } : {}),
    revision: 0,
  };
  const document = newMetaDocument(storage, meta, "create(input)", { model_label: "modelLabel" });
  if (input.instruction === undefined) return { meta: document };
  const instruction = new TextEncoder().encode(input.instruction);
  assertFileFits(instruction.length, "instruction.md", storage.maxFileBytes ?? MAX_FILE_BYTES);
  return { meta: document, instruction };
}
