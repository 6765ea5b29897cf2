/**
 * Key-encryption keys of an encrypted store in a browser (docs/FORMAT.md "Encrypted stores",
 * "Keys in a browser"), kept in their own IndexedDB database as one record, replaced whole in
 * one transaction by every change:
 *
 * - without a passphrase, non-extractable AES-GCM `CryptoKey`s stored by structured clone:
 *   page script can use them but never read their bytes; a copy of the browser profile still
 *   opens the store;
 * - with a passphrase, only the keys sealed by a key derived from the passphrase (PBKDF2-SHA-256,
 *   600,000 iterations, a random salt): a copied profile alone does not open the store. The
 *   unsealed keys are imported non-extractable and live only in memory.
 *
 * A passphrase is changed or removed here ({@linkcode changeBrowserKeyringPassphrase}); keys
 * are rotated, and a passphrase set on a keyring without one, by `rotateBrowserKeyring`
 * (key-rotation.ts): keys stored non-extractable cannot be sealed, so they are replaced.
 *
 * @module
 */
import { createStore, get, set, update, type UseStore } from "idb-keyval";
import { InvalidInputError, type KeyProvider, KeyRequiredError, keyring, RevisionConflictError, WrongKeyError } from "../core/mod.ts";
import { assertFields, derivePassphraseKey, objectArgument, PBKDF2_ITERATIONS } from "../core/internal.ts";

export { PBKDF2_ITERATIONS } from "../core/internal.ts";

/** Options of {@linkcode openBrowserKeyring}. */
export interface BrowserKeyringOptions {
  /** The IndexedDB database of the keys; default `"sessionfold-keys"`. */
  readonly dbName?: string;
  /** Seal the key with this passphrase (a new keyring), or unseal it (an existing one). */
  readonly passphrase?: string;
}

/** A keyring without a passphrase. */
interface PlainKeyring {
  readonly kind: "plain";
  readonly current: string;
  readonly keys: Readonly<Record<string, CryptoKey>>;
  /** Counts the record's replacements, so a change made from a stale read is refused (absent: 0). */
  readonly revision?: number;
}

/** A keyring sealed by a passphrase. */
interface PassphraseKeyring {
  readonly kind: "passphrase";
  readonly current: string;
  readonly salt: Uint8Array;
  readonly iterations: number;
  /** Per kid: `nonce (12) ‖ AES-GCM(passphrase key, raw key, kid)`. */
  readonly sealed: Readonly<Record<string, Uint8Array>>;
  /**
   * The keys of the keyring before its passphrase was set (non-extractable, so they cannot be
   * sealed), kept only until the rotation that set it has re-wrapped every data key.
   */
  readonly retiring?: Readonly<Record<string, CryptoKey>>;
  readonly revision?: number;
}

/** What the key database holds under `"keyring"`. */
export type StoredKeyring = PlainKeyring | PassphraseKeyring;

const RECORD = "keyring";

/** The key database `dbName` (default `"sessionfold-keys"`). */
export function keyDatabase(dbName: string | undefined): UseStore {
  return createStore(dbName ?? "sessionfold-keys", "keys");
}

/**
 * `options` of the keyring function `where`, checked before the key database is touched: from plain JavaScript a
 * `null` or a passphrase that is not text is an `InvalidInputError` naming it (docs/decisions.md "The public API
 * checks its arguments"), not a `TypeError` from the key derivation.
 *
 * @example
 * ```ts
 * const options = keyringOptions({ dbName: "my-app-keys", passphrase: "words" }, "openBrowserKeyring"); // as given
 * ```
 */
export function keyringOptions<T extends object>(options: T, where: string): T {
  objectArgument(options, `${where}(options)`, "an object");
  assertFields(options, `${where}(options)`, { dbName: "string", passphrase: "string", newPassphrase: "string" });
  return options;
}

/** The stored keyring, if any. */
export function readKeyring(store: UseStore): Promise<StoredKeyring | undefined> {
  return get<StoredKeyring>(RECORD, store);
}

/**
 * Replaces the stored keyring with `next` in one IndexedDB transaction, only if it is still the
 * one read (its revision): a change made from a stale read never lands.
 */
export async function replaceKeyring(store: UseStore, read: StoredKeyring, next: StoredKeyring): Promise<void> {
  const expected = read.revision ?? 0;
  await update<StoredKeyring>(RECORD, (found) => {
    if ((found?.revision ?? 0) !== expected || found?.current !== read.current) {
      throw new RevisionConflictError("the browser keyring was changed by another tab meanwhile: nothing was changed; try again", {
        expected,
        found: found?.revision ?? null,
      });
    }
    return { ...next, revision: expected + 1 };
  }, store);
}

