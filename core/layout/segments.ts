import { InvalidInputError } from "../errors.ts";

/** Width of each zero-padded sequence number in a segment name. */
export const SEGMENT_DIGITS = 12;
const SEGMENT_NAME = /^(\d{12})-(\d{12})\.jsonl$/;
const MAX_SEQUENCE = 10 ** SEGMENT_DIGITS - 1;

/** The inclusive sequence range a segment file holds. */
export interface SegmentRange {
  readonly start: number;
  readonly end: number;
}

/**
 * Formats a segment file name: `000000000001-000000000450.jsonl`.
 *
 * @example
 * ```ts
 * formatSegmentName({ start: 1, end: 450 }); // "000000000001-000000000450.jsonl"
 * ```
 * @throws {InvalidInputError} when the range is not `1 <= start <= end < 10^12`.
 */
export function formatSegmentName(range: SegmentRange): string {
  const { start, end } = range;
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 1 || end < start || end > MAX_SEQUENCE) {
    throw new InvalidInputError(`segment range ${start}-${end} is not 1 <= start <= end <= ${MAX_SEQUENCE}`, { start, end });
  }
  return `${String(start).padStart(SEGMENT_DIGITS, "0")}-${String(end).padStart(SEGMENT_DIGITS, "0")}.jsonl`;
}

/**
 * Parses a segment file name, or returns `undefined` for any other name.
 *
 * @example
 * ```ts
 * parseSegmentName("000000000001-000000000450.jsonl"); // { start: 1, end: 450 }
 * parseSegmentName("notes.txt"); // undefined
 * ```
 */
export function parseSegmentName(name: string): SegmentRange | undefined {
  const match = SEGMENT_NAME.exec(name);
  if (!match) return undefined;
  const start = Number(match[1]);
  const end = Number(match[2]);
  return start >= 1 && end >= start ? { start, end } : undefined;
}
