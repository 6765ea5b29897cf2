import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeJsonl, encodeJsonl, type JsonlDecodeOptions, JsonlDecoder, type JsonlDecodeResult } from "../../core/mod.ts";
import { ACTIVE, concatBytes, jsonLine, lineEnds, messages, SCHEMAS, splitAt, utf8, viaJson } from "./support.ts";

const options: JsonlDecodeOptions = { file: ACTIVE, schemas: SCHEMAS };
const decode = (bytes: Uint8Array, extra: Partial<JsonlDecodeOptions> = {}): JsonlDecodeResult => decodeJsonl(bytes, { ...options, ...extra });

describe("property: generated records round-trip through encodeJsonl / decodeJsonl", () => {
  it("decodes exactly the records written, at lines 1..n, with no diagnostics", () => {
    fc.assert(
      fc.property(messages({ maxLength: 8 }), (records) => {
        const bytes = encodeJsonl(records);
        const result = decode(bytes);
        expect(result.diagnostics).toEqual([]);
        expect(result.records.map((r) => r.record)).toEqual(records);
        expect(result.records.map((r) => r.line)).toEqual(records.map((_, i) => i + 1));
        expect(result.validBytes).toBe(bytes.length);
        expect(result.missingNewline).toBe(false);
        // read-modify-write: re-encoding what was read gives the same records back
        expect(decode(encodeJsonl(result.records.map((r) => r.record))).records).toEqual(result.records);
      }),
      { numRuns: 300 },
    );
  });
});

describe("property (a): every truncation decodes to exactly its complete records", () => {
  /** Records and a cut offset, biased towards line ends (±1) where the interesting cases are. */
  const truncated = messages({ maxLength: 6 }).chain((records) => {
    const ends = lineEnds(records);
    const size = ends.at(-1)!;
    const nearEnd = fc
      .tuple(fc.constantFrom(0, ...ends), fc.integer({ min: -2, max: 1 }))
      .map(([end, delta]) => Math.min(size, Math.max(0, end + delta)));
    return fc.tuple(fc.constant(records), fc.oneof(fc.integer({ min: 0, max: size }), nearEnd));
  });

  it("complete records kept, at most one non-fatal truncated_tail, validBytes at the torn line's start", () => {
    fc.assert(
      fc.property(truncated, ([records, cut]) => {
        const bytes = encodeJsonl(records).subarray(0, cut);
        const ends = lineEnds(records);
        const complete = ends.filter((end) => end <= cut).length;
        const cutBeforeNewline = ends.indexOf(cut + 1); // the cut falls exactly before this record's \n
        const expected = cutBeforeNewline === -1 ? records.slice(0, complete) : records.slice(0, complete + 1);
        const result = decode(bytes);

        expect(result.records.map((r) => r.record)).toEqual(expected);
        expect(result.records.map((r) => r.line)).toEqual(expected.map((_, i) => i + 1));
        expect(result.fatal).toBe(false);
        expect(result.diagnostics.every((d) => !d.fatal)).toBe(true);
        expect(result.totalBytes).toBe(cut);

        const startOfPartial = complete === 0 ? 0 : ends[complete - 1]!;
        if (cutBeforeNewline !== -1) {
          expect(result.diagnostics).toEqual([]);
          expect(result.missingNewline).toBe(true);
          expect(result.validBytes).toBe(cut);
        } else if (cut === startOfPartial) {
          expect(result.diagnostics).toEqual([]);
          expect(result.missingNewline).toBe(false);
          expect(result.validBytes).toBe(cut);
        } else {
          expect(result.diagnostics).toHaveLength(1);
          const [d] = result.diagnostics;
          expect(d).toMatchObject({ code: "truncated_tail", line: complete + 1, file: ACTIVE, fatal: false });
          expect(d!.message).toContain(`${ACTIVE}:${complete + 1}`);
          expect(result.missingNewline).toBe(false);
          expect(result.validBytes).toBe(startOfPartial);
        }
      }),
      { numRuns: 500 },
    );
  });

  it("the same truncation fed in chunks gives the same result", () => {
    fc.assert(
      fc.property(truncated, fc.array(fc.nat(), { maxLength: 6 }), ([records, cut], points) => {
        const bytes = encodeJsonl(records).subarray(0, cut);
        const decoder = new JsonlDecoder(options).collectAll();
        for (const chunk of splitAt(bytes, points.map((p) => p % (bytes.length + 1)))) decoder.push(chunk);
        expect(decoder.finish()).toEqual(decode(bytes));
      }),
      { numRuns: 200 },
    );
  });
});

