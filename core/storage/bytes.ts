/**
 * Byte arrays joined into one: the one copy of the loop that every backend, the JSONL readers
 * and the conformance suite need when a file comes back in pieces; and compared.
 *
 * @module
 */

/**
 * `parts` joined in order into one fresh array (a lone part of the full size is returned as
 * is, not copied). `size` is their total length when the caller already counted it.
 *
 * @example
 * ```ts
 * concatBytes([new Uint8Array([1, 2]), new Uint8Array([3])]); // Uint8Array [1, 2, 3]
 * ```
 */
export function concatBytes(parts: readonly Uint8Array[], size?: number): Uint8Array {
  const total = size ?? parts.reduce((sum, part) => sum + part.length, 0);
  if (parts.length === 1 && parts[0]!.length === total) return parts[0]!;
  const out = new Uint8Array(total);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/**
 * Whether `a` and `b` hold the same bytes.
 *
 * @example
 * ```ts
 * sameBytes(new Uint8Array([1, 2]), new Uint8Array([1, 2])); // true
 * ```
 */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