/** Every kid the keyring holds. */
export function kidsOf(stored: StoredKeyring): string[] {
  return stored.kind === "plain" ? Object.keys(stored.keys) : [...Object.keys(stored.retiring ?? {}), ...Object.keys(stored.sealed)];
}

/** A new random kid. */
export function newKid(): string {
  return `k_${Array.from(crypto.getRandomValues(new Uint8Array(6)), (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/** Imports a KEK's raw bytes as a non-extractable AES-GCM key. */
export function importKek(raw: Uint8Array<ArrayBuffer>): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", raw, { name: "AES-GCM" }, false, ["encrypt", "decrypt"]);
}

/** `nonce (12) ‖ AES-GCM(sealing, raw, kid)`. */
export async function sealKek(sealing: CryptoKey, kid: string, raw: Uint8Array<ArrayBuffer>): Promise<Uint8Array<ArrayBuffer>> {
  const nonce = crypto.getRandomValues(new Uint8Array(12));
  const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv: nonce, additionalData: new TextEncoder().encode(kid) }, sealing, raw));
  const record = new Uint8Array(12 + sealed.length);
  record.set(nonce);
  record.set(sealed, 12);
  return record;
}

/** A passphrase-sealing of nothing yet: a new salt and the key the passphrase derives with it. */
export async function newSealing(passphrase: string): Promise<{ salt: Uint8Array<ArrayBuffer>; iterations: number; sealing: CryptoKey }> {
  if (passphrase === "") throw new InvalidInputError("a keyring passphrase cannot be empty", { field: "passphrase" });
  const salt = crypto.getRandomValues(new Uint8Array(16));
  return { salt, iterations: PBKDF2_ITERATIONS, sealing: await derivePassphraseKey(passphrase, salt, PBKDF2_ITERATIONS) };
}

/** The key the keyring's passphrase derives; `passphrase` missing is `key-required`. */
export async function sealingOf(stored: PassphraseKeyring, passphrase: string | undefined): Promise<CryptoKey> {
  if (passphrase === undefined) throw new KeyRequiredError("the store's key is sealed by a passphrase: give it to unlock the store", { kid: stored.current });
  return derivePassphraseKey(passphrase, stored.salt, stored.iterations);
}

/** The raw bytes of every sealed key (the caller zeroes them); a wrong passphrase is `wrong-key`. */
async function unsealAll(stored: PassphraseKeyring, sealing: CryptoKey): Promise<Record<string, Uint8Array<ArrayBuffer>>> {
  const raws: Record<string, Uint8Array<ArrayBuffer>> = {};
  for (const [kid, record] of Object.entries(stored.sealed)) {
    try {
      raws[kid] = new Uint8Array(
        await crypto.subtle.decrypt(
          { name: "AES-GCM", iv: new Uint8Array(record.subarray(0, 12)), additionalData: new TextEncoder().encode(kid) },
          sealing,
          new Uint8Array(record.subarray(12)),
        ),
      );
    } catch {
      for (const raw of Object.values(raws)) raw.fill(0);
      throw new WrongKeyError("the passphrase does not unlock the store's key", { kid });
    }
  }
  return raws;
}

/** The keys of a stored keyring, every kid it holds. */
export async function unlockKeyring(stored: StoredKeyring, passphrase: string | undefined): Promise<Record<string, CryptoKey>> {
  if (stored.kind === "plain") return { ...stored.keys };
  const raws = await unsealAll(stored, await sealingOf(stored, passphrase));
  const keys: Record<string, CryptoKey> = { ...stored.retiring };
  for (const [kid, raw] of Object.entries(raws)) {
    keys[kid] = await importKek(raw);
    raw.fill(0);
  }
  return keys;
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
  const { salt, iterations, sealing } = await newSealing(passphrase);
  const sealed = await sealKek(sealing, kid, raw);
  raw.fill(0);
  return { stored: { kind: "passphrase", current: kid, salt, iterations, sealed: { [kid]: sealed } }, keys: { [kid]: key } };
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
 * @throws {InvalidInputError} when `options` is not an object, or its `dbName` or `passphrase` is not a string.
 * @throws {KeyRequiredError} when the stored key is sealed by a passphrase and none is given.
 * @throws {WrongKeyError} when the passphrase does not unseal it.
 */
export async function openBrowserKeyring(options: BrowserKeyringOptions = {}): Promise<KeyProvider> {
  keyringOptions(options, "openBrowserKeyring");
  const store = keyDatabase(options.dbName);
  const stored = await readKeyring(store);
  if (stored) return keyring(await unlockKeyring(stored, options.passphrase), stored.current);
  const made = await newKeyring(options.passphrase);
  await set(RECORD, made.stored, store);
  return keyring(made.keys, made.stored.current);
}

/** What {@linkcode describeBrowserKeyring} tells without unsealing anything. */
export interface BrowserKeyringInfo {
  /** Whether the keys are sealed by a passphrase (an unlock needs it). */
  readonly passphrase: boolean;
  /** The kid new data keys are wrapped with once a rotation has finished. */
  readonly currentKid: string;
  /** Every kid held: more than one while a rotation is unfinished (`rotateBrowserKeyring` finishes it). */
  readonly kids: readonly string[];
}

/**
 * What the browser keyring `dbName` is, without its passphrase; `undefined` when there is none.
 *
 * @example
 * ```ts
 * const info = await describeBrowserKeyring({ dbName: "my-app-keys" });
 * if (info?.passphrase) console.log("ask for the passphrase");
 * ```
 */
export async function describeBrowserKeyring(options: { readonly dbName?: string } = {}): Promise<BrowserKeyringInfo | undefined> {
  keyringOptions(options, "describeBrowserKeyring");
  const stored = await readKeyring(keyDatabase(options.dbName));
  if (!stored) return undefined;
  return { passphrase: stored.kind === "passphrase", currentKid: stored.current, kids: kidsOf(stored) };
}

/** Options of {@linkcode changeBrowserKeyringPassphrase}. */
export interface PassphraseChangeOptions {
  /** The IndexedDB database of the keys; default `"sessionfold-keys"`. */
  readonly dbName?: string;
  /** The keyring's passphrase now. */
  readonly passphrase?: string;
  /** The new passphrase; `undefined` removes it (the keys are then stored non-extractable, unsealed). */
  readonly newPassphrase?: string | undefined;
}

/**
 * Changes or removes the passphrase of a passphrase-sealed browser keyring: its keys are
 * sealed again under the new passphrase (a new salt), or stored non-extractable without one,
 * in one IndexedDB transaction. The keys themselves do not change: a copy of the key database
 * taken before still opens with the old passphrase (rotate the keys when that matters). A
 * keyring without a passphrase gets one through `rotateBrowserKeyring`, since its keys cannot
 * be read to be sealed.
 *
 * @example
 * ```ts
 * await changeBrowserKeyringPassphrase({ passphrase: "old words", newPassphrase: "new longer words" });
 * ```
 * @throws {KeyRequiredError} when the keyring has a passphrase and none is given.
 * @throws {WrongKeyError} when the passphrase given does not unseal it; nothing changed.
 * @throws {InvalidInputError} when there is no keyring, the new passphrase is empty (or not a string), or a keyring without a passphrase is to get one.
 * @throws {RevisionConflictError} when another tab changed the keyring meanwhile; nothing changed.
 */
export async function changeBrowserKeyringPassphrase(options: PassphraseChangeOptions): Promise<void> {
  keyringOptions(options, "changeBrowserKeyringPassphrase");
  const store = keyDatabase(options.dbName);
  const stored = await readKeyring(store);
  if (!stored) throw new InvalidInputError("there is no browser keyring to change", { file: options.dbName ?? "sessionfold-keys" });
  if (stored.kind === "plain") {
    if (options.newPassphrase === undefined) return;
    throw new InvalidInputError(
      "the keyring has no passphrase and its keys cannot be read to be sealed: set one with rotateBrowserKeyring(storage, { newPassphrase })",
      { field: "newPassphrase" },
    );
  }
  const raws = await unsealAll(stored, await sealingOf(stored, options.passphrase));
  try {
    if (options.newPassphrase === undefined) {
      const keys: Record<string, CryptoKey> = { ...stored.retiring };
      for (const [kid, raw] of Object.entries(raws)) keys[kid] = await importKek(raw);
      await replaceKeyring(store, stored, { kind: "plain", current: stored.current, keys });
      return;
    }
    const { salt, iterations, sealing } = await newSealing(options.newPassphrase);
    const sealed: Record<string, Uint8Array> = {};
    for (const [kid, raw] of Object.entries(raws)) sealed[kid] = await sealKek(sealing, kid, raw);
    await replaceKeyring(store, stored, { ...stored, salt, iterations, sealed });
  } finally {
    for (const raw of Object.values(raws)) raw.fill(0);
  }
}
