/** The helpers every backend shares (core/storage/bytes.ts, failure.ts, path.ts, fence.ts), and the commit path's UTF-8 encoding (core/schema/utf8.ts). */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { InvalidInputError, MemoryStorage, StorageError, StorageFullError } from "../../core/mod.ts";
import { concatBytes, isWithin, messageOf, sameBytes, storageFailure } from "../../core/internal.ts";
import { utf8Bytes } from "../../core/schema/utf8.ts";
import { holdsWriterLock } from "../../core/storage/fence.ts";

describe("concatBytes", () => {
  it("joins parts in order into one fresh array", () => {
    const a = new Uint8Array([1, 2]);
    const b = new Uint8Array([3]);
    const joined = concatBytes([a, new Uint8Array(0), b]);
    expect([...joined]).toEqual([1, 2, 3]);
    joined[0] = 9;
    expect(a[0]).toBe(1);
  });

  it("returns a lone part of the full size as is, and an empty array for no parts", () => {
    const only = new Uint8Array([7, 8]);
    expect(concatBytes([only])).toBe(only);
    expect(concatBytes([only], 2)).toBe(only);
    expect(concatBytes([])).toEqual(new Uint8Array(0));
  });

  it("uses the size the caller counted", () => {
    expect([...concatBytes([new Uint8Array([1]), new Uint8Array([2, 3])], 3)]).toEqual([1, 2, 3]);
  });
});

describe("sameBytes", () => {
  it("is true for equal bytes only", () => {
    expect(sameBytes(new Uint8Array([1, 2, 3]), new Uint8Array([1, 2, 3]))).toBe(true);
    expect(sameBytes(new Uint8Array(0), new Uint8Array(0))).toBe(true);
    expect(sameBytes(new Uint8Array([1, 2, 3]), new Uint8Array([1, 2, 4]))).toBe(false);
    expect(sameBytes(new Uint8Array([1, 2]), new Uint8Array([1, 2, 3]))).toBe(false);
  });
});

describe("utf8Bytes", () => {
  it("gives what TextEncoder#encode gives, in an array of its own, for texts either side of the scratch buffer's size", () => {
    const encoder = new TextEncoder();
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 64 }), fc.constantFrom(1, 300, 16_384, 16_385), (text, times) => {
        const long = text.repeat(Math.ceil(times / Math.max(1, text.length))).slice(0, times);
        for (const sample of [text, long]) {
          const bytes = utf8Bytes(sample);
          expect(bytes).toEqual(encoder.encode(sample));
          // Its own buffer, exactly its size: a worker may be handed it, a store may keep it.
          expect(bytes.byteOffset).toBe(0);
          expect(bytes.buffer.byteLength).toBe(bytes.length);
        }
      }),
      { numRuns: 60 },
    );
    const first = utf8Bytes("abc");
    utf8Bytes("xyz");
    expect(new TextDecoder().decode(first)).toBe("abc");
  });
});

describe("holdsWriterLock", () => {
  const lock = (lockId: string, pid = 1) =>
    new TextEncoder().encode(JSON.stringify({ pid, hostname: "h", runtime: "node", operation: "lease", lock_id: lockId }));

  it("answers from the file every time, whatever bytes it saw before (same bytes are compared, not parsed again)", async () => {
    const storage = new MemoryStorage();
    const path = "s/writer.lock";
    await storage.replace(path, lock("lock_1"));
    expect(await holdsWriterLock(storage, path, "lock_1")).toBe(true);
    expect(await holdsWriterLock(storage, path, "lock_1")).toBe(true); // the same bytes again
    expect(await holdsWriterLock(storage, path, "lock_2")).toBe(false); // the same bytes, another holder
    await storage.replace(path, lock("lock_9")); // taken by another writer, same length
    expect(await holdsWriterLock(storage, path, "lock_1")).toBe(false);
    await storage.replace(path, lock("lock_1", 2)); // rewritten in place with the same lock_id
    expect(await holdsWriterLock(storage, path, "lock_1")).toBe(true);
    await storage.replace(path, new TextEncoder().encode("{not json"));
    expect(await holdsWriterLock(storage, path, "lock_1")).toBe(false);
    await storage.remove(path);
    expect(await holdsWriterLock(storage, path, "lock_1")).toBe(false);
  });
});

describe("storageFailure", () => {
  it("passes a sessionfold error through unchanged", () => {
    const typed = new InvalidInputError("bad key");
    expect(storageFailure(typed, { message: "x", full: true, details: {} })).toBe(typed);
  });

  it("makes a full store a StorageFullError and anything else a StorageError with its cause", () => {
    const cause = new Error("disk");
    const full = storageFailure(cause, { message: 'append of "a": no space left', full: true, details: { path: "a" } });
    expect(full).toBeInstanceOf(StorageFullError);
    expect(full.details).toEqual({ path: "a" });
    const failed = storageFailure(cause, { message: 'read of "a" failed', full: false, details: { path: "a" } });
    expect(failed).toBeInstanceOf(StorageError);
    expect(failed.message).toBe('read of "a" failed');
    expect(failed.cause).toBe(cause);
  });

  it("reads the message of anything thrown", () => {
    expect(messageOf(new Error("boom"))).toBe("boom");
    expect(messageOf({ message: "dom" })).toBe("dom");
    expect(messageOf(42)).toBe("42");
    expect(messageOf(null)).toBe("null");
  });
});

describe("isWithin", () => {
  it("is true for the key itself and keys below it, false for a sibling that shares a prefix", () => {
    expect(isWithin("a/b", "a/b")).toBe(true);
    expect(isWithin("a/b/c.jsonl", "a/b")).toBe(true);
    expect(isWithin("a/bc", "a/b")).toBe(false);
    expect(isWithin("a", "a/b")).toBe(false);
  });

  it("puts every key below the root", () => {
    expect(isWithin("a/b", "")).toBe(true);
  });
});
