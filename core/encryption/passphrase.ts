/**
 * Keys derived from a passphrase (docs/FORMAT.md "Encrypted stores", "Sealed exports"):
 * PBKDF2-HMAC-SHA-256 over the passphrase's NFC form and a random salt, giving a
 * non-extractable AES-256-GCM key. One helper for the browser keyring and sealed exports.
 *
 * @module
 */

/** PBKDF2 iterations of a new seal (OWASP's 2023 figure for PBKDF2-HMAC-SHA256). */
export const PBKDF2_ITERATIONS = 600_000;

/**
 * The most iterations a reader accepts from a stored record: about ten seconds of work, so a
 * hostile file cannot make an open hang.
 */
export const MAX_PBKDF2_ITERATIONS = 10_000_000;

/**
 * The AES-256-GCM key `passphrase` derives with `salt` and `iterations`. The passphrase is
 * taken in Unicode NFC, so the same words typed on two systems derive the same key.
 *
 * @example
 * ```ts
 * const salt = crypto.getRandomValues(new Uint8Array(16));
 * const key = await derivePassphraseKey("correct horse battery staple", salt, PBKDF2_ITERATIONS);
 * ```
 * @throws {RangeError} when `iterations` is not an integer from 1 to {@linkcode MAX_PBKDF2_ITERATIONS}.
 */
export async function derivePassphraseKey(passphrase: string, salt: Uint8Array, iterations: number): Promise<CryptoKey> {
  if (!Number.isSafeInteger(iterations) || iterations < 1 || iterations > MAX_PBKDF2_ITERATIONS) {
    throw new RangeError(`PBKDF2 iterations must be an integer from 1 to ${MAX_PBKDF2_ITERATIONS}, found ${iterations}`);
  }
  const material = await crypto.subtle.importKey("raw", new Uint8Array(new TextEncoder().encode(passphrase.normalize("NFC"))), "PBKDF2", false, ["deriveKey"]);
  return crypto.subtle.deriveKey(
    { name: "PBKDF2", salt: new Uint8Array(salt), iterations, hash: "SHA-256" },
    material,
    { name: "AES-GCM", length: 256 },
    false,
    ["encrypt", "decrypt"],
  );
}
