import { describe, expect, it } from "vitest";
import {
  decodeJsonl,
  encodeJsonl,
  encodeJsonlLine,
  formatLocation,
  InternalError,
  type JsonlDecodeOptions,
  JsonlDecoder,
  type JsonlDecodeResult,
  MessageRecord,
  SummaryRecord,
} from "../../core/mod.ts";
import { ACTIVE, byteLength, concatBytes, expectDiagnostic, jsonLine, message, SCHEMAS, splitAt, summary, utf8 } from "./support.ts";

function decode(input: string | Uint8Array, options: Partial<JsonlDecodeOptions> = {}): JsonlDecodeResult {
  return decodeJsonl(typeof input === "string" ? utf8(input) : input, { file: ACTIVE, schemas: SCHEMAS, ...options });
}

/** The same bytes fed to a JsonlDecoder in the given chunks. */
function decodeChunks(chunks: Uint8Array[], options: Partial<JsonlDecodeOptions> = {}): JsonlDecodeResult {
  const decoder = new JsonlDecoder({ file: ACTIVE, schemas: SCHEMAS, ...options }).collectAll();
  for (const chunk of chunks) decoder.push(chunk);
  return decoder.finish();
}

const sequences = (result: JsonlDecodeResult) => result.records.map(({ record, line }) => ({ line, sequence: (record as { sequence?: number }).sequence }));

describe("decodeJsonl: clean files", () => {
  it("decodes every record with its 1-based line and no diagnostics", () => {
    const text = jsonLine(message(1)) + jsonLine(message(2)) + jsonLine(summary(2));
    const result = decode(text);
    expect(result.records.map((r) => r.line)).toEqual([1, 2, 3]);
    expect(result.records.map((r) => r.record)).toEqual([message(1), message(2), summary(2)]);
    expect(result.diagnostics).toEqual([]);
    expect(result.fatal).toBe(false);
    expect(result.missingNewline).toBe(false);
    expect(result.validBytes).toBe(byteLength(text));
    expect(result.totalBytes).toBe(byteLength(text));
  });

  it("an empty file has no records and no diagnostics", () => {
    const result = decode("");
    expect(result).toMatchObject({ records: [], diagnostics: [], validBytes: 0, totalBytes: 0, missingNewline: false, fatal: false });
  });

  it("keeps unknown fields of a record (loose schemas)", () => {
    const record = message(1, { x_future: { nested: [1, "two"] }, parts: [{ sequence: 1, type: "text", text: "t", x_part: true }] });
    expect(decode(jsonLine(record)).records[0]!.record).toEqual(record);
  });
});

