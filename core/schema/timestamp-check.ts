/**
 * The hand-written check of a `Timestamp` (core/schema/common.ts) for the read path's
 * record checks (`fast-check.ts`): it accepts exactly what the schema's ISO datetime
 * pattern accepts (a calendar date, 24-hour time with seconds, an optional fraction, `Z` or
 * an offset), by comparing characters. The pattern is a large regular expression whose
 * first uses in a process compile it (to bytecode, then native code): a few hundred
 * microseconds inside the first open, where these few comparisons cost nothing to compile.
 * test/core/fast-check.test.ts holds the two to the same answer on edge cases and on
 * random strings.
 *
 * @module
 */

const DIGIT_0 = 0x30;

/** The number written by the `length` ASCII digits at `at`, or -1 when one is not a digit. */
function digitsAt(text: string, at: number, length: number): number {
  let value = 0;
  for (let i = at; i < at + length; i++) {
    const digit = text.charCodeAt(i) - DIGIT_0;
    if (!(digit >= 0 && digit <= 9)) return -1;
    value = value * 10 + digit;
  }
  return value;
}

/** Days in `month` (1–12) of the proleptic Gregorian `year` (0000 is a leap year, as in the pattern). */
function daysIn(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/**
 * Whether `text` is a timestamp the `Timestamp` schema accepts:
 * `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`, a real calendar date, hours 00–23, minutes
 * and seconds 00–59.
 *
 * @example
 * ```ts
 * isTimestampText("2026-12-02T13:00:00.000Z"); // true
 * isTimestampText("2026-02-29T00:00:00Z"); // false: 2026 is not a leap year
 * ```
 */
export function isTimestampText(text: string): boolean {
  const end = text.length;
  if (
    end < 20 || text.charCodeAt(4) !== 0x2d || text.charCodeAt(7) !== 0x2d || text.charCodeAt(10) !== 0x54 || text.charCodeAt(13) !== 0x3a ||
    text.charCodeAt(16) !== 0x3a
  ) {
    return false;
  }
  const year = digitsAt(text, 0, 4);
  const month = digitsAt(text, 5, 2);
  const day = digitsAt(text, 8, 2);
  const hour = digitsAt(text, 11, 2);
  const minute = digitsAt(text, 14, 2);
  const second = digitsAt(text, 17, 2);
  if (year < 0 || month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return false;
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59) return false;
  let at = 19;
  if (text.charCodeAt(at) === 0x2e) {
    const first = ++at;
    while (at < end && digitsAt(text, at, 1) >= 0) at++;
    if (at === first) return false;
  }
  if (at === end - 1) return text.charCodeAt(at) === 0x5a; // "Z"
  if (at !== end - 6) return false;
  const sign = text.charCodeAt(at);
  if ((sign !== 0x2b && sign !== 0x2d) || text.charCodeAt(at + 3) !== 0x3a) return false;
  const offsetHours = digitsAt(text, at + 1, 2);
  const offsetMinutes = digitsAt(text, at + 4, 2);
  return offsetHours >= 0 && offsetHours <= 23 && offsetMinutes >= 0 && offsetMinutes <= 59;
}
