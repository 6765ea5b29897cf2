import type { Diagnostic } from "../../jsonl/diagnostic.ts";
import type { CompactionAccounting } from "../../schema/meta.ts";
import type { PortableSession } from "../../model/mod.ts";
import { formatError, unsupportedVersion } from "../errors.ts";
import { readJsonlRecords } from "../jsonl-lines.ts";
import { pathText, type Value } from "../shape.ts";
import { flexibleTimestamp } from "../timestamps.ts";
import { ToolCallJoiner } from "../tool-joiner.ts";
import { parseRhoEntry, parseRhoIdentity } from "./entries.ts";
import { parseRhoCompaction, parseRhoSnapshotObject } from "./snapshot-object.ts";
import { checkRhoToolResults, rhoEntriesToMessages } from "./to-messages.ts";
import type { RhoEntry, RhoIdentity } from "./types.ts";

/** The Rho application JSONL session versions this reader knows. */
export const RHO_JSONL_VERSIONS = [1, 2, 3] as const;

/** What {@linkcode readRhoJsonl} found. */
export interface RhoJsonlReadResult {
  readonly session: PortableSession;
  /** Non-fatal findings: a `truncated_tail` when the final line was an interrupted append. */
  readonly diagnostics: Diagnostic[];
}

/** The model history and snapshot fields as the records so far built them. */
interface State {
  sessionId: string;
  revision: number;
  entries: RhoEntry[];
  keys: string[];
  stamps: string[];
  joiner: ToolCallJoiner<true>;
  snapshotSeen: boolean;
  provider?: RhoIdentity;
  compaction?: CompactionAccounting;
  metadata: Record<string, string>;
  promptCacheKey?: string;
  updatedAt: string;
}

/**
 * Reads a Rho application JSONL session (versions 1 to 3): a `session` header, then
 * `snapshot` bases, `snapshot_delta` records (whose `delta.base_revision` must equal the
 * revision before it and whose `session_id` must be the base's), `message` records (one
 * appended history entry, revision + 1) and `replace_history` records (a new history,
 * revision + 1, counted as one compaction). Display history is validated, not imported.
 * Reading rules as for DeepCode: an invalid final line without a newline is an interrupted
 * append, ignored and reported as `truncated_tail`; any other invalid line refuses the
 * import with its line number. The bytes are never changed.
 *
 * A message's `created_at` is the `timestamp` of the record that added its history entry
 * (an entry a later base or replacement keeps unchanged, at the same place, keeps its time).
 *
 * @param file the name errors give the file.
 * @example
 * ```ts
 * import { Sessions } from "sessionfold";
 * declare const bytes: Uint8Array;
 * declare const sessions: Sessions;
 *
 * const { session, diagnostics } = readRhoJsonl(bytes, "session.jsonl");
 * await sessions.importPortable("a1/w1/imported", session);
 * ```
 * @throws {UnsupportedSchemaError} when the header's `version` (or an embedded snapshot's
 * `schema_version`) is one this reader does not know.
 * @throws {FormatError} naming the file and line of the first invalid record: a delta on
 * the wrong base revision, a `ToolResult` without its call, a missing header…
 */
export function readRhoJsonl(bytes: Uint8Array, file: string): RhoJsonlReadResult {
  let header: Header | undefined;
  let state: State | undefined;
  const { diagnostics } = readJsonlRecords(bytes, "rho-jsonl", file, (record) => {
    record.object("a session record object with a type");
    const type = record.field("type");
    if (header === undefined || state === undefined) {
      if (type.raw !== "session") type.fail('"session" (the first record is the session header)');
      const parsed = parseHeader(record);
      header = parsed;
      state = initialState(parsed);
      return;
    }
    switch (type.raw) {
      case "message":
        return applyMessage(state, record);
      case "replace_history":
        return applyReplacement(state, record);
      case "snapshot":
        return applySnapshot(state, record);
      case "snapshot_delta":
        return applyDelta(state, record);
      case "session":
        return type.fail("one session header only, on the first line", "a second session header");
      default:
        return type.fail('"message", "replace_history", "snapshot" or "snapshot_delta"');
    }
  });
  if (header === undefined || state === undefined) {
    const torn = diagnostics[0];
    const found = torn ? "only an interrupted (unterminated, invalid) first line" : "an empty file";
    throw formatError({ format: "rho-jsonl", file, line: torn?.line ?? 1 }, found, "a session header");
  }
  const final = state;
  const { system, messages } = rhoEntriesToMessages(final.entries, (i) => final.stamps[i]!);
  const session: PortableSession = {
    sourceId: header.id,
    createdAt: header.createdAt,
    updatedAt: final.updatedAt,
    cwd: header.cwd,
    revision: final.revision,
    ...(system !== undefined ? { system } : {}),
    messages,
    ...(final.provider ? { provider: { ...final.provider } } : {}),
    ...(final.compaction ? { compaction: final.compaction } : {}),
    ...(Object.keys(final.metadata).length > 0 ? { metadata: final.metadata } : {}),
    ...(final.promptCacheKey !== undefined ? { promptCacheKey: final.promptCacheKey } : {}),
    format: `rho-jsonl-v${header.version}`,
  };
  return { session, diagnostics };
}

interface Header {
  readonly version: number;
  readonly id: string;
  readonly createdAt: string;
  readonly cwd: string;
}

function parseHeader(record: Value): Header {
  const version = record.field("version");
  const number = version.count();
  if (!(RHO_JSONL_VERSIONS as readonly number[]).includes(number)) {
    throw unsupportedVersion({ format: "rho-jsonl", file: version.site.file, line: version.site.lineOf(version.path), path: pathText(version.path) }, number, RHO_JSONL_VERSIONS);
  }
  return {
    version: number,
    id: record.field("id").string({ nonEmpty: true }),
    createdAt: flexibleTimestamp(record.field("timestamp")),
    cwd: record.field("cwd").string(),
  };
}

