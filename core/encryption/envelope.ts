/**
 * The sealed envelope of docs/FORMAT.md "Encrypted stores": one record (a JSONL line) or one
 * document (`meta.json`, the draft, `instruction.md`) encrypted with AES-256-GCM under a
 * session's data key, with a random 96-bit nonce, and associated data that binds it to its
 * place: the envelope version, the session, the file inside the session folder, the data
 * key's id and every field left in the clear (the record's sequence among them). A copy moved
 * anywhere else, or with one clear field changed, fails authentication.
 *
 * @module
 */
import { utf8Bytes } from "../schema/utf8.ts";
import { transientBytes } from "../storage/transient-bytes.ts";
import { base64Into, base64Length, fromBase64 } from "./base64.ts";

/** The `sealed` field's value: the envelope version this reader writes and accepts. */
export const SEALED_VERSION = 1;

/** What an envelope is bound to besides its own clear fields. */
export interface SealPlace {
  /** `<agent_id>/<workspace_id>/<session_id>`. */
  readonly session: string;
  /** The file's path inside the session folder, e.g. `messages/active.jsonl`. */
  readonly file: string;
}

/** Which fields of a record stay in the clear, by kind of file (docs/FORMAT.md "What stays in the clear"). */
export type ClearFields = readonly string[];

/** JSONL records: enough for a sync server to order and deduplicate, and for a footer to seal its segment. */
export const LINE_CLEAR_FIELDS: ClearFields = ["record_type", "sequence", "through_sequence", "message_id", "revision", "batch_size", "lines", "chain"];
/** `meta.json`: what listing and the revision check need; title, labels, provider and the rest are sealed. */
export const META_CLEAR_FIELDS: ClearFields = [
  "schema_version",
  "session_id",
  "agent_id",
  "workspace_id",
  "created_at",
  "updated_at",
  "message_count",
  "history_bytes",
  "revision",
];
/** The draft (`assistant_message.json`): which message it will become. */
export const DRAFT_CLEAR_FIELDS: ClearFields = ["record_type", "sequence", "message_id"];
/** `instruction.md` and any other document: nothing. */
export const NO_CLEAR_FIELDS: ClearFields = [];

/** The fields every envelope has besides its clear fields. */
const ENVELOPE_FIELDS = new Set(["sealed", "key", "nonce", "data"]);

const DATA_FIELD = utf8Bytes('","data":"');
const ENVELOPE_END = utf8Bytes('"}');
const utf8Decoder = new TextDecoder("utf-8", { fatal: true });

/**
 * AES-256-GCM with a 96-bit nonce and a 128-bit tag, the one primitive an envelope uses:
 * `encrypt` returns the ciphertext followed by the tag; `decrypt` takes them so and rejects
 * (or throws) when authentication fails. WebCrypto's by default
 * ({@linkcode webCryptoAesGcm}); a runtime may give one that computes the same function
 * faster (the Node runtime: `node:crypto`, one synchronous call per record instead of a job
 * on the thread pool), so every replica reads what any other wrote. Its byte arguments may
 * be views of one buffer shared with other short-lived arrays: a cipher reads them and never
 * writes into or transfers them (WebCrypto and `node:crypto` copy what they read).
 *
 * @example
 * ```ts
 * const cipher: AesGcm = webCryptoAesGcm;
 * ```
 */
export interface AesGcm {
  encrypt(
    key: CryptoKey,
    nonce: Uint8Array<ArrayBuffer>,
    plaintext: Uint8Array<ArrayBuffer>,
    additionalData: Uint8Array<ArrayBuffer>,
  ): Promise<Uint8Array> | Uint8Array;
  decrypt(
    key: CryptoKey,
    nonce: Uint8Array<ArrayBuffer>,
    data: Uint8Array<ArrayBuffer>,
    additionalData: Uint8Array<ArrayBuffer>,
  ): Promise<Uint8Array> | Uint8Array;
}

/**
 * {@linkcode AesGcm} on WebCrypto (`crypto.subtle`), which every runtime has.
 *
 * @example
 * ```ts
 * declare const key: CryptoKey;
 * const sealed = await webCryptoAesGcm.encrypt(key, crypto.getRandomValues(new Uint8Array(12)), new Uint8Array([1]), new Uint8Array());
 * ```
 */
export const webCryptoAesGcm: AesGcm = {
  async encrypt(key, nonce, plaintext, additionalData) {
    return new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv: nonce, additionalData }, key, plaintext));
  },
  async decrypt(key, nonce, data, additionalData) {
    return new Uint8Array(await crypto.subtle.decrypt({ name: "AES-GCM", iv: nonce, additionalData }, key, data));
  },
};

