/**
 * Short-lived byte arrays cut from a shared slab, as Node's `Buffer` pool cuts small buffers:
 * on V8 a `Uint8Array` over 64 bytes gets a backing store of its own outside the heap, and
 * making one costs microseconds (the allocation and the collector's count of external
 * memory), more than encoding or decoding a few hundred bytes. An encrypted read made two such
 * arrays per line for bytes it reads once and drops (docs/decisions.md, "An encrypted line's
 * short-lived bytes").
 *
 * Only for bytes that are read and dropped before anything could keep them: never bytes that
 * are kept, returned to a caller, written into later or transferred to a worker (a transfer
 * would take the whole slab, and every other array cut from it).
 *
 * @module
 */

const SLAB_BYTES = 64 * 1024;
/** Larger arrays get their own buffer: a slab holds at least two. */
const LARGEST = SLAB_BYTES >>> 1;
const utf8 = new TextEncoder();

let slab = new Uint8Array(SLAB_BYTES);
let used = 0;

function freshSlab(): void {
  slab = new Uint8Array(SLAB_BYTES);
  used = 0;
}

/** The next `length` bytes of the slab (the caller made sure they are there); the next array starts 8-byte aligned. */
function cut(length: number): Uint8Array<ArrayBuffer> {
  const start = used;
  used += (length + 7) & ~7;
  return slab.subarray(start, start + length);
}

/**
 * `length` zeroed bytes, to be filled at once and dropped after use (see the module doc).
 *
 * @example
 * ```ts
 * const nonce = transientBytes(12);
 * nonce.set([1, 2, 3]);
 * ```
 */
export function transientBytes(length: number): Uint8Array<ArrayBuffer> {
  if (length > LARGEST) return new Uint8Array(length);
  if (used + length > SLAB_BYTES) freshSlab();
  return cut(length);
}

/**
 * The UTF-8 bytes of `text`, to be read and dropped (see the module doc).
 *
 * @example
 * ```ts
 * transientUtf8('["a",1]'); // Uint8Array of 7 bytes, a view of the shared slab
 * ```
 */
export function transientUtf8(text: string): Uint8Array<ArrayBuffer> {
  // At most 3 bytes a UTF-16 unit: a text that could need more than half a slab gets a buffer of its own.
  // TextEncoder's bytes are always a fresh ArrayBuffer's, which the DOM's types do not say.
  if (text.length * 3 > LARGEST) return utf8.encode(text) as Uint8Array<ArrayBuffer>;
  // Into what the slab has left, or else into a fresh one (no room is set aside for the worst case).
  const { read, written } = utf8.encodeInto(text, slab.subarray(used));
  if (read === text.length) return cut(written);
  freshSlab();
  return cut(utf8.encodeInto(text, slab).written);
}
