/**
 * runtime-node/fs-io.ts's whole read of a file that changed since its `fstat`: bytes
 * appended meanwhile are read too (in one step or several), a file that shrank gives what
 * it holds, and the size limit holds for the grown file. The tails of one `readMany` share
 * buffers (`TailSlab`) and never each other's bytes.
 */
import { closeSync, fstatSync, openSync, truncateSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readWhole, TailSlab } from "../../runtime-node/fs-io.ts";
import { NodeFileStorage } from "../../runtime-node/fs-storage.ts";

let dir: string;
beforeEach(async () => (dir = await mkdtemp(join(tmpdir(), "sessionfold-fs-io-"))));
afterEach(async () => await rm(dir, { recursive: true, force: true }));

const tooLarge = (bytes: number) => new RangeError(`too large: ${bytes}`);
function filled(length: number, seed: number): Uint8Array {
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i++) bytes[i] = (i * 7 + seed) % 251;
  return bytes;
}

/** Writes `before`, takes its fstat size, then lets `change` alter the file before the read. */
function readAfter(before: Uint8Array, change: (file: string) => void, max = 1 << 30): Uint8Array {
  const file = join(dir, "f");
  writeFileSync(file, before);
  const fd = openSync(file, "r");
  try {
    const { size } = fstatSync(fd);
    change(file);
    return readWhole(fd, size, max, tooLarge);
  } finally {
    closeSync(fd);
  }
}

describe("readWhole", () => {
  it("reads a file that did not change", () => {
    const bytes = filled(1000, 1);
    expect(readAfter(bytes, () => {})).toEqual(bytes);
    expect(readAfter(new Uint8Array(0), () => {})).toEqual(new Uint8Array(0));
  });

  it.each([1, 100, 64 * 1024 - 1, 64 * 1024, 64 * 1024 + 1, 200_000])("reads %i bytes appended since fstat", (grown) => {
    const before = filled(5000, 2);
    const after = filled(5000 + grown, 2);
    after.set(before);
    expect(readAfter(before, (file) => writeFileSync(file, after))).toEqual(after);
  });

  it("gives what a file holds when it shrank since fstat", () => {
    const before = filled(5000, 3);
    expect(readAfter(before, (file) => truncateSync(file, 1200))).toEqual(before.subarray(0, 1200));
  });

  it("refuses a file that grew past the limit", () => {
    const before = filled(1000, 4);
    expect(() => readAfter(before, (file) => writeFileSync(file, filled(70_000, 4)), 50_000)).toThrow(/^too large: \d+$/);
    expect(() => readAfter(before, (file) => writeFileSync(file, filled(1500, 4)), 1200)).toThrow("too large: 1500");
  });
});

describe("the tails of one readMany", () => {
  it("share buffers, each its own bytes, and a call of one tail gets a buffer of its size", async () => {
    const storage = new NodeFileStorage({ root: dir, fsync: false });
    // Files shorter and longer than the tail asked, enough of them for several shared buffers.
    const files = Array.from({ length: 300 }, (_, i) => filled(i % 3 === 0 ? 100 + i : 5000 + i, i));
    for (const [i, bytes] of files.entries()) await storage.replace(`t/${i}.bin`, bytes);
    const found = await storage.readMany([...files.keys()].map((i) => ({ path: `t/${i}.bin`, tailBytes: 4096 })));
    for (const [i, bytes] of files.entries()) {
      expect(found[i]).toEqual({ path: `t/${i}.bin`, bytes: bytes.subarray(Math.max(0, bytes.length - 4096)), size: bytes.length });
    }
    expect(new Set(found.map((result) => result!.bytes.buffer)).size).toBeLessThan(10);
    const [one] = await storage.readMany([{ path: "t/1.bin", tailBytes: 4096 }, { path: "t/0.bin" }]);
    expect(one!.bytes.buffer.byteLength).toBe(4096);
  });

  it("gives a tail too long to share bytes of its own", () => {
    const slab = new TailSlab([{ path: "a", tailBytes: 4096 }, { path: "b", tailBytes: 1 << 20 }]);
    expect(slab.room(1 << 20)).toBeUndefined();
    expect(slab.room(Number.NaN)).toBeUndefined();
    const room = slab.room(4096)!;
    expect(room.buffer.byteLength).toBe(4096);
    slab.took(room.subarray(0, 10));
    // The next tail starts after the bytes taken; the buffer is replaced once it has no room.
    expect(slab.room(4000)!.byteOffset).toBe(10);
  });
});