/** A parsed envelope before it is opened. */
export interface Envelope {
  /** The data key's id within the session's `keys.json`. */
  readonly key: string;
  /** The clear fields, in the order of the file kind's {@linkcode ClearFields}. */
  readonly clear: Readonly<Record<string, unknown>>;
  readonly nonce: Uint8Array<ArrayBuffer>;
  readonly data: Uint8Array<ArrayBuffer>;
}

/** Why an envelope could not be opened; the caller turns it into a `corrupt` diagnostic or error. */
export class EnvelopeRefusal {
  readonly reason: string;
  constructor(reason: string) {
    this.reason = reason;
  }
}

/** Random bytes drawn 256 nonces at a time (one CSPRNG call instead of one per record); each nonce is handed out once. */
let noncePool = new Uint8Array(0);
let noncePoolAt = 0;

/** A random 96-bit nonce, never handed out before. */
function freshNonce(): Uint8Array<ArrayBuffer> {
  if (noncePoolAt + 12 > noncePool.length) {
    noncePool = crypto.getRandomValues(new Uint8Array(12 * 256));
    noncePoolAt = 0;
  }
  noncePoolAt += 12;
  return noncePool.slice(noncePoolAt - 12, noncePoolAt);
}

/**
 * The associated data: a JSON array of the version, the place, the key id and each clear
 * field name with its value in a fixed order, so the same envelope always gives the same bytes.
 */
function associatedData(place: SealPlace, key: string, clear: Readonly<Record<string, unknown>>, fields: ClearFields): Uint8Array<ArrayBuffer> {
  // `JSON.stringify(["sessionfold-sealed", 1, session, file, key, [[name, value], …]])` written out, the same bytes
  // without the arrays: every line of every encrypted read and write pays for it.
  let text = `["sessionfold-sealed",${SEALED_VERSION},${JSON.stringify(place.session)},${JSON.stringify(place.file)},${JSON.stringify(key)},[`;
  let pairs = 0;
  for (const name of fields) {
    const value = clear[name];
    if (value === undefined) continue;
    // In an array JSON writes `null` for what it cannot write (a function); at the top level it gives `undefined`.
    text += `${pairs++ === 0 ? "" : ","}[${JSON.stringify(name)},${JSON.stringify(value) ?? "null"}]`;
  }
  return utf8Bytes(`${text}]]`, transientBytes);
}

/**
 * The clear fields of `record` (a parsed JSON object, or `undefined` for a non-JSON document).
 *
 * @example
 * ```ts
 * clearFieldsOf({ record_type: "message", sequence: 3, parts: [] }, LINE_CLEAR_FIELDS); // { record_type: "message", sequence: 3 }
 * ```
 */
export function clearFieldsOf(record: unknown, fields: ClearFields): Record<string, unknown> {
  const clear: Record<string, unknown> = {};
  if (typeof record !== "object" || record === null || Array.isArray(record)) return clear;
  for (const name of fields) {
    const value = (record as Record<string, unknown>)[name];
    // Only scalars stay in the clear: an object-valued field of that name is sealed with the rest.
    if (typeof value === "number" || typeof value === "string") clear[name] = value;
  }
  return clear;
}

/**
 * Seals `plaintext` under `dataKey` as one JSON envelope, its UTF-8 bytes (no trailing
 * newline): the clear fields and the key id as JSON, then the nonce and the ciphertext written
 * as base64 straight into the bytes.
 *
 * @example
 * ```ts
 * declare const dataKey: CryptoKey;
 * const line = await sealBytes(new TextEncoder().encode('{"record_type":"message","sequence":1}'), dataKey, "dk_1",
 *   { sequence: 1 }, LINE_CLEAR_FIELDS, { session: "a1/w1/s1", file: "messages/active.jsonl" });
 * ```
 */
