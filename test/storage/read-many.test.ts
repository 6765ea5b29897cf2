/**
 * core/storage/read-many.ts: the open's reads on a backend without `readMany` (meta.json
 * first, then the rest at once; the `lastIn` prefetch read only where its hint names a file,
 * else `null`), the file a hint names (`hintedFile`), and the footer read served from a
 * prefetched tail only when it is the file asked for and holds enough of it.
 */
import { describe, expect, it } from "vitest";
import { type FileTail, MemoryStorage } from "../../core/mod.ts";
import { hintedFile, readMany, withPrefetchedTail } from "../../core/storage/read-many.ts";

const utf8 = (text: string) => new TextEncoder().encode(text);
const text = (bytes: Uint8Array | undefined) => (bytes ? new TextDecoder().decode(bytes) : undefined);

/** Records when each read starts and ends. */
class Timeline extends MemoryStorage {
  readonly events: string[] = [];
  override async read(path: string): Promise<Uint8Array | undefined> {
    this.events.push(`start ${path}`);
    await new Promise((resolve) => setImmediate(resolve));
    this.events.push(`end ${path}`);
    return super.read(path);
  }
}

describe("readMany without a backend's own", () => {
  it("reads the first request before any other, the others at once, and skips lastIn", async () => {
    const storage = new Timeline();
    await storage.replace("s/meta.json", utf8("{}"));
    await storage.replace("s/active.jsonl", utf8("one\ntwo\n"));
    await storage.replace("s/segments/1-2.jsonl", utf8("footer\n"));
    const found = await readMany(storage, [{ path: "s/meta.json" }, { path: "s/active.jsonl" }, { path: "s/draft.json" }, {
      path: "s/active.jsonl",
      tailBytes: 4,
    }, { lastIn: "s/segments", tailBytes: 7 }]);
    expect(found.map((f) => f && { path: f.path, text: text(f.bytes), size: f.size })).toEqual([
      { path: "s/meta.json", text: "{}", size: 2 },
      { path: "s/active.jsonl", text: "one\ntwo\n", size: 8 },
      undefined,
      { path: "s/active.jsonl", text: "two\n", size: 8 },
      null,
    ]);
    expect(storage.events.slice(0, 3)).toEqual(["start s/meta.json", "end s/meta.json", "start s/active.jsonl"]);
    expect(storage.events).toContain("start s/draft.json");
    expect(storage.events.indexOf("start s/draft.json")).toBeLessThan(storage.events.indexOf("end s/active.jsonl"));
    expect(await readMany(storage, [])).toEqual([]);
  });

  it("reads the segment a hint names from the first answer, with the other reads, and nothing a hint does not name", async () => {
    const storage = new Timeline();
    const segment = "s/segments/000000000001-000000000002.jsonl";
    await storage.replace("s/meta.json", utf8('{"newest_segment":{"start":1,"end":2}}'));
    await storage.replace(segment, utf8("one\nfooter\n"));
    const hinted = { lastIn: "s/segments", tailBytes: 7, namedIn: { path: "s/meta.json", field: "newest_segment" } };
    const found = await readMany(storage, [{ path: "s/meta.json" }, hinted, { path: "s/draft.json" }]);
    expect(found.map((f) => f && { path: f.path, text: text(f.bytes), size: f.size })).toEqual([
      { path: "s/meta.json", text: '{"newest_segment":{"start":1,"end":2}}', size: 38 },
      { path: segment, text: "footer\n", size: 11 },
      undefined,
    ]);
    // A hint on a later answer than the first (only the first is known before the others are read), or naming no file.
    expect((await readMany(storage, [{ path: "s/draft.json" }, { path: "s/meta.json" }, hinted]))[2]).toBeNull();
    await storage.replace("s/meta.json", utf8('{"newest_segment":{"start":3,"end":4}}'));
    expect((await readMany(storage, [{ path: "s/meta.json" }, hinted]))[1]).toBeNull();
  });
});

describe("hintedFile", () => {
  const meta = (text: string) => [{ path: "s/meta.json", bytes: utf8(text), size: text.length }];
  const request = { lastIn: "s/segments", tailBytes: 9, namedIn: { path: "s/meta.json", field: "newest_segment" } };
  const asked = [{ path: "s/meta.json" }];

  it("names the segment of a valid range in the folder, and nothing for anything else", () => {
    expect(hintedFile(asked, meta('{"newest_segment":{"start":7,"end":9}}'), request)).toBe("s/segments/000000000007-000000000009.jsonl");
    expect(hintedFile(asked, meta('{"newest_segment":{"start":7,"end":9}}'), { ...request, lastIn: "" })).toBe("000000000007-000000000009.jsonl");
    for (
      const bad of [
        '{"newest_segment":"../../etc/passwd"}',
        '{"newest_segment":{"start":0,"end":9}}',
        '{"newest_segment":{"start":1,"end":1000000000000}}',
        '{"newest_segment":{"start":1}}',
        '{"newest_segment":[1,2]}',
        "null",
        "7",
        "\u00ff{",
      ]
    ) {
      expect(hintedFile(asked, meta(bad), request), bad).toBeUndefined();
    }
    const hostile = new Uint8Array([0x7b, 0xff, 0x7d]); // "{", a byte that is no UTF-8, "}"
    expect(hintedFile(asked, [{ path: "s/meta.json", bytes: hostile, size: 3 }], request)).toBeUndefined();
    expect(hintedFile(asked, [undefined], request)).toBeUndefined();
    expect(hintedFile([{ path: "s/meta.json", tailBytes: 100 }], meta('{"newest_segment":{"start":7,"end":9}}'), request)).toBeUndefined();
    expect(hintedFile(asked, meta('{"newest_segment":{"start":7,"end":9}}'), { lastIn: "s/segments", tailBytes: 9 })).toBeUndefined();
  });
});

describe("withPrefetchedTail", () => {
  const prefetched = { path: "s/seg.jsonl", bytes: utf8("ter\n"), size: 10 };
  const asked: string[] = [];
  const storage = {
    readTail: async (path: string, maxBytes: number): Promise<FileTail | undefined> => {
      asked.push(`${path} ${maxBytes}`);
      return { bytes: new Uint8Array(0), size: 0 };
    },
  };

  it("answers a tail of the prefetched file that fits, and asks the store for anything else", async () => {
    const reader = withPrefetchedTail(storage, prefetched);
    expect(text((await reader.readTail("s/seg.jsonl", 2))?.bytes)).toBe("r\n");
    expect(await reader.readTail("s/seg.jsonl", 4)).toEqual({ bytes: utf8("ter\n"), size: 10 });
    expect(asked).toEqual([]);
    await reader.readTail("s/seg.jsonl", 5);
    await reader.readTail("s/other.jsonl", 2);
    expect(asked).toEqual(["s/seg.jsonl 5", "s/other.jsonl 2"]);
    // A prefetch that holds the whole file answers any window.
    const whole = withPrefetchedTail(storage, { path: "s/small.jsonl", bytes: utf8("ab\n"), size: 3 });
    expect(await whole.readTail("s/small.jsonl", 4096)).toEqual({ bytes: utf8("ab\n"), size: 3 });
    expect(asked).toHaveLength(2);
    // Nothing prefetched: every read goes to the store.
    await withPrefetchedTail(storage, undefined).readTail("s/seg.jsonl", 1);
    expect(asked).toHaveLength(3);
  });
});
