import { z } from "zod";

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
  return new Date(clock()).toISOString();
}