export async function sealBytes(
  plaintext: Uint8Array,
  dataKey: CryptoKey,
  key: string,
  clear: Readonly<Record<string, unknown>>,
  fields: ClearFields,
  place: SealPlace,
  cipher: AesGcm = webCryptoAesGcm,
): Promise<Uint8Array> {
  const nonce = freshNonce();
  const additionalData = associatedData(place, key, clear, fields);
  // A copy, since the cipher's parameter is an ArrayBuffer's bytes and `plaintext` may be any view.
  const copy = transientBytes(plaintext.length);
  copy.set(plaintext);
  const data = await cipher.encrypt(dataKey, nonce, copy, additionalData);
  const ordered: Record<string, unknown> = { sealed: SEALED_VERSION };
  for (const name of fields) if (clear[name] !== undefined) ordered[name] = clear[name];
  ordered.key = key;
  // `{"sealed":1,…,"key":"…"` then `,"nonce":"…","data":"…"}`: the same bytes JSON.stringify gives.
  const head = utf8Bytes(`${JSON.stringify(ordered).slice(0, -1)},"nonce":"`, transientBytes);
  const out = new Uint8Array(head.length + base64Length(nonce.length) + DATA_FIELD.length + base64Length(data.length) + ENVELOPE_END.length);
  out.set(head);
  let at = base64Into(nonce, out, head.length);
  out.set(DATA_FIELD, at);
  at = base64Into(data, out, at + DATA_FIELD.length);
  out.set(ENVELOPE_END, at);
  return out;
}

/**
 * Parses the text of an envelope: an {@linkcode Envelope}, or an {@linkcode EnvelopeRefusal}
 * saying what was found instead (a plaintext record, an unknown version, a field that may not
 * be in the clear).
 *
 * @example
 * ```ts
 * const parsed = parseEnvelope(new TextEncoder().encode('{"record_type":"message"}'), LINE_CLEAR_FIELDS);
 * parsed instanceof EnvelopeRefusal; // true: a plaintext record
 * ```
 */
export function parseEnvelope(bytes: Uint8Array, fields: ClearFields): Envelope | EnvelopeRefusal {
  let value: unknown;
  try {
    value = JSON.parse(utf8Decoder.decode(bytes));
  } catch {
    return new EnvelopeRefusal("not a sealed envelope (not JSON)");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return new EnvelopeRefusal("not a sealed envelope (not a JSON object)");
  const object = value as Record<string, unknown>;
  if (!Object.hasOwn(object, "sealed")) return new EnvelopeRefusal("a plaintext record in an encrypted store");
  if (object.sealed !== SEALED_VERSION) {
    return new EnvelopeRefusal(`sealed envelope version ${JSON.stringify(object.sealed)} is not supported (this reader knows ${SEALED_VERSION})`);
  }
  for (const name of Object.keys(object)) {
    if (!ENVELOPE_FIELDS.has(name) && !fields.includes(name)) {
      return new EnvelopeRefusal(`field ${JSON.stringify(name.slice(0, 24))} may not be in the clear here`);
    }
  }
  const { key, nonce, data } = object;
  if (typeof key !== "string" || typeof nonce !== "string" || typeof data !== "string") {
    return new EnvelopeRefusal("sealed envelope without key, nonce or data");
  }
  const nonceBytes = fromBase64(nonce);
  // Read once, by the cipher: cut from the shared slab, not an array of its own.
  const dataBytes = fromBase64(data, transientBytes);
  if (!nonceBytes || nonceBytes.length !== 12 || !dataBytes || dataBytes.length < 16) {
    return new EnvelopeRefusal("sealed envelope with a malformed nonce or data");
  }
  const clear: Record<string, unknown> = {};
  for (const name of fields) {
    const field = object[name];
    if (field === undefined) continue;
    if (typeof field !== "number" && typeof field !== "string") return new EnvelopeRefusal(`clear field ${name} is not a number or string`);
    clear[name] = field;
  }
  return { key, clear, nonce: nonceBytes, data: dataBytes };
}

/**
 * Opens a parsed envelope: its plaintext, or a refusal when authentication fails (tampered,
 * moved, reordered or the wrong key); at once when the cipher answers synchronously.
 *
 * @example
 * ```ts
 * declare const envelope: Envelope, dataKey: CryptoKey;
 * const opened = await openEnvelope(envelope, dataKey, LINE_CLEAR_FIELDS, { session: "a1/w1/s1", file: "messages/active.jsonl" });
 * ```
 */
export function openEnvelope(
  envelope: Envelope,
  dataKey: CryptoKey,
  fields: ClearFields,
  place: SealPlace,
  cipher: AesGcm = webCryptoAesGcm,
): Promise<Uint8Array | EnvelopeRefusal> | Uint8Array | EnvelopeRefusal {
  const additionalData = associatedData(place, envelope.key, envelope.clear, fields);
  const refused = () => new EnvelopeRefusal(`authentication failed: not sealed for ${place.file} of this session at this place`);
  // A synchronous cipher (the Node runtime's) answers at once: no promise per record.
  try {
    const opened = cipher.decrypt(dataKey, envelope.nonce, envelope.data, additionalData);
    return opened instanceof Uint8Array ? opened : opened.then((bytes) => bytes, refused);
  } catch {
    return refused();
  }
}
