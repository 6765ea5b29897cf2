import { Timestamp } from "../schema/common.ts";
import type { Value } from "./shape.ts";

/** The largest time a JavaScript `Date` holds, in milliseconds. */
const MAX_DATE_MS = 8.64e15;

/**
 * Unix seconds (integer or fractional) as an ISO-8601 UTC timestamp with milliseconds,
 * or `undefined` when it is not a finite time a `Date` can hold.
 */
function unixSecondsToIso(seconds: number): string | undefined {
  if (!Number.isFinite(seconds)) return undefined;
  const ms = Math.round(seconds * 1000);
  if (Math.abs(ms) > MAX_DATE_MS) return undefined;
  return new Date(ms).toISOString();
}

/**
 * `true` when `text` is an ISO-8601 date-time with an offset, as message records require.
 *
 * @example
 * ```ts
 * isIsoTimestamp("2026-12-02T13:00:00.000Z"); // true
 * isIsoTimestamp("yesterday"); // false
 * ```
 */
export function isIsoTimestamp(text: string): boolean {
  return Timestamp.safeParse(text).success;
}

/**
 * An ISO-8601 timestamp string, kept as written.
 *
 * @example
 * ```ts
 * declare const record: { field(name: string): Parameters<typeof isoTimestamp>[0] };
 * isoTimestamp(record.field("created_at"));
 * ```
 * @throws {FormatError} when the value is not an ISO-8601 date-time with an offset.
 */
export function isoTimestamp(value: Value): string {
  const expected = 'an ISO-8601 date-time with an offset, e.g. "2026-12-02T13:00:00.000Z"';
  if (typeof value.raw !== "string" || !isIsoTimestamp(value.raw)) value.fail(expected);
  return value.raw;
}

/**
 * Unix seconds (a JSON number) as an ISO-8601 UTC timestamp.
 *
 * @throws {FormatError} when the value is not a number of seconds a date can hold.
 */
function unixSecondsTimestamp(value: Value): string {
  const iso = typeof value.raw === "number" ? unixSecondsToIso(value.raw) : undefined;
  if (iso === undefined) value.fail("Unix seconds (a number)");
  return iso;
}

/**
 * A timestamp given either as Unix seconds (a number, or a string of digits as Rho writes
 * it) or as an ISO-8601 string, returned as ISO-8601 (an ISO string is kept as written).
 *
 * @example
 * ```ts
 * declare const record: { field(name: string): Parameters<typeof flexibleTimestamp>[0] };
 * flexibleTimestamp(record.field("timestamp")); // "300" → "1970-01-01T00:05:00.000Z"
 * ```
 * @throws {FormatError} when it is neither.
 */
export function flexibleTimestamp(value: Value): string {
  const raw = value.raw;
  if (typeof raw === "number") return unixSecondsTimestamp(value);
  if (typeof raw === "string") {
    if (/^-?\d+(\.\d+)?$/.test(raw)) {
      const iso = unixSecondsToIso(Number(raw));
      if (iso !== undefined) return iso;
    } else if (isIsoTimestamp(raw)) {
      return raw;
    }
  }
  return value.fail("Unix seconds (a number or a string of digits) or an ISO-8601 date-time");
}
