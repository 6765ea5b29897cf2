/**
 * Text to UTF-8 bytes on the commit path: the encoding every document and line a commit
 * writes goes through.
 *
 * @module
 */

const encoder = new TextEncoder();
/** Texts up to this many UTF-16 units are encoded through {@linkcode scratch}; longer ones by `encode` (no scratch kept that large). */
const SCRATCH_UNITS = 16_384;
/** Room for the UTF-8 of any text of {@linkcode SCRATCH_UNITS} units (at most 3 bytes a unit). */
const scratch = new Uint8Array(SCRATCH_UNITS * 3);

/**
 * The UTF-8 bytes of `text`, in a fresh array of their exact size (what `TextEncoder#encode`
 * gives), or in the array `allocate` gives for that size (an envelope's associated data goes
 * into `transientBytes`; a text over the scratch buffer's 16 Ki units gets its encoder's fresh
 * array either way). A short text is encoded into a scratch buffer and copied out: in
 * Node, `TextEncoder#encode` costs about 1 µs for a commit's few hundred bytes, `encodeInto`
 * and a copy half of that, and a commit encodes three (its line, `meta.json`, the lock record).
 *
 * @example
 * ```ts
 * utf8Bytes("é\n"); // Uint8Array [195, 169, 10]
 * ```
 */
export function utf8Bytes(text: string, allocate?: (length: number) => Uint8Array<ArrayBuffer>): Uint8Array<ArrayBuffer> {
  // TextEncoder's bytes are always a fresh ArrayBuffer's, which the DOM's types do not say.
  if (text.length > SCRATCH_UNITS) return encoder.encode(text) as Uint8Array<ArrayBuffer>;
  const written = encoder.encodeInto(text, scratch).written;
  if (!allocate) return scratch.slice(0, written);
  const bytes = allocate(written);
  bytes.set(scratch.subarray(0, written));
  return bytes;
}
