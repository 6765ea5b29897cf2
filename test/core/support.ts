/**
 * Shared fixtures and fast-check arbitraries for the core tests (jsonl, schema, layout).
 * Not a test file itself.
 */
import fc from "fast-check";
import { expect } from "vitest";
import { type Diagnostic, MessageRecord, type RecordSchemas, SummaryRecord } from "../../core/mod.ts";
import { concatBytes as joinBytes } from "../../core/internal.ts";

export const TS = "2026-12-02T13:00:00.000Z";
export const ACTIVE = "messages/active.jsonl";
export const SCHEMAS: RecordSchemas = { message: MessageRecord, summary: SummaryRecord };

const encoder = new TextEncoder();
export const utf8 = (text: string): Uint8Array => encoder.encode(text);
export const byteLength = (text: string): number => encoder.encode(text).length;

/** A minimal valid user message. */
export function message(sequence: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    record_type: "message",
    sequence,
    message_id: `m_${sequence}`,
    role: "user",
    created_at: TS,
    parts: [{ sequence: 1, type: "text", text: `hello ${sequence}` }],
    ...extra,
  };
}

/** A valid summary footer. */
export function summary(through: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    record_type: "summary",
    session_id: "s1",
    summary_id: `sum_${through}`,
    through_sequence: through,
    text: `summary of 1..${through}`,
    created_at: TS,
    ...extra,
  };
}

export const jsonLine = (record: unknown): string => `${JSON.stringify(record)}\n`;

/** What a value looks like after JSON.stringify → JSON.parse (drops -0, undefined…). */
export const viaJson = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

/** Asserts one diagnostic's code, 1-based line, file, fatal flag and `FILE:LINE` in the message. */
export function expectDiagnostic(
  diagnostic: Diagnostic | undefined,
  expected: { code: Diagnostic["code"]; line: number; fatal: boolean; file?: string },
): void {
  const file = expected.file ?? ACTIVE;
  expect(diagnostic).toBeDefined();
  expect(diagnostic!.code).toBe(expected.code);
  expect(diagnostic!.line).toBe(expected.line);
  expect(diagnostic!.file).toBe(file);
  expect(diagnostic!.fatal).toBe(expected.fatal);
  expect(diagnostic!.message).toContain(`${file}:${expected.line}`);
}

// ---------------------------------------------------------------------------
// Arbitraries
// ---------------------------------------------------------------------------

/** Text with anything JSON must escape: unicode (astral too), newlines, CR, U+2028, quotes, controls. */
export const text: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.string({ unit: "grapheme", maxLength: 20 }),
  fc.string({
    unit: fc.constantFrom("a", "é", "中", "😀", "\n", "\r\n", "\u2028", "\u2029", '"', "\\", "\u0000", "\t", "}", "{"),
    maxLength: 30,
  }),
);

const nonEmpty = (arb: fc.Arbitrary<string>): fc.Arbitrary<string> => arb.filter((s) => s.length > 0);
const id = nonEmpty(fc.string({ unit: "binary", maxLength: 16 }));
const json = fc.jsonValue({ maxDepth: 3 });

/** Unknown optional fields, as a future writer might add them. */
export const extras: fc.Arbitrary<Record<string, unknown>> = fc.dictionary(
  fc.string({ maxLength: 8 }).map((k) => `x_${k}`),
  json,
  { maxKeys: 2 },
);

type Part = Record<string, unknown>;
const partBody: fc.Arbitrary<Part> = fc.oneof(
  fc.record({ type: fc.constant("text"), text }),
  fc.record({ type: fc.constant("reasoning"), text }),
  fc.record({ type: fc.constant("reasoning-summary"), text }),
  fc.record(
    {
      type: fc.constant("tool"),
      tool_call_id: id,
      tool_name: id,
      state: fc.constantFrom("input-available", "output-available", "output-error"),
      input: json,
      output: json,
      error: text,
    },
    { requiredKeys: ["type", "tool_call_id", "tool_name", "state", "input"] },
  ),
  fc.oneof(
    fc.record(
      { type: fc.constant("file"), media_type: id, name: text, data: fc.base64String({ maxLength: 40 }) },
      { requiredKeys: ["type", "media_type", "data"] },
    ),
    fc.record(
      { type: fc.constant("file"), media_type: id, name: text, url: fc.webUrl() },
      { requiredKeys: ["type", "media_type", "url"] },
    ),
  ),
  fc.record({ type: fc.constant("provider-context"), provider: id, api: id, model: id, data: json }),
);

const parts: fc.Arbitrary<Part[]> = fc
  .tuple(fc.array(fc.tuple(partBody, extras), { maxLength: 4 }), fc.boolean())
  .map(([bodies, shuffled]) => {
    const sequences = bodies.map((_, i) => i + 1);
    if (shuffled) sequences.reverse(); // unique, but not necessarily ascending in file order
    return bodies.map(([body, extra], i) => ({ ...extra, sequence: sequences[i]!, ...body }));
  });

const usage = fc.record(
  {
    input_tokens: fc.nat(),
    output_tokens: fc.nat(),
    total_tokens: fc.nat(),
    cost_usd_micros: fc.nat(),
  },
  { requiredKeys: ["input_tokens", "output_tokens"] },
);

const provider = fc.record({ provider: id, api: id, model: id });

/** A valid message record (without its sequence), JSON-normalized. */
const messageBody = fc
  .record(
    {
      message_id: id,
      role: fc.constantFrom("user", "assistant"),
      created_at: fc.constantFrom(TS, "2026-12-02T13:00:00Z", "2026-12-02T15:00:00.5+02:00"),
      status: fc.constantFrom("completed", "stopped", "failed"),
      parts,
      usage,
      provider,
      extra: extras,
    },
    { requiredKeys: ["message_id", "role", "created_at", "parts", "extra"] },
  )
  .map(({ extra, ...rest }) => ({ ...extra, record_type: "message", ...rest }));

/** 1..max valid message records with contiguous sequences from 1, JSON-normalized. */
export function messages(options: { minLength?: number; maxLength?: number } = {}): fc.Arbitrary<Record<string, unknown>[]> {
  return fc
    .array(messageBody, { minLength: options.minLength ?? 1, maxLength: options.maxLength ?? 6 })
    .map((bodies) => bodies.map((body, i) => viaJson({ ...body, sequence: i + 1 })));
}

/** Byte offsets just after each line's `\n` in `encodeJsonl(records)`. */
export function lineEnds(records: readonly unknown[]): number[] {
  let offset = 0;
  return records.map((record) => (offset += byteLength(jsonLine(record))));
}

/** Splits bytes at the given (unsorted, possibly duplicate) offsets. */
export function splitAt(bytes: Uint8Array, points: readonly number[]): Uint8Array[] {
  const cuts = [...new Set(points.map((p) => Math.min(Math.max(p, 0), bytes.length)))].sort((a, b) => a - b);
  const chunks: Uint8Array[] = [];
  let last = 0;
  for (const cut of cuts) {
    chunks.push(bytes.subarray(last, cut));
    last = cut;
  }
  chunks.push(bytes.subarray(last));
  return chunks;
}

/** The core's `concatBytes` over an argument list, as the tests write it. */
export function concatBytes(...parts: Uint8Array[]): Uint8Array {
  return joinBytes(parts);
}
