/**
 * The conformance suite of the storage port: every {@linkcode StoragePort}
 * (MemoryStorage, Node fs, Node fs through its worker, IndexedDB, IndexedDB through a
 * Web Worker) runs the same tests, in the style of automerge-repo's
 * `runStorageAdapterTests`. A test file calls {@linkcode runStorageTests} once per
 * backend with a setup function; each test gets a fresh, empty store from it.
 *
 * The suite checks only what `core/storage/port.ts` and docs/FORMAT.md promise, and only
 * what every backend can observe the same way. In particular it never depends on
 * whether an empty folder exists (a filesystem keeps one after its last file is
 * removed or moved away; a key-value store has none), and it never asserts which of
 * two concurrent `replace` calls wins.
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 * import { runStorageTests } from "sessionfold/testing/conformance";
 *
 * runStorageTests("MemoryStorage", () => ({ storage: new MemoryStorage() }));
 * ```
 * @module
 */
import { describe, expect, it, type TestContext } from "vitest";
import { applyCommitPlanByCalls, type CommitPlan, type ReadRequest, type ReadResult, type StoragePort } from "../core/mod.ts";
import { concatBytes, readMany } from "../core/internal.ts";

/**
 * What a setup function hands to {@linkcode runStorageTests}: a fresh, empty store.
 *
 * @example
 * ```ts
 * import { rm } from "node:fs/promises";
 * import { NodeFileStorage } from "sessionfold/node";
 * const openFsStorage = async (root: string) => new NodeFileStorage({ root });
 * declare const dir: string;
 *
 * const target: StorageTestTarget = {
 *   storage: await openFsStorage(dir),
 *   teardown: () => rm(dir, { recursive: true, force: true }),
 *   reopen: () => openFsStorage(dir),
 * };
 * ```
 */
export interface StorageTestTarget {
  /** The store under test; it must be empty. */
  storage: StoragePort;
  /**
   * Runs after each test. When absent, the suite calls `storage.close()` (if the
   * backend has one) instead; a teardown is expected to close the storage itself.
   */
  teardown?: () => Promise<void> | void;
  /**
   * A second handle onto the same underlying store, when the backend supports it
   * (for cross-handle visibility tests). The suite closes the handle it got.
   */
  reopen?: () => Promise<StoragePort>;
}

/** One test's body: the fresh storage, its whole target and vitest's context. */
type TestBody = (storage: StoragePort, target: StorageTestTarget, context: TestContext) => Promise<void>;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** UTF-8 bytes of `text`. */
function utf8(text: string): Uint8Array {
  return encoder.encode(text);
}

/** A file's content as UTF-8 text, or `undefined` when it does not exist. */
async function readText(storage: StoragePort, path: string): Promise<string | undefined> {
  const bytes = await storage.read(path);
  return bytes === undefined ? undefined : decoder.decode(bytes);
}

/** `size` pseudo-random but reproducible bytes, so a misplaced block is noticed. */
function patterned(size: number, seed = 1): Uint8Array {
  const out = new Uint8Array(size);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < size; i++) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}

/** `""` when equal, else a short description of the first difference (fast on megabytes). */
function byteDifference(actual: Uint8Array | undefined, expected: Uint8Array): string {
  if (actual === undefined) return "the file is missing";
  if (!(actual instanceof Uint8Array)) return `got ${Object.prototype.toString.call(actual)}, not a Uint8Array`;
  const shared = Math.min(actual.length, expected.length);
  for (let i = 0; i < shared; i++) {
    if (actual[i] !== expected[i]) return `byte ${i} is ${actual[i]}, expected ${expected[i]}`;
  }
  return actual.length === expected.length ? "" : `length is ${actual.length}, expected ${expected.length}`;
}

/** Asserts byte equality without letting vitest diff megabytes. */
function expectBytes(actual: Uint8Array | undefined, expected: Uint8Array, label = "bytes"): void {
  expect(byteDifference(actual, expected), label).toBe("");
}

/** Asserts that a call rejects (rather than throws synchronously) with code `invalid-input`. */
async function expectInvalidInput(label: string, call: () => Promise<unknown>): Promise<void> {
  let pending: Promise<unknown>;
  try {
    pending = call();
  } catch (error) {
    expect.fail(`${label} threw synchronously instead of returning a rejected promise: ${String(error)}`);
  }
  await expect(pending, label).rejects.toMatchObject({ code: "invalid-input" });
}

/** Keys that must never reach a backend: traversal, absolute, empty or `.` segments, backslashes, NUL. */
const hostileKeys = ["../x", "/abs", "a//b", "a/./b", "", "a\\b", "a/", "a/../b", "..", ".", "x\0y"];

const MB = 1024 * 1024;

/**
 * Registers the storage conformance suite for one backend under `describe(name)`.
 * Every test calls `setup()` for a fresh, empty store and tears it down afterwards
 * (`teardown`, else `storage.close()`); tests that need `reopen` are skipped when the
 * target has none.
 *
 * @param name Shown in the test report, e.g. `"MemoryStorage"` or `"node-fs via worker"`.
 * @param setup Creates a fresh, empty store for one test.
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 * import { runStorageTests } from "sessionfold/testing/conformance";
 *
 * runStorageTests("MemoryStorage", () => ({ storage: new MemoryStorage() }));
 * ```
 */
