/**
 * A new session's files, as `Sessions.create` writes them: `meta.json` at revision 0 (created
 * exclusively, so two creates of one id never both succeed) and, with an instruction,
 * `instruction.md`.
 *
 * @module
 */
import { InvalidInputError } from "../errors.ts";
import { formatSessionRef, type SessionRef } from "../layout/ids.ts";
import { sessionPaths } from "../layout/paths.ts";
import { encodeJsonDocument, nowTimestamp, type SessionMeta } from "../schema/records.ts";
import type { StoragePort } from "../storage/port.ts";
import type { CreateSessionInput } from "./registry-options.ts";
import { alreadyExists, sessionExists } from "./staging.ts";

/**
 * Writes the files of the new session `ref` described by `input`.
 *
 * @throws {InvalidInputError} when a session with that id exists (live or archived).
 */
export async function createSessionFiles(storage: StoragePort, clock: () => number, ref: SessionRef, input: CreateSessionInput): Promise<void> {
  const paths = sessionPaths(ref);
  if (await sessionExists(storage, ref, "archived")) {
    throw new InvalidInputError(`${formatSessionRef(ref)} exists in archived-sessions/; choose another id`, { ref: formatSessionRef(ref) });
  }
  const now = nowTimestamp(clock);
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
  if ((await sessionExists(storage, ref, "live")) || !(await storage.createExclusive(paths.meta, encodeJsonDocument(meta)))) {
    throw alreadyExists(ref);
  }
  if (input.instruction !== undefined) await storage.replace(paths.instruction, new TextEncoder().encode(input.instruction));
}
