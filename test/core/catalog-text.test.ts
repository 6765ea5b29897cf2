/**
 * A catalog's text across the storage worker's hop (`core/worker/catalog-text.ts`): a stored
 * snapshot's text is carried as it is and parsed on the page's side as nothing but the
 * entries, with the sessions changed since applied over it.
 */
import { describe, expect, it } from "vitest";
import { StorageError } from "../../core/mod.ts";
import { catalogSnapshotText } from "../../core/storage/catalog-snapshot.ts";
import { catalogListingOfText, catalogListingText, catalogTextOfSnapshot } from "../../core/worker/catalog-text.ts";

const dir = "agents/a1/workspaces/w1/sessions";
const entry = (name: string, title: string) => ({ name, meta: { session_id: name, title } });

describe("the catalog's text across the worker's hop", () => {
  it("a snapshot's text and the sessions changed since give the listing with the changes applied", () => {
    const snapshot = JSON.stringify([entry("s1", "one"), entry("s2", "two"), entry("s3", "three")]);
    const text = catalogTextOfSnapshot(snapshot, [entry("s2", "renamed"), entry("s4", "four")], ["s3"]);
    expect(text[0]).toBe(snapshot);
    expect(catalogListingOfText(text, dir)).toEqual({
      entries: [entry("s1", "one"), entry("s2", "renamed"), entry("s4", "four")],
      unlisted: [],
    });
  });

  it("a snapshot by columns gives the same listing as the array of entries an earlier version wrote", () => {
    const entries = [entry("s1", "one"), entry("s2", "two"), entry("s3", "three")];
    for (const snapshot of [catalogSnapshotText(entries), JSON.stringify(entries)]) {
      expect(catalogListingOfText(catalogTextOfSnapshot(snapshot, [entry("s2", "renamed")], ["s3"]), dir)).toEqual({
        entries: [entry("s1", "one"), entry("s2", "renamed")],
        unlisted: [],
      });
    }
  });

  it("a listing's text gives the same listing back", () => {
    const listing = { entries: [entry("s1", "one")], unlisted: ["s9"], paged: true };
    expect(catalogListingOfText(catalogListingText(listing), dir)).toEqual(listing);
  });

  it("a stored snapshot's text is only ever the entries: text that would add fields of the listing is a StorageError", () => {
    const names = (text: readonly [string, string]) => catalogListingOfText(text, dir).entries.map((e) => e.name);
    expect(names(catalogTextOfSnapshot(JSON.stringify([entry("s1", "one")]), [], []))).toEqual(["s1"]);
    for (
      const snapshot of [
        `[${JSON.stringify(entry("s1", "one"))}],"gone":["s1"],"changed":[],"x":[]`,
        '[],"unlisted":["s2"]',
        "{not json",
        '{"entries":[]}',
        "7",
      ]
    ) {
      expect(() => catalogListingOfText(catalogTextOfSnapshot(snapshot, [], []), dir)).toThrow(StorageError);
    }
  });

  it("a rest that is not a listing's is a StorageError that names the folder", () => {
    for (const rest of ["{}", "null", '{"unlisted":[],"changed":7,"gone":[]}', '{"unlisted":[],"changed":[],"gone":"s1"}', "{"]) {
      expect(() => catalogListingOfText(["[]", rest], dir)).toThrow(new RegExp(`catalog of "${dir}"`));
    }
  });
});