describe("property (b): a corrupted complete line is reported at exactly that line", () => {
  /** Not JSON: any text plus a raw control character, which JSON allows neither inside nor outside strings. */
  const notJson = fc.oneof(
    fc.string({ unit: "binary", maxLength: 30 }).map((s) => utf8(`${s.replaceAll("\n", "")}\u0001`)),
    fc.constant(new Uint8Array(0)), // an empty line
    // bytes that are never valid UTF-8 (0xff) among other high bytes, inside an otherwise valid record
    fc
      .tuple(fc.uint8Array({ maxLength: 8 }), fc.uint8Array({ maxLength: 8 }))
      .map(([a, b]) => concatBytes(utf8('{"record_type":"message","a":"'), a.map((x) => x | 0x80), new Uint8Array([0xff]), b.map((x) => x | 0x80), utf8('"}'))),
  );

  /** Valid JSON objects that MessageRecord rejects. */
  const breakRecord: fc.Arbitrary<(record: Record<string, unknown>) => unknown> = fc.constantFrom(
    (r) => ({ ...r, sequence: 0 }),
    (r) => ({ ...r, sequence: -3 }),
    (r) => ({ ...r, sequence: 1.5 }),
    (r) => ({ ...r, sequence: String(r.sequence) }),
    (r) => {
      const { message_id: _, ...rest } = r;
      return rest;
    },
    (r) => {
      const { record_type: _, ...rest } = r;
      return rest;
    },
    (r) => ({ ...r, role: "system" }),
    (r) => ({ ...r, created_at: "not a time" }),
    (r) => ({ ...r, parts: "text" }),
    (r) => ({ ...r, parts: [{ sequence: 1, type: "video" }] }),
    (r) => ({ ...r, parts: [{ sequence: 1, type: "text", text: "a" }, { sequence: 1, type: "text", text: "b" }] }),
    (r) => ({ ...r, role: "assistant", status: "streaming" }),
    (r) => ({ ...r, usage: { input_tokens: -1, output_tokens: 0 } }),
  );

  const corrupted = messages({ minLength: 2, maxLength: 6 }).chain((records) =>
    fc.tuple(
      fc.constant(records),
      fc.integer({ min: 0, max: records.length - 2 }), // not the last line
      fc.oneof(
        notJson.map((bytes) => ({ code: "invalid_json" as const, bytes })),
        breakRecord.map((fn) => ({ code: "invalid_record" as const, bytes: "" as string | Uint8Array, fn })),
        // a line torn by a crash and then followed by further appends is corruption too
        fc.nat().map((n) => ({ code: "invalid_json" as const, bytes: "" as string | Uint8Array, tornAt: n })),
      ),
    )
  );

  it("fatal, with invalid_json / invalid_record, and every other record still decoded", () => {
    fc.assert(
      fc.property(corrupted, ([records, index, corruption]) => {
        let bad: Uint8Array;
        if ("fn" in corruption) bad = utf8(JSON.stringify(corruption.fn(records[index]!)));
        else if ("tornAt" in corruption) {
          const line = JSON.stringify(records[index]!);
          bad = utf8(line).subarray(0, corruption.tornAt % utf8(line).length);
        } else bad = corruption.bytes as Uint8Array;

        const lines = records.map((r) => utf8(jsonLine(r)));
        lines[index] = concatBytes(bad, utf8("\n"));
        const bytes = concatBytes(...lines);
        const result = decode(bytes);

        expect(result.diagnostics).toHaveLength(1);
        const [d] = result.diagnostics;
        expect(d).toMatchObject({ code: corruption.code, line: index + 1, file: ACTIVE, fatal: true });
        expect(d!.message).toContain(`${ACTIVE}:${index + 1}:`);
        expect(result.fatal).toBe(true);
        const others = records.map((record, i) => ({ record, line: i + 1 })).filter((_, i) => i !== index);
        expect(result.records).toEqual(others);
        expect(result.validBytes).toBe(bytes.length);
      }),
      { numRuns: 400 },
    );
  });
});

describe("property: JsonlDecoder.push/finish equals decodeJsonl for every chunking", () => {
  /** Files mixing valid records, corrupt lines, unknown records, a torn or unterminated tail. */
  const file = fc
    .tuple(
      messages({ minLength: 0, maxLength: 5 }),
      fc.array(
        fc.tuple(
          fc.nat(),
          fc.constantFrom("{bad json", "", '{"record_type":"future","x":"é😀"}', "[1]", '{"record_type":"message","sequence":0}', "\r"),
        ),
        { maxLength: 3 },
      ),
      fc.oneof(
        fc.constant(""),
        fc.constant('{"record_type":"message","text":"😀'),
        fc.string({ unit: "binary", maxLength: 12 }).map((s) => s.replaceAll("\n", "")),
      ),
      fc.boolean(),
    )
    .map(([records, inserts, tail, dropLastNewline]) => {
      const lines = records.map((r) => jsonLine(r));
      for (const [at, line] of inserts) lines.splice(at % (lines.length + 1), 0, `${line}\n`);
      let text = lines.join("") + tail;
      if (tail === "" && dropLastNewline && text.endsWith("\n")) text = text.slice(0, -1);
      return utf8(text);
    });

  const chunked = file.chain((bytes) => fc.tuple(fc.constant(bytes), fc.array(fc.integer({ min: 0, max: bytes.length }), { maxLength: 10 }), fc.boolean()));

  it("gives exactly the same records and diagnostics", () => {
    fc.assert(
      fc.property(chunked, ([bytes, points, recoverable]) => {
        const extra = { tornTailRecoverable: recoverable };
        const whole = decode(bytes, extra);

        const collecting = new JsonlDecoder({ ...options, ...extra }).collectAll();
        const chunks = splitAt(bytes, points);
        for (const chunk of chunks) collecting.push(chunk);
        expect(collecting.finish()).toEqual(whole);

        // streaming use: what push returns plus finish's tail is the same record list
        const streaming = new JsonlDecoder({ ...options, ...extra });
        const streamed = chunks.flatMap((chunk) => streaming.push(chunk));
        const end = streaming.finish();
        expect([...streamed, ...end.records]).toEqual(whole.records);
        expect(end.diagnostics).toEqual(whole.diagnostics);
        expect({ ...end, records: whole.records }).toEqual(whole);
      }),
      { numRuns: 400 },
    );
  });
});

describe("property: viaJson is the identity on generated records (sanity of the generators)", () => {
  it("generated records are already JSON-normal", () => {
    fc.assert(
      fc.property(messages(), (records) => {
        expect(viaJson(records)).toEqual(records);
      }),
      { numRuns: 100 },
    );
  });
});
