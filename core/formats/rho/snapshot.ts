import { InvalidInputError } from "../../errors.ts";
import type { PortableSession } from "../../model/mod.ts";
import { parseJsonDocument } from "../json-text.ts";
import type { FormatWriteOptions } from "../omission.ts";
import { Value } from "../shape.ts";
import { isIsoTimestamp } from "../timestamps.ts";
import { messagesToRhoHistory } from "./from-messages.ts";
import { parseRhoSnapshotObject, RHO_SNAPSHOT_VERSION, rhoCompactionOf, rhoMetadataOf, rhoTitleField } from "./snapshot-object.ts";
import { rhoEntriesToMessages } from "./to-messages.ts";

/** Options of {@linkcode readRhoSnapshot}. */
export interface RhoSnapshotReadOptions {
  /**
   * The `created_at` of every imported message (a snapshot has no message times).
   * Default: the time of the call.
   */
  readonly timestamp?: string;
}

/** The identity written as `provider` when no assistant message has one (docs/FORMAT.md). */
export const UNKNOWN_PROVIDER = { provider: "unknown", api: "unknown", model: "unknown" } as const;

const encoder = new TextEncoder();

/**
 * Reads a Rho `SessionSnapshot` JSON document: schema 2, or schema 1 migrated in memory
 * (no prompt-cache key). The history becomes sessionfold messages (see
 * `rhoEntriesToMessages`); `provider`, `compaction`, `metadata`, `prompt_cache_key` and the
 * `revision` (kept, so an export never shows a lower one) go to the portable session, and
 * `metadata.title` is also its title (Rho's snapshot has no title field). Raw
 * reasoning is never imported. The bytes are never changed.
 *
 * @param file the name errors give the document
 * @example
 * ```ts
 * import { Sessions } from "sessionfold";
 * declare const bytes: Uint8Array;
 * declare const sessions: Sessions;
 *
 * const portable = readRhoSnapshot(bytes, "session.json");
 * await sessions.importPortable("a1/w1/imported", portable);
 * ```
 * @throws {UnsupportedSchemaError} when `schema_version` is not 1 or 2 (nothing is guessed).
 * @throws {FormatError} naming the file, the line and the JSON path of the first invalid
 * value (invalid UTF-8 or JSON, a missing field, a `ToolResult` without its `ToolCall`…).
 * @throws {InvalidInputError} when `options.timestamp` is not an ISO-8601 date-time.
 */
export function readRhoSnapshot(bytes: Uint8Array, file: string, options: RhoSnapshotReadOptions = {}): PortableSession {
  if (options.timestamp !== undefined && !isIsoTimestamp(options.timestamp)) {
    throw new InvalidInputError(`readRhoSnapshot: timestamp ${JSON.stringify(options.timestamp)} is not an ISO-8601 date-time with an offset`);
  }
  const { value, site } = parseJsonDocument(bytes, file, "rho-snapshot");
  const snapshot = parseRhoSnapshotObject(new Value(site, [], value));
  const timestamp = options.timestamp ?? new Date().toISOString();
  const { system, messages } = rhoEntriesToMessages(snapshot.history, () => timestamp);
  return {
    sourceId: snapshot.sessionId,
    ...rhoTitleField(snapshot.metadata),
    revision: snapshot.revision,
    ...(system !== undefined ? { system } : {}),
    messages,
    provider: { ...snapshot.provider },
    ...(snapshot.compaction ? { compaction: snapshot.compaction } : {}),
    ...(Object.keys(snapshot.metadata).length > 0 ? { metadata: snapshot.metadata } : {}),
    ...(snapshot.promptCacheKey !== undefined ? { promptCacheKey: snapshot.promptCacheKey } : {}),
    format: `rho-snapshot-v${snapshot.schemaVersion}`,
  };
}

/**
 * Writes a session as a Rho `SessionSnapshot`, schema 2, pretty-printed as Rho writes it:
 * the full history (a data export), `revision` = the session's, `provider` = the session's
 * (`PortableSession.provider`: `meta.json`'s), else the newest assistant message's, else
 * `unknown` in all three fields, the compaction
 * accounting, non-empty `metadata` (with the session's title as `metadata.title`) and the
 * `prompt_cache_key`. Raw reasoning is never
 * written; reasoning summaries and provider-context blocks (exact identity) are.
 *
 * @example
 * ```ts
 * import { Session } from "sessionfold";
 * declare const session: Session;
 *
 * const bytes = writeRhoSnapshot(await session.exportPortable());
 * ```
 * @throws {InvalidInputError} when the session has no id (`sourceId`) or its revision is not a non-negative integer.
 */
export function writeRhoSnapshot(session: PortableSession, options: FormatWriteOptions = {}): Uint8Array {
  const sessionId = session.sourceId;
  if (sessionId === undefined || sessionId === "") throw new InvalidInputError("a Rho snapshot needs the session id (PortableSession.sourceId)");
  const revision = session.revision ?? 0;
  if (!Number.isSafeInteger(revision) || revision < 0) {
    throw new InvalidInputError(`a Rho snapshot needs a non-negative integer revision, not ${String(revision)}`);
  }
  // docs/FORMAT.md: meta.json's provider (PortableSession.provider), else the newest assistant message's.
  const newest = session.provider ?? session.messages.findLast((m) => m.role === "assistant" && m.provider)?.provider;
  const metadata = rhoMetadataOf(session);
  const document = {
    schema_version: RHO_SNAPSHOT_VERSION,
    session_id: sessionId,
    revision,
    history: messagesToRhoHistory(session, options),
    provider: newest ? { provider: newest.provider, api: newest.api, model: newest.model } : { ...UNKNOWN_PROVIDER },
    compaction: rhoCompactionOf(session.compaction),
    ...(Object.keys(metadata).length > 0 ? { metadata } : {}),
    ...(session.promptCacheKey !== undefined ? { prompt_cache_key: session.promptCacheKey } : {}),
  };
  return encoder.encode(`${JSON.stringify(document, null, 2)}\n`);
}
