import * as z from "zod";

/** An ISO-8601 timestamp. Writers emit UTC with milliseconds; readers accept any offset. */
export const Timestamp: z.ZodISODateTime = z.iso.datetime({ offset: true });

/** A 1-based position (message or part sequence). */
export const Sequence: z.ZodInt = z.int().min(1);

/** A count of tokens, bytes, messages… */
export const Count: z.ZodInt = z.int().min(0);

export { nowTimestamp } from "./now.ts";
