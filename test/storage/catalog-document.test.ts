/**
 * `catalogDocument` of bytes `encodeMetaDocument` made takes the catalog's fields from the document they were
 * encoded from instead of parsing them (docs/decisions.md "PostgreSQL's per-operation commit: the client's own work"):
 * it must give exactly what parsing a copy of the same bytes gives, and never share an object with the document.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CATALOG_FIELDS, catalogDocument, encodeJsonDocument } from "../../core/mod.ts";
import { encodeMetaDocument } from "../../core/internal.ts";

/** A field's value as a document may hold it, edge cases of JSON included (-0, non-finite numbers, `undefined`, nested values). */
const fieldValue = fc.oneof(
  fc.string(),
  fc.string({ unit: "binary" }),
  fc.integer(),
  fc.double(),
  fc.constantFrom(-0, Number.NaN, Number.POSITIVE_INFINITY, undefined, null, true, false, "\ud800"),
  fc.dictionary(fc.string(), fc.oneof(fc.string(), fc.integer())),
  fc.array(fc.integer()),
);
const fieldName = fc.oneof(fc.constantFrom(...CATALOG_FIELDS, "sealed", "provider", "timezone"), fc.string());
const documents = fc.dictionary(fieldName, fieldValue);

describe("catalogDocument of bytes encodeMetaDocument made", () => {
  it("is exactly what parsing a copy of the same bytes gives", () => {
    fc.assert(
      fc.property(documents, (document) => {
        const bytes = encodeMetaDocument(document);
        expect(bytes).toEqual(encodeJsonDocument(document));
        const parsed = catalogDocument(bytes.slice());
        const picked = catalogDocument(bytes);
        expect(picked).toStrictEqual(parsed);
        if (picked) expect(Object.keys(picked)).toEqual(Object.keys(parsed!));
      }),
      { numRuns: 2000 },
    );
  });

  it("takes the fields from the document, not from the bytes (the same Uint8Array only)", () => {
    const document = { revision: 7, title: "t", updated_at: "2026-12-05T08:00:00.000Z", provider: { provider: "p" } };
    const bytes = encodeMetaDocument(document);
    // Bytes changed in place after encoding would be read from the document: nothing in the core changes them.
    bytes.fill(0x20);
    expect(catalogDocument(bytes)).toEqual({ title: "t", updated_at: "2026-12-05T08:00:00.000Z", revision: 7 });
    expect(catalogDocument(bytes.slice())).toBeUndefined();
  });

  it("parses a document whose catalog fields hold an object, so no entry shares one with the document", () => {
    const compaction = { count: 1 };
    const bytes = encodeMetaDocument({ revision: 2, compaction });
    const picked = catalogDocument(bytes)!;
    expect(picked).toEqual({ revision: 2, compaction: { count: 1 } });
    expect(picked["compaction"]).not.toBe(compaction);
  });

  it("gives nothing for a sealed document, as parsing does", () => {
    expect(catalogDocument(encodeMetaDocument({ sealed: 1, revision: 3 }))).toBeUndefined();
  });
});
