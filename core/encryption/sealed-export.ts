/**
 * Sealed exports (docs/FORMAT.md "Sealed exports"): an export file (a Rho snapshot, a
 * DeepCode v1 stream, a pi session, byte for byte) sealed with AES-256-GCM under a key derived
 * from an export passphrase, in a small JSON envelope that says how to open it and nothing
 * about what it holds.
 *
 * @module
 */
import { InvalidInputError, KeyRequiredError, UnsupportedSchemaError, WrongKeyError } from "../errors.ts";
import { fromBase64, toBase64 } from "./base64.ts";
import { derivePassphraseKey, MAX_PBKDF2_ITERATIONS, PBKDF2_ITERATIONS } from "./passphrase.ts";

/** The envelope's `format`. */
export const SEALED_EXPORT_FORMAT = "sessionfold-sealed-export";

/** A sealed export as stored: everything but `data` is in the clear and authenticated. */
interface SealedExportEnvelope {
  readonly format: typeof SEALED_EXPORT_FORMAT;
  readonly version: 1;
  readonly cipher: "AES-256-GCM";
  readonly kdf: { readonly name: "PBKDF2-SHA-256"; readonly iterations: number; readonly salt: string };
  readonly nonce: string;
  readonly data: string;
}

/** The associated data: every clear field, in a fixed order, so none can be changed. */
function associatedData(envelope: Omit<SealedExportEnvelope, "data">): Uint8Array<ArrayBuffer> {
  const fields = [envelope.format, envelope.version, envelope.cipher, envelope.kdf.name, envelope.kdf.iterations, envelope.kdf.salt, envelope.nonce];
  return new Uint8Array(new TextEncoder().encode(JSON.stringify(fields)));
}

/**
 * Seals the bytes of an export file with `passphrase`: a JSON document (one line and a
 * newline) that {@linkcode openSealedExport} opens with the same passphrase.
 *
 * @example
 * ```ts
 * const sealed = await sealExport(new TextEncoder().encode('{"schema_version":2}'), "a long export passphrase");
 * ```
 * @throws {InvalidInputError} when the passphrase is empty.
 */
export async function sealExport(bytes: Uint8Array, passphrase: string): Promise<Uint8Array> {
  if (passphrase === "") throw new InvalidInputError("a sealed export needs a passphrase that is not empty", { field: "passphrase" });
  const salt = crypto.getRandomValues(new Uint8Array(16));
  const nonce = crypto.getRandomValues(new Uint8Array(12));
  const header = {
    format: SEALED_EXPORT_FORMAT,
    version: 1,
    cipher: "AES-256-GCM",
    kdf: { name: "PBKDF2-SHA-256", iterations: PBKDF2_ITERATIONS, salt: toBase64(salt) },
    nonce: toBase64(nonce),
  } as const;
  const key = await derivePassphraseKey(passphrase, salt, PBKDF2_ITERATIONS);
  const sealed = await crypto.subtle.encrypt({ name: "AES-GCM", iv: nonce, additionalData: associatedData(header) }, key, new Uint8Array(bytes));
  const envelope: SealedExportEnvelope = { ...header, data: toBase64(new Uint8Array(sealed)) };
  return new TextEncoder().encode(`${JSON.stringify(envelope)}\n`);
}

