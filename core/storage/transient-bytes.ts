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