describe("decodeJsonl: truncated_tail (recovery rule 1)", () => {
  it("a torn final line is not fatal, records before it are kept, validBytes is where it starts", () => {
    const head = jsonLine(message(1)) + jsonLine(message(2));
    const torn = jsonLine(message(3)).slice(0, 25);
    const result = decode(head + torn);
    expect(sequences(result)).toEqual([
      { line: 1, sequence: 1 },
      { line: 2, sequence: 2 },
    ]);
    expect(result.diagnostics).toHaveLength(1);
    expectDiagnostic(result.diagnostics[0], { code: "truncated_tail", line: 3, fatal: false });
    expect(result.fatal).toBe(false);
    expect(result.missingNewline).toBe(false);
    expect(result.validBytes).toBe(byteLength(head));
    expect(result.totalBytes).toBe(byteLength(head + torn));
  });

  it("a torn first (and only) line: validBytes 0", () => {
    const result = decode('{"record_type":"mes');
    expect(result.records).toEqual([]);
    expectDiagnostic(result.diagnostics[0], { code: "truncated_tail", line: 1, fatal: false });
    expect(result.validBytes).toBe(0);
    expect(result.totalBytes).toBe(19);
  });

  it("a tail cut inside a multibyte character is a torn tail, not a crash", () => {
    const line = jsonLine(message(2, { parts: [{ sequence: 1, type: "text", text: "😀😀" }] }));
    const bytes = utf8(line);
    const cut = bytes.indexOf(0xf0) + 2; // two bytes into the 4-byte emoji
    const head = utf8(jsonLine(message(1)));
    const result = decode(concatBytes(head, bytes.subarray(0, cut)));
    expect(sequences(result)).toEqual([{ line: 1, sequence: 1 }]);
    expectDiagnostic(result.diagnostics[0], { code: "truncated_tail", line: 2, fatal: false });
    expect(result.validBytes).toBe(head.length);
  });

  it("an unterminated final line that is JSON but not a valid record is still an interrupted append", () => {
    const result = decode(jsonLine(message(1)) + JSON.stringify(message(0)));
    expect(result.records).toHaveLength(1);
    expectDiagnostic(result.diagnostics[0], { code: "truncated_tail", line: 2, fatal: false });
    expect(result.diagnostics[0]!.message).toContain("sequence");
  });

  it("a valid final line without newline is kept with missingNewline", () => {
    const head = jsonLine(message(1));
    const last = JSON.stringify(message(2));
    const result = decode(head + last);
    expect(sequences(result)).toEqual([
      { line: 1, sequence: 1 },
      { line: 2, sequence: 2 },
    ]);
    expect(result.diagnostics).toEqual([]);
    expect(result.missingNewline).toBe(true);
    expect(result.fatal).toBe(false);
    expect(result.validBytes).toBe(byteLength(head + last));
    expect(result.totalBytes).toBe(byteLength(head + last));
  });

  it("tornTailRecoverable: false makes a torn tail fatal corruption at its line", () => {
    const result = decode(jsonLine(message(1)) + '{"record_type":"summ', { tornTailRecoverable: false, file: "messages/segments/x.jsonl" });
    expect(result.records).toHaveLength(1);
    expect(result.diagnostics).toHaveLength(1);
    expectDiagnostic(result.diagnostics[0], { code: "invalid_json", line: 2, fatal: true, file: "messages/segments/x.jsonl" });
    expect(result.fatal).toBe(true);
    expect(result.validBytes).toBe(byteLength(jsonLine(message(1))));
  });

  it("tornTailRecoverable: false reports a schema-invalid unterminated tail as invalid_record", () => {
    const result = decode(jsonLine(message(1)) + JSON.stringify(message(0)), { tornTailRecoverable: false });
    expectDiagnostic(result.diagnostics[0], { code: "invalid_record", line: 2, fatal: true });
  });

  it("tornTailRecoverable: false still keeps a valid unterminated final line", () => {
    const result = decode(jsonLine(message(1)) + JSON.stringify(message(2)), { tornTailRecoverable: false });
    expect(result.records).toHaveLength(2);
    expect(result.diagnostics).toEqual([]);
    expect(result.missingNewline).toBe(true);
  });
});

