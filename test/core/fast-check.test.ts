/**
 * core/schema/fast-check.ts against the zod schemas it stands in for, on a corpus: every
 * record sessionfold itself writes, and mutations of them (each field missing, of each wrong
 * kind, out of order, unknown fields before and after, `__proto__`, integer-like names). A
 * hand-written check must take exactly what its schema takes and return what it returns,
 * field order included (the value itself when the schema returns it unchanged), and refuse
 * the rest with the schema's own issues, path and message.
 */
import fc from "fast-check";
import { describe, expect, it, vi } from "vitest";
import type { z } from "zod";
import { DraftRecord, ExtractiveSummarizer, MemoryStorage, MessageRecord, SessionMeta, Sessions, SummaryRecord } from "../../core/mod.ts";
import { Timestamp } from "../../core/schema/common.ts";
import { draftCheck, lockCheck, messageCheck, metaCheck, metaFieldValid, type RecordCheck, summaryCheck } from "../../core/schema/fast-check.ts";
import { WriterLockRecord } from "../../core/schema/meta.ts";
import { type NewMessage, toMessageRecord } from "../../core/session/message-input.ts";
import { isTimestampText } from "../../core/schema/timestamp-check.ts";
import { REF } from "../support/session.ts";

const TIME = "2026-12-02T13:00:00.000Z";
const PROVIDER = { provider: "openai", api: "responses", model: "gpt-5" };

const MESSAGES: unknown[] = [
  { record_type: "message", sequence: 1, message_id: "m1", role: "user", created_at: TIME, parts: [{ sequence: 1, type: "text", text: "hi" }], revision: 1 },
  {
    record_type: "message",
    sequence: 2,
    message_id: "m2",
    role: "assistant",
    created_at: "2026-12-02T13:00:00+02:00",
    status: "completed",
    parts: [
      { sequence: 1, type: "reasoning", text: "think" },
      { sequence: 2, type: "reasoning-summary", text: "" },
      { sequence: 3, type: "tool", tool_call_id: "c1", tool_name: "ls", state: "output-available", input: { path: "." }, output: "x" },
      { sequence: 4, type: "tool", tool_call_id: "c2", tool_name: "ls", state: "output-error", input: null, error: "boom", ai_sdk: { x: 1 } },
      { sequence: 5, type: "file", media_type: "image/png", name: "a.png", data: "AAAA" },
      { sequence: 6, type: "file", media_type: "text/plain", url: "https://x" },
      { sequence: 7, type: "provider-context", ...PROVIDER, data: { opaque: [1, 2] } },
    ],
    usage: { input_tokens: 9, output_tokens: 1, total_tokens: 10, cost_usd_micros: 3 },
    provider: PROVIDER,
    context_refused: true,
    revision: 2,
    batch_size: 2,
    rho: { portable_fallback: "f" },
  },
];
const DRAFT = { record_type: "message", sequence: 3, message_id: "d", role: "assistant", created_at: TIME, status: "streaming", parts: [], pending: [] };
const SUMMARY = { record_type: "summary", session_id: "s1", summary_id: "sum", through_sequence: 2, text: "t", created_at: TIME, reset: true };
const META = {
  schema_version: 1,
  session_id: "s1",
  agent_id: "a1",
  workspace_id: "w1",
  title: "T",
  model_label: "m",
  created_at: TIME,
  updated_at: TIME,
  message_count: 2,
  history_bytes: 10,
  timezone: "Europe/Berlin",
  revision: 3,
  forked_from: { session_id: "s0", through_sequence: 0 },
  compaction: {
    completed: 1,
    removed_messages: 2,
    removed_tokens_estimate: 3,
    cost_usd_micros: 4,
    last_before_tokens: 5,
    last_after_tokens: 6,
    summary_usage: { input_tokens: 1, output_tokens: 2 },
  },
  provider: PROVIDER,
  newest_segment: "x",
};

const WRONG: unknown[] = [undefined, null, "", "x", 0, -1, 1.5, 2 ** 53, true, [], {}, "2026-02-30T00:00:00Z", "streaming", "user"];

/** Every object inside `value` with the path to it (the value itself first). */
function objects(value: unknown, path: (string | number)[] = []): { path: (string | number)[]; object: Record<string, unknown> }[] {
  if (typeof value !== "object" || value === null) return [];
  const here = Array.isArray(value) ? [] : [{ path, object: value as Record<string, unknown> }];
  return [...here, ...Object.entries(value).flatMap(([key, inner]) => objects(inner, [...path, Array.isArray(value) ? Number(key) : key]))];
}

