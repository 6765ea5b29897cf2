/**
 * The contract between a locked mutating operation and the code that runs inside it (the
 * run loop): what it may read and the writes it may make while the session holds its lock.
 *
 * @module
 */
import type { CompactionOutcome } from "../compaction/mod.ts";
import type { SessionRef } from "../layout/ids.ts";
import type { Summarizer } from "../model/mod.ts";
import type { DraftRecord, MessageRecord } from "../schema/mod.ts";
import type { DraftFlusher } from "./draft-flusher.ts";
import type { ResolvedSessionOptions } from "./options.ts";
import type { SessionState } from "./state.ts";

/** What a commit returns. */
export interface CommitResult {
  /** Sequences assigned, in order. */
  readonly sequences: number[];
  /** The session revision after the commit. */
  readonly revision: number;
}

/** Operations available to the code running inside one locked mutating operation. */
export interface LockedOperation {
  /** The session being written. */
  readonly ref: SessionRef;
  /** The instruction the model reads (`instruction.md`, or the agent's), `null` when none. */
  readonly system: string | null;
  readonly state: Readonly<SessionState>;
  readonly options: ResolvedSessionOptions;
  readonly clock: () => number;
  /** Appends messages as one atomic batch plus one `meta.json` update (revision + 1). */
  commit(messages: readonly MessageRecord[]): Promise<CommitResult>;
  /** A coalescing flusher of the streaming draft; `pending` are the run's uncommitted messages. */
  draftFlusher(current: () => { draft: DraftRecord; pending: readonly MessageRecord[] }): DraftFlusher;
  /** Removes the draft file. */
  removeDraft(): Promise<void>;
  /** Compacts Active with one summary call (its own commit). `undefined` when Active has < 2 messages. */
  compact(summarizer: Summarizer, signal: AbortSignal): Promise<CompactionOutcome | undefined>;
}