describe("decodeJsonl: invalid_json (recovery rule 2)", () => {
  it("invalid JSON in the middle is fatal at its line; records after it are still decoded", () => {
    const text = jsonLine(message(1)) + "{not json\n" + jsonLine(message(2)) + jsonLine(message(3));
    const result = decode(text);
    expect(sequences(result)).toEqual([
      { line: 1, sequence: 1 },
      { line: 3, sequence: 2 },
      { line: 4, sequence: 3 },
    ]);
    expect(result.diagnostics).toHaveLength(1);
    expectDiagnostic(result.diagnostics[0], { code: "invalid_json", line: 2, fatal: true });
    expect(result.diagnostics[0]!.message).toContain("invalid JSON");
    expect(result.fatal).toBe(true);
  });

  it("reports every corrupt line, in order", () => {
    const text = "garbage\n" + jsonLine(message(1)) + "{\n" + jsonLine(message(2));
    const result = decode(text);
    expect(result.diagnostics.map((d) => [d.code, d.line, d.fatal])).toEqual([
      ["invalid_json", 1, true],
      ["invalid_json", 3, true],
    ]);
    expect(sequences(result)).toEqual([
      { line: 2, sequence: 1 },
      { line: 4, sequence: 2 },
    ]);
  });

  it.each([
    ["an array", "[1,2,3]"],
    ["a string", '"message"'],
    ["a number", "42"],
    ["null", "null"],
    ["true", "true"],
  ])("a JSON non-object line (%s) is invalid_json at its line", (_, line) => {
    const result = decode(jsonLine(message(1)) + line + "\n" + jsonLine(message(2)));
    expect(result.diagnostics).toHaveLength(1);
    expectDiagnostic(result.diagnostics[0], { code: "invalid_json", line: 2, fatal: true });
    expect(result.diagnostics[0]!.message).toContain("expected a JSON object");
    expect(result.records).toHaveLength(2);
  });

  it("an empty line in the middle is invalid_json", () => {
    const result = decode(jsonLine(message(1)) + "\n" + jsonLine(message(2)));
    expectDiagnostic(result.diagnostics[0], { code: "invalid_json", line: 2, fatal: true });
    expect(sequences(result)).toEqual([
      { line: 1, sequence: 1 },
      { line: 3, sequence: 2 },
    ]);
  });

  it("an empty line at the end (a file ending in \\n\\n) is a complete invalid line, hence fatal", () => {
    const result = decode(jsonLine(message(1)) + "\n");
    expectDiagnostic(result.diagnostics[0], { code: "invalid_json", line: 2, fatal: true });
  });

  it("a whitespace-only line is invalid_json", () => {
    const result = decode(jsonLine(message(1)) + "   \t\n" + jsonLine(message(2)));
    expectDiagnostic(result.diagnostics[0], { code: "invalid_json", line: 2, fatal: true });
  });

  it("invalid UTF-8 bytes in a line are invalid_json at that line", () => {
    const good = jsonLine(message(1));
    const bad = concatBytes(utf8('{"record_type":"message","x":"'), new Uint8Array([0xff, 0xc0, 0xaf]), utf8('"}\n'));
    const result = decode(concatBytes(utf8(good), bad, utf8(jsonLine(message(2)))));
    expect(result.diagnostics).toHaveLength(1);
    expectDiagnostic(result.diagnostics[0], { code: "invalid_json", line: 2, fatal: true });
    expect(result.diagnostics[0]!.message).toContain("UTF-8");
    expect(sequences(result)).toEqual([
      { line: 1, sequence: 1 },
      { line: 3, sequence: 2 },
    ]);
  });

  it("a chunk decoded whole (non-ASCII lines, a byte order mark at a line's start) reads as its lines decoded one by one", () => {
    const text = [
      `\uFEFF${jsonLine({ ...message(1), x: "é😀" })}`, // the file's first line: a decoder drops the mark
      `\uFEFF${jsonLine(message(2))}`, // after a \n: each line decoded on its own dropped it too
      jsonLine({ ...message(3), x: "naïve \u2028 ünïcödé" }),
      "{bad json é\n",
      jsonLine(message(4)),
    ].join("");
    const bytes = concatBytes(utf8(text), utf8('{"record_type":"message","x":"torn é'));
    const oneByOne = decodeChunks(splitAt(bytes, Array.from({ length: bytes.length }, (_, i) => i)), { keepLineBytes: true });
    const whole = decode(bytes, { keepLineBytes: true });
    expect(whole).toEqual(oneByOne);
    expect(sequences(whole)).toEqual([1, 2, 3, 4].map((sequence, i) => ({ line: i < 3 ? i + 1 : 5, sequence })));
    expect(whole.diagnostics.map((d) => [d.line, d.code])).toEqual([[4, "invalid_json"], [6, "truncated_tail"]]);
    // An invalid byte anywhere: every line is decoded on its own, and only that line is refused.
    const invalid = concatBytes(utf8(text), new Uint8Array([0xff, 0x0a]), utf8(jsonLine(message(5))));
    expect(decode(invalid)).toEqual(decodeChunks(splitAt(invalid, Array.from({ length: invalid.length }, (_, i) => i))));
  });

  it("UTF-8-encoded surrogates (CESU) are rejected as invalid UTF-8", () => {
    const bad = concatBytes(utf8('{"record_type":"message","x":"'), new Uint8Array([0xed, 0xa0, 0x80]), utf8('"}\n'));
    const result = decode(bad);
    expectDiagnostic(result.diagnostics[0], { code: "invalid_json", line: 1, fatal: true });
  });
});

