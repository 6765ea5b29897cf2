/**
 * Encrypted stores (docs/FORMAT.md "Encrypted stores"): {@linkcode EncryptedStorage}, the
 * storage decorator that seals every session file with AES-256-GCM on WebCrypto, and the key
 * contracts it needs ({@linkcode KeyProvider}, {@linkcode keyring}); sealed exports
 * ({@linkcode sealExport}, {@linkcode openSealedExport}), an export file sealed with a passphrase.
 *
 * @example
 * ```ts
 * import { MemoryStorage, Sessions } from "sessionfold";
 * const kek = await importKeyEncryptionKey(crypto.getRandomValues(new Uint8Array(32)));
 * const storage = await EncryptedStorage.create(new MemoryStorage(), keyring({ k1: kek }, "k1"));
 * const sessions = new Sessions({ storage });
 * ```
 * @module
 */
export {
  EncryptedStorage,
  type EncryptedStorageOptions,
  type MigrationReport,
  type RotationReport,
  type SealRefusal,
  storageForKeys,
} from "./encrypted-storage.ts";
export { importKeyEncryptionKey, type KeyProvider, keyring } from "./keys.ts";
export { type AesGcm, SEALED_VERSION, webCryptoAesGcm } from "./envelope.ts";
export { SESSION_KEYS_FILE, STORE_MARKER } from "./places.ts";
export { isSealedExport, openSealedExport, SEALED_EXPORT_FORMAT, sealExport } from "./sealed-export.ts";
