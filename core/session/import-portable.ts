/**
 * The files of a session imported from another system (`Sessions.importPortable`): the
 * portable session's messages as records with sequences 1..n (its segments kept as
 * segments), the system prompt as `instruction.md`, and a `meta.json` with the source's
 * times, revision and `imported_from`. Checked before anything is written; written into a
 * staged folder the caller installs.
 *
 * @module
 */
import { InvalidInputError } from "../errors.ts";
import type { SessionRef } from "../layout/ids.ts";
import type { ImportedFrom, PortableSession } from "../model/mod.ts";
import { describeIssues, messageCheck, type MessageRecord, nowTimestamp, type SessionMeta } from "../schema/records.ts";
import { assertJsonDepth } from "../schema/json-depth.ts";
import type { StoragePort } from "../storage/port.ts";
import { importedHistoryFiles } from "./import-history.ts";
import type { Staging } from "./staging.ts";

/** A {@linkcode PortableSession}'s names of the `meta.json` fields an import sets from it, for the errors naming one. */
export const IMPORTED_FIELD_NAMES: Readonly<Record<string, string>> = {
  model_label: "modelLabel",
  created_at: "createdAt",
  updated_at: "updatedAt",
  prompt_cache_key: "promptCacheKey",
  imported_summary: "summary",
};

/**
 * `portable`'s messages as records with sequences 1..n, and the revision to take.
 *
 * @throws {InvalidInputError} when a message is not a valid record.
 * @throws {LimitExceededError} when a message is nested deeper than `MAX_JSON_DEPTH` (checked before the schema walks it).
 */
export function importedMessages(portable: PortableSession): { messages: MessageRecord[]; revision: number } {
  const messages = portable.messages.map((message, i) => {
    assertJsonDepth(message, `imported message ${i + 1}`);
    const parsed = messageCheck.safeParse({ ...message, sequence: i + 1 });
    if (!parsed.success || parsed.data.status === "streaming") {
      const why = parsed.success ? 'status "streaming" cannot be imported' : describeIssues(parsed.error);
      throw new InvalidInputError(`imported message ${i + 1} is not a valid message record: ${why}`, { index: i });
    }
    return parsed.data;
  });
  const revision = portable.revision ?? (messages.length > 0 ? 1 : 0);
  if (!Number.isSafeInteger(revision) || revision < 0) throw new InvalidInputError(`imported revision ${String(revision)} is not a non-negative integer`);
  return { messages, revision };
}

/**
 * Writes the imported history into `staging` and returns its `meta.json` (not written:
 * installing the folder writes it last).
 *
 * @throws {LimitExceededError} when a message's line or a file would be over a read limit (the store's `maxFileBytes`); nothing is written.
 */
export async function writeImported(
  storage: StoragePort,
  clock: () => number,
  ref: SessionRef,
  portable: PortableSession,
  messages: readonly MessageRecord[],
  revision: number,
  staging: Staging,
): Promise<SessionMeta> {
  const now = nowTimestamp(clock);
  const createdAt = portable.createdAt ?? messages[0]?.created_at ?? now;
  const history = importedHistoryFiles(ref.sessionId, messages, portable.segments ?? [], now, storage.maxFileBytes);
  for (const segment of history.segments) await storage.replace(`${staging.paths.segmentsDir}/${segment.name}`, segment.bytes);
  if (history.active.length > 0) await storage.replace(staging.paths.active, history.active);
  if (portable.system) await storage.replace(staging.paths.instruction, new TextEncoder().encode(portable.system));
  const importedFrom: ImportedFrom = {
    format: portable.format ?? "portable",
    ...(portable.sourceId !== undefined ? { session_id: portable.sourceId } : {}),
    ...(portable.cwd !== undefined ? { cwd: portable.cwd } : {}),
    ...(portable.updatedAt !== undefined ? { updated_at: portable.updatedAt } : {}),
    imported_at: now,
  };
  const meta: SessionMeta = {
    schema_version: 1,
    session_id: ref.sessionId,
    agent_id: ref.agentId,
    workspace_id: ref.workspaceId,
    ...(portable.title !== undefined ? { title: portable.title } : {}),
    ...(portable.modelLabel !== undefined ? { model_label: portable.modelLabel } : {}),
    // An import is not activity: the session's times are its source's (imported_from.imported_at
    // records the import); the import time stands in only where the source has no time at all.
    created_at: createdAt,
    updated_at: portable.updatedAt ?? messages.at(-1)?.created_at ?? createdAt,
    message_count: messages.length,
    history_bytes: history.historyBytes,
    revision,
    ...(portable.compaction ? { compaction: portable.compaction } : {}),
    ...(portable.metadata ? { metadata: { ...portable.metadata } } : {}),
    ...(portable.promptCacheKey !== undefined ? { prompt_cache_key: portable.promptCacheKey } : {}),
    ...(portable.provider ? { provider: { ...portable.provider } } : {}),
    ...(portable.summary !== undefined ? { imported_summary: portable.summary } : {}),
    imported_from: importedFrom,
  };
  return meta;
}