describe("decodeJsonl: invalid_record", () => {
  const cases: [string, string, string][] = [
    ["a record missing record_type", JSON.stringify({ sequence: 1 }), "record_type"],
    ["a non-string record_type", JSON.stringify({ ...message(2), record_type: 7 }), "record_type"],
    ["sequence 0", JSON.stringify(message(0)), "sequence"],
    ["a fractional sequence", JSON.stringify(message(1.5)), "sequence"],
    [
      "duplicate part sequences",
      JSON.stringify(message(2, { parts: [{ sequence: 1, type: "text", text: "a" }, { sequence: 1, type: "text", text: "b" }] })),
      "part sequences must be unique",
    ],
    ["an unknown part type", JSON.stringify(message(2, { parts: [{ sequence: 1, type: "video", url: "x" }] })), "parts.0"],
    ["status streaming in a jsonl message", JSON.stringify(message(2, { role: "assistant", status: "streaming" })), "streaming"],
    ["a role other than user/assistant", JSON.stringify(message(2, { role: "system" })), "role"],
    ["a garbage timestamp", JSON.stringify(message(2, { created_at: "yesterday" })), "created_at"],
    ["a summary with empty text", JSON.stringify(summary(2, { text: "" })), "text"],
  ];

  it.each(cases)("%s is invalid_record at its line, fatal, with the reason", (_, line, reason) => {
    const result = decode(jsonLine(message(1)) + line + "\n" + jsonLine(message(3)));
    expect(result.diagnostics).toHaveLength(1);
    expectDiagnostic(result.diagnostics[0], { code: "invalid_record", line: 2, fatal: true });
    expect(result.diagnostics[0]!.message).toContain(reason);
    expect(result.fatal).toBe(true);
    expect(sequences(result)).toEqual([
      { line: 1, sequence: 1 },
      { line: 3, sequence: 3 },
    ]);
  });
});

describe("decodeJsonl: unknown_record (forward compatibility)", () => {
  it("an unknown record_type is skipped and reported, not fatal", () => {
    const text = jsonLine(message(1)) + jsonLine({ record_type: "checkpoint", at: 1 }) + jsonLine(message(2));
    const result = decode(text);
    expect(sequences(result)).toEqual([
      { line: 1, sequence: 1 },
      { line: 3, sequence: 2 },
    ]);
    expect(result.diagnostics).toHaveLength(1);
    expectDiagnostic(result.diagnostics[0], { code: "unknown_record", line: 2, fatal: false });
    expect(result.diagnostics[0]!.message).toContain('"checkpoint"');
    expect(result.fatal).toBe(false);
    expect(result.validBytes).toBe(byteLength(text));
  });

  it("a record type known elsewhere but not in this file's schemas is unknown here", () => {
    const result = decode(jsonLine(summary(1)), { schemas: { message: MessageRecord } });
    expect(result.records).toEqual([]);
    expectDiagnostic(result.diagnostics[0], { code: "unknown_record", line: 1, fatal: false });
  });

  it.each(["__proto__", "constructor", "toString", "hasOwnProperty"])(
    "record_type %j (an Object.prototype name) is unknown, not a schema lookup",
    (type) => {
      const result = decode(`{"record_type":${JSON.stringify(type)}}\n`);
      expect(result.records).toEqual([]);
      expectDiagnostic(result.diagnostics[0], { code: "unknown_record", line: 1, fatal: false });
    },
  );

  it("an unknown record as the unterminated final line is skipped, with missingNewline", () => {
    const text = jsonLine(message(1)) + JSON.stringify({ record_type: "future" });
    const result = decode(text);
    expect(result.records).toHaveLength(1);
    expectDiagnostic(result.diagnostics[0], { code: "unknown_record", line: 2, fatal: false });
    expect(result.missingNewline).toBe(true);
    expect(result.validBytes).toBe(byteLength(text));
  });
});

