/**
 * core/storage/read-many.ts: the open's reads on a backend without `readMany` (meta.json
 * first, then the rest at once; the `lastIn` prefetch not read: `null`), and the footer read served
 * from a prefetched tail only when it is the file asked for and holds enough of it.
 */
import { describe, expect, it } from "vitest";
import { type FileTail, MemoryStorage } from "../../core/mod.ts";
import { readMany, withPrefetchedTail } from "../../core/storage/read-many.ts";

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
