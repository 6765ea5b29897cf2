/**
 * One-dimensional PostgreSQL arrays in the binary wire format (`array_recv`'s input), for the
 * array parameters of `run_plan`. `pg` sends a `Buffer` parameter in binary; any other array
 * it writes as a text literal (every element escaped with regular expressions), which the
 * server parses back character by character. docs/POSTGRES.md "Writer ownership and commits".
 *
 * @module
 */

/** The element types the adapter sends, by their PostgreSQL type OID. */
const ELEMENT = { int4: 23, int8: 20, text: 25 } as const;

/** How the element type of {@linkcode binaryArray} is named. */
export type ElementType = keyof typeof ELEMENT;

/** 2³², to cut an int8 in two 32-bit halves. */
const HALF = 4294967296;

/**
 * `values` as a binary PostgreSQL array of `type` (one dimension, lower bound 1; `null` for
 * SQL `NULL`). Numbers must be integers in the type's range (an int8 a safe integer).
 *
 * @example
 * ```ts
 * const paths = binaryArray("text", ["a/active.jsonl", null]); // a text[] parameter
 * ```
 */
export function binaryArray(type: ElementType, values: readonly (string | number | null)[]): Buffer {
  let size = 20;
  let nulls = 0;
  for (const value of values) {
    if (value === null) nulls = 1;
    size += 4 + (value === null ? 0 : type === "text" ? Buffer.byteLength(value as string) : type === "int4" ? 4 : 8);
  }
  const out = Buffer.allocUnsafe(size);
  out.writeInt32BE(1, 0); // dimensions
  out.writeInt32BE(nulls, 4); // whether any element is NULL
  out.writeInt32BE(ELEMENT[type], 8);
  out.writeInt32BE(values.length, 12);
  out.writeInt32BE(1, 16); // lower bound
  let at = 20;
  for (const value of values) {
    if (value === null) {
      out.writeInt32BE(-1, at);
      at += 4;
    } else if (type === "text") {
      const length = out.write(value as string, at + 4);
      out.writeInt32BE(length, at);
      at += 4 + length;
    } else if (type === "int4") {
      out.writeInt32BE(4, at);
      out.writeInt32BE(value as number, at + 4);
      at += 8;
    } else {
      const high = Math.floor((value as number) / HALF);
      out.writeInt32BE(8, at);
      out.writeInt32BE(high, at + 4);
      out.writeUInt32BE((value as number) - high * HALF, at + 8);
      at += 12;
    }
  }
  return out;
}