/** The file's JSON value when it is one object whose `format` is a sealed export's; `undefined` otherwise. */
function envelopeValue(bytes: Uint8Array): Record<string, unknown> | undefined {
  const text = new TextDecoder().decode(bytes).replace(/^\uFEFF/, "");
  if (!text.trimStart().startsWith("{") || !text.includes(SEALED_EXPORT_FORMAT)) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
    return (value as Record<string, unknown>).format === SEALED_EXPORT_FORMAT ? value as Record<string, unknown> : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether `bytes` are a sealed export (one JSON object whose `format` is
 * `"sessionfold-sealed-export"`), so an importer asks for a passphrase.
 *
 * @example
 * ```ts
 * isSealedExport(new TextEncoder().encode('{"schema_version":2}')); // false
 * ```
 */
export function isSealedExport(bytes: Uint8Array): boolean {
  return envelopeValue(bytes) !== undefined;
}

function field(file: string, name: string, expected: string): InvalidInputError {
  return new InvalidInputError(`${file}: the sealed export's ${name} is not ${expected}`, { file, field: name });
}

/** The envelope of `bytes`, checked field by field. */
function parseEnvelope(bytes: Uint8Array, file: string): SealedExportEnvelope {
  const value = envelopeValue(bytes);
  if (!value) throw new InvalidInputError(`${file}: not a sealed export (expected one JSON object with "format": "${SEALED_EXPORT_FORMAT}")`, { file });
  if (value.version !== 1) {
    throw new UnsupportedSchemaError(`${file}: sealed export version ${JSON.stringify(value.version)} is not supported (this reader knows 1)`, { file });
  }
  if (value.cipher !== "AES-256-GCM") throw field(file, "cipher", '"AES-256-GCM"');
  const kdf = value.kdf as Record<string, unknown> | null | undefined;
  if (kdf === null || typeof kdf !== "object") throw field(file, "kdf", "an object");
  if (kdf.name !== "PBKDF2-SHA-256") throw field(file, "kdf.name", '"PBKDF2-SHA-256"');
  const iterations = kdf.iterations as number;
  if (!Number.isSafeInteger(iterations) || iterations < 1 || iterations > MAX_PBKDF2_ITERATIONS) {
    // A bound, so a hostile file cannot make an open run for minutes.
    throw field(file, "kdf.iterations", `an integer from 1 to ${MAX_PBKDF2_ITERATIONS}`);
  }
  if (typeof kdf.salt !== "string" || (fromBase64(kdf.salt)?.length ?? 0) < 16) throw field(file, "kdf.salt", "base64 of at least 16 bytes");
  if (typeof value.nonce !== "string" || fromBase64(value.nonce)?.length !== 12) throw field(file, "nonce", "base64 of 12 bytes");
  if (typeof value.data !== "string" || (fromBase64(value.data)?.length ?? 0) < 16) throw field(file, "data", "base64 of a ciphertext and its tag");
  return value as unknown as SealedExportEnvelope;
}

/**
 * Opens a sealed export: the export file's bytes, exactly as they were sealed.
 *
 * @example
 * ```ts
 * const sealed = await sealExport(new TextEncoder().encode("hello"), "a long export passphrase");
 * const bytes = await openSealedExport(sealed, "a long export passphrase", "export.sealed.json");
 * ```
 * @throws {KeyRequiredError} when no passphrase is given.
 * @throws {WrongKeyError} when the passphrase does not open it, or the file was changed (AES-GCM cannot tell the two apart).
 * @throws {InvalidInputError} when the file is not a sealed export, naming the field that is wrong (PBKDF2 iterations above
 * `MAX_PBKDF2_ITERATIONS` among them: the open would take minutes).
 * @throws {UnsupportedSchemaError} for a version this reader does not know.
 */
export async function openSealedExport(bytes: Uint8Array, passphrase: string | undefined, file = "sealed export"): Promise<Uint8Array> {
  const envelope = parseEnvelope(bytes, file);
  if (passphrase === undefined || passphrase === "") throw new KeyRequiredError(`${file}: the export is sealed: give its passphrase to open it`, { file });
  const key = await derivePassphraseKey(passphrase, fromBase64(envelope.kdf.salt)!, envelope.kdf.iterations);
  try {
    const plain = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: fromBase64(envelope.nonce)!, additionalData: associatedData(envelope) },
      key,
      fromBase64(envelope.data)!,
    );
    return new Uint8Array(plain);
  } catch {
    throw new WrongKeyError(`${file}: the passphrase does not open this sealed export (or the file was changed)`, { file });
  }
}
