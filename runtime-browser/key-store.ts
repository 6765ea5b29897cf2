/**
 * Key-encryption keys of an encrypted store in a browser (docs/FORMAT.md "Encrypted stores"),
 * kept in their own IndexedDB database:
 *
 * - without a passphrase, a non-extractable AES-GCM `CryptoKey` stored by structured clone:
 *   page script can use it but never read its bytes; a copy of the browser profile still
 *   opens the store;
 * - with a passphrase, only the key sealed by a key derived from the passphrase (PBKDF2-SHA-256,
 *   600,000 iterations, a random salt): a copied profile alone does not open the store. The
 *   unsealed key is imported non-extractable and lives only in memory.
 *
 * @module
 */
import { createStore, get, set, type UseStore } from "idb-keyval";
import { type KeyProvider, KeyRequiredError, keyring, WrongKeyError } from "../core/mod.ts";

/** PBKDF2 iterations (OWASP's 2023 figure for PBKDF2-HMAC-SHA256). */
export const PBKDF2_ITERATIONS = 600_000;

/** Options of {@linkcode openBrowserKeyring}. */
export interface BrowserKeyringOptions {
  /** The IndexedDB database of the keys; default `"sessionfold-keys"`. */
  readonly dbName?: string;
  /** Seal the key with this passphrase (a new keyring), or unseal it (an existing one). */
  readonly passphrase?: string;
}

/** What the key database holds under `"keyring"`. */
type StoredKeyring =
  | { readonly kind: "plain"; readonly current: string; readonly keys: Readonly<Record<string, CryptoKey>> }
  | {
    readonly kind: "passphrase";
    readonly current: string;
    readonly salt: Uint8Array;
    readonly iterations: number;
    /** Per kid: `nonce (12) ‖ AES-GCM(passphrase key, raw key, kid)`. */
    readonly sealed: Readonly<Record<string, Uint8Array>>;
  };

const RECORD = "keyring";

function newKid(): string {
  return `k_${Array.from(crypto.getRandomValues(new Uint8Array(6)), (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

async function passphraseKey(passphrase: string, salt: Uint8Array<ArrayBuffer>, iterations: number): Promise<CryptoKey> {
  const material = await crypto.subtle.importKey("raw", new TextEncoder().encode(passphrase), "PBKDF2", false, ["deriveKey"]);
  return crypto.subtle.deriveKey({ name: "PBKDF2", salt, iterations, hash: "SHA-256" }, material, { name: "AES-GCM", length: 256 }, false, [
    "encrypt",
    "decrypt",
  ]);
}

function importKek(raw: Uint8Array<ArrayBuffer>): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", raw, { name: "AES-GCM" }, false, ["encrypt", "decrypt"]);
}

/** A new keyring of one random key, as stored, with the key for this page. */
async function newKeyring(passphrase: string | undefined): Promise<{ stored: StoredKeyring; keys: Record<string, CryptoKey> }> {
  const kid = newKid();
  const raw = crypto.getRandomValues(new Uint8Array(32));
  const key = await importKek(raw);
  if (passphrase === undefined) {
    raw.fill(0);
    return { stored: { kind: "plain", current: kid, keys: { [kid]: key } }, keys: { [kid]: key } };
  }
  const salt = crypto.getRandomValues(new Uint8Array(16));
  const sealing = await passphraseKey(passphrase, salt, PBKDF2_ITERATIONS);
  const nonce = crypto.getRandomValues(new Uint8Array(12));
  const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv: nonce, additionalData: new TextEncoder().encode(kid) }, sealing, raw));
  raw.fill(0);
  const record = new Uint8Array(12 + sealed.length);
  record.set(nonce);
  record.set(sealed, 12);
  return { stored: { kind: "passphrase", current: kid, salt, iterations: PBKDF2_ITERATIONS, sealed: { [kid]: record } }, keys: { [kid]: key } };
}

/** The keys of a stored keyring. */
async function unlock(stored: StoredKeyring, passphrase: string | undefined): Promise<Record<string, CryptoKey>> {
  if (stored.kind === "plain") return { ...stored.keys };
  if (passphrase === undefined) throw new KeyRequiredError("the store's key is sealed by a passphrase: give it to unlock the store", { kid: stored.current });
  const sealing = await passphraseKey(passphrase, new Uint8Array(stored.salt), stored.iterations);
  const keys: Record<string, CryptoKey> = {};
  for (const [kid, record] of Object.entries(stored.sealed)) {
    let raw: Uint8Array<ArrayBuffer>;
    try {
      raw = new Uint8Array(
        await crypto.subtle.decrypt(
          { name: "AES-GCM", iv: new Uint8Array(record.subarray(0, 12)), additionalData: new TextEncoder().encode(kid) },
          sealing,
          new Uint8Array(record.subarray(12)),
        ),
      );
    } catch {
      throw new WrongKeyError("the passphrase does not unlock the store's key", { kid });
    }
    keys[kid] = await importKek(raw);
    raw.fill(0);
  }
  return keys;
}

/**
 * The key provider of this browser's encrypted store: the keys kept in IndexedDB, made on
 * first use (sealed by `passphrase` when one is given).
 *
 * @example
 * ```ts
 * import { EncryptedStorage } from "sessionfold";
 * import { IndexedDbStorage } from "sessionfold/browser";
 * const keys = await openBrowserKeyring({ passphrase: "correct horse battery staple" });
 * const storage = await EncryptedStorage.create(new IndexedDbStorage(), keys);
 * ```
 * @throws {KeyRequiredError} when the stored key is sealed by a passphrase and none is given.
 * @throws {WrongKeyError} when the passphrase does not unseal it.
 */
export async function openBrowserKeyring(options: BrowserKeyringOptions = {}): Promise<KeyProvider> {
  const store: UseStore = createStore(options.dbName ?? "sessionfold-keys", "keys");
  const stored = await get<StoredKeyring>(RECORD, store);
  if (stored) return keyring(await unlock(stored, options.passphrase), stored.current);
  const made = await newKeyring(options.passphrase);
  await set(RECORD, made.stored, store);
  return keyring(made.keys, made.stored.current);
}
