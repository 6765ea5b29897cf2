/** `newId` (core/session/ids.ts): random ids drawn from batches of random bytes, each the 32 hex digits of a version-4 UUID. */
import { describe, expect, it } from "vitest";
import { newId } from "../../core/internal.ts";

describe("newId", () => {
  it("makes a prefix and the 32 hex digits of a version-4 UUID, never the same twice across many batches of random bytes", () => {
    const ids = Array.from({ length: 1000 }, () => newId("m"));
    for (const id of ids) expect(id).toMatch(/^m_[0-9a-f]{12}4[0-9a-f]{3}[89ab][0-9a-f]{15}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("uses every hex digit in every free position (the bytes are random, not a counter)", () => {
    const ids = Array.from({ length: 2000 }, () => newId("lock").slice("lock_".length));
    for (let position = 0; position < 32; position++) {
      if (position === 12 || position === 16) continue; // the version digit, and the variant digit's two fixed bits
      expect(new Set(ids.map((id) => id[position])).size, `position ${position}`).toBe(16);
    }
  });
});
