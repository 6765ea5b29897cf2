import * as z from "zod";

/** An ISO-8601 timestamp. Writers emit UTC with milliseconds; readers accept any offset. */
export const Timestamp: z.ZodISODateTime = z.iso.datetime({ offset: true });

/** A 1-based position (message or part sequence). */
export const Sequence: z.ZodInt = z.int().min(1);

/** A count of tokens, bytes, messages… */
export const Count: z.ZodInt = z.int().min(0);

/**
 * The current time as docs/FORMAT.md writes it: ISO-8601 UTC with milliseconds.
 *
 * @example
 * ```ts
 * nowTimestamp(); // "2026-12-02T13:00:00.000Z"
 * ```
 */
export function nowTimestamp(clock: () => number = Date.now): string {
  // A commit asks twice (the message's time, meta.json's): mostly within one millisecond.
  const ms = clock();
  if (ms !== lastStamp.ms) lastStamp = { ms, text: new Date(ms).toISOString() };
  return lastStamp.text;
}

/** The last time {@linkcode nowTimestamp} formatted (`NaN` never matches, so a bad clock still throws). */
let lastStamp = { ms: Number.NaN, text: "" };
