/** `jsonDepthOver` (core/schema/json-depth.ts) against a plain recursive measure of the same depth. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { jsonDepthOver } from "../../core/schema/json-depth.ts";

/** The depth of arrays and objects in `value` (a scalar is 0), by recursion: what the walk must agree with. */
function depthOf(value: unknown): number {
  if (value === null || typeof value !== "object") return 0;
  const children: unknown[] = Array.isArray(value) ? value : Object.values(value);
  return 1 + Math.max(0, ...children.map(depthOf));
}

describe("jsonDepthOver", () => {
  it("agrees with a recursive measure for any JSON value and any limit", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), fc.integer({ min: 0, max: 8 }), (value, max) => {
        const depth = depthOf(value);
        expect(jsonDepthOver(value, max)).toBe(depth > max ? max + 1 : undefined);
      }),
      { numRuns: 500 },
    );
  });

  it("measures own fields only, as Object.values gives them, and a value nested 100,000 deep without recursion", () => {
    const inherited = Object.create({ deep: [[[[]]]] }) as object;
    expect(jsonDepthOver({ a: inherited }, 2)).toBeUndefined();
    let deep: unknown = [];
    for (let i = 0; i < 100_000; i++) deep = { next: deep };
    expect(jsonDepthOver(deep, 512)).toBe(513);
    expect(jsonDepthOver(deep, 200_000)).toBeUndefined();
  });
});
