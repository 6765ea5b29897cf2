import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  agentConfigPath,
  agentDir,
  assertId,
  formatSegmentName,
  formatSessionRef,
  type IdKind,
  InvalidIdError,
  InvalidInputError,
  isValidId,
  parseSegmentName,
  parseSessionRef,
  relativeToSession,
  SEGMENT_DIGITS,
  type SegmentRange,
  SessionfoldError,
  sessionPaths,
  sessionRef,
  sessionsDir,
  workspacesDir,
} from "../../core/mod.ts";

const MAX = 10 ** 12 - 1;

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error("expected a throw");
}

function expectInvalidId(fn: () => unknown, kind?: IdKind): InvalidIdError {
  const error = thrown(fn);
  expect(error).toBeInstanceOf(InvalidIdError);
  expect(error).toBeInstanceOf(SessionfoldError);
  const e = error as InvalidIdError;
  expect(e.code).toBe("invalid-id");
  expect(e.name).toBe("InvalidIdError");
  if (kind) {
    expect(e.message).toContain(kind);
    expect(e.details.kind).toBe(kind);
  }
  return e;
}

describe("assertId / isValidId", () => {
  const valid = ["a", "Z", "0", "_", "-", "a".repeat(128), "a_b-c.d", "a.b.c", "a..b", "s1.", "_.", "-.-", "UPPER_lower-09"];
  it.each(valid)("accepts %j", (id) => {
    expect(() => assertId("session_id", id)).not.toThrow();
    expect(isValidId(id)).toBe(true);
  });

  const invalid: [string, string][] = [
    ["empty", ""],
    ["129 chars", "a".repeat(129)],
    ["leading dot", ".hidden"],
    ["dot", "."],
    ["dot-dot", ".."],
    ["traversal", "../x"],
    ["slash", "a/b"],
    ["only slash", "/"],
    ["backslash", "a\\b"],
    ["space", "a b"],
    ["leading space", " a"],
    ["trailing newline", "a\n"],
    ["tab", "a\tb"],
    ["NUL", "a\0b"],
    ["accented letter", "é"],
    ["non-latin", "会话"],
    ["emoji", "s😀"],
    ["fullwidth digit", "１"],
    ["colon", "a:b"],
    ["percent-encoding", "a%2Fb"],
    ["star", "*"],
  ];
  it.each(invalid)("rejects %s with InvalidIdError naming the kind", (_, id) => {
    for (const kind of ["agent_id", "workspace_id", "session_id"] as const) {
      const e = expectInvalidId(() => assertId(kind, id), kind);
      expect(e.details.value).toBe(id);
    }
    expect(isValidId(id)).toBe(false);
  });

  it.each([
    ["undefined", undefined],
    ["null", null],
    ["a number", 42],
    ["an object", { toString: () => "a1" }],
    ["an array", ["a1"]],
    ["a symbol", Symbol("a1")],
    ["a bigint", 1n],
    ["a null-prototype object", Object.create(null)],
    ["a String object", new String("a1")],
  ])("rejects a non-string (%s) with InvalidIdError, never a TypeError", (_, value) => {
    const e = expectInvalidId(() => assertId("agent_id", value), "agent_id");
    expect(e.details.value).toBeNull();
    expect(isValidId(value)).toBe(false);
  });

  it("shortens a huge value in the message", () => {
    const e = expectInvalidId(() => assertId("session_id", "x".repeat(10_000)));
    expect(e.message.length).toBeLessThan(400);
  });

  it("property: valid exactly when 1..128 chars of [A-Za-z0-9_.-] not starting with '.'", () => {
    const allowed = "abcXYZ019_.-";
    const chars = fc.constantFrom(...allowed, "/", "\\", " ", "\0", "é", "\n", ":", "😀");
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: chars, maxLength: 140 }), fc.string({ unit: "binary", maxLength: 10 })), (id) => {
        const expected = id.length >= 1 && id.length <= 128 && !id.startsWith(".") && [...id].every((c) => /^[A-Za-z0-9_.-]$/.test(c));
        expect(isValidId(id)).toBe(expected);
        if (expected) assertId("workspace_id", id);
        else expectInvalidId(() => assertId("workspace_id", id), "workspace_id");
      }),
      { numRuns: 500 },
    );
  });
});

