/**
 * Sealed exports (core/encryption/sealed-export.ts, docs/FORMAT.md "Sealed exports"): the
 * export's bytes come back exactly with the passphrase; without it the file holds none of its
 * text; a wrong passphrase or any changed field is wrong-key; a file that is not one, or asks
 * for a hostile amount of key derivation, is refused naming the field.
 */
import { describe, expect, it } from "vitest";
import {
  InvalidInputError,
  isSealedExport,
  KeyRequiredError,
  openSealedExport,
  SEALED_EXPORT_FORMAT,
  sealExport,
  UnsupportedSchemaError,
  WrongKeyError,
} from "../../core/mod.ts";

const utf8 = new TextEncoder();
const PLANTED = "planted-secret-7f3a: the vault code is 4471";
const EXPORT = utf8.encode(`${JSON.stringify({ schema_version: 2, messages: [{ role: "user", content: PLANTED }] })}\n`);

function envelope(bytes: Uint8Array): Record<string, unknown> & { kdf: Record<string, unknown> } {
  return JSON.parse(new TextDecoder().decode(bytes));
}

function encode(value: unknown): Uint8Array {
  return utf8.encode(JSON.stringify(value));
}

describe("sealed exports", () => {
  it("opens to the exact bytes with its passphrase, and holds none of the text", async () => {
    const sealed = await sealExport(EXPORT, "a long export passphrase");
    expect(new TextDecoder().decode(sealed)).not.toContain("vault");
    expect(new TextDecoder().decode(sealed)).not.toContain("planted");
    expect(isSealedExport(sealed)).toBe(true);
    expect(isSealedExport(EXPORT)).toBe(false);
    expect(envelope(sealed)).toMatchObject({
      format: SEALED_EXPORT_FORMAT,
      version: 1,
      cipher: "AES-256-GCM",
      kdf: { name: "PBKDF2-SHA-256", iterations: 600_000 },
    });
    expect(await openSealedExport(sealed, "a long export passphrase", "x.sealed.json")).toEqual(EXPORT);
    // The passphrase is read in NFC: "é" typed as e + combining accent opens what "é" sealed.
    const accented = await sealExport(EXPORT, "caf\u00e9 au lait");
    expect(await openSealedExport(accented, "cafe\u0301 au lait")).toEqual(EXPORT);
  });

  it("two seals of the same file differ (random salt and nonce)", async () => {
    const a = envelope(await sealExport(EXPORT, "same words"));
    const b = envelope(await sealExport(EXPORT, "same words"));
    expect(a.kdf.salt).not.toBe(b.kdf.salt);
    expect(a.nonce).not.toBe(b.nonce);
    expect(a.data).not.toBe(b.data);
  });

  it("no passphrase is key-required, a wrong one wrong-key", async () => {
    const sealed = await sealExport(EXPORT, "right words");
    await expect(openSealedExport(sealed, undefined, "x.sealed.json")).rejects.toBeInstanceOf(KeyRequiredError);
    await expect(openSealedExport(sealed, "wrong words", "x.sealed.json")).rejects.toThrow(WrongKeyError);
    await expect(openSealedExport(sealed, "wrong words", "x.sealed.json")).rejects.toThrow("x.sealed.json");
    await expect(sealExport(EXPORT, "")).rejects.toBeInstanceOf(InvalidInputError);
  });

  it("any changed clear field or ciphertext byte fails authentication", async () => {
    const value = envelope(await sealExport(EXPORT, "right words"));
    const otherSalt = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(16))));
    const data = atob(value.data as string);
    const flipped = btoa(data.slice(0, 5) + String.fromCharCode(data.charCodeAt(5) ^ 1) + data.slice(6));
    for (
      const changed of [
        { ...value, kdf: { ...value.kdf, iterations: 599_999 } },
        { ...value, kdf: { ...value.kdf, salt: otherSalt } },
        { ...value, nonce: btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(12)))) },
        { ...value, data: flipped },
      ]
    ) {
      await expect(openSealedExport(encode(changed), "right words")).rejects.toBeInstanceOf(WrongKeyError);
    }
  });

  it("refuses what is not a sealed export, naming the field, before any key derivation", async () => {
    const value = envelope(await sealExport(EXPORT, "right words"));
    await expect(openSealedExport(EXPORT, "right words", "plain.json")).rejects.toThrow(/plain\.json: not a sealed export/);
    await expect(openSealedExport(encode({ ...value, version: 2 }), "right words")).rejects.toBeInstanceOf(UnsupportedSchemaError);
    const cases: [Record<string, unknown>, string][] = [
      [{ ...value, cipher: "ChaCha20" }, "cipher"],
      [{ ...value, kdf: { ...value.kdf, iterations: 2 ** 40 } }, "kdf.iterations"],
      [{ ...value, kdf: { ...value.kdf, iterations: 0 } }, "kdf.iterations"],
      [{ ...value, kdf: { ...value.kdf, name: "scrypt" } }, "kdf.name"],
      [{ ...value, kdf: { ...value.kdf, salt: "AAAA" } }, "kdf.salt"],
      [{ ...value, kdf: null }, "kdf"],
      [{ ...value, nonce: "not base64!" }, "nonce"],
      [{ ...value, data: 7 }, "data"],
    ];
    for (const [changed, name] of cases) {
      const error = await openSealedExport(encode(changed), "right words", "bad.sealed.json").catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidInputError);
      expect((error as InvalidInputError).message).toContain(`bad.sealed.json: the sealed export's ${name} is not`);
    }
  });
});
