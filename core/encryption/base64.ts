/**
 * Standard base64 (with padding) for the envelope's nonce, ciphertext and wrapped keys.
 *
 * @module
 */

/**
 * Base64 of `bytes`, in chunks so a large ciphertext never overflows the argument list.
 *
 * @example
 * ```ts
 * toBase64(new Uint8Array([1, 2, 3])); // "AQID"
 * ```
 */
export function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x2000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x2000));
  return btoa(binary);
}

/**
 * The bytes of a base64 string, or `undefined` when it is not valid base64.
 *
 * @example
 * ```ts
 * fromBase64("AQID"); // Uint8Array [1, 2, 3]
 * ```
 */
export function fromBase64(text: string): Uint8Array<ArrayBuffer> | undefined {
  let binary: string;
  try {
    binary = atob(text);
  } catch {
    return undefined;
  }
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}
