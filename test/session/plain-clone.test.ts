/**
 * The commit path's shallow copy (core/session/plain-clone.ts): the fields a spread copies, in
 * its order, and an own `__proto__` field kept as a field, never made the copy's prototype.
 */
import { describe, expect, test } from "vitest";
import { plainClone } from "../../core/session/plain-clone.ts";
import { stampRevision } from "../../core/session/batch.ts";
import type { MessageRecord } from "../../core/mod.ts";

describe("plainClone", () => {
  test("copies the own enumerable fields, symbols included, in their order, and nothing else", () => {
    const tag = Symbol("tag");
    const source = Object.create({ inherited: 1 }, {
      b: { value: 2, enumerable: true },
      a: { value: 1, enumerable: true },
      hidden: { value: 3, enumerable: false },
      [tag]: { value: 4, enumerable: true },
    }) as Record<string | symbol, unknown>;
    const copy = plainClone(source);
    expect(Object.keys(copy)).toEqual(["b", "a"]);
    expect(copy[tag]).toBe(4);
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(copy).not.toBe(source);
    expect(JSON.stringify(copy)).toBe(JSON.stringify({ ...source }));
  });

  test("an own __proto__ field stays a field, as a spread keeps it; the prototype is untouched", () => {
    const source = JSON.parse('{"role":"user","__proto__":{"polluted":true},"z":1}') as Record<string, unknown>;
    const copy = plainClone(source) as Record<string, unknown>;
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(copy["polluted"]).toBeUndefined();
    expect(Object.keys(copy)).toEqual(["role", "__proto__", "z"]);
    expect(JSON.stringify(copy)).toBe('{"role":"user","__proto__":{"polluted":true},"z":1}');
  });

  test("a commit's line is a copy: the record handed in is left as it was, the revision ends the line", () => {
    const record: MessageRecord = {
      record_type: "message",
      sequence: 1,
      message_id: "m1",
      role: "user",
      created_at: "2026-12-05T06:00:00.000Z",
      parts: [{ sequence: 1, type: "text", text: "hi" }],
    };
    const before = JSON.stringify(record);
    const [line] = stampRevision([record], 7, 5);
    expect(JSON.stringify(record)).toBe(before);
    expect(Object.keys(line!).at(-1)).toBe("revision");
    expect(line).toMatchObject({ sequence: 5, revision: 7 });
  });
});