describe("decodeJsonl: line endings and encodings", () => {
  it("tolerates CRLF line endings (the \\r is JSON whitespace); lines are counted by \\n", () => {
    const text = JSON.stringify(message(1)) + "\r\n" + JSON.stringify(message(2)) + "\r\n" + "{bad\r\n" + JSON.stringify(message(3)) + "\r\n";
    const result = decode(text);
    expect(sequences(result)).toEqual([
      { line: 1, sequence: 1 },
      { line: 2, sequence: 2 },
      { line: 4, sequence: 3 },
    ]);
    expect(result.diagnostics).toHaveLength(1);
    expectDiagnostic(result.diagnostics[0], { code: "invalid_json", line: 3, fatal: true });
    expect(result.validBytes).toBe(byteLength(text));
  });

  it("a CRLF file whose final line lacks \\n (ends in \\r) keeps that line", () => {
    const result = decode(JSON.stringify(message(1)) + "\r\n" + JSON.stringify(message(2)) + "\r");
    expect(result.records).toHaveLength(2);
    expect(result.missingNewline).toBe(true);
  });

  it("lone \\r separators do not split lines", () => {
    const result = decode(JSON.stringify(message(1)) + "\r" + JSON.stringify(message(2)) + "\n");
    expectDiagnostic(result.diagnostics[0], { code: "invalid_json", line: 1, fatal: true });
  });

  it("unicode and escaped newlines inside strings stay on one line", () => {
    const record = message(1, { parts: [{ sequence: 1, type: "text", text: "a\nb\r\nc\u2028d 😀 中文 é" }] });
    const bytes = encodeJsonl([record, message(2)]);
    const result = decode(bytes);
    expect(result.records.map((r) => r.record)).toEqual([record, message(2)]);
    expect(result.records.map((r) => r.line)).toEqual([1, 2]);
  });
});

describe("JsonlDecoder: chunked input", () => {
  const record = message(1, { parts: [{ sequence: 1, type: "text", text: "é中😀\u2028" }] });
  const text = jsonLine(record) + "{oops\n" + jsonLine({ record_type: "x" }) + jsonLine(message(2)) + '{"record_type":"mess';
  const bytes = utf8(text);
  const whole = decode(bytes);

  it("whole-file result used below is what we think it is", () => {
    expect(whole.diagnostics.map((d) => [d.code, d.line])).toEqual([
      ["invalid_json", 2],
      ["unknown_record", 3],
      ["truncated_tail", 5],
    ]);
    expect(whole.records.map((r) => r.line)).toEqual([1, 4]);
  });

  it("every split into two chunks (incl. inside multibyte characters) gives the same result", () => {
    for (let cut = 0; cut <= bytes.length; cut++) {
      expect(decodeChunks(splitAt(bytes, [cut]))).toEqual(whole);
    }
  });

  it("every split into three chunks gives the same result", () => {
    for (let a = 0; a <= bytes.length; a += 3) {
      for (let b = a; b <= bytes.length; b += 7) {
        expect(decodeChunks(splitAt(bytes, [a, b]))).toEqual(whole);
      }
    }
  });

  it("one byte at a time gives the same result", () => {
    const chunks = Array.from(bytes, (byte) => new Uint8Array([byte]));
    expect(decodeChunks(chunks)).toEqual(whole);
  });

  it("empty chunks change nothing", () => {
    const e = new Uint8Array(0);
    expect(decodeChunks([e, bytes.subarray(0, 10), e, e, bytes.subarray(10), e])).toEqual(whole);
  });

  it("push returns the records of the lines it completes; finish returns only the tail's without collectAll", () => {
    const first = JSON.stringify(message(1));
    const decoder = new JsonlDecoder({ file: ACTIVE, schemas: SCHEMAS });
    expect(decoder.push(utf8(first.slice(0, 10)))).toEqual([]);
    expect(decoder.push(utf8(first.slice(10) + "\n" + JSON.stringify(message(2)).slice(0, 5)))).toEqual([{ record: message(1), line: 1 }]);
    expect(decoder.push(utf8(JSON.stringify(message(2)).slice(5)))).toEqual([]);
    const result = decoder.finish();
    expect(result.records).toEqual([{ record: message(2), line: 2 }]);
    expect(result.missingNewline).toBe(true);
    expect(decoder.finish()).toBe(result); // idempotent
  });

  it("does not keep a reference to the caller's chunk for a pending partial line", () => {
    const decoder = new JsonlDecoder({ file: ACTIVE, schemas: SCHEMAS });
    const line = utf8(jsonLine(message(1)));
    const chunk = line.slice(0, 20);
    decoder.push(chunk);
    chunk.fill(0x20); // the caller reuses its buffer
    expect(decoder.push(line.subarray(20))).toEqual([{ record: message(1), line: 1 }]);
  });

  it("push after finish is a typed error", () => {
    const decoder = new JsonlDecoder({ file: ACTIVE, schemas: SCHEMAS });
    decoder.finish();
    expect(() => decoder.push(utf8("{}\n"))).toThrow(InternalError);
  });

  it("works on a chunk that is a view into a larger buffer", () => {
    const backing = utf8("XXXX" + jsonLine(message(1)) + "YYYY");
    const view = backing.subarray(4, backing.length - 4);
    expect(decodeChunks([view]).records).toEqual([{ record: message(1), line: 1 }]);
  });
});

