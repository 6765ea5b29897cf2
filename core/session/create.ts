/**
 * A new empty session, as `Sessions.create` makes it: its ref, `meta.json` at revision 0
 * (created exclusively, so two creates of one id never both succeed) and, with an
 * instruction, `instruction.md`, each checked before anything is written against what an
 * open reads back (docs/FORMAT.md "The write limits are the read limits").
 *
 * @module
 */
import { InvalidInputError } from "../errors.ts";
import { formatSessionRef, type SessionRef, sessionRef } from "../layout/ids.ts";
import { sessionPaths } from "../layout/paths.ts";
import { assertFields, type KnownFields, knownOptions } from "../schema/arguments.ts";
import { nowTimestamp, type SessionMeta } from "../schema/records.ts";
import { assertFileFits, MAX_FILE_BYTES } from "../storage/limits.ts";
import type { StoragePort } from "../storage/port.ts";
import { newId } from "./ids.ts";
import type { CreateSessionInput } from "./registry-options.ts";
import { alreadyExists, newMetaDocument, sessionExists } from "./staging.ts";

/** The bytes of a new session's files. */
export interface NewSessionFiles {
  readonly meta: Uint8Array;
  /** Absent without an `instruction`. */
  readonly instruction?: Uint8Array;
}

const CREATE_INPUT_FIELDS: KnownFields<CreateSessionInput> = {
  agentId: true,
  workspaceId: true,
  sessionId: true,
  title: true,
  instruction: true,
  modelLabel: true,
  timezone: true,
};

/**
 * The ref `create` makes: its ids, the session's a new random one unless given.
 *
 * @throws {InvalidInputError} when `input` is not an object, has a field `create` does not know, or `sessionId` or
 * `instruction` is given and not a string.
 * @throws {InvalidIdError} when an id is not valid.
 */
export function createdRef(input: CreateSessionInput): SessionRef {
  knownOptions(input, "create(input)", CREATE_INPUT_FIELDS, "an object { agentId, workspaceId, … }");
  assertFields(input, "create(input)", { sessionId: "string", instruction: "string" });
  return sessionRef(input.agentId, input.workspaceId, input.sessionId ?? newId("s"));
}

/**
 * `meta.json` and `instruction.md` of the new session `ref`, created at `now`.
 *
 * @throws {InvalidInputError} naming a field `meta.json` cannot hold (`create(input).title: found 5, …`).
 * @throws {LimitExceededError} when either file would be over the store's file limit.
 */
function newSessionFiles(storage: StoragePort, ref: SessionRef, input: CreateSessionInput, now: string): NewSessionFiles {
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

/**
 * Writes the files of the new session `ref` described by `input`.
 *
 * @throws {InvalidInputError} when a session with that id exists (live or archived), or a field is one `meta.json` cannot hold.
 * @throws {LimitExceededError} when either file would be over the store's file limit.
 */
export async function createSessionFiles(storage: StoragePort, clock: () => number, ref: SessionRef, input: CreateSessionInput): Promise<void> {
  const paths = sessionPaths(ref);
  if (await sessionExists(storage, ref, "archived")) {
    throw new InvalidInputError(`${formatSessionRef(ref)} exists in archived-sessions/; choose another id`, { ref: formatSessionRef(ref) });
  }
  const files = newSessionFiles(storage, ref, input, nowTimestamp(clock));
  if ((await sessionExists(storage, ref, "live")) || !(await storage.createExclusive(paths.meta, files.meta))) throw alreadyExists(ref);
  if (files.instruction) await storage.replace(paths.instruction, files.instruction);
}
