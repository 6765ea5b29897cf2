/**
 * A compaction's files staged before its summary (docs/FORMAT.md "Compaction"), where the backend stages
 * (`StoragePort.stage`): the new Active's bytes as soon as they are joined, while the lock is being taken, and the
 * segment's lines (all but the footer) once the lock is held, since a session's first segment creates its folder. The
 * backend writes and flushes them while the summarizer runs; the close plan names them (`PlannedWrite.staged`) and
 * carries only the footer and `meta.json`. Staged bytes that no plan named are dropped when the compaction ends.
 *
 * @module
 */
import type { SessionPaths } from "../layout/paths.ts";
import type { SegmentRange } from "../layout/segments.ts";
import type { StoragePort } from "../storage/port.ts";
import { newId } from "./ids.ts";
import { joinLines } from "./lines.ts";
import { joinedLength } from "../jsonl/join.ts";

/** One file's staged start: the id a plan names it by, and how many bytes it holds. */
export interface StagedBytes {
  readonly id: string;
  readonly size: number;
}

/** What a compaction staged: Active, then (under the lock) the segment's lines; `sent` once a plan named them. */
export interface StagedClose {
  readonly active: StagedBytes;
  segment?: StagedBytes;
  sent: boolean;
}

/** Stages the new Active's lines, or `undefined` where the backend does not stage. */
export type StageActive = (activeLines: readonly Uint8Array[]) => StagedClose | undefined;

/**
 * Runs a compaction (`compaction`, which takes the lock and runs `prepare` meanwhile) with the prepared Active staged
 * where `storage` stages (`prepare` calls `stage` with its bytes as soon as it has them, and keeps what it returns),
 * and drops what no plan named once it settled. After a failure every id is dropped: a plan that named some has used
 * them up, and dropping them again is nothing. What `prepare` throws is `undefined` here (the compaction works it out
 * again under the lock, where its error belongs).
 */
export async function withStaging<T, P>(
  storage: StoragePort,
  paths: SessionPaths,
  prepare: (stage: StageActive) => P | undefined,
  compaction: (prepare: () => P | undefined) => Promise<T>,
): Promise<T> {
  let staged: StagedClose | undefined;
  try {
    return await compaction(() => {
      try {
        return prepare((lines) => (staged = stageActive(storage, paths, lines)));
      } catch {
        return undefined;
      }
    });
  } catch (error) {
    if (staged) staged.sent = false;
    throw error;
  } finally {
    await unstageUnsent(storage, staged);
  }
}

/** Stages the new Active's `lines`, or `undefined` when `storage` does not stage. */
function stageActive(storage: StoragePort, paths: SessionPaths, lines: readonly Uint8Array[]): StagedClose | undefined {
  if (!storage.stage) return undefined;
  return { active: stageLines(storage, paths.active, lines), sent: false };
}

/** Stages the segment's lines of `range` beside what {@linkcode stageActive} staged. */
export function stageSegment(storage: StoragePort, paths: SessionPaths, range: SegmentRange, staged: StagedClose, lines: readonly Uint8Array[]): void {
  staged.segment = stageLines(storage, paths.segment(range), lines);
}

/** Drops what a compaction staged unless a plan named it (the backend has used it up then). */
async function unstageUnsent(storage: StoragePort, staged: StagedClose | undefined): Promise<void> {
  if (!staged || staged.sent) return;
  for (const bytes of [staged.active, staged.segment]) if (bytes) await storage.unstage?.(bytes.id).catch(() => undefined);
}

/**
 * Stages the JSONL bytes of `lines`, which the backend may flush at once (the footer follows the segment's lines, nothing
 * Active's): joined by the backend where it offers `stageLines` (into memory it reuses), else here, given up with their buffer.
 */
function stageLines(storage: StoragePort, path: string, lines: readonly Uint8Array[]): StagedBytes {
  const id = newId("stage");
  // A failed stage is reported by the plan that names it (or dropped unused).
  const staging = storage.stageLines ? storage.stageLines(path, lines, id) : storage.stage!(path, joinLines(lines), id);
  staging.catch(() => undefined);
  return { id, size: joinedLength(lines) };
}