describe("validBytes", () => {
  it("after a corrupt complete line and a torn tail, validBytes is where the torn tail starts (no complete line is cut)", () => {
    const head = jsonLine(message(1)) + "{corrupt\n";
    const result = decode(head + '{"rec');
    expect(result.validBytes).toBe(byteLength(head));
    expect(result.diagnostics.map((d) => d.code)).toEqual(["invalid_json", "truncated_tail"]);
  });

  it("truncating to validBytes and appending yields a clean file", () => {
    const head = jsonLine(message(1));
    const first = decode(head + '{"record_type":"message","seq');
    const repaired = concatBytes(utf8(head + '{"record_type":"message","seq').subarray(0, first.validBytes), utf8(jsonLine(message(2))));
    const second = decode(repaired);
    expect(second.diagnostics).toEqual([]);
    expect(second.records).toHaveLength(2);
  });
});

describe("encodeJsonl / encodeJsonlLine", () => {
  it("one line per record, each terminated by \\n", () => {
    expect(encodeJsonlLine({ record_type: "message", sequence: 1 })).toBe('{"record_type":"message","sequence":1}\n');
    const text = new TextDecoder().decode(encodeJsonl([message(1), { a: "x\ny" }, summary(1)]));
    expect(text.endsWith("\n")).toBe(true);
    expect(text.split("\n")).toHaveLength(4);
  });

  it("encodes UTF-8, escapes lone surrogates so they round-trip", () => {
    const record = { record_type: "message", text: "é😀\ud800" };
    const bytes = encodeJsonl([record]);
    expect(JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes))).toEqual(record);
  });

  it("encodes nothing for no records", () => {
    expect(encodeJsonl([])).toEqual(new Uint8Array(0));
  });

  it("accepts any iterable", () => {
    function* gen() {
      yield message(1);
      yield message(2);
    }
    expect(decode(encodeJsonl(gen())).records).toHaveLength(2);
  });
});

describe("formatLocation", () => {
  it("FILE:LINE, or FILE when the line is null", () => {
    expect(formatLocation({ file: "messages/active.jsonl", line: 3 })).toBe("messages/active.jsonl:3");
    expect(formatLocation({ file: "meta.json", line: null })).toBe("meta.json");
  });

  it("a decoder diagnostic's message begins with its location", () => {
    const [d] = decode("nope\n").diagnostics;
    expect(d!.message.startsWith(`${formatLocation(d!)}: `)).toBe(true);
  });
});

describe("SummaryRecord in a segment", () => {
  it("a segment decodes messages then its footer", () => {
    const file = "messages/segments/000000000001-000000000002.jsonl";
    const result = decodeJsonl(encodeJsonl([message(1), message(2), summary(2)]), {
      file,
      schemas: { message: MessageRecord, summary: SummaryRecord },
      tornTailRecoverable: false,
    });
    expect(result.records.map((r) => (r.record as { record_type: string }).record_type)).toEqual(["message", "message", "summary"]);
    expect(result.fatal).toBe(false);
  });
});
