/**
 * The rules a session's files are judged by (docs/FORMAT.md "Recovery" and "Repair"), in
 * one place for the four readers that judge them: an open (`load.ts`), `verifySession`
 * (`core/verify`), `Session.repair()`'s plan (`repair-plan.ts`) and the CLI's `show`.
 * Segment order (contiguous from sequence 1: a gap or an overlap between two segments is
 * corruption), the footer (a segment's last line, and only it, a summary through the
 * segment's end), and the place of a message in Active (after the newest segment: one
 * at or below its end is an overlap; one past the next expected sequence is a gap).
 *
 * @module
 */
import type { Diagnostic } from "../jsonl/diagnostic.ts";
import type { JsonlDecodeOptions } from "../jsonl/decode.ts";
import { type LastRecord, lastRecordInWindow, readLastRecord } from "../jsonl/tail.ts";
import { relativeToSession, type SessionPaths } from "../layout/paths.ts";
import { parseSegmentName, type SegmentRange } from "../layout/segments.ts";
import { messageCheck, type MessageRecord, summaryCheck, type SummaryRecord } from "../schema/records.ts";
import type { ReadResult, StoragePort } from "../storage/port.ts";

/** The records a segment may hold: messages, then its summary footer. */
export const SEGMENT_RECORDS = { message: messageCheck, summary: summaryCheck } as const;

/** The names in `segments/` as ranges, oldest first, and the names that are no segment. */
export function segmentListing(names: readonly string[]): { ranges: SegmentRange[]; strangers: string[] } {
  const ranges: SegmentRange[] = [];
  const strangers: string[] = [];
  for (const name of names) {
    const range = parseSegmentName(name);
    if (range) ranges.push(range);
    else strangers.push(name);
  }
  ranges.sort((a, b) => a.start - b.start);
  return { ranges, strangers };
}

/** A segment that does not start where the one before it ended (+1, or 1 for the first): a gap or an overlap. */
export interface SegmentOrderBreak {
  readonly range: SegmentRange;
  /** The sequence it should start at. */
  readonly expected: number;
}

/** The segments (sorted, as {@linkcode segmentListing} gives them) that break the order. */
export function segmentOrderBreaks(ranges: readonly SegmentRange[]): SegmentOrderBreak[] {
  const breaks: SegmentOrderBreak[] = [];
  let expected = 1;
  for (const range of ranges) {
    if (range.start !== expected) breaks.push({ range, expected });
    expected = range.end + 1;
  }
  return breaks;
}

/** What the order rule says of a break, in words. */
export function describeOrderBreak({ range, expected }: SegmentOrderBreak): string {
  return `segment starts at sequence ${range.start}; expected ${expected}`;
}

/** Whether `record` is the footer of segment `range`: a summary through its end. */
export function isFooterOf(record: unknown, range: SegmentRange): record is SummaryRecord {
  const r = record as Partial<SummaryRecord> | undefined;
  return r?.record_type === "summary" && r.through_sequence === range.end;
}

/** What the footer rule says of a segment whose last line is something else. */
export function notAFooter(range: SegmentRange): string {
  return `the last line is not a summary footer through sequence ${range.end}`;
}

/** What a segment's footer is found to be: the footer, with what was wrong with the tail. */
export interface SegmentFooter {
  readonly footer: SummaryRecord | undefined;
  readonly diagnostics: Diagnostic[];
}

/**
 * The footer of segment `range`, read from its tail, with what was wrong with the tail
 * (fatal `invalid_segment` when the last line is readable but no footer through its end).
 * `undefined` when the file is not there.
 */
export async function readSegmentFooter(
  storage: Pick<StoragePort, "readTail">,
  paths: SessionPaths,
  range: SegmentRange,
): Promise<SegmentFooter | undefined> {
  const path = paths.segment(range);
  const file = relativeToSession(paths, path);
  const last = await readLastRecord<MessageRecord | SummaryRecord>(storage, path, footerOptions(file));
  return last && judgeFooter(last, file, range);
}

/**
 * {@linkcode readSegmentFooter} from a tail already read (a `readMany` of the segment's last
 * `LAST_RECORD_WINDOW` bytes), without another read: `undefined` when the tail does
 * not hold the whole last line, which `readSegmentFooter` then reads.
 *
 * @example
 * ```ts
 * import { MemoryStorage, sessionPaths } from "sessionfold";
 * const storage = new MemoryStorage();
 * const paths = sessionPaths({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
 * const range = { start: 1, end: 500 };
 * const path = paths.segment(range);
 * const tail = await storage.readTail(path, 64 * 1024); // what a `readMany` of the segment's tail gives, without its path
 * const found = tail ? segmentFooterInTail({ path, ...tail }, paths, range) ?? await readSegmentFooter(storage, paths, range) : undefined;
 * ```
 */
export function segmentFooterInTail(tail: ReadResult, paths: SessionPaths, range: SegmentRange): SegmentFooter | undefined {
  const file = relativeToSession(paths, tail.path);
  const last = lastRecordInWindow<MessageRecord | SummaryRecord>(tail.bytes, tail.size, footerOptions(file));
  return last && judgeFooter(last, file, range);
}

function footerOptions(file: string): JsonlDecodeOptions {
  return { file, schemas: SEGMENT_RECORDS, tornTailRecoverable: false };
}

/** The footer rule over a segment's last record. */
function judgeFooter(last: LastRecord<MessageRecord | SummaryRecord>, file: string, range: SegmentRange): SegmentFooter {
  if (isFooterOf(last.record, range)) return { footer: last.record, diagnostics: last.diagnostics };
  const diagnostics = [...last.diagnostics];
  if (!diagnostics.some((d) => d.fatal)) diagnostics.push({ file, line: null, code: "invalid_segment", fatal: true, message: `${file}: ${notAFooter(range)}` });
  return { footer: undefined, diagnostics };
}

/**
 * Where a message of sequence `sequence` stands when `expected` is next: `"next"` (it is),
 * `"overlap"` (at or below `segmentEnd`, the end of the newest segment: it is in that segment
 * already), `"behind"` (below `expected`, above the segment: a second message of a sequence
 * already taken) or `"gap"` (above `expected`: the sequences between are missing).
 */
export function sequenceStep(sequence: number, expected: number, segmentEnd = 0): "next" | "overlap" | "behind" | "gap" {
  if (sequence <= segmentEnd) return "overlap";
  if (sequence === expected) return "next";
  return sequence < expected ? "behind" : "gap";
}
