/**
 * A catalog snapshot's text (`core/storage/catalog-snapshot.ts`, docs/FORMAT.md "The
 * catalog"): entries by columns come back exactly as they went in, whatever their
 * documents' fields; the array of entries earlier versions wrote reads as it is; text that is
 * neither is refused, never read as other entries.
 */
import { describe, expect, it } from "vitest";
import { CATALOG_FIELDS, type CatalogEntry } from "../../core/mod.ts";
import { catalogSnapshotEntries, catalogSnapshotText } from "../../core/storage/catalog-snapshot.ts";

const full = (name: string, i: number): CatalogEntry => ({
  name,
  meta: Object.fromEntries(CATALOG_FIELDS.map((field, k) => [field, field === "title" ? `Session ${i}` : field === "compaction" ? { through: i } : k + i])),
});

describe("a catalog snapshot's text", () => {
  it("entries by columns come back as they went in: every shape of document, none, and one that is not an object", () => {
    const entries: CatalogEntry[] = [
      full("s1", 1),
      full("s2", 2),
      { name: "s3", meta: { session_id: "s3", title: "fewer fields" } },
      { name: "s4", meta: { title: "another order", session_id: "s4" } },
      { name: "s5", meta: undefined },
      { name: "s6", meta: "not an object" },
      { name: "s7", meta: [1, 2] },
      { name: "s8", meta: null },
      { name: "s9", meta: {} },
      { name: "s10", meta: { session_id: "s10", title: "fewer fields" } },
      { name: "s11", meta: JSON.parse('{"__proto__": {"polluted": true}, "title": "odd"}') },
    ];
    const text = catalogSnapshotText(entries);
    const back = catalogSnapshotEntries(text)!;
    expect(back).toEqual(entries);
    // Field order is kept too: a document reads as JSON.parse would have made it.
    expect(back.map((e) => (e.meta && typeof e.meta === "object" ? Object.keys(e.meta) : e.meta))).toEqual(
      entries.map((e) => (e.meta && typeof e.meta === "object" ? Object.keys(e.meta) : e.meta)),
    );
    expect(Object.getPrototypeOf(back[10]!.meta)).toBe(Object.prototype);
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
    // Each list of fields is written once: five shapes for the seven objects.
    expect((JSON.parse(text) as { shapes: unknown[] }).shapes).toHaveLength(5);
  });

  it("is about half the text of the same entries as an array of objects", () => {
    const entries = Array.from({ length: 1000 }, (_, i) => full(`s${i}`, i));
    expect(catalogSnapshotText(entries).length).toBeLessThan(JSON.stringify(entries).length * 0.6);
  });

  it("the array of entries an earlier version wrote reads as it is", () => {
    const entries = [full("s1", 1), { name: "s2" }];
    expect(catalogSnapshotEntries(JSON.stringify(entries))).toEqual(entries);
    expect(catalogSnapshotEntries("[]")).toEqual([]);
    expect(catalogSnapshotEntries(catalogSnapshotText([]))).toEqual([]);
  });

  it("text that is neither layout, or rows that do not match their shapes, is refused", () => {
    const good = JSON.parse(catalogSnapshotText([full("s1", 1)])) as { shapes: string[][]; rows: unknown[][] };
    const variant = (change: (s: { layout?: unknown; shapes: unknown; rows: unknown }) => void) => {
      const copy = structuredClone(good) as { layout?: unknown; shapes: unknown; rows: unknown };
      change(copy);
      return JSON.stringify(copy);
    };
    for (
      const text of [
        "{not json",
        "7",
        "null",
        '{"entries":[]}',
        variant((s) => (s.layout = "rows")),
        variant((s) => delete s.layout),
        variant((s) => (s.shapes = {})),
        variant((s) => (s.shapes = [[1, 2]])),
        variant((s) => (s.rows = [["s1", 1, ...good.rows[0]!.slice(2)]])), // no shape 1
        variant((s) => (s.rows = [good.rows[0]!.slice(0, -1)])), // a value short
        variant((s) => (s.rows = [[...good.rows[0]!, "extra"]])),
        variant((s) => (s.rows = [[7]])), // a name that is not a string
        variant((s) => (s.rows = ["s1"])),
        variant((s) => (s.rows = [["s1", -1]])),
        variant((s) => (s.rows = [["s1", "0", ...good.rows[0]!.slice(2)]])),
      ]
    ) {
      expect(catalogSnapshotEntries(text), text).toBeUndefined();
    }
  });
});
