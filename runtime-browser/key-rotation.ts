/**
 * Rotation of the browser keyring (docs/FORMAT.md "Keys in a browser"): a new key-encryption
 * key with a new kid becomes the keyring's current key, the core's `EncryptedStorage.rotate()`
 * (what `sessionfold rekey` runs) re-wraps every session's data keys under it, and only then
 * are the old keys dropped. Each step replaces the keyring record in one IndexedDB
 * transaction; a rotation cut short leaves the keyring holding old and new keys, and the next
 * call finishes it.
 *
 * @module
 */
import { EncryptedStorage, InvalidInputError, KeyRequiredError, keyring, type RotationReport, type StoragePort } from "../core/mod.ts";
import type { UseStore } from "idb-keyval";
import {
  importKek,
  keyDatabase,
  keyringOptions,
  kidsOf,
  newKid,
  newSealing,
  readKeyring,
  replaceKeyring,
  sealingOf,
  sealKek,
  type StoredKeyring,
  unlockKeyring,
} from "./key-store.ts";

/** Options of {@linkcode rotateBrowserKeyring}. */
export interface BrowserKeyRotationOptions {
  /** The IndexedDB database of the keys; default `"sessionfold-keys"`. */
  readonly dbName?: string;
  /** The keyring's passphrase, when it has one. */
  readonly passphrase?: string;
  /**
   * Seal the new key with this passphrase: how a keyring without one gets a passphrase (its
   * old, non-extractable keys are dropped once every data key is re-wrapped). Only for a
   * keyring without a passphrase; change an existing one with `changeBrowserKeyringPassphrase`.
   */
  readonly newPassphrase?: string;
}

/** What {@linkcode rotateBrowserKeyring} did. */
export interface BrowserKeyRotation extends RotationReport {
  /** The kids the keyring dropped. */
  readonly previousKids: readonly string[];
  /** It finished a rotation an earlier call had started (and, with `newPassphrase`, then rotated again). */
  readonly resumed: boolean;
  /** Whether the keyring is now sealed by a passphrase. */
  readonly passphrase: boolean;
}

/** Re-wraps every data key under the keyring's current kid, then drops every other kid. */
async function finish(
  store: UseStore,
  inner: StoragePort,
  stored: StoredKeyring,
  keys: Record<string, CryptoKey>,
): Promise<Omit<BrowserKeyRotation, "resumed">> {
  const report = await (await EncryptedStorage.open(inner, keyring(keys, stored.current))).rotate();
  const current = stored.current;
  const next: StoredKeyring = stored.kind === "plain"
    ? { kind: "plain", current, keys: { [current]: stored.keys[current]! } }
    : { kind: "passphrase", current, salt: stored.salt, iterations: stored.iterations, sealed: { [current]: stored.sealed[current]! } };
  await replaceKeyring(store, stored, next);
  return { ...report, previousKids: kidsOf(stored).filter((kid) => kid !== current), passphrase: stored.kind === "passphrase" };
}

/**
 * Rotates the browser keyring's key-encryption key for the encrypted store `storage` (the
 * `EncryptedStorage`, or the backend under it): a new random key with a new kid, sealed by the
 * keyring's passphrase (or by `newPassphrase`, which gives a keyring without one a passphrase),
 * then `EncryptedStorage.rotate()`, then the old keys are dropped. A keyring that holds more
 * than one key (a rotation cut short) is finished instead. Run it while nothing else writes the
 * store, and open the store's handles again afterwards: a handle opened before still holds the
 * old key and would wrap a new session's data key with it.
 *
 * @example
 * ```ts
 * import { EncryptedStorage } from "sessionfold";
 * import { IndexedDbStorage } from "sessionfold/browser";
 * const backend = new IndexedDbStorage({ dbName: "my-app" });
 * const report = await rotateBrowserKeyring(backend, { dbName: "my-app-keys", passphrase: "correct horse battery staple" });
 * console.log(`now ${report.kid}; ${report.dataKeys} data keys re-wrapped`);
 * ```
 * @throws {KeyRequiredError} when there is no keyring, or it has a passphrase and none is given.
 * @throws {WrongKeyError} when the passphrase does not unseal the keyring, or its keys do not open the store; nothing changed.
 * @throws {InvalidInputError} when `newPassphrase` is given for a keyring that has a passphrase, or is empty; when `options` is not an object or one of its fields is not a string.
 * @throws {RevisionConflictError} when another tab changed the keyring meanwhile.
 */
export async function rotateBrowserKeyring(storage: StoragePort, options: BrowserKeyRotationOptions = {}): Promise<BrowserKeyRotation> {
  keyringOptions(options, "rotateBrowserKeyring");
  const store = keyDatabase(options.dbName);
  const inner = storage instanceof EncryptedStorage ? storage.inner : storage;
  let stored = await readKeyring(store);
  if (!stored) throw new KeyRequiredError("there is no browser keyring to rotate", { file: options.dbName ?? "sessionfold-keys" });
  if (options.newPassphrase !== undefined && stored.kind === "passphrase") {
    throw new InvalidInputError("the keyring already has a passphrase: change it with changeBrowserKeyringPassphrase", { field: "newPassphrase" });
  }
  let resumed = false;
  if (kidsOf(stored).length > 1) {
    const finished = await finish(store, inner, stored, await unlockKeyring(stored, options.passphrase));
    if (options.newPassphrase === undefined || stored.kind === "passphrase") return { ...finished, resumed: true };
    resumed = true;
    stored = (await readKeyring(store))!;
  }
  const keys = await unlockKeyring(stored, options.passphrase);
  // The keys must open the store before anything is written.
  await EncryptedStorage.open(inner, keyring(keys, stored.current));
  const kid = newKid();
  const raw = crypto.getRandomValues(new Uint8Array(32));
  let next: StoredKeyring;
  try {
    keys[kid] = await importKek(raw);
    if (stored.kind === "passphrase") {
      const sealed = await sealKek(await sealingOf(stored, options.passphrase), kid, raw);
      next = { ...stored, current: kid, sealed: { ...stored.sealed, [kid]: sealed } };
    } else if (options.newPassphrase !== undefined) {
      const { salt, iterations, sealing } = await newSealing(options.newPassphrase);
      next = { kind: "passphrase", current: kid, salt, iterations, sealed: { [kid]: await sealKek(sealing, kid, raw) }, retiring: stored.keys };
    } else {
      next = { kind: "plain", current: kid, keys: { ...stored.keys, [kid]: keys[kid] } };
    }
  } finally {
    raw.fill(0);
  }
  await replaceKeyring(store, stored, next);
  return { ...(await finish(store, inner, { ...next, revision: (stored.revision ?? 0) + 1 }, keys)), resumed };
}
