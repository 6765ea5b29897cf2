import type { CompactionAccounting } from "../../schema/meta.ts";
import type { Value } from "../shape.ts";
import { flexibleTimestamp } from "../timestamps.ts";
import { ToolCallJoiner } from "../tool-joiner.ts";
import { parseRhoEntry, parseRhoIdentity } from "./entries.ts";
import { parseRhoCompaction, parseRhoSnapshotObject } from "./snapshot-object.ts";
import { checkRhoToolResults } from "./to-messages.ts";
import type { RhoEntry, RhoIdentity } from "./types.ts";

/** The model history and snapshot fields as the records so far built them. */
export interface RhoJsonlState {
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
 * A copy of `state` that later records can change without changing `state` (a tree node's
 * state is its parent's plus its transition).
 *
 * @example
 * ```ts
 * declare const state: RhoJsonlState;
 * const child = cloneRhoState(state);
 * ```
 */
export function cloneRhoState(state: RhoJsonlState): RhoJsonlState {
  return {
    ...state,
    entries: [...state.entries],
    keys: [...state.keys],
    stamps: [...state.stamps],
    joiner: state.joiner.clone(),
    metadata: { ...state.metadata },
  };
}

/**
 * The state before the first record of a Rho session JSONL file.
 *
 * @example
 * ```ts
 * const state = initialRhoState({ id: "s", createdAt: "2026-12-02T13:00:00.000Z" });
 * state.revision; // 0
 * ```
 */
export function initialRhoState(header: { readonly id: string; readonly createdAt: string }): RhoJsonlState {
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

/** Display history: validated like the model history, not imported (it is the UI's). A node's may be absent (serde default). */
function checkDisplayMessages(record: Value): void {
  const list = record.field("display_messages");
  if (list.raw === undefined && record.field("type").raw === "node") return;
  for (const item of list.array("an array of display messages")) {
    item.object("a display message {timestamp, message}");
    item.field("timestamp").string();
    parseRhoEntry(item.field("message"));
  }
}

function nextRevision(state: RhoJsonlState, record: Value): number {
  if (state.revision >= Number.MAX_SAFE_INTEGER) record.field("type").fail("a revision below 2^53 - 1 to count on from", `revision ${state.revision}`);
  return state.revision + 1;
}

/** Times of a new history: entries unchanged at the same place (a common prefix) keep theirs. */
function carriedStamps(state: RhoJsonlState, keys: readonly string[], timestamp: string): string[] {
  let same = true;
  return keys.map((key, i) => {
    same = same && i < state.keys.length && state.keys[i] === key;
    return same ? state.stamps[i]! : timestamp;
  });
}

/**
 * Applies a legacy `message` record (one appended history entry, revision + 1).
 *
 * @example
 * ```ts
 * declare const state: RhoJsonlState;
 * declare const record: Parameters<typeof applyRhoMessage>[1];
 * applyRhoMessage(state, record);
 * ```
 * @throws {FormatError} naming the record's line and the invalid field.
 */
export function applyRhoMessage(state: RhoJsonlState, record: Value): void {
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

/**
 * Applies a legacy `replace_history` record (a new history, revision + 1, one compaction).
 *
 * @example
 * ```ts
 * declare const state: RhoJsonlState;
 * declare const record: Parameters<typeof applyRhoReplacement>[1];
 * applyRhoReplacement(state, record);
 * ```
 * @throws {FormatError} naming the record's line and the invalid field.
 */
export function applyRhoReplacement(state: RhoJsonlState, record: Value): void {
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

/**
 * Applies a record holding a full `snapshot` (a legacy `snapshot` record, or a version 4
 * node's `transition`) with the `timestamp` and `display_messages` of `record`.
 *
 * @param snapshot where the snapshot object is (default `record.snapshot`).
 * @example
 * ```ts
 * declare const state: RhoJsonlState;
 * declare const record: Parameters<typeof applyRhoSnapshot>[1];
 * applyRhoSnapshot(state, record);
 * ```
 * @throws {FormatError} naming the record's line and the invalid field.
 */
export function applyRhoSnapshot(state: RhoJsonlState, record: Value, at: Value = record.field("snapshot")): void {
  const timestamp = flexibleTimestamp(record.field("timestamp"));
  const snapshot = parseRhoSnapshotObject(at);
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

/**
 * Applies a snapshot delta (a legacy `snapshot_delta` record, or a version 4 node's
 * `transition`) with the `timestamp` and `display_messages` of `record`.
 *
 * @param delta where the delta object is (default `record.delta`).
 * @example
 * ```ts
 * declare const state: RhoJsonlState;
 * declare const record: Parameters<typeof applyRhoDelta>[1];
 * applyRhoDelta(state, record);
 * ```
 * @throws {FormatError} naming the record's line and the invalid field.
 */
export function applyRhoDelta(state: RhoJsonlState, record: Value, at: Value = record.field("delta")): void {
  const timestamp = flexibleTimestamp(record.field("timestamp"));
  if (!state.snapshotSeen) {
    record.field("type").fail("a complete snapshot before a snapshot_delta (on this branch)", "a snapshot_delta with no snapshot before it");
  }
  const delta = at.object("a snapshot delta object");
  const base = delta.field("base_revision");
  if (base.count() !== state.revision) base.fail(`${state.revision} (the revision before this delta)`);
  const sessionId = delta.field("session_id");
  if (sessionId.string({ nonEmpty: true }) !== state.sessionId) {
    sessionId.fail(`${JSON.stringify(state.sessionId)} (the session id of the snapshot it extends)`);
  }
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
