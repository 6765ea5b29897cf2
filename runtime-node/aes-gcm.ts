/**
 * AES-256-GCM on `node:crypto` for encrypted stores (docs/FORMAT.md "Encrypted stores"): the
 * same function as WebCrypto's, so a store sealed here opens in a browser and back, but one
 * synchronous call per record instead of a WebCrypto job on the thread pool (which costs more
 * than the cipher itself for a line of a few hundred bytes).
 *
 * @module
 */
import type { KeyObject } from "node:crypto";
import { createRequire } from "node:module";
import type { AesGcm } from "../core/mod.ts";

const TAG_BYTES = 16;
/** Each data key's `KeyObject`, made once (`KeyObject.from` takes a non-extractable `CryptoKey` as it is). */
const keyObjects = new WeakMap<CryptoKey, KeyObject>();

let loaded: typeof import("node:crypto") | undefined;

/**
 * `node:crypto`, loaded at the first record sealed or opened: every store is opened with this
 * cipher, but a store in the clear never calls it, and loading the module costs a fresh process
 * about 10M instructions (~1 ms), which the CLI's `show` paid for nothing.
 */
function nodeCrypto(): typeof import("node:crypto") {
  return (loaded ??= createRequire(import.meta.url)("node:crypto") as typeof import("node:crypto"));
}

function keyObjectOf(key: CryptoKey): KeyObject {
  let object = keyObjects.get(key);
  if (!object) {
    object = nodeCrypto().KeyObject.from(key);
    keyObjects.set(key, object);
  }
  return object;
}

/**
 * {@linkcode AesGcm} on `node:crypto`: what the Node runtime's encrypted stores use.
 *
 * @example
 * ```ts
 * import { EncryptedStorage, MemoryStorage, type KeyProvider } from "sessionfold";
 * declare const provider: KeyProvider;
 * const storage = await EncryptedStorage.create(new MemoryStorage(), provider, { cipher: nodeAesGcm });
 * ```
 */
export const nodeAesGcm: AesGcm = {
  encrypt(key, nonce, plaintext, additionalData) {
    const cipher = nodeCrypto().createCipheriv("aes-256-gcm", keyObjectOf(key), nonce, { authTagLength: TAG_BYTES });
    cipher.setAAD(additionalData);
    const head = cipher.update(plaintext);
    const tail = cipher.final();
    // A Buffer is a Uint8Array: returned as it is, never copied again.
    return Buffer.concat([head, tail, cipher.getAuthTag()]);
  },
  decrypt(key, nonce, data, additionalData) {
    if (data.length < TAG_BYTES) throw new RangeError("an AES-GCM ciphertext holds at least its 16-byte tag");
    const decipher = nodeCrypto().createDecipheriv("aes-256-gcm", keyObjectOf(key), nonce, { authTagLength: TAG_BYTES });
    decipher.setAAD(additionalData);
    decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
    const head = decipher.update(data.subarray(0, data.length - TAG_BYTES));
    const tail = decipher.final();
    return tail.length === 0 ? head : Buffer.concat([head, tail]);
  },
};