export function runStorageTests(name: string, setup: () => Promise<StorageTestTarget> | StorageTestTarget): void {
  /** One conformance case with a fresh target and a guaranteed teardown. */
  function test(title: string, body: TestBody, timeout?: number): void {
    it(title, { timeout }, async (context) => {
      const target = await setup();
      try {
        await body(target.storage, target, context);
      } finally {
        if (target.teardown) await target.teardown();
        else await target.storage.close?.();
      }
    });
  }

  /** Gets the second handle, or skips the test when the backend has none. */
  async function reopened(target: StorageTestTarget, context: TestContext): Promise<StoragePort> {
    if (!target.reopen) context.skip("this target has no reopen()");
    return await target.reopen!();
  }

  describe(`storage conformance: ${name}`, () => {
    describe("missing paths are values, not errors", () => {
      test("read of a missing file resolves undefined", async (storage) => {
        expect(await storage.read("nope.json")).toBeUndefined();
        expect(await storage.read("no/such/folder/nope.json")).toBeUndefined();
      });

      test("readTail of a missing file resolves undefined", async (storage) => {
        expect(await storage.readTail("nope.jsonl", 10)).toBeUndefined();
        expect(await storage.readTail("no/such/nope.jsonl", 0)).toBeUndefined();
      });

      test("list of a missing folder (and of an empty store's root) resolves []", async (storage) => {
        expect(await storage.list("")).toEqual([]);
        expect(await storage.list("no/such/folder")).toEqual([]);
        await storage.replace("a/b.json", utf8("{}"));
        expect(await storage.list("a/c")).toEqual([]);
      });

      test("remove of a missing path resolves without error", async (storage) => {
        await expect(storage.remove("nope.json")).resolves.toBeUndefined();
        await expect(storage.remove("no/such/folder")).resolves.toBeUndefined();
        await storage.replace("a/b.json", utf8("{}"));
        await expect(storage.remove("a/c")).resolves.toBeUndefined();
        expect(await readText(storage, "a/b.json")).toBe("{}");
      });
    });

    describe("replace", () => {
      test("writes a file that read returns as a Uint8Array with the same bytes", async (storage) => {
        await storage.replace("meta.json", utf8('{"revision":1}'));
        const bytes = await storage.read("meta.json");
        expect(bytes).toBeInstanceOf(Uint8Array);
        expect(decoder.decode(bytes)).toBe('{"revision":1}');
      });

      test("creates every missing parent folder and leaves no temporary file visible", async (storage) => {
        await storage.replace("agents/a1/workspaces/w1/meta.json", utf8("{}"));
        expect(await storage.list("")).toEqual(["agents"]);
        expect(await storage.list("agents")).toEqual(["a1"]);
        expect(await storage.list("agents/a1")).toEqual(["workspaces"]);
        expect(await storage.list("agents/a1/workspaces/w1")).toEqual(["meta.json"]);
        await storage.replace("agents/a1/workspaces/w1/meta.json", utf8('{"x":1}'));
        expect(await storage.list("agents/a1/workspaces/w1")).toEqual(["meta.json"]);
      });

      test("overwrites the whole file: a shorter content leaves nothing of the longer one", async (storage) => {
        await storage.replace("f.txt", utf8("a long first content"));
        await storage.replace("f.txt", utf8("short"));
        expect(await readText(storage, "f.txt")).toBe("short");
        await storage.append("f.txt", utf8(" + appended"));
        await storage.replace("f.txt", utf8("again"));
        expect(await readText(storage, "f.txt")).toBe("again");
      });

      test("writes an empty file that exists (read gives 0 bytes, not undefined)", async (storage) => {
        await storage.replace("empty", new Uint8Array(0));
        const bytes = await storage.read("empty");
        expect(bytes).toBeInstanceOf(Uint8Array);
        expect(bytes!.length).toBe(0);
        expect(await storage.readTail("empty", 10)).toMatchObject({ size: 0 });
        expect(await storage.list("")).toEqual(["empty"]);
        expect(await storage.createExclusive("empty", utf8("x"))).toBe(false);
      });

      test("is atomic for concurrent readers: every read sees one whole payload, never a mix or a prefix", async (storage) => {
        const a = new Uint8Array(MB).fill(0x61);
        const b = new Uint8Array(MB).fill(0x62);
        await storage.replace("dir/big.bin", a);
        const writes: Promise<void>[] = [];
        const reads: Promise<Uint8Array | undefined>[] = [];
        const tails: ReturnType<StoragePort["readTail"]>[] = [];
        for (let round = 0; round < 6; round++) {
          for (let i = 0; i < 3; i++) reads.push(storage.read("dir/big.bin"));
          tails.push(storage.readTail("dir/big.bin", 64));
          writes.push(storage.replace("dir/big.bin", round % 2 === 0 ? b : a));
          for (let i = 0; i < 3; i++) reads.push(storage.read("dir/big.bin"));
        }
        const [results, tailResults] = await Promise.all([Promise.all(reads), Promise.all(tails), Promise.all(writes)]);
        for (const [i, bytes] of results.entries()) {
          expect(bytes, `read #${i}`).toBeDefined();
          const expected = bytes![0] === 0x62 ? b : a;
          expectBytes(bytes, expected, `read #${i} is one whole payload`);
        }
        for (const [i, tail] of tailResults.entries()) {
          expect(tail?.size, `readTail #${i} size`).toBe(MB);
          const expected = tail!.bytes[0] === 0x62 ? b : a;
          expectBytes(tail!.bytes, expected.subarray(MB - 64), `readTail #${i} is the end of one whole payload`);
        }
        const final = await storage.read("dir/big.bin");
        expectBytes(final, final![0] === 0x62 ? b : a, "final content is one whole payload");
        expect(await storage.list("dir")).toEqual(["big.bin"]);
      });
    });

    describe("readTail", () => {
      test("returns the last N bytes and the full size", async (storage) => {
        await storage.replace("log.jsonl", utf8("0123456789"));
        const tail = await storage.readTail("log.jsonl", 4);
        expect(tail?.size).toBe(10);
        expect(decoder.decode(tail?.bytes)).toBe("6789");
      });

      test("returns the whole file when N is larger than the file", async (storage) => {
        await storage.replace("log.jsonl", utf8("abc"));
        const tail = await storage.readTail("log.jsonl", 1000);
        expect(tail?.size).toBe(3);
        expect(decoder.decode(tail?.bytes)).toBe("abc");
        const exact = await storage.readTail("log.jsonl", 3);
        expect(decoder.decode(exact?.bytes)).toBe("abc");
      });

      test("returns no bytes but the full size when N is 0", async (storage) => {
        await storage.replace("log.jsonl", utf8("abcdef"));
        const tail = await storage.readTail("log.jsonl", 0);
        expect(tail?.size).toBe(6);
        expect(tail?.bytes).toBeInstanceOf(Uint8Array);
        expect(tail?.bytes.length).toBe(0);
      });

      test("sees content written by several appends, across their boundaries", async (storage) => {
        for (const line of ["first\n", "second\n", "third\n"]) await storage.append("log.jsonl", utf8(line));
        const tail = await storage.readTail("log.jsonl", 10);
        expect(tail?.size).toBe(19);
        expect(decoder.decode(tail?.bytes)).toBe("ond\nthird\n");
      });

      test("counts bytes, not characters (a tail may start inside a UTF-8 sequence)", async (storage) => {
        const bytes = utf8("ab€"); // € is E2 82 AC
        await storage.replace("u.txt", bytes);
        const tail = await storage.readTail("u.txt", 2);
        expect(tail?.size).toBe(5);
        expectBytes(tail?.bytes, new Uint8Array([0x82, 0xac]));
      });
    });

    describe("readMany (optional)", () => {
      test("answers each request in order: whole files, tails, missing paths, the last file of a folder", async (storage, _target, context) => {
        if (!storage.readMany) context.skip("this backend has no readMany");
        await storage.replace("s/meta.json", utf8('{"revision":2}'));
        for (const line of ["one\n", "two\n", "three\n"]) await storage.append("s/active.jsonl", utf8(line));
        await storage.replace("s/segments/000000000001-000000000004.jsonl", utf8("old\n"));
        await storage.replace("s/segments/000000000005-000000000009.jsonl", utf8("first\nfooter\n"));
        await storage.replace("s/segments/000000000010-000000000011/inner.jsonl", utf8("a folder's file\n"));
        const found = await storage.readMany!([
          { path: "s/meta.json" },
          { path: "s/active.jsonl", tailBytes: 9 },
          { path: "s/missing.json" },
          { path: "s/active.jsonl", tailBytes: 0 },
          { lastIn: "s/segments", tailBytes: 7 },
          { lastIn: "s/nothing-here", tailBytes: 7 },
          { path: "s/active.jsonl" },
        ]);
        // A backend that cannot find a folder's last file in constant time may leave that
        // prefetch unread (`null`), and answers `undefined` only for a folder with no file.
        const unlessUnread = <T>(i: number, expected: T) => (found[i] === null ? null : expected);
        expect(found.map((f) => f && { path: f.path, text: decoder.decode(f.bytes), size: f.size })).toEqual([
          { path: "s/meta.json", text: '{"revision":2}', size: 14 },
          { path: "s/active.jsonl", text: "wo\nthree\n", size: 14 },
          undefined,
          { path: "s/active.jsonl", text: "", size: 14 },
          unlessUnread(4, { path: "s/segments/000000000005-000000000009.jsonl", text: "footer\n", size: 13 }),
          unlessUnread(5, undefined),
          { path: "s/active.jsonl", text: "one\ntwo\nthree\n", size: 14 },
        ]);
        expect(found[0]!.bytes).toBeInstanceOf(Uint8Array);
        expect(await storage.readMany!([])).toEqual([]);
      });

      // A `lastIn` prefetch with a `namedIn` hint, through the backend's own readMany or the
      // core's over its other calls (what a session's open does on every backend): the file
      // the hint names, or the folder's last file, or not read (`null`) where a backend can
      // find neither; never a file the hint does not name, never one outside the folder.
      const segment = (start: number, end: number) => `s/segments/${String(start).padStart(12, "0")}-${String(end).padStart(12, "0")}.jsonl`;
      const hinted = (field = "newest_segment") => ({ lastIn: "s/segments", tailBytes: 7, namedIn: { path: "s/meta.json", field } });
      async function seedSegments(storage: StoragePort, meta: string): Promise<void> {
        await storage.replace("s/meta.json", utf8(meta));
        await storage.replace(segment(1, 4), utf8("old\nold footer\n"));
        await storage.replace(segment(5, 9), utf8("first\nfooter\n"));
        await storage.replace("s/secret.jsonl", utf8("outside the folder\n"));
      }
      const shown = (found: ReadResult | null | undefined) => found && { path: found.path, text: decoder.decode(found.bytes), size: found.size };
      const LAST = { path: segment(5, 9), text: "footer\n", size: 13 };

      test("a lastIn hint reads the segment the JSON file read before it names, in the same call", async (storage) => {
        await seedSegments(storage, '{"revision":3,"newest_segment":{"start":5,"end":9}}');
        const found = await readMany(storage, [{ path: "s/meta.json" }, { path: "s/active.jsonl" }, hinted()]);
        expect(found[1]).toBeUndefined();
        expect(shown(found[2])).toEqual(LAST);
        // A hint naming an older segment that exists: that one, or the folder's last file.
        await storage.replace("s/meta.json", utf8('{"newest_segment":{"start":1,"end":4}}'));
        const [, older] = await readMany(storage, [{ path: "s/meta.json" }, hinted()]);
        expect([{ path: segment(1, 4), text: "footer\n", size: 15 }, LAST]).toContainEqual(shown(older));
      });

      test("a hint that names no file, or no valid segment, is no read of anything else", async (storage) => {
        const metas = [
          '{"newest_segment":{"start":10,"end":12}}', // a file that is not there
          '{"newest_segment":"../secret.jsonl"}', // a string: not a range, and it would leave the folder
          '{"newest_segment":{"start":"5","end":"9"}}', // numbers as strings
          '{"newest_segment":{"start":5.5,"end":9}}',
          '{"newest_segment":{"start":9,"end":5}}',
          '{"newest_segment":{"start":5,"end":1e13}}', // past the 12 digits of a segment name
          '{"newest_segment":null}',
          '{"other":{"start":5,"end":9}}', // no such field
          '[{"start":5,"end":9}]',
          '{"newest_segment":{"start":5,"end":9}', // not JSON
        ];
        await seedSegments(storage, metas[0]!);
        for (const meta of metas) {
          await storage.replace("s/meta.json", utf8(meta));
          const [, found] = await readMany(storage, [{ path: "s/meta.json" }, hinted()]);
          expect([null, LAST], meta).toContainEqual(shown(found));
        }
        // A field inherited by every object, a field name that is not a string, a hint whose
        // file no earlier request read whole (only its tail, or not at all), or that escapes.
        await storage.replace("s/meta.json", utf8('{"newest_segment":{"start":5,"end":9}}'));
        const requests: ReadRequest[][] = [
          [{ path: "s/meta.json" }, hinted("__proto__")],
          [{ path: "s/meta.json" }, hinted("constructor")],
          [{ path: "s/meta.json" }, { ...hinted(), namedIn: { path: "s/meta.json", field: 5 as unknown as string } }],
          [{ path: "s/meta.json", tailBytes: 4096 }, hinted()],
          [{ path: "s/active.jsonl" }, hinted()],
          [{ path: "s/meta.json" }, { ...hinted(), namedIn: { path: "s/../s/meta.json", field: "newest_segment" } }],
          [hinted(), { path: "s/meta.json" }],
        ];
        for (const asked of requests) {
          const found = await readMany(storage, asked);
          expect([null, LAST], JSON.stringify(asked)).toContainEqual(shown(found[asked.findIndex((r) => "lastIn" in r)]));
        }
      });

      test("a hinted prefetch of a folder outside the store is refused, and reads nothing", async (storage) => {
        await storage.replace("s/meta.json", utf8('{"newest_segment":{"start":1,"end":4}}'));
        for (const lastIn of ["../s/segments", "s/../../segments", "/s/segments"]) {
          await expectInvalidInput(lastIn, () => readMany(storage, [{ path: "s/meta.json" }, { ...hinted(), lastIn }]));
        }
      });

      test("a hint for a folder that is not there finds no file", async (storage) => {
        await storage.replace("s/meta.json", utf8('{"newest_segment":{"start":1,"end":4}}'));
        await storage.replace("s/secret.jsonl", utf8("outside the folder\n"));
        const [, found] = await readMany(storage, [{ path: "s/meta.json" }, hinted()]);
        // `undefined`: no file; `null`: not read (a backend without its own readMany cannot tell).
        expect([null, undefined]).toContain(found);
      });
    });

    describe("list", () => {
      test("returns the direct children only, files and folders alike", async (storage) => {
        await storage.replace("root/file.json", utf8("1"));
        await storage.replace("root/sub/deep/x.json", utf8("2"));
        await storage.append("root/log.jsonl", utf8("3\n"));
        await storage.replace("elsewhere/y", utf8("4"));
        expect(await storage.list("root")).toEqual(["file.json", "log.jsonl", "sub"]);
        expect(await storage.list("root/sub")).toEqual(["deep"]);
        expect(await storage.list("root/sub/deep")).toEqual(["x.json"]);
        expect(await storage.list("")).toEqual(["elsewhere", "root"]);
      });

      test("sorts names by UTF-16 code unit (uppercase before lowercase, '10' before '9')", async (storage) => {
        // No two names differ only by case, so case-insensitive filesystems pass too.
        const names = ["b", "A", "_x", "10", "9", "Z", "a.json", "a-b", "~"];
        for (const n of names) await storage.replace(`d/${n}`, utf8(n));
        const listed = await storage.list("d");
        expect(listed).toEqual([...names].sort());
        expect(listed).toEqual(["10", "9", "A", "Z", "_x", "a-b", "a.json", "b", "~"]);
      });

      test("names a folder once however many entries lie below it", async (storage) => {
        for (let i = 0; i < 5; i++) await storage.replace(`d/sub/f${i}`, utf8("x"));
        await storage.replace("d/sub/deeper/g", utf8("x"));
        await storage.replace("d/file", utf8("x"));
        expect(await storage.list("d")).toEqual(["file", "sub"]);
      });

      test("does not confuse a folder with a sibling that shares its prefix", async (storage) => {
        await storage.replace("a/x", utf8("1"));
        await storage.replace("ab/y", utf8("2"));
        await storage.replace("a.json", utf8("3"));
        expect(await storage.list("a")).toEqual(["x"]);
        expect(await storage.list("ab")).toEqual(["y"]);
        expect(await storage.list("")).toEqual(["a", "a.json", "ab"]);
      });

      test("lists 500 files of one folder, each exactly once, in order", async (storage) => {
        const names = Array.from({ length: 500 }, (_, i) => `m-${String(i).padStart(4, "0")}.json`);
        for (let start = 0; start < names.length; start += 50) {
          await Promise.all(names.slice(start, start + 50).map((n) => storage.replace(`many/${n}`, utf8(n))));
        }
        expect(await storage.list("many")).toEqual(names);
        expect(await readText(storage, "many/m-0123.json")).toBe("m-0123.json");
        expect(await readText(storage, "many/m-0499.json")).toBe("m-0499.json");
      }, 30_000);
    });

    describe("append", () => {
      test("creates the file and its parent folders", async (storage) => {
        await storage.append("s/messages/active.jsonl", utf8('{"n":1}\n'));
        expect(await readText(storage, "s/messages/active.jsonl")).toBe('{"n":1}\n');
        expect(await storage.list("s")).toEqual(["messages"]);
        expect(await storage.list("s/messages")).toEqual(["active.jsonl"]);
      });

      test("keeps the order of sequential appends", async (storage) => {
        const lines = Array.from({ length: 50 }, (_, i) => `{"sequence":${i + 1}}\n`);
        for (const line of lines) await storage.append("log.jsonl", utf8(line));
        expect(await readText(storage, "log.jsonl")).toBe(lines.join(""));
      });

      test("keeps issue order for appends issued concurrently (await Promise.all)", async (storage) => {
        const chunks = Array.from(
          { length: 60 },
          (_, i) => utf8(i % 10 === 3 ? `${String(i).padStart(2, "0")}${"x".repeat(64 * 1024)}\n` : `${String(i).padStart(2, "0")}\n`),
        );
        await Promise.all(chunks.map((chunk) => storage.append("c/log.jsonl", chunk)));
        expectBytes(await storage.read("c/log.jsonl"), concatBytes(chunks), "appends landed in issue order");
      });

      test("continues a file written by replace, and replace then discards appended content", async (storage) => {
        await storage.replace("f", utf8("head\n"));
        await storage.append("f", utf8("tail\n"));
        expect(await readText(storage, "f")).toBe("head\ntail\n");
        await storage.replace("f", utf8("new\n"));
        await storage.append("f", utf8("more\n"));
        expect(await readText(storage, "f")).toBe("new\nmore\n");
      });

      test("appends zero bytes without changing the content", async (storage) => {
        await storage.append("f", utf8("abc"));
        await storage.append("f", new Uint8Array(0));
        expect(await readText(storage, "f")).toBe("abc");
      });
    });

    describe("createExclusive", () => {
      test("resolves true for a new file, then false, leaving the first content", async (storage) => {
        expect(await storage.createExclusive("s/writer.lock", utf8('{"pid":1}'))).toBe(true);
        expect(await readText(storage, "s/writer.lock")).toBe('{"pid":1}');
        expect(await storage.createExclusive("s/writer.lock", utf8('{"pid":2}'))).toBe(false);
        expect(await readText(storage, "s/writer.lock")).toBe('{"pid":1}');
        await storage.remove("s/writer.lock");
        expect(await storage.createExclusive("s/writer.lock", utf8('{"pid":3}'))).toBe(true);
        expect(await readText(storage, "s/writer.lock")).toBe('{"pid":3}');
      });

      test("resolves false on a file written by replace or append, without changing it", async (storage) => {
        await storage.replace("r", utf8("replaced"));
        await storage.append("a", utf8("appended"));
        expect(await storage.createExclusive("r", utf8("x"))).toBe(false);
        expect(await storage.createExclusive("a", utf8("x"))).toBe(false);
        expect(await readText(storage, "r")).toBe("replaced");
        expect(await readText(storage, "a")).toBe("appended");
      });

      test("conflicts with an existing (non-empty) folder", async (storage) => {
        await storage.replace("folder/inner.json", utf8("{}"));
        expect(await storage.createExclusive("folder", utf8("x"))).toBe(false);
        expect(await storage.list("folder")).toEqual(["inner.json"]);
        expect(await readText(storage, "folder/inner.json")).toBe("{}");
      });

      test("creates missing parent folders", async (storage) => {
        expect(await storage.createExclusive("a/b/c/lock", utf8("1"))).toBe(true);
        expect(await storage.list("a/b")).toEqual(["c"]);
        expect(await readText(storage, "a/b/c/lock")).toBe("1");
      });

      test("lets exactly one of many concurrent callers win, and stores the winner's bytes", async (storage) => {
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) => storage.createExclusive("s/writer.lock", utf8(`owner ${i}`))),
        );
        const winners = results.flatMap((won, i) => (won ? [i] : []));
        expect(winners).toHaveLength(1);
        expect(await readText(storage, "s/writer.lock")).toBe(`owner ${winners[0]}`);
      });
    });

    describe("truncate", () => {
      test("cuts a file, and a later append continues from the cut", async (storage) => {
        await storage.append("log.jsonl", utf8('{"a":1}\n'));
        await storage.append("log.jsonl", utf8('{"b":2'));
        await storage.truncate("log.jsonl", 8);
        expect(await readText(storage, "log.jsonl")).toBe('{"a":1}\n');
        expect((await storage.readTail("log.jsonl", 0))?.size).toBe(8);
        await storage.append("log.jsonl", utf8('{"c":3}\n'));
        expect(await readText(storage, "log.jsonl")).toBe('{"a":1}\n{"c":3}\n');
      });

      test("to a length at or beyond the size changes nothing", async (storage) => {
        await storage.replace("f", utf8("12345"));
        await storage.truncate("f", 5);
        expect(await readText(storage, "f")).toBe("12345");
        await storage.truncate("f", 500);
        expect(await readText(storage, "f")).toBe("12345");
        expect((await storage.readTail("f", 0))?.size).toBe(5);
      });

      test("to 0 leaves an existing empty file", async (storage) => {
        await storage.replace("f", utf8("12345"));
        await storage.truncate("f", 0);
        const bytes = await storage.read("f");
        expect(bytes?.length).toBe(0);
        expect(await storage.list("")).toEqual(["f"]);
      });
    });

    describe("write options", () => {
      test("durable: false changes no semantics: createExclusive is still exclusive and whole, remove still removes", async (storage) => {
        const quick = { durable: false } as const;
        expect(await storage.createExclusive("s/writer.lock", utf8('{"pid":1}'), quick)).toBe(true);
        expect(await storage.createExclusive("s/writer.lock", utf8('{"pid":2}'), quick)).toBe(false);
        expect(await readText(storage, "s/writer.lock")).toBe('{"pid":1}');
        await storage.remove("s/writer.lock", quick);
        expect(await storage.read("s/writer.lock")).toBeUndefined();
        expect(await storage.createExclusive("s/writer.lock", utf8('{"pid":3}'), { durable: true })).toBe(true);
      });
      test("durable: false changes no semantics: replace still replaces whole", async (storage) => {
        await storage.replace("s/meta.json", utf8("old content"), { durable: false });
        await storage.replace("s/meta.json", utf8("new"), { durable: false });
        expect(await readText(storage, "s/meta.json")).toBe("new");
      });
    });

    // The backend's own applyCommitPlan when it has one (a worker), else the core's `applyCommitPlanByCalls`.
    describe("commit plans", () => {
      const owner = (id: string) =>
        utf8(JSON.stringify({ pid: 1, hostname: "h", runtime: "node", operation: "append", created_at: "2026-12-02T13:00:00.000Z", lock_id: id }));
      const meta = (revision: number) =>
        utf8(
          JSON.stringify({
            schema_version: 1,
            session_id: "s",
            agent_id: "a",
            workspace_id: "w",
            created_at: "2026-12-02T13:00:00.000Z",
            updated_at: "2026-12-02T13:00:00.000Z",
            message_count: revision,
            history_bytes: 0,
            revision,
          }),
        );
      const plan = (revision: number | null): CommitPlan => ({
        lock: { path: "s/writer.lock", bytes: owner("lock_mine"), lockId: "lock_mine" },
        expect: { path: "s/meta.json", revision },
        writes: [
          { op: "append", path: "s/active.jsonl", bytes: utf8("line\n") },
          { op: "replace", path: "s/meta.json", bytes: meta((revision ?? 0) + 1), durable: false },
        ],
      });
      const run = (storage: StoragePort, p: CommitPlan) => (storage.applyCommitPlan ? storage.applyCommitPlan(p) : applyCommitPlanByCalls(storage, p));

      test("commits: the writes land in order and the lock is gone afterwards", async (storage) => {
        await storage.replace("s/meta.json", meta(4));
        expect(await run(storage, plan(4))).toEqual({ outcome: "committed" });
        expect(await readText(storage, "s/active.jsonl")).toBe("line\n");
        expect(JSON.parse((await readText(storage, "s/meta.json")) ?? "")).toMatchObject({ revision: 5 });
        expect(await storage.read("s/writer.lock")).toBeUndefined();
        expect(await run(storage, plan(null))).toEqual({ outcome: "conflict", revision: 5 });
      });
      test("another revision, a missing meta.json or a held lock write nothing", async (storage) => {
        expect(await run(storage, plan(3))).toEqual({ outcome: "conflict", revision: null });
        await storage.replace("s/meta.json", meta(7));
        expect(await run(storage, plan(6))).toEqual({ outcome: "conflict", revision: 7 });
        // Another holder: the platform lock where the backend has one, else the file alone.
        if (storage.acquireLock) expect(await storage.acquireLock("s/writer.lock")).toBe(true);
        expect(await storage.createExclusive("s/writer.lock", owner("lock_theirs"))).toBe(true);
        expect(await run(storage, plan(7))).toEqual({ outcome: "locked" });
        expect(await storage.read("s/active.jsonl")).toBeUndefined();
        expect(JSON.parse((await readText(storage, "s/writer.lock")) ?? "")).toMatchObject({ lock_id: "lock_theirs" });
        await storage.releaseLock?.("s/writer.lock");
      });
      test("hold keeps the lock after a commit; a later plan's release gives it back", async (storage) => {
        await storage.replace("s/meta.json", meta(2));
        const lock = { path: "s/writer.lock", bytes: owner("lock_mine"), lockId: "lock_mine" };
        expect(await run(storage, { lock, hold: true, expect: { path: "s/meta.json", revision: 2 }, writes: [] })).toEqual({ outcome: "committed" });
        expect(JSON.parse((await readText(storage, "s/writer.lock")) ?? "")).toMatchObject({ lock_id: "lock_mine" });
        expect(await run(storage, plan(2))).toEqual({ outcome: "locked" }); // held: nobody else commits
        expect(await run(storage, { writes: [{ op: "append", path: "s/active.jsonl", bytes: utf8("held\n") }] })).toEqual({ outcome: "committed" });
        expect(await run(storage, { writes: [], release: { path: lock.path, lockId: lock.lockId } })).toEqual({ outcome: "committed" });
        expect(await storage.read("s/writer.lock")).toBeUndefined();
        expect(await run(storage, plan(2))).toEqual({ outcome: "committed" });
        expect(await readText(storage, "s/active.jsonl")).toBe("held\nline\n");
      });
      test("hold releases a lock whose plan did not commit; release leaves another owner's lock", async (storage) => {
        await storage.replace("s/meta.json", meta(2));
        const lock = { path: "s/writer.lock", bytes: owner("lock_mine"), lockId: "lock_mine" };
        expect(await run(storage, { lock, hold: true, expect: { path: "s/meta.json", revision: 1 }, writes: [] })).toEqual({
          outcome: "conflict",
          revision: 2,
        });
        expect(await storage.read("s/writer.lock")).toBeUndefined();
        // Taken and held, then replaced under us (`unlock --force` and another writer): the release removes nothing.
        expect(await run(storage, { lock, hold: true, expect: { path: "s/meta.json", revision: 2 }, writes: [] })).toEqual({ outcome: "committed" });
        await storage.replace("s/writer.lock", owner("lock_theirs"));
        await run(storage, { writes: [], release: { path: lock.path, lockId: lock.lockId } });
        expect(JSON.parse((await readText(storage, "s/writer.lock")) ?? "")).toMatchObject({ lock_id: "lock_theirs" });
      });
      // Only a backend that stages (`stage`, with its own applyCommitPlan) runs these; the others decline by leaving it out.
      describe("staged files (optional: stage)", () => {
        const staging = (storage: StoragePort, context: TestContext) => {
          if (!storage.stage || !storage.unstage || !storage.applyCommitPlan) context.skip("this backend stages no files");
          return storage as Required<Pick<StoragePort, "stage" | "unstage" | "applyCommitPlan">> & StoragePort;
        };
        const segment = "s/messages/segments/000000000001-000000000002.jsonl";
        test("a plan's replace puts the staged bytes and its own in place; nothing staged is read or listed before", async (storage, _, context) => {
          const store = staging(storage, context);
          await store.replace("s/meta.json", utf8("{}"));
          await store.stage(segment, utf8("one\ntwo\n"), "stage_seg");
          await store.stage("s/messages/active.jsonl", utf8("three\n"), "stage_active");
          expect(await store.list("s/messages/segments")).toEqual([]);
          expect(await store.read(segment)).toBeUndefined();
          expect(await store.read("s/messages/active.jsonl")).toBeUndefined();
          const writes = [
            { op: "replace", path: segment, bytes: utf8("footer\n"), staged: "stage_seg" },
            { op: "replace", path: "s/messages/active.jsonl", bytes: new Uint8Array(0), staged: "stage_active" },
          ] as const;
          expect(await store.applyCommitPlan({ writes })).toEqual({ outcome: "committed" });
          expect(await readText(store, segment)).toBe("one\ntwo\nfooter\n");
          expect(await readText(store, "s/messages/active.jsonl")).toBe("three\n");
          expect(await store.list("s/messages")).toEqual(["active.jsonl", "segments"]);
          // Used up: a second plan naming them fails and writes nothing.
          await expect(store.applyCommitPlan({ writes: [{ op: "replace", path: segment, bytes: utf8("x\n"), staged: "stage_seg" }] })).rejects.toThrow();
          expect(await readText(store, segment)).toBe("one\ntwo\nfooter\n");
        });
        test("a plan that does not commit uses its staged bytes up; unstage drops the others", async (storage, _, context) => {
          const store = staging(storage, context);
          await store.replace("s/meta.json", meta(3));
          await store.stage("s/messages/active.jsonl", utf8("kept\n"), "stage_a");
          await store.stage(segment, utf8("lines\n"), "stage_b");
          const writes = [{ op: "replace", path: "s/messages/active.jsonl", bytes: new Uint8Array(0), staged: "stage_a" }] as const;
          expect(await store.applyCommitPlan({ expect: { path: "s/meta.json", revision: 2 }, writes })).toEqual({ outcome: "conflict", revision: 3 });
          await expect(store.applyCommitPlan({ writes })).rejects.toThrow();
          await store.unstage("stage_b");
          await store.unstage("stage_b"); // nothing staged: nothing to do
          await expect(store.applyCommitPlan({ writes: [{ op: "replace", path: segment, bytes: utf8("f\n"), staged: "stage_b" }] })).rejects.toThrow();
          expect(await store.read("s/messages/active.jsonl")).toBeUndefined();
          expect(await store.read(segment)).toBeUndefined();
          expect(await store.list("s/messages")).not.toContain("active.jsonl");
        });
      });
    });

    describe("remove", () => {
      test("removes a file and nothing else", async (storage) => {
        await storage.replace("d/a", utf8("a"));
        await storage.replace("d/b", utf8("b"));
        await storage.remove("d/a");
        expect(await storage.read("d/a")).toBeUndefined();
        expect(await storage.list("d")).toEqual(["b"]);
        expect(await readText(storage, "d/b")).toBe("b");
      });

      test("removes a whole folder tree but not a sibling sharing its prefix", async (storage) => {
        await storage.replace("s1/meta.json", utf8("{}"));
        await storage.append("s1/messages/active.jsonl", utf8("x\n"));
        await storage.replace("s1/messages/segments/000000000001-000000000002.jsonl", utf8("y\n"));
        await storage.replace("s10/meta.json", utf8("keep"));
        await storage.replace("s1.json", utf8("keep too"));
        await storage.remove("s1");
        expect(await storage.read("s1/meta.json")).toBeUndefined();
        expect(await storage.read("s1/messages/active.jsonl")).toBeUndefined();
        expect(await storage.list("s1")).toEqual([]);
        expect(await storage.list("s1/messages/segments")).toEqual([]);
        expect((await storage.list("")).filter((n) => n !== "s1")).toEqual(["s1.json", "s10"]);
        expect(await readText(storage, "s10/meta.json")).toBe("keep");
        expect(await readText(storage, "s1.json")).toBe("keep too");
        expect(await storage.createExclusive("s1/meta.json", utf8("new"))).toBe(true);
      });
    });

    describe("move", () => {
      test("moves a file, creating the target's parent folders; the source is gone", async (storage) => {
        await storage.replace("from/f.json", utf8("content"));
        expect(await storage.move("from/f.json", "to/deep/g.json")).toBe(true);
        expect(await storage.read("from/f.json")).toBeUndefined();
        expect(await readText(storage, "to/deep/g.json")).toBe("content");
        expect(await storage.list("to/deep")).toEqual(["g.json"]);
        await storage.append("to/deep/g.json", utf8("+"));
        expect(await readText(storage, "to/deep/g.json")).toBe("content+");
      });

      test("move of a missing source resolves false and creates nothing", async (storage) => {
        expect(await storage.move("nowhere/f.json", "to/g.json")).toBe(false);
        expect(await storage.read("to/g.json")).toBeUndefined();
        expect(await storage.list("to")).toEqual([]);
      });

      test("moves a folder tree with every descendant; the source tree is gone", async (storage) => {
        await storage.replace("sessions/s1/meta.json", utf8("m"));
        await storage.append("sessions/s1/messages/active.jsonl", utf8("a\n"));
        await storage.replace("sessions/s1/messages/segments/1-2.jsonl", utf8("s\n"));
        await storage.replace("sessions/s10/meta.json", utf8("other"));
        expect(await storage.move("sessions/s1", "archived-sessions/s1")).toBe(true);
        expect(await storage.list("sessions/s1")).toEqual([]);
        expect(await storage.read("sessions/s1/meta.json")).toBeUndefined();
        expect(await storage.read("sessions/s1/messages/segments/1-2.jsonl")).toBeUndefined();
        expect(await readText(storage, "archived-sessions/s1/meta.json")).toBe("m");
        expect(await readText(storage, "archived-sessions/s1/messages/active.jsonl")).toBe("a\n");
        expect(await readText(storage, "archived-sessions/s1/messages/segments/1-2.jsonl")).toBe("s\n");
        expect(await storage.list("archived-sessions/s1")).toEqual(["messages", "meta.json"]);
        expect(await readText(storage, "sessions/s10/meta.json")).toBe("other");
        expect(await storage.list("archived-sessions")).toEqual(["s1"]);
      });

      test("onto an existing file or folder resolves false and changes nothing", async (storage) => {
        await storage.replace("a.json", utf8("A"));
        await storage.replace("b.json", utf8("B"));
        await storage.replace("dir1/x", utf8("X"));
        await storage.replace("dir2/y", utf8("Y"));
        expect(await storage.move("a.json", "b.json")).toBe(false);
        expect(await storage.move("dir1", "dir2")).toBe(false);
        expect(await storage.move("a.json", "dir2")).toBe(false);
        expect(await storage.move("dir1", "b.json")).toBe(false);
        expect(await readText(storage, "a.json")).toBe("A");
        expect(await readText(storage, "b.json")).toBe("B");
        expect(await readText(storage, "dir1/x")).toBe("X");
        expect(await readText(storage, "dir2/y")).toBe("Y");
        expect(await storage.list("dir2")).toEqual(["y"]);
        expect(await storage.list("")).toEqual(["a.json", "b.json", "dir1", "dir2"]);
      });

      test("onto itself resolves false and changes nothing", async (storage) => {
        await storage.replace("d/f", utf8("F"));
        expect(await storage.move("d/f", "d/f")).toBe(false);
        expect(await storage.move("d", "d")).toBe(false);
        expect(await readText(storage, "d/f")).toBe("F");
      });

      test("into its own subtree resolves false and changes nothing", async (storage) => {
        await storage.replace("tree/leaf", utf8("L"));
        expect(await storage.move("tree", "tree/sub")).toBe(false);
        expect(await storage.move("tree", "tree/sub/deeper")).toBe(false);
        expect(await storage.list("tree")).toEqual(["leaf"]);
        expect(await readText(storage, "tree/leaf")).toBe("L");
      });
    });

    describe("bytes", () => {
      test("returned arrays are copies: mutating them does not change the store", async (storage) => {
        await storage.replace("f", utf8("abcdef"));
        const read = await storage.read("f");
        read!.fill(0x7a);
        const tail = await storage.readTail("f", 3);
        tail!.bytes.fill(0x7a);
        expect(await readText(storage, "f")).toBe("abcdef");
        expect(decoder.decode((await storage.readTail("f", 3))?.bytes)).toBe("def");
      });

      test("passed arrays are copied: mutating them after the call does not change the store", async (storage) => {
        const replaced = utf8("replace");
        const appended = utf8("append");
        const created = utf8("create");
        await storage.replace("r", replaced);
        await storage.append("a", appended);
        await storage.createExclusive("c", created);
        replaced.fill(0x21);
        appended.fill(0x21);
        created.fill(0x21);
        expect(await readText(storage, "r")).toBe("replace");
        expect(await readText(storage, "a")).toBe("append");
        expect(await readText(storage, "c")).toBe("create");
      });

      test("respects a passed view's offset and length (a subarray writes only its bytes)", async (storage) => {
        const whole = utf8("0123456789");
        await storage.replace("r", whole.subarray(2, 5));
        await storage.append("r", whole.subarray(8));
        expect(await readText(storage, "r")).toBe("23489");
      });

      test("all 256 byte values round-trip through replace, append, createExclusive and readTail", async (storage) => {
        const all = Uint8Array.from({ length: 256 }, (_, i) => i);
        const reversed = all.slice().reverse();
        await storage.replace("bin/r", all);
        await storage.append("bin/a", all);
        await storage.append("bin/a", reversed);
        await storage.createExclusive("bin/c", reversed);
        expectBytes(await storage.read("bin/r"), all);
        expectBytes(await storage.read("bin/a"), concatBytes([all, reversed]));
        expectBytes(await storage.read("bin/c"), reversed);
        expectBytes((await storage.readTail("bin/a", 300))?.bytes, concatBytes([all, reversed]).subarray(212));
      });

      test("UTF-8 multi-byte content round-trips exactly", async (storage) => {
        const text = 'héllo wörld — 日本語 🎉 Ωμέγα\u{1F9D1}\u200D\u{1F4BB} "quoted" \\ \u0000 end\n';
        await storage.replace("u/replace.txt", utf8(text));
        await storage.append("u/append.jsonl", utf8(text));
        await storage.append("u/append.jsonl", utf8(text));
        expect(await readText(storage, "u/replace.txt")).toBe(text);
        expect(await readText(storage, "u/append.jsonl")).toBe(text + text);
      });

      test("handles 10 MB through replace and read", async (storage) => {
        const big = patterned(10 * MB, 7);
        await storage.replace("big/replace.bin", big);
        expectBytes(await storage.read("big/replace.bin"), big, "10 MB replace");
        const tail = await storage.readTail("big/replace.bin", 4096);
        expect(tail?.size).toBe(10 * MB);
        expectBytes(tail?.bytes, big.subarray(10 * MB - 4096), "tail of a 10 MB file");
      }, 60_000);

      test("handles 10 MB through append, read and readTail", async (storage) => {
        const big = patterned(10 * MB, 11);
        await storage.append("big/append.bin", big.subarray(0, 3 * MB));
        await storage.append("big/append.bin", big.subarray(3 * MB));
        expectBytes(await storage.read("big/append.bin"), big, "10 MB append");
        const tail = await storage.readTail("big/append.bin", 1000);
        expect(tail?.size).toBe(10 * MB);
        expectBytes(tail?.bytes, big.subarray(10 * MB - 1000), "tail of a 10 MB appended file");
        await storage.truncate("big/append.bin", 5 * MB);
        expect((await storage.readTail("big/append.bin", 0))?.size).toBe(5 * MB);
      }, 60_000);
    });

    describe("hostile keys", () => {
      for (const key of hostileKeys) {
        test(`rejects ${JSON.stringify(key)} in every method with code "invalid-input", writing nothing`, async (storage) => {
          await storage.replace("keep/file", utf8("kept"));
          const bytes = utf8("evil");
          await expectInvalidInput("read", () => storage.read(key));
          await expectInvalidInput("readTail", () => storage.readTail(key, 10));
          if (key !== "") await expectInvalidInput("list", () => storage.list(key));
          await expectInvalidInput("replace", () => storage.replace(key, bytes));
          await expectInvalidInput("append", () => storage.append(key, bytes));
          await expectInvalidInput("createExclusive", () => storage.createExclusive(key, bytes));
          await expectInvalidInput("truncate", () => storage.truncate(key, 0));
          await expectInvalidInput("remove", () => storage.remove(key));
          await expectInvalidInput("move from", () => storage.move(key, "moved"));
          await expectInvalidInput("move to", () => storage.move("keep/file", key));
          await expectInvalidInput("move folder to", () => storage.move("keep", key));
          expect(await storage.list("")).toEqual(["keep"]);
          expect(await storage.list("keep")).toEqual(["file"]);
          expect(await readText(storage, "keep/file")).toBe("kept");
        });
      }
    });

    describe("catalog (optional: readCatalog)", () => {
      const dir = "agents/a1/workspaces/w1/sessions";
      const archived = "agents/a1/workspaces/w1/archived-sessions";
      const meta = (id: string, fields: Record<string, unknown> = {}) =>
        utf8(
          `${
            JSON.stringify(
              {
                schema_version: 1,
                session_id: id,
                agent_id: "a1",
                workspace_id: "w1",
                created_at: "2026-12-02T12:00:00.000Z",
                updated_at: "2026-12-02T12:00:00.000Z",
                message_count: 0,
                history_bytes: 0,
                revision: 0,
                provider: { provider: "p", api: "a", model: "m" },
                ...fields,
              },
              null,
              2,
            )
          }\n`,
        );
      /** The catalog of `folder` as name → meta, or skips the test when the backend keeps none. */
      async function catalogOf(storage: StoragePort, context: TestContext, folder = dir): Promise<Map<string, Record<string, unknown> | undefined>> {
        const listing = await storage.readCatalog?.(folder);
        if (!listing) context.skip("this backend keeps no catalog");
        return new Map(listing!.entries.filter((e) => !e.name.startsWith(".")).map((e) => [e.name, e.meta as Record<string, unknown> | undefined]));
      }

      test(
        "a replace or createExclusive of a session's meta.json writes its entry: the listing fields, the newest write",
        async (storage, _target, context) => {
          await storage.replace(`${dir}/s1/meta.json`, meta("s1", { title: "first", revision: 1 }));
          await storage.replace(`${dir}/s1/meta.json`, meta("s1", { title: "second", revision: 2 }));
          expect(await storage.createExclusive(`${dir}/s2/meta.json`, meta("s2", { revision: 0 }))).toBe(true);
          await storage.append(`${dir}/s1/messages/active.jsonl`, utf8("{}\n"));
          const catalog = await catalogOf(storage, context);
          expect([...catalog.keys()].sort()).toEqual(["s1", "s2"]);
          expect(catalog.get("s1")).toMatchObject({ session_id: "s1", title: "second", revision: 2 });
          // What a listing shows, not the whole document: the provider stays in meta.json.
          expect(catalog.get("s1")).not.toHaveProperty("provider");
          expect(await catalogOf(storage, context, archived)).toEqual(new Map());
        },
      );

      test("moves with its session folder (archive, a staged fork moved into place) and goes with its removal", async (storage, _target, context) => {
        await storage.replace(`${dir}/s1/meta.json`, meta("s1", { revision: 3 }));
        expect(await storage.move(`${dir}/s1`, `${archived}/s1`)).toBe(true);
        expect([...(await catalogOf(storage, context)).keys()]).toEqual([]);
        expect((await catalogOf(storage, context, archived)).get("s1")).toMatchObject({ revision: 3 });
        await storage.replace(`${dir}/.fork-s2-t_1/meta.json`, meta("s2", { revision: 7 }));
        expect([...(await catalogOf(storage, context)).keys()]).toEqual([]);
        expect(await storage.move(`${dir}/.fork-s2-t_1`, `${dir}/s2`)).toBe(true);
        expect((await catalogOf(storage, context)).get("s2")).toMatchObject({ revision: 7 });
        await storage.remove(`${dir}/s2`);
        await storage.remove(`${archived}/s1`);
        expect([...(await catalogOf(storage, context)).keys()]).toEqual([]);
        expect([...(await catalogOf(storage, context, archived)).keys()]).toEqual([]);
      });

      test("a meta.json that is not a JSON object has an entry without a document (the reader reads the file)", async (storage, _target, context) => {
        await catalogOf(storage, context);
        await storage.replace(`${dir}/s1/meta.json`, utf8("{not json"));
        const listing = await storage.readCatalog!(dir);
        const entry = listing!.entries.find((e) => e.name === "s1");
        if (entry) expect(entry.meta).toBeUndefined();
        else expect(listing!.unlisted).toContain("s1");
      });

      test("rebuildCatalog keeps every session and resolves how many it catalogued", async (storage, _target, context) => {
        for (const id of ["s1", "s2", "s3"]) await storage.replace(`${dir}/${id}/meta.json`, meta(id, { title: id }));
        await catalogOf(storage, context);
        expect(await storage.rebuildCatalog!(dir)).toBe(3);
        const catalog = await catalogOf(storage, context);
        expect([...catalog.keys()].sort()).toEqual(["s1", "s2", "s3"]);
        expect(catalog.get("s2")).toMatchObject({ title: "s2" });
      });

      test("commit plans keep it: a plan's meta.json replace is catalogued like a call", async (storage, _target, context) => {
        const plan: CommitPlan = {
          writes: [
            { op: "append", path: `${dir}/s1/messages/active.jsonl`, bytes: utf8("{}\n") },
            { op: "replace", path: `${dir}/s1/meta.json`, bytes: meta("s1", { revision: 5 }), durable: false },
          ],
        };
        expect(await (storage.applyCommitPlan ? storage.applyCommitPlan(plan) : applyCommitPlanByCalls(storage, plan))).toEqual({ outcome: "committed" });
        expect((await catalogOf(storage, context)).get("s1")).toMatchObject({ revision: 5 });
      });

      test("two handles writing different sessions at once: both are listed, through either handle", async (storage, target, context) => {
        await catalogOf(storage, context);
        const other = await reopened(target, context);
        try {
          await Promise.all(
            Array.from({ length: 20 }, (_, i) => (i % 2 ? storage : other).replace(`${dir}/s${i}/meta.json`, meta(`s${i}`, { revision: i }))),
          );
          for (const handle of [storage, other]) {
            const catalog = await catalogOf(handle, context);
            expect(catalog.size).toBe(20);
            for (let i = 0; i < 20; i++) expect(catalog.get(`s${i}`)).toMatchObject({ revision: i });
          }
        } finally {
          await other.close?.();
        }
      });
    });

    describe("catalog pages (optional: readCatalog with a CatalogPage)", () => {
      const dir = "agents/a1/workspaces/w1/sessions";
      /** Session `s<i>` last active at a time three sessions share (ties go by name). */
      const meta = (i: number, second: number) =>
        utf8(JSON.stringify({
          schema_version: 1,
          session_id: `s${i}`,
          agent_id: "a1",
          workspace_id: "w1",
          created_at: "2026-12-02T12:00:00.000Z",
          updated_at: new Date(Date.parse("2026-12-02T12:00:00.000Z") + second * 1000).toISOString(),
          message_count: 0,
          history_bytes: 0,
          revision: i,
        }));
      const at = (entry: { meta: unknown }) => (entry.meta as { updated_at: string }).updated_at;
      /** The listing's order: newest `updated_at` first, then by name. */
      const order = (a: { name: string; meta: unknown }, b: { name: string; meta: unknown }) =>
        at(a) === at(b) ? (a.name < b.name ? -1 : 1) : at(a) > at(b) ? -1 : 1;

      test(
        "a page's entries hold the first `limit` sessions after the cursor, in the listing's order, before and after a rebuild, with newer writes",
        async (storage, _target, context) => {
          if (!storage.readCatalog) return context.skip("this backend keeps no catalog");
          for (let i = 0; i < 30; i++) await storage.replace(`${dir}/s${i}/meta.json`, meta(i, Math.floor(i / 3)));
          const check = async (label: string) => {
            const whole = await storage.readCatalog!(dir);
            if (!whole) return context.skip("this backend keeps no catalog");
            const expected = [...whole.entries].sort(order).map((e) => e.name);
            for (const limit of [1, 4, 50]) {
              for (const from of [-1, 0, 5, 6, 28]) {
                const after = from < 0 ? undefined : { updatedAt: at(whole.entries.find((e) => e.name === expected[from])!), name: expected[from]! };
                const page = await storage.readCatalog!(dir, { limit, ...(after ? { after } : {}) });
                const names = [...page!.entries].sort(order).filter((e) =>
                  !after || at(e) < after.updatedAt || (at(e) === after.updatedAt && e.name > after.name)
                )
                  .map((e) => e.name);
                expect(names.slice(0, limit), `${label}: limit ${limit} after #${from}`).toEqual(expected.slice(from + 1, from + 1 + limit));
                expect(page!.unlisted).toEqual([]);
              }
            }
          };
          await check("as written");
          await storage.rebuildCatalog?.(dir);
          await check("rebuilt");
          // Newer writes of a few sessions (now the newest) and a removed session.
          for (const i of [2, 17, 29]) await storage.replace(`${dir}/s${i}/meta.json`, meta(i, 100 + i));
          await storage.remove(`${dir}/s8`);
          await check("written since the rebuild");
          expect((await storage.readCatalog!(dir, { limit: 3 }))!.entries.map((e) => e.name)).not.toContain("s8");
        },
      );
    });

    describe("a second handle onto the same store", () => {
      test("sees writes made through the first handle, and the other way round", async (storage, target, context) => {
        const other = await reopened(target, context);
        try {
          await storage.replace("s/meta.json", utf8('{"revision":1}'));
          await storage.append("s/active.jsonl", utf8("1\n"));
          expect(await readText(other, "s/meta.json")).toBe('{"revision":1}');
          expect(await readText(other, "s/active.jsonl")).toBe("1\n");
          expect(await other.list("s")).toEqual(["active.jsonl", "meta.json"]);
          await other.append("s/active.jsonl", utf8("2\n"));
          await other.replace("s/meta.json", utf8('{"revision":2}'));
          expect(await readText(storage, "s/active.jsonl")).toBe("1\n2\n");
          expect((await storage.readTail("s/active.jsonl", 2))?.size).toBe(4);
          expect(await readText(storage, "s/meta.json")).toBe('{"revision":2}');
          await storage.truncate("s/active.jsonl", 2);
          expect(await readText(other, "s/active.jsonl")).toBe("1\n");
          expect(await other.move("s", "archived/s")).toBe(true);
          expect(await storage.read("s/meta.json")).toBeUndefined();
          expect(await storage.list("archived")).toEqual(["s"]);
          await storage.remove("archived");
          expect(await other.read("archived/s/meta.json")).toBeUndefined();
        } finally {
          await other.close?.();
        }
      });

      test("shares createExclusive: a lock taken through one handle refuses the other", async (storage, target, context) => {
        const other = await reopened(target, context);
        try {
          expect(await storage.createExclusive("s/writer.lock", utf8("first"))).toBe(true);
          expect(await other.createExclusive("s/writer.lock", utf8("second"))).toBe(false);
          expect(await readText(other, "s/writer.lock")).toBe("first");
          const race = await Promise.all([
            storage.createExclusive("t/writer.lock", utf8("a")),
            other.createExclusive("t/writer.lock", utf8("b")),
          ]);
          expect(race.filter(Boolean)).toHaveLength(1);
        } finally {
          await other.close?.();
        }
      });
    });
  });
}

// The attack suite of encrypted stores, which every backend runs under EncryptedStorage.
export { type EncryptionAttackTarget, runEncryptionAttackTests } from "./encryption-attacks.ts";
