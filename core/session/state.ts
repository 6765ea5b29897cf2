import type { Diagnostic } from "../jsonl/diagnostic.ts";
import type { SegmentRange } from "../layout/segments.ts";
import type { DraftRecord, MessageRecord, SessionMeta, SummaryRecord } from "../schema/mod.ts";

/** A draft together with the run messages it would commit with (see docs/decisions.md). */
export interface LiveDraft {
  readonly record: DraftRecord;
  /** The uncommitted user message and completed steps of the run that was streaming. */
  readonly pending: readonly MessageRecord[];
}

/** What must be fixed on disk at the next write (found by recovery, never done by a read). */
export interface PendingRepairs {
  /** Cut `active.jsonl` to this many bytes (a torn tail or an incomplete final batch). */
  truncateActiveTo?: number;
  /** The last line of `active.jsonl` lacks its `\n`. */
  addNewline?: boolean;
  /** Rewrite `active.jsonl` from memory (duplicates of the latest segment were dropped). */
  rewriteActive?: boolean;
  /** Remove a stale `assistant_message.json`. */
  removeStaleDraft?: boolean;
  /** Write the rebuilt `meta.json`. */
  writeMeta?: boolean;
}

/** Everything a session handle knows, as read by open (docs/FORMAT.md recovery applied). */
export interface SessionState {
  meta: SessionMeta;
  /** The revision `meta.json` held when read (`undefined` when it was missing): the optimistic check. */
  diskRevision: number | undefined;
  /** Every segment by sequence, oldest first, once `segments/` was listed (`undefined` before: an open may skip it). */
  segments: SegmentRange[] | undefined;
  /** The newest segment, if any. */
  newest: SegmentRange | undefined;
  /** The newest segment's cumulative summary. */
  footer: SummaryRecord | undefined;
  /** The Active window: committed messages since the last compaction. */
  active: MessageRecord[];
  /** Bytes of `active.jsonl` after repairs. */
  activeBytes: number;
  draft: LiveDraft | undefined;
  /** `instruction.md`, when present. */
  instruction: string | undefined;
  diagnostics: Diagnostic[];
  repairs: PendingRepairs;
}

/** The highest sequence committed in the session (0 when empty). */
export function lastSequence(state: Pick<SessionState, "newest" | "active">): number {
  const lastActive = state.active.at(-1)?.sequence;
  if (lastActive !== undefined) return lastActive;
  return state.newest?.end ?? 0;
}

/** `true` when a fatal diagnostic blocks writes. */
export function isBlocked(state: { readonly diagnostics: readonly Diagnostic[] }): boolean {
  // A loop, not `some` with a closure: every commit asks, almost always of an empty list.
  for (const diagnostic of state.diagnostics) if (diagnostic.fatal) return true;
  return false;
}

/** `true` when recovery left repairs for the next write. */
export function hasRepairs(state: Pick<SessionState, "repairs">): boolean {
  // Its own fields by name, not `Object.values`: every append asks, and an array per ask is garbage.
  const repairs = state.repairs as Record<string, unknown>;
  for (const key in repairs) if (Object.hasOwn(repairs, key) && repairs[key]) return true;
  return false;
}

/**
 * Extension field of `meta.json`'s `compaction`: the highest sequence when the last
 * compaction committed. Usage reported by messages up to it predates the compaction
 * and neither triggers nor validates one (docs/decisions.md).
 */
export const LAST_COMPACTED_FIELD = "last_compacted_sequence";

/** The run messages a live draft would commit with, the draft itself finished as `stopped`. */
export function stoppedDraftMessages(draft: LiveDraft, clearReasoning: boolean): MessageRecord[] {
  const { record } = draft;
  const parts = clearReasoning ? record.parts.filter((p) => p.type !== "reasoning") : record.parts;
  const stopped: MessageRecord = { ...record, status: "stopped", parts };
  const hasOutput = stopped.parts.length > 0 || stopped.usage !== undefined;
  return [...draft.pending, ...(hasOutput ? [stopped] : [])];
}

/** How an open reports what recovery found: one diagnostic (docs/FORMAT.md "Recovery"). */
export type Report = (file: string, line: number | null, code: Diagnostic["code"], fatal: boolean, message: string) => void;
