/**
 * Keys of an encrypted store (docs/FORMAT.md "Encrypted stores"): key-encryption keys (KEKs)
 * named by a `kid`, held by the host through a {@linkcode KeyProvider}, and per-session data
 * keys, random AES-256 keys kept wrapped by a KEK in the session's `keys.json`.
 *
 * @module
 */
import { fromBase64, toBase64 } from "./base64.ts";

/**
 * Where key-encryption keys come from: a key file, a keyring in memory, or a host's KMS. Only
 * wrapping and unwrapping are asked of it, so a KMS never hands out its key.
 *
 * @example
 * ```ts
 * const kek = await importKeyEncryptionKey(crypto.getRandomValues(new Uint8Array(32)));
 * const provider: KeyProvider = keyring({ k1: kek }, "k1");
 * ```
 */
export interface KeyProvider {
  /** The kid new data keys are wrapped with. */
  readonly currentKid: string;
  /** Wraps a data key with the KEK `kid`, binding it to `context` (the wrap's associated data). */
  wrapKey(kid: string, dataKey: Uint8Array<ArrayBuffer>, context: Uint8Array<ArrayBuffer>): Promise<Uint8Array<ArrayBuffer>>;
  /**
   * Unwraps what {@linkcode KeyProvider.wrapKey} made: `undefined` when the provider holds no
   * KEK named `kid`; rejects when the KEK does not open it (another key, or tampered).
   */
  unwrapKey(kid: string, wrapped: Uint8Array<ArrayBuffer>, context: Uint8Array<ArrayBuffer>): Promise<Uint8Array<ArrayBuffer> | undefined>;
}

/**
 * Imports 32 bytes as a non-extractable AES-256-GCM key-encryption key.
 *
 * @example
 * ```ts
 * const kek = await importKeyEncryptionKey(crypto.getRandomValues(new Uint8Array(32)));
 * ```
 * @throws {RangeError} when `raw` is not 32 bytes.
 */
export async function importKeyEncryptionKey(raw: Uint8Array): Promise<CryptoKey> {
  if (raw.length !== 32) throw new RangeError(`a key-encryption key is 32 bytes, found ${raw.length}`);
  return crypto.subtle.importKey("raw", new Uint8Array(raw), { name: "AES-GCM" }, false, ["encrypt", "decrypt"]);
}

/**
 * A {@linkcode KeyProvider} over KEKs held in memory (from a key file, or IndexedDB in a
 * browser). A wrapped key is `nonce (12 bytes) ‖ AES-GCM(kek, data key, context)`.
 *
 * @example
 * ```ts
 * declare const oldKek: CryptoKey, newKek: CryptoKey;
 * const provider = keyring({ k1: oldKek, k2: newKek }, "k2");
 * ```
 */
export function keyring(keys: Readonly<Record<string, CryptoKey>>, currentKid: string): KeyProvider {
  const kekOf = (kid: string): CryptoKey | undefined => (Object.hasOwn(keys, kid) ? keys[kid] : undefined);
  if (!kekOf(currentKid)) throw new RangeError(`the keyring holds no key named ${JSON.stringify(currentKid)}`);
  return {
    currentKid,
    async wrapKey(kid, dataKey, context) {
      const kek = kekOf(kid);
      if (!kek) throw new RangeError(`the keyring holds no key named ${JSON.stringify(kid)}`);
      const nonce = crypto.getRandomValues(new Uint8Array(12));
      const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv: nonce, additionalData: context }, kek, dataKey));
      const out = new Uint8Array(12 + sealed.length);
      out.set(nonce);
      out.set(sealed, 12);
      return out;
    },
    async unwrapKey(kid, wrapped, context) {
      const kek = kekOf(kid);
      if (!kek) return undefined;
      return new Uint8Array(await crypto.subtle.decrypt({ name: "AES-GCM", iv: wrapped.slice(0, 12), additionalData: context }, kek, wrapped.slice(12)));
    },
  };
}

/**
 * Imports a data key's 32 bytes as a non-extractable AES-GCM key.
 */
function importDataKey(raw: Uint8Array<ArrayBuffer>): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", raw, { name: "AES-GCM" }, false, ["encrypt", "decrypt"]);
}

/** One data key of a session, as `keys.json` lists it. */
export interface StoredDataKey {
  /** The key's id, named by every envelope sealed with it (`key`). */
  readonly id: string;
  /** The KEK that wraps it. */
  readonly kid: string;
  /** base64 of the wrapped key. */
  readonly wrapped: string;
  readonly created_at: string;
  /** Set by a rotation: still opens what it sealed, never seals again. */
  readonly retired?: boolean;
}

/** A session's `keys.json`. */
export interface SessionKeysFile {
  readonly format: "sessionfold-session-keys";
  readonly version: 1;
  /** `<agent_id>/<workspace_id>/<session_id>`: the session the keys belong to (also bound into every wrap). */
  readonly session: string;
  readonly keys: readonly StoredDataKey[];
}

