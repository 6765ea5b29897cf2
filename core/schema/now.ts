/**
 * The current time as the records carry it, apart from the schemas (core/schema/common.ts
 * re-exports it), so that a writer's clock never loads zod.
 *
 * @module
 */

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