function initialState(header: Header): State {
  return {
    sessionId: header.id,
    revision: 0,
    entries: [],
    keys: [],
    stamps: [],
    joiner: new ToolCallJoiner("ToolCall"),
    snapshotSeen: false,
    metadata: {},
    updatedAt: header.createdAt,
  };
}

function parseEntries(list: Value): { entries: RhoEntry[]; keys: string[] } {
  const values = list.array("an array of history messages");
  return { entries: values.map(parseRhoEntry), keys: values.map((v) => JSON.stringify(v.raw)) };
}

/** Display history: validated like the model history, not imported (it is the UI's). */
function checkDisplayMessages(record: Value): void {
  for (const item of record.field("display_messages").array("an array of display messages")) {
    item.object("a display message {timestamp, message}");
    item.field("timestamp").string();
    parseRhoEntry(item.field("message"));
  }
}

function nextRevision(state: State, record: Value): number {
  if (state.revision >= Number.MAX_SAFE_INTEGER) record.field("type").fail("a revision below 2^53 - 1 to count on from", `revision ${state.revision}`);
  return state.revision + 1;
}

/** Times of a new history: entries unchanged at the same place (a common prefix) keep theirs. */
function carriedStamps(state: State, keys: readonly string[], timestamp: string): string[] {
  let same = true;
  return keys.map((key, i) => {
    same = same && i < state.keys.length && state.keys[i] === key;
    return same ? state.stamps[i]! : timestamp;
  });
}

function applyMessage(state: State, record: Value): void {
  const timestamp = flexibleTimestamp(record.field("timestamp"));
  const message = record.field("message");
  const entry = parseRhoEntry(message);
  const display = record.field("display_message").optional();
  if (display) parseRhoEntry(display);
  const joiner = state.joiner.clone();
  checkRhoToolResults([entry], joiner);
  const revision = nextRevision(state, record);
  state.entries.push(entry);
  state.keys.push(JSON.stringify(message.raw));
  state.stamps.push(timestamp);
  state.joiner = joiner;
  state.revision = revision;
  state.updatedAt = timestamp;
}

function applyReplacement(state: State, record: Value): void {
  const timestamp = flexibleTimestamp(record.field("timestamp"));
  const { entries, keys } = parseEntries(record.field("messages"));
  const joiner = new ToolCallJoiner<true>("ToolCall");
  checkRhoToolResults(entries, joiner);
  const revision = nextRevision(state, record);
  const previous = state.compaction ?? { completed: 0, removed_messages: 0, removed_tokens_estimate: 0 };
  state.compaction = {
    ...previous,
    completed: previous.completed + 1,
    removed_messages: previous.removed_messages + Math.max(0, state.entries.length - entries.length),
    last_revision: revision,
  };
  state.stamps = carriedStamps(state, keys, timestamp);
  state.entries = entries;
  state.keys = keys;
  state.joiner = joiner;
  state.revision = revision;
  state.updatedAt = timestamp;
}

function applySnapshot(state: State, record: Value): void {
  const timestamp = flexibleTimestamp(record.field("timestamp"));
  const snapshot = parseRhoSnapshotObject(record.field("snapshot"));
  checkDisplayMessages(record);
  const joiner = new ToolCallJoiner<true>("ToolCall");
  checkRhoToolResults(snapshot.history, joiner);
  state.stamps = carriedStamps(state, snapshot.historyKeys, timestamp);
  state.entries = snapshot.history;
  state.keys = snapshot.historyKeys;
  state.joiner = joiner;
  state.sessionId = snapshot.sessionId;
  state.revision = snapshot.revision;
  state.snapshotSeen = true;
  state.provider = snapshot.provider;
  state.compaction = snapshot.compaction;
  state.metadata = snapshot.metadata;
  state.promptCacheKey = snapshot.promptCacheKey;
  state.updatedAt = timestamp;
}

function applyDelta(state: State, record: Value): void {
  const timestamp = flexibleTimestamp(record.field("timestamp"));
  if (!state.snapshotSeen) record.field("type").fail("a snapshot record before the first snapshot_delta", "a snapshot_delta with no snapshot before it");
  const delta = record.field("delta").object("a snapshot delta object");
  const base = delta.field("base_revision");
  if (base.count() !== state.revision) base.fail(`${state.revision} (the revision before this delta)`);
  const sessionId = delta.field("session_id");
  if (sessionId.string({ nonEmpty: true }) !== state.sessionId) sessionId.fail(`${JSON.stringify(state.sessionId)} (the session id of the snapshot it extends)`);
  const revisionValue = delta.field("revision");
  const revision = revisionValue.count();
  if (revision < state.revision) revisionValue.fail(`a revision not below base_revision ${state.revision}`);
  const { entries, keys } = parseEntries(delta.field("appended_history"));
  const provider = parseRhoIdentity(delta.field("provider"));
  const compaction = parseRhoCompaction(delta.field("compaction"));
  const metadata = delta.field("metadata").stringMap();
  const promptCacheKey = delta.field("prompt_cache_key").optional()?.string();
  checkDisplayMessages(record);
  const joiner = state.joiner.clone();
  checkRhoToolResults(entries, joiner);
  state.entries.push(...entries);
  state.keys.push(...keys);
  for (let i = 0; i < entries.length; i++) state.stamps.push(timestamp);
  state.joiner = joiner;
  state.revision = revision;
  state.provider = provider;
  state.compaction = compaction;
  state.metadata = metadata;
  state.promptCacheKey = promptCacheKey;
  state.updatedAt = timestamp;
}
