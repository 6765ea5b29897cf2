/**
 * runtime-node/fs-io.ts's whole read of a file that changed since its `fstat`: bytes
 * appended meanwhile are read too (in one step or several), a file that shrank gives what
 * it holds, and the size limit holds for the grown file.
 */
import { closeSync, fstatSync, openSync, truncateSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readWhole } from "../../runtime-node/fs-io.ts";

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
