import type { SegmentRange } from "../layout/segments.ts";
import type { SessionMeta } from "../schema/mod.ts";

/**
 * The `meta.json` extension field naming the newest segment, `{"start": 451, "end": 900}`.
 * An open reads that segment's footer directly instead of listing `segments/`, whose size
 * grows with the history: the hint keeps the cost of an open flat. It is a hint only: an
 * open trusts it when the files confirm it (the segment is there and Active starts right
 * after it, or overlaps it after an interrupted compaction) and otherwise lists
 * `segments/` as docs/FORMAT.md says and rewrites `meta.json` (docs/decisions.md).
 */
export const NEWEST_SEGMENT_FIELD = "newest_segment";

/** The hint of `meta`, or `undefined` when absent or not a valid range. */
export function newestSegmentHint(meta: SessionMeta): SegmentRange | undefined {
  const value = (meta as Record<string, unknown>)[NEWEST_SEGMENT_FIELD];
  return value === undefined ? undefined : validHint(value);
}

/** The hint `value` names, or `undefined` when it is not a valid range (apart: a session that never compacted has none). */
function validHint(value: unknown): SegmentRange | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const { start, end } = value as { start?: unknown; end?: unknown };
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || (start as number) < 1 || (end as number) < (start as number)) return undefined;
  return { start: start as number, end: end as number };
}

/** Whether `meta` carries exactly the hint `newest` (none when there is no segment). */
export function hasNewestSegment(meta: SessionMeta, newest: SegmentRange | undefined): boolean {
  const value = (meta as Record<string, unknown>)[NEWEST_SEGMENT_FIELD] as { start?: unknown; end?: unknown } | undefined;
  if (!newest) return value === undefined && !(NEWEST_SEGMENT_FIELD in meta);
  return typeof value === "object" && value !== null && value.start === newest.start && value.end === newest.end && Object.keys(value).length === 2;
}

/** `meta` with the hint set to `newest`, or without it when there is no segment. */
export function withNewestSegment(meta: SessionMeta, newest: SegmentRange | undefined): SessionMeta {
  const { [NEWEST_SEGMENT_FIELD]: _old, ...rest } = meta as SessionMeta & { [NEWEST_SEGMENT_FIELD]?: unknown };
  return (newest ? { ...rest, [NEWEST_SEGMENT_FIELD]: { start: newest.start, end: newest.end } } : rest) as SessionMeta;
}
