/**
 * What `Session.repair()` reports and the writes that carry its plan out, as values: the
 * lines and files moved into the quarantine, the refusals, and `meta.json`'s fate.
 * `repair-plan.ts` makes them; `repair.ts` applies them.
 *
 * @module
 */

/** One line moved out of a JSONL file into its quarantine file. */
export interface MovedLine {
  /** Its 1-based line number in the file it left. */
  readonly line: number;
  /**
   * Why: a diagnostic code (`invalid_json`, `invalid_record`, `oversized_line`,
   * `truncated_tail`, `overlap_removed`) or `duplicate` (a second copy of a kept line) or
   * `interrupted_commit` (a final batch missing some of its messages) or `renumbered` (a
   * second writer's message, kept under a new sequence after the rest).
   */
  readonly code: string;
  /** The reason in words (no content of the line is quoted). */
  readonly reason: string;
  /** Its length in bytes, without its newline. */
  readonly bytes: number;
}

/** What moved into the quarantine: lines out of a JSONL file, or a whole file. */
export interface RepairMove {
  /** The file it came from, relative to the session folder (`messages/active.jsonl`). */
  readonly from: string;
  /** The quarantine file it went to, relative to the session folder (`quarantine/…`). */
  readonly to: string;
  /** The lines moved, in file order; absent when the whole file moved. */
  readonly lines?: readonly MovedLine[];
  /** Bytes moved. */
  readonly bytes: number;
  /** Why, in words. */
  readonly reason: string;
}

/** Why repair will not touch a session. */
export interface RepairRefusal {
  readonly file: string;
  readonly line: number | null;
  readonly reason: string;
}

/**
 * What `Session.repair()` found and did (or, without `apply`, would do). It quotes nothing
 * of a line but the short escaped excerpt a diagnostic gives.
 */
export interface RepairReport {
  /** `<agent_id>/<workspace_id>/<session_id>`. */
  readonly ref: string;
  /** `true` when the plan was carried out. */
  readonly applied: boolean;
  /** `true` when there was nothing to repair. */
  readonly clean: boolean;
  /** Why repair refuses the session; when not empty nothing is (or would be) changed. */
  readonly refused: readonly RepairRefusal[];
  /** Everything moved into quarantine, by source file. */
  readonly moves: readonly RepairMove[];
  /** Files written again without the moved lines (relative to the session folder). */
  readonly rewritten: readonly string[];
  /** What stays: messages in all, closed segments, and the highest sequence (unchanged by repair). */
  readonly kept: { readonly messages: number; readonly segments: number; readonly lastSequence: number };
  /**
   * `meta.json`: `"updated"` (its counts and revision set from the files), `"rebuilt"` (it was
   * missing or unreadable: made anew, with the fields of the old one that were still valid,
   * listed in `salvaged`), or `"unchanged"`.
   */
  readonly meta: {
    readonly action: "unchanged" | "updated" | "rebuilt";
    readonly previousRevision: number | null;
    readonly revision: number;
    readonly salvaged?: readonly string[];
  };
}

/** The writes of a plan, in the order they must happen (quarantine first: nothing is removed before it is kept). */
export interface RepairWrites {
  /** New quarantine files: created exclusively, durably. */
  readonly quarantine: readonly { readonly path: string; readonly bytes: Uint8Array }[];
  /** Whole files moved into quarantine. */
  readonly moves: readonly { readonly from: string; readonly to: string }[];
  /** Files replaced without their moved lines (segments, then Active). */
  readonly replace: readonly { readonly path: string; readonly bytes: Uint8Array }[];
  /** The new `meta.json`, written last. */
  readonly meta: Uint8Array | undefined;
}

/** A plan: the report and the writes that carry it out. */
export interface RepairPlan {
  readonly report: RepairReport;
  readonly writes: RepairWrites;
}
