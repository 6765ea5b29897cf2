/**
 * What a compaction works out from Active alone, before it holds the lock (`CommitPath.locked` runs it while the lock's
 * round trip is in flight): the cut, the summarizer's input, the new Active's lines (handed to the backend to stage at
 * once, or joined here where it does not stage) and the segment's lines; and, once the files are staged and the
 * summarizer called, the token estimates.
 *
 * @module
 */
import { type CompactionPlan, estimateTokens, planCompaction } from "../compaction/mod.ts";
import type { SessionPaths } from "../layout/paths.ts";
import type { MessageRecord } from "../schema/records.ts";
import { publicRecord, withoutBatchMark } from "./batch.ts";
import { joinLines, joinLinesWithRoom, lineOf, type OpenLines } from "./lines.ts";
import { hasUnknownActiveLines } from "./recovery.ts";
import type { SessionState } from "./state.ts";
import type { StageActive, StagedClose } from "./staged-close.ts";

/**
 * What a compaction works out from Active alone, before it holds the lock (`CommitPath.locked` runs it while the lock's
 * round trip is in flight): which messages go, the summarizer's input and, when Active holds no unknown lines, the new
 * Active's bytes (staged as soon as they are joined, where the backend stages) and the segment's lines. Valid for
 * `active` as long as it has `count` messages. The token estimates of both halves wait until the files are staged
 * ({@linkcode estimatesOf}).
 */
export interface PreparedCompaction {
  readonly active: readonly MessageRecord[];
  readonly count: number;
  readonly selection: CompactionPlan;
  /** The selected messages as the summarizer gets them (without the fields only their lines need). */
  readonly input: MessageRecord[];
  /** The kept half as the new Active holds it (without batch marks). */
  readonly kept: MessageRecord[];
  /** The new Active's bytes, when no unknown lines must be carried into it and the backend does not stage. */
  readonly activeBytes?: Uint8Array;
  /** With `activeBytes`: the segment's lines joined, with room for its footer, which waits for the summary. */
  readonly segmentLines?: OpenLines;
  /** Where the backend stages files: the new Active staged, and under the lock `selectedLines` too (`staged-close.ts`). */
  readonly staged?: StagedClose;
  /** With `staged`: the segment's lines, which the backend joins when they are staged. */
  readonly selectedLines?: readonly Uint8Array[];
}

const FOOTER_ROOM = 16 * 1024;

/** The lines of the messages a compaction moves into its segment. */
function selectedLinesOf(selected: readonly MessageRecord[]): Uint8Array[] {
  return selected.map((message) => lineOf(withoutBatchMark(message)));
}

/** The segment's lines joined, with room for its footer: 16 KiB and 3 bytes per character of the last summary. */
function segmentLinesOf(selected: readonly MessageRecord[], previous: SessionState["footer"]): OpenLines {
  return joinLinesWithRoom(selectedLinesOf(selected), FOOTER_ROOM + 3 * (previous?.text.length ?? 0));
}

/**
 * {@linkcode PreparedCompaction} of `state`, `undefined` when there is nothing to compact. `stage` (where the backend
 * stages) takes the new Active's lines at once: a worker writes them while the rest is worked out.
 *
 * @throws {InvalidInputError} when Active's sequences are not strictly increasing.
 */
export function prepareCompaction(
  state: Pick<SessionState, "active" | "diagnostics" | "footer">,
  paths: SessionPaths,
  stage?: StageActive,
): PreparedCompaction | undefined {
  const selection = planCompaction(state.active);
  if (!selection) return undefined;
  const kept = selection.kept.map(withoutBatchMark);
  const activeLines = hasUnknownActiveLines(state, paths) ? undefined : kept.map(lineOf);
  const staged = activeLines && stage?.(activeLines);
  const activeBytes = activeLines && !staged ? joinLines(activeLines) : undefined;
  return {
    active: state.active,
    count: state.active.length,
    selection,
    input: selection.selected.map(publicRecord),
    kept,
    ...(activeBytes ? { activeBytes, segmentLines: segmentLinesOf(selection.selected, state.footer) } : {}),
    ...(staged ? { staged, selectedLines: selectedLinesOf(selection.selected) } : {}),
  };
}

/**
 * The token estimates of a compaction's halves (most of its own CPU), needed after the summary: worked out once the files
 * are staged and the summarizer called. Active = the selected half + the kept half. Not kept with the lines
 * (storedTokens): that costs as much again.
 */
export function estimatesOf(selection: CompactionPlan): { readonly removedTokens: number; readonly keptTokens: number } {
  return { removedTokens: estimateTokens(selection.selected), keptTokens: estimateTokens(selection.kept) };
}