const utf8 = new TextEncoder();

/**
 * The associated data of a data key's wrap: the session and the key's id, so a wrapped key cannot be moved to another session.
 */
function dataKeyContext(session: string, id: string): Uint8Array<ArrayBuffer> {
  return new Uint8Array(utf8.encode(JSON.stringify(["sessionfold-data-key", 1, session, id])));
}

/**
 * Makes a new random data key for `session`, wrapped by the KEK `kid`.
 *
 * @example
 * ```ts
 * declare const provider: KeyProvider;
 * const { stored, key } = await newDataKey(provider, provider.currentKid, "a1/w1/s1", new Date().toISOString());
 * ```
 */
export async function newDataKey(provider: KeyProvider, kid: string, session: string, now: string): Promise<{ stored: StoredDataKey; key: CryptoKey }> {
  const raw = crypto.getRandomValues(new Uint8Array(32));
  const id = `dk_${toBase64(crypto.getRandomValues(new Uint8Array(9))).replaceAll("+", "-").replaceAll("/", "_")}`;
  const wrapped = await provider.wrapKey(kid, raw, dataKeyContext(session, id));
  const key = await importDataKey(raw);
  raw.fill(0);
  return { stored: { id, kid, wrapped: toBase64(wrapped), created_at: now }, key };
}

/** Why a data key could not be unwrapped: the provider holds no KEK `kid`, or that KEK does not open it. */
export interface UnwrapFailure {
  readonly failure: "no-key" | "wrong-key";
  readonly kid: string;
}

/** The raw bytes of a stored data key (the caller zeroes them), or why not. */
async function unwrapRaw(provider: KeyProvider, session: string, stored: StoredDataKey): Promise<Uint8Array<ArrayBuffer> | UnwrapFailure> {
  const wrapped = fromBase64(stored.wrapped);
  if (!wrapped) return { failure: "wrong-key", kid: stored.kid };
  try {
    const raw = await provider.unwrapKey(stored.kid, wrapped, dataKeyContext(session, stored.id));
    if (raw === undefined) return { failure: "no-key", kid: stored.kid };
    return raw.length === 32 ? raw : { failure: "wrong-key", kid: stored.kid };
  } catch {
    return { failure: "wrong-key", kid: stored.kid };
  }
}

/**
 * Unwraps a stored data key: the key, or why not.
 *
 * @example
 * ```ts
 * declare const provider: KeyProvider, stored: StoredDataKey;
 * const key = await unwrapDataKey(provider, "a1/w1/s1", stored);
 * if ("failure" in key) console.log(key.failure, key.kid);
 * ```
 */
export async function unwrapDataKey(provider: KeyProvider, session: string, stored: StoredDataKey): Promise<CryptoKey | UnwrapFailure> {
  const raw = await unwrapRaw(provider, session, stored);
  if (!(raw instanceof Uint8Array)) return raw;
  const key = await importDataKey(raw);
  raw.fill(0);
  return key;
}

/**
 * Re-wraps a stored data key under the KEK `kid` (rotation) and retires it: it still opens what it sealed, never seals again.
 *
 * @example
 * ```ts
 * declare const provider: KeyProvider, stored: StoredDataKey;
 * const rewrapped = await rewrapDataKey(provider, "k2", "a1/w1/s1", stored);
 * ```
 */
export async function rewrapDataKey(provider: KeyProvider, kid: string, session: string, stored: StoredDataKey): Promise<StoredDataKey | UnwrapFailure> {
  const raw = await unwrapRaw(provider, session, stored);
  if (!(raw instanceof Uint8Array)) return raw;
  const rewrapped = await provider.wrapKey(kid, raw, dataKeyContext(session, stored.id));
  raw.fill(0);
  return { ...stored, kid, wrapped: toBase64(rewrapped), retired: true };
}

/**
 * Parses a session's `keys.json`; `undefined` when it is not one.
 *
 * @example
 * ```ts
 * parseSessionKeys(new TextEncoder().encode("{}")); // undefined
 * ```
 */
export function parseSessionKeys(bytes: Uint8Array): SessionKeysFile | undefined {
  try {
    const value = JSON.parse(new TextDecoder().decode(bytes)) as SessionKeysFile;
    if (value.format !== "sessionfold-session-keys" || value.version !== 1 || typeof value.session !== "string" || !Array.isArray(value.keys)) return undefined;
    const valid = value.keys.every((k) => typeof k.id === "string" && typeof k.kid === "string" && typeof k.wrapped === "string");
    return valid ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The bytes of a session's `keys.json`.
 *
 * @example
 * ```ts
 * const bytes = encodeSessionKeys({ format: "sessionfold-session-keys", version: 1, session: "a1/w1/s1", keys: [] });
 * ```
 */
export function encodeSessionKeys(file: SessionKeysFile): Uint8Array {
  return utf8.encode(`${JSON.stringify(file, null, 2)}\n`);
}
