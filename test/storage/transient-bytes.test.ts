/**
 * core/storage/transient-bytes.ts: arrays cut from a shared slab hold exactly their bytes, never
 * overlap, keep their bytes while later ones are cut, and large ones get a buffer of their own.
 */
import { describe, expect, it } from "vitest";
import { utf8Bytes } from "../../core/schema/utf8.ts";
import { transientBytes } from "../../core/storage/transient-bytes.ts";

const utf8 = new TextEncoder();

describe("transient bytes", () => {
  it("encodes as TextEncoder does, ASCII or not, and keeps each array's bytes while thousands more are cut", () => {
    const texts = Array.from(
      { length: 5000 },
      (_, i) => `["sessionfold-sealed",1,"a/w/s${i}","messages/active.jsonl",[["message_id","é—😀${"x".repeat(i % 300)}"]]]`,
    );
    const kept = texts.map((text) => utf8Bytes(text, transientBytes));
    kept.forEach((bytes, i) => expect(bytes).toEqual(utf8.encode(texts[i])));
  });

  it("cuts arrays that never overlap, zeroed, from slabs shared by many", () => {
    const arrays = Array.from({ length: 3000 }, (_, i) => transientBytes(1 + (i % 700)));
    for (const bytes of arrays) expect(bytes.every((b) => b === 0)).toBe(true);
    arrays.forEach((bytes, i) => bytes.fill(i % 251));
    arrays.forEach((bytes, i) => expect(bytes.every((b) => b === i % 251)).toBe(true));
    const buffers = new Set(arrays.map((bytes) => bytes.buffer));
    expect(buffers.size).toBeLessThan(arrays.length / 10);
  });

  it("gives what could need more than half a slab a buffer of its own", () => {
    const large = transientBytes(40 * 1024);
    expect(large.byteOffset).toBe(0);
    expect(large.buffer.byteLength).toBe(40 * 1024);
    const text = "€".repeat(11 * 1024);
    const encoded = utf8Bytes(text, transientBytes);
    expect(encoded).toEqual(utf8.encode(text));
    expect(encoded.buffer.byteLength).toBe(encoded.length);
  });
});