describe("parseSessionRef / sessionRef / formatSessionRef", () => {
  it("parses a three-part reference", () => {
    expect(parseSessionRef("a1/w1/s1")).toEqual({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
    expect(formatSessionRef(parseSessionRef("a.b/w-1/s_1"))).toBe("a.b/w-1/s_1");
  });

  it.each(["a1/w1", "a1/w1/s1/x", "a1", "", "a1/w1/s1/", "/a1/w1/s1"])("rejects %j (not three parts)", (ref) => {
    expectInvalidId(() => parseSessionRef(ref));
  });

  it.each(
    [
      ["a1//s1", "workspace_id"],
      ["../w1/s1", "agent_id"],
      ["a1/w1/..", "session_id"],
      ["a1/w 1/s1", "workspace_id"],
      ["a1/w1/.s", "session_id"],
    ] as const,
  )("rejects %j naming the bad part (%s)", (ref, kind) => {
    expectInvalidId(() => parseSessionRef(ref), kind);
  });

  it("rejects a non-string reference with InvalidIdError", () => {
    expectInvalidId(() => parseSessionRef(undefined as unknown as string));
    expectInvalidId(() => parseSessionRef(42 as unknown as string));
  });

  it("sessionRef validates each id with its kind", () => {
    expectInvalidId(() => sessionRef("", "w", "s"), "agent_id");
    expectInvalidId(() => sessionRef("a", "", "s"), "workspace_id");
    expectInvalidId(() => sessionRef("a", "w", ""), "session_id");
  });

  it("property: formatSessionRef ∘ parseSessionRef is the identity on valid refs", () => {
    const id = fc.string({ unit: fc.constantFrom(..."aZ09_.-"), minLength: 1, maxLength: 20 }).filter((s) => !s.startsWith("."));
    fc.assert(
      fc.property(id, id, id, (a, w, s) => {
        const ref = `${a}/${w}/${s}`;
        expect(formatSessionRef(parseSessionRef(ref))).toBe(ref);
      }),
      { numRuns: 200 },
    );
  });
});

describe("sessionPaths", () => {
  const ref = { agentId: "a1", workspaceId: "w1", sessionId: "s1" };

  it("gives docs/FORMAT.md's paths for a live session", () => {
    const p = sessionPaths(ref);
    const dir = "agents/a1/workspaces/w1/sessions/s1";
    expect({ ...p, segment: undefined }).toEqual({
      dir,
      meta: `${dir}/meta.json`,
      instruction: `${dir}/instruction.md`,
      lock: `${dir}/writer.lock`,
      messagesDir: `${dir}/messages`,
      active: `${dir}/messages/active.jsonl`,
      draft: `${dir}/messages/assistant_message.json`,
      segmentsDir: `${dir}/messages/segments`,
      segment: undefined,
    });
    expect(p.segment({ start: 1, end: 450 })).toBe(`${dir}/messages/segments/000000000001-000000000450.jsonl`);
    expect(p.segment({ start: 451, end: 900 })).toBe(`${dir}/messages/segments/000000000451-000000000900.jsonl`);
    expect(sessionPaths(ref, "live")).toEqual(expect.objectContaining({ dir }));
  });

  it("gives the same tree under archived-sessions/ for an archived session", () => {
    const p = sessionPaths(ref, "archived");
    const dir = "agents/a1/workspaces/w1/archived-sessions/s1";
    expect(p.dir).toBe(dir);
    expect(p.meta).toBe(`${dir}/meta.json`);
    expect(p.instruction).toBe(`${dir}/instruction.md`);
    expect(p.lock).toBe(`${dir}/writer.lock`);
    expect(p.active).toBe(`${dir}/messages/active.jsonl`);
    expect(p.draft).toBe(`${dir}/messages/assistant_message.json`);
    expect(p.segmentsDir).toBe(`${dir}/messages/segments`);
    expect(p.segment({ start: 1, end: 1 })).toBe(`${dir}/messages/segments/000000000001-000000000001.jsonl`);
  });

  it("agent and workspace folders", () => {
    expect(agentDir("a1")).toBe("agents/a1");
    expect(agentConfigPath("a1")).toBe("agents/a1/agent.jsonc");
    expect(workspacesDir("a1")).toBe("agents/a1/workspaces");
    expect(sessionsDir("a1", "w1")).toBe("agents/a1/workspaces/w1/sessions");
    expect(sessionsDir("a1", "w1", "archived")).toBe("agents/a1/workspaces/w1/archived-sessions");
  });

  it("validates every id before building any path", () => {
    expectInvalidId(() => sessionPaths({ ...ref, agentId: ".." }), "agent_id");
    expectInvalidId(() => sessionPaths({ ...ref, workspaceId: "a/b" }), "workspace_id");
    expectInvalidId(() => sessionPaths({ ...ref, sessionId: "" }, "archived"), "session_id");
    expectInvalidId(() => agentDir("../etc"), "agent_id");
    expectInvalidId(() => sessionsDir("a1", "."), "workspace_id");
  });

  it("a segment path with a bad range is a typed error", () => {
    expect(() => sessionPaths(ref).segment({ start: 5, end: 4 })).toThrow(InvalidInputError);
  });

  it("relativeToSession gives the path diagnostics use", () => {
    const p = sessionPaths(ref);
    expect(relativeToSession(p, p.active)).toBe("messages/active.jsonl");
    expect(relativeToSession(p, p.meta)).toBe("meta.json");
    expect(relativeToSession(p, p.segment({ start: 1, end: 2 }))).toBe("messages/segments/000000000001-000000000002.jsonl");
    expect(relativeToSession(p, "elsewhere/file")).toBe("elsewhere/file");
    expect(relativeToSession(p, `${p.dir}x/meta.json`)).toBe(`${p.dir}x/meta.json`); // a sibling with a common prefix
  });
});

describe("segment names", () => {
  it("formats two 12-digit zero-padded numbers", () => {
    expect(SEGMENT_DIGITS).toBe(12);
    expect(formatSegmentName({ start: 1, end: 450 })).toBe("000000000001-000000000450.jsonl");
    expect(formatSegmentName({ start: 7, end: 7 })).toBe("000000000007-000000000007.jsonl");
    expect(formatSegmentName({ start: 1, end: MAX })).toBe("000000000001-999999999999.jsonl");
  });

  it("parses a name back", () => {
    expect(parseSegmentName("000000000001-000000000450.jsonl")).toEqual({ start: 1, end: 450 });
    expect(parseSegmentName("999999999999-999999999999.jsonl")).toEqual({ start: MAX, end: MAX });
  });

  it.each([
    ["start 0", { start: 0, end: 1 }],
    ["negative", { start: -1, end: 1 }],
    ["end before start", { start: 10, end: 9 }],
    ["end too big", { start: 1, end: 10 ** 12 }],
    ["fractional", { start: 1.5, end: 2 }],
    ["NaN", { start: Number.NaN, end: 2 }],
    ["Infinity", { start: 1, end: Number.POSITIVE_INFINITY }],
    ["a string", { start: "1", end: 2 }],
  ])("formatSegmentName rejects a bad range (%s) with InvalidInputError", (_, range) => {
    const error = thrown(() => formatSegmentName(range as unknown as SegmentRange));
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as InvalidInputError).code).toBe("invalid-input");
  });

  it.each([
    "notes.txt",
    "1-450.jsonl",
    "000000000001-000000000450.json",
    "000000000001-000000000450.jsonl.tmp",
    "000000000001_000000000450.jsonl",
    "0000000000001-000000000450.jsonl",
    "00000000001-000000000450.jsonl",
    "000000000450-000000000001.jsonl",
    "000000000000-000000000001.jsonl",
    "000000000000-000000000000.jsonl",
    " 000000000001-000000000450.jsonl",
    "000000000001-000000000450.jsonl\n",
    "+00000000001-000000000450.jsonl",
    "٠٠٠٠٠٠٠٠٠٠٠١-000000000450.jsonl",
    "active.jsonl",
    "",
  ])("parseSegmentName(%j) is undefined", (name) => {
    expect(parseSegmentName(name)).toBeUndefined();
  });

  const range = fc
    .tuple(fc.integer({ min: 1, max: MAX }), fc.integer({ min: 1, max: MAX }))
    .map(([a, b]) => ({ start: Math.min(a, b), end: Math.max(a, b) }));

  it("property: parseSegmentName ∘ formatSegmentName is the identity", () => {
    fc.assert(
      fc.property(range, (r) => {
        const name = formatSegmentName(r);
        expect(name).toMatch(/^\d{12}-\d{12}\.jsonl$/);
        expect(parseSegmentName(name)).toEqual(r);
      }),
      { numRuns: 500 },
    );
  });

  it("property: lexical order of names equals numeric order of ranges", () => {
    const small = fc
      .tuple(fc.integer({ min: 1, max: 5000 }), fc.nat({ max: 5000 }))
      .map(([start, length]) => ({ start, end: start + length }));
    fc.assert(
      fc.property(fc.array(fc.oneof(range, small), { minLength: 2, maxLength: 20 }), (ranges) => {
        const byName = [...ranges].sort((a, b) => {
          const x = formatSegmentName(a);
          const y = formatSegmentName(b);
          return x < y ? -1 : x > y ? 1 : 0;
        });
        const byNumber = [...ranges].sort((a, b) => a.start - b.start || a.end - b.end);
        expect(byName).toEqual(byNumber);
      }),
      { numRuns: 300 },
    );
  });

  it("property: a list of names sorted by code unit (as StoragePort.list returns them) is in sequence order", () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 1, max: 100_000 }), { minLength: 1, maxLength: 30 }), (ends) => {
        const sorted = [...ends].sort((a, b) => a - b);
        const ranges = sorted.map((end, i) => ({ start: i === 0 ? 1 : sorted[i - 1]! + 1, end }));
        const names = ranges.map(formatSegmentName).reverse().sort();
        expect(names.map((n) => parseSegmentName(n))).toEqual(ranges);
      }),
      { numRuns: 200 },
    );
  });
});
