/**
 * Standard base64 (with padding) for the envelope's nonce, ciphertext and wrapped keys.
 * Encoding writes ASCII bytes from a table instead of `btoa` over a binary string, which
 * cost more than the cipher for a record of a few hundred bytes.
 *
 * @module
 */

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
/** Each 6-bit value's character, as its ASCII byte. */
const CODES = Uint8Array.from(ALPHABET, (c) => c.charCodeAt(0));
const PAD = 0x3d;
/** Base64 is ASCII: its bytes read as Latin-1 are its text. */
const ascii = new TextDecoder("latin1");

/**
 * The length of the base64 of `byteLength` bytes.
 *
 * @example
 * ```ts
 * base64Length(3); // 4
 * ```
 */
export function base64Length(byteLength: number): number {
  return Math.ceil(byteLength / 3) * 4;
}

/**
 * Writes the base64 of `bytes` into `out` from `at` as ASCII bytes (an envelope is built as
 * bytes, never as a string of its ciphertext); returns where it ended.
 *
 * @example
 * ```ts
 * const out = new Uint8Array(4);
 * base64Into(new Uint8Array([1, 2, 3]), out, 0); // 4; out holds "AQID"
 * ```
 */
export function base64Into(bytes: Uint8Array, out: Uint8Array, at: number): number {
  const whole = bytes.length - (bytes.length % 3);
  let i = 0;
  for (; i < whole; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out[at++] = CODES[n >> 18]!;
    out[at++] = CODES[(n >> 12) & 63]!;
    out[at++] = CODES[(n >> 6) & 63]!;
    out[at++] = CODES[n & 63]!;
  }
  if (i < bytes.length) {
    const two = i + 1 < bytes.length;
    const n = (bytes[i]! << 16) | (two ? bytes[i + 1]! << 8 : 0);
    out[at++] = CODES[n >> 18]!;
    out[at++] = CODES[(n >> 12) & 63]!;
    out[at++] = two ? CODES[(n >> 6) & 63]! : PAD;
    out[at++] = PAD;
  }
  return at;
}

/**
 * Base64 of `bytes`.
 *
 * @example
 * ```ts
 * toBase64(new Uint8Array([1, 2, 3])); // "AQID"
 * ```
 */
export function toBase64(bytes: Uint8Array): string {
  const out = new Uint8Array(base64Length(bytes.length));
  base64Into(bytes, out, 0);
  return ascii.decode(out);
}

/**
 * The bytes of a base64 string, or `undefined` when it is not valid base64 (`atob`, native,
 * is the fastest decoder everywhere), in an array `allocate` gives (a new one by default; an
 * envelope's ciphertext, read once, goes into `transientBytes`).
 *
 * @example
 * ```ts
 * fromBase64("AQID"); // Uint8Array [1, 2, 3]
 * ```
 */
export function fromBase64(
  text: string,
  allocate: (length: number) => Uint8Array<ArrayBuffer> = (length) => new Uint8Array(length),
): Uint8Array<ArrayBuffer> | undefined {
  let binary: string;
  try {
    binary = atob(text);
  } catch {
    return undefined;
  }
  const bytes = allocate(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}