/** A copy of `value` with the object at `path` replaced by `change(copy of it)`. */
function changed(value: unknown, path: (string | number)[], change: (object: Record<string, unknown>) => Record<string, unknown>): unknown {
  if (path.length === 0) return change({ ...(value as Record<string, unknown>) });
  const [head, ...rest] = path;
  const copy = (Array.isArray(value) ? [...value] : { ...(value as object) }) as Record<string | number, unknown>;
  copy[head!] = changed(copy[head!], rest, change);
  return copy;
}

/** Mutations of `base`: each field missing, wrong, moved last or first, and unknown fields placed around the known ones. */
function mutations(base: unknown): unknown[] {
  const out: unknown[] = [base];
  for (const { path, object } of objects(base)) {
    const keys = Object.keys(object);
    for (const key of keys) {
      out.push(changed(base, path, (o) => (delete o[key], o)));
      for (const wrong of WRONG) out.push(changed(base, path, (o) => ({ ...o, [key]: wrong })));
      out.push(changed(base, path, (o) => {
        const { [key]: moved, ...rest } = o;
        return { ...rest, [key]: moved };
      }));
      out.push(changed(base, path, (o) => ({ [key]: o[key], ...o })));
    }
    out.push(changed(base, path, (o) => ({ zz_unknown: 1, ...o })));
    out.push(changed(base, path, (o) => ({ ...o, zz_unknown: 1 })));
    out.push(changed(base, path, (o) => ({ 7: "integer-like", ...o })));
  }
  // Through JSON, as a reader gets them (undefined fields vanish), and `__proto__` as JSON.parse makes it.
  return [...out.map((v) => JSON.parse(JSON.stringify(v))), JSON.parse(JSON.stringify(base).replace(/^\{/, '{"__proto__":{"x":1},'))];
}

/** Whether an object anywhere in `value` has an integer-like key. */
function hasIntegerKey(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(hasIntegerKey);
  if (typeof value !== "object" || value === null) return false;
  return Object.keys(value).some((key) => /^\d+$/.test(key)) || Object.values(value).some(hasIntegerKey);
}

/** zod's issues as a check words them: path and message. */
const worded = (issues: readonly { path: PropertyKey[]; message: string }[]) => issues.map(({ path, message }) => ({ path, message }));

/** Whether the check took `value` as is; `asIs` is whether the schema itself returns it unchanged (same fields, same order). */
function expectAgreement(check: RecordCheck<unknown>, schema: z.ZodType, value: unknown): { fast: boolean; asIs: boolean } {
  const fast = check.safeParse(value);
  const slow = schema.safeParse(value);
  const asIs = slow.success && JSON.stringify(slow.data) === JSON.stringify(value) &&
    JSON.stringify(Object.keys(slow.data as object)) === JSON.stringify(Object.keys(value as object));
  expect([value, fast.success]).toEqual([value, slow.success]);
  if (!slow.success) {
    // The first issue (what an error message leads with) is zod's; the others are too, where the check finds them.
    expect([value, fast.error!.issues[0]]).toEqual([value, worded(slow.error.issues)[0]]);
    expect(worded(slow.error.issues)).toEqual(expect.arrayContaining(fast.error!.issues));
    return { fast: false, asIs };
  }
  if (fast.data === value) {
    // Taken as is: the schema returns the same fields, in the same order.
    expect(JSON.stringify(slow.data)).toBe(JSON.stringify(value));
    expect(Object.keys(slow.data as object)).toEqual(Object.keys(value as object));
    return { fast: true, asIs };
  }
  // A copy: the schema's fields in its order, then the others, as zod returns them.
  expect(JSON.stringify(fast.data)).toBe(JSON.stringify(slow.data));
  expect(Object.keys(fast.data as object)).toEqual(Object.keys(slow.data as object));
  return { fast: false, asIs };
}

describe("the hand-written checks agree with their schemas", () => {
  const cases: [string, RecordCheck<unknown>, z.ZodType, unknown[]][] = [
    ["MessageRecord", messageCheck, MessageRecord, MESSAGES],
    ["DraftRecord", draftCheck, DraftRecord, [DRAFT, { ...DRAFT, parts: [{ sequence: 1, type: "file", media_type: "a/b" }] }]],
    ["SummaryRecord", summaryCheck, SummaryRecord, [SUMMARY]],
    ["SessionMeta", metaCheck, SessionMeta, [META]],
    ["WriterLockRecord", lockCheck, WriterLockRecord, [{ pid: -1, hostname: "", runtime: "node", operation: "append", created_at: TIME, extra: 1 }]],
  ];
  for (const [name, check, schema, bases] of cases) {
    it(`${name}: on every mutation of its records`, () => {
      let asIs = 0;
      const declined: unknown[] = [];
      let total = 0;
      for (const base of bases) {
        if (schema.safeParse(base).success) expect(check.safeParse(base).data).toBe(base); // records in the schema's order are taken as they are
        for (const value of mutations(base)) {
          total += 1;
          const seen = expectAgreement(check, schema, value);
          // An integer-like key is declined by design (an object puts it first, whatever the record's order).
          if (!seen.asIs || hasIntegerKey(value)) continue;
          asIs += 1;
          if (!seen.fast) declined.push(value);
        }
      }
      expect(total).toBeGreaterThan(100);
      // Every mutation the schema returns unchanged (no integer-like key) is taken as is by the fast path.
      // The mutations are enumerated, not drawn at random: this count is the same on every run.
      expect(asIs).toBeGreaterThan(0);
      expect(declined).toEqual([]);
    });
  }

  it("takes every line and document sessionfold writes as is", async () => {
    const storage = new MemoryStorage();
    const session = await new Sessions({ storage, defaults: { summarizer: new ExtractiveSummarizer() } }).create(REF);
    for (let i = 0; i < 6; i++) {
      await session.append({ role: "user", parts: [{ type: "text", text: `question ${i}` }] });
      await session.append({
        role: "assistant",
        status: "completed",
        parts: [{ type: "reasoning", text: "r" }, { type: "tool", tool_call_id: `c${i}`, tool_name: "ls", state: "output-available", input: {}, output: "x" }, {
          type: "text",
          text: `answer ${i}`,
        }],
        usage: { input_tokens: 5, output_tokens: 2 },
        provider: PROVIDER,
      });
    }
    await session.compact();
    const lines = [
      ...(await Promise.all((await session.segments()).map(async (range) => (await storage.read(session.paths.segment(range)))!))),
      (await storage.read(session.paths.active))!,
    ].flatMap((bytes) => new TextDecoder().decode(bytes).split("\n").filter(Boolean).map((line) => JSON.parse(line)));
    expect(lines.filter((line) => line.record_type === "summary")).toHaveLength(1);
    for (const line of lines) {
      const check = line.record_type === "summary" ? summaryCheck : messageCheck;
      expect(check.safeParse(line).data).toBe(line);
    }
    const meta = JSON.parse(new TextDecoder().decode(await storage.read(session.paths.meta)));
    // meta.json's writers put some fields out of the schema's order: the check copies it in that order, as zod does.
    expect(JSON.stringify(metaCheck.safeParse(meta).data)).toBe(JSON.stringify(SessionMeta.parse(meta)));
  });

  it("salvages a meta.json field on its own as the schema's field would", () => {
    for (const [key, field] of Object.entries(SessionMeta.shape)) {
      for (const value of [...WRONG, (META as Record<string, unknown>)[key]]) {
        expect([key, value, metaFieldValid(key, value)]).toEqual([key, value, field.safeParse(value).success]);
      }
    }
    expect(metaFieldValid("newest_segment", { start: 1 })).toBe(true);
  });
});

describe("toMessageRecord", () => {
  const clock = () => Date.parse(TIME);
  /** The record as zod makes it of the candidate toMessageRecord built before it checked in the schema's order. */
  const byZod = (message: NewMessage): unknown =>
    MessageRecord.parse({
      ...message,
      record_type: "message",
      sequence: 1,
      message_id: message.message_id ?? "unused",
      created_at: message.created_at ?? TIME,
      ...(message.role === "assistant" && message.status === undefined ? { status: "completed" } : {}),
      parts: (message.parts ?? []).map((part, i) => ({ ...part, sequence: part.sequence ?? i + 1 })),
    });
  const hostMessages: NewMessage[] = [
    { role: "user", parts: [{ type: "text", text: "hi" }], message_id: "m1" },
    {
      role: "assistant",
      message_id: "m2",
      created_at: TIME,
      parts: [{ type: "reasoning", text: "r" }, { type: "tool", tool_call_id: "c", tool_name: "ls", state: "output-available", input: {}, output: "x" }, {
        sequence: 9,
        type: "text",
        text: "t",
      }],
      usage: { input_tokens: 1200, output_tokens: 60, total_tokens: 1260 },
      provider: PROVIDER,
      ai_sdk: { kept: true },
    },
  ];
  const otherMessages: NewMessage[] = [
    // Out of the schema's order inside (zod reorders), unknown fields before the known ones, a stopped status.
    { ai_sdk: 1, parts: [{ text: "t", type: "text" }], role: "assistant", status: "stopped", usage: { output_tokens: 1, input_tokens: 2 }, message_id: "m3" },
    JSON.parse('{"role":"user","message_id":"m4","parts":[{"type":"text","text":"p","__proto__":{"x":1}}],"__proto__":{"y":2}}') as NewMessage,
    { role: "user", message_id: "m5", parts: [{ type: "text", text: "u", sequence: undefined }], status: undefined },
  ];

  it("takes what a host appends past zod, as zod would return it, field order included", () => {
    const safeParse = vi.spyOn(MessageRecord, "safeParse");
    try {
      for (const message of hostMessages) {
        expect(JSON.stringify(toMessageRecord(message, clock))).toBe(JSON.stringify(byZod(message)));
      }
      expect(safeParse).not.toHaveBeenCalled();
    } finally {
      safeParse.mockRestore();
    }
  });

  it("takes a host's fields in any order, `__proto__` and `undefined` fields, as zod returns them", () => {
    for (const message of otherMessages) {
      const record = toMessageRecord(message, clock);
      expect(JSON.stringify(record)).toBe(JSON.stringify(byZod(message)));
      expect(Object.getPrototypeOf(record)).toBe(Object.prototype);
    }
    expect(() => toMessageRecord({ role: "user", parts: [{ type: "text", text: 1 as unknown as string }] }, clock)).toThrow(/parts\.0\.text/);
  });
});

describe("the hand-written timestamp check agrees with the Timestamp schema's pattern", () => {
  const pattern = Timestamp._zod.pattern;
  const agrees = (text: string) => expect([text, isTimestampText(text)]).toEqual([text, pattern.test(text)]);

  it("on edge cases of the date, the time, the fraction and the offset", () => {
    const cases = [
      TIME,
      "2026-12-02T13:00:00Z",
      "2026-12-02T13:00:00+02:00",
      "2026-12-02T13:00:00.5-23:59",
      "2024-02-29T00:00:00Z",
      "2000-02-29T00:00:00Z",
      "1900-02-29T00:00:00Z",
      "0000-02-29T00:00:00Z",
      "2026-02-29T00:00:00Z",
      "2026-02-28T23:59:59Z",
      "2026-04-31T00:00:00Z",
      "2026-12-31T00:00:00Z",
      "2026-13-01T00:00:00Z",
      "2026-00-01T00:00:00Z",
      "2026-01-00T00:00:00Z",
      "2026-01-01T24:00:00Z",
      "2026-01-01T00:60:00Z",
      "2026-01-01T00:00:60Z",
      "2026-01-01T00:00:00.Z",
      "2026-01-01T00:00:00.123456789Z",
      "2026-01-01T00:00:00z",
      "2026-01-01t00:00:00Z",
      "2026-01-01 00:00:00Z",
      "2026-01-01T00:00:00",
      "2026-01-01T00:00:00+24:00",
      "2026-01-01T00:00:00+02:60",
      "2026-01-01T00:00:00+0200",
      "2026-01-01T00:00:00+02:00Z",
      "2026-01-01T00:00:00ZZ",
      "+2026-01-01T00:00:00Z",
      "2026-1-01T00:00:00Z",
      "２026-01-01T00:00:00Z",
      "",
    ];
    for (const text of cases) agrees(text);
  });

  it("on random timestamps and mutations of them", () => {
    // Fields mostly in range, sometimes just past it, so that both answers are common.
    const field = (width: number, max: number) => fc.integer({ min: 0, max: max + 1 }).map((n) => String(n).padStart(width, "0"));
    const fraction = fc.option(fc.integer({ min: 1, max: 4 }).chain((n) => fc.string({ unit: fc.constantFrom(..."0123456789"), minLength: n, maxLength: n })));
    const zone = fc.oneof(fc.constant("Z"), fc.tuple(fc.constantFrom("+", "-"), field(2, 23), field(2, 59)).map(([sign, h, m]) => `${sign}${h}:${m}`));
    const stamp = fc.tuple(field(4, 2400), field(2, 12), field(2, 31), field(2, 23), field(2, 59), field(2, 59), fraction, zone)
      .map(([y, mo, d, h, mi, s, f, z]) => `${y}-${mo}-${d}T${h}:${mi}:${s}${f === null ? "" : `.${f}`}${z}`);
    const mutated = fc.tuple(stamp, fc.nat(30), fc.string({ maxLength: 2 })).map(([text, at, insert]) => text.slice(0, at) + insert + text.slice(at + 1));
    let accepted = 0;
    fc.assert(
      fc.property(fc.oneof(stamp, mutated, fc.string()), (text) => {
        const expected = pattern.test(text);
        if (expected) accepted += 1;
        return isTimestampText(text) === expected;
      }),
      { numRuns: 20_000 },
    );
    expect(accepted).toBeGreaterThan(1_000);
  });
});
