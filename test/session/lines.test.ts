/**
 * Remembered lines (core/session/lines.ts): a stored message's token estimate is kept with its
 * line and equals `estimateTokens`; joined lines are each line and its newline, whether or not
 * they lie one after the other in the bytes they were read from; a line added in the room left
 * after joined lines is the same bytes as the lines joined with it.
 */
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { encodeJsonl, estimateTokens, type MessageRecord } from "../../core/mod.ts";
import { decodeJsonl } from "../../core/jsonl/decode.ts";
import { messageCheck } from "../../core/schema/fast-check.ts";
import { joinLines, joinLinesWithRoom, lineOf, linesTokens, rememberLine, rememberPlainLines, storedTokens, withLastLine } from "../../core/session/lines.ts";

const encoder = new TextEncoder();
describe("storedTokens", () => {
  const message = (sequence: number, text: string): MessageRecord => ({
    record_type: "message",
    sequence,
    message_id: `m${sequence}`,
    role: "user",
    created_at: "2026-12-02T13:00:00.000Z",
    parts: [{ sequence: 1, type: "text", text }],
  });

  test("is estimateTokens, for messages with a remembered line and without", () => {
    const stored = [message(1, "hi"), message(2, 'a longer text with "quotes" and ünïcode')];
    for (const record of stored) rememberLine(record, encoder.encode(JSON.stringify(record)));
    const fresh = message(3, "not committed");
    expect(storedTokens(stored)).toBe(estimateTokens(stored));
    expect(storedTokens([...stored, fresh])).toBe(estimateTokens([...stored, fresh]));
    // Kept with the line: asked again, the same figure.
    expect(storedTokens(stored)).toBe(estimateTokens(stored));
    expect(storedTokens([])).toBe(0);
  });
});

describe("linesTokens", () => {
  const message = (sequence: number, text: string): MessageRecord => ({
    record_type: "message",
    sequence,
    message_id: `m${sequence}`,
    ...(sequence % 2 ? { role: "user" } : { role: "assistant", status: "completed" }),
    created_at: "2026-12-02T13:00:00.000Z",
    parts: sequence % 2 === 0
      ? [{ sequence: 1, type: "reasoning", text }, {
        sequence: 2,
        type: "tool",
        tool_call_id: `c${sequence}`,
        tool_name: "t",
        state: "output-available",
        input: { q: text },
        output: [text],
      }]
      : [{ sequence: 1, type: "text", text }],
  });
  /** Active as an open decodes and remembers it (core/session/load.ts). */
  const opened = (bytes: Uint8Array) => {
    const decoded = decodeJsonl<MessageRecord>(bytes, { file: "messages/active.jsonl", schemas: { message: messageCheck }, keepLineBytes: true });
    for (const { record, bytes: line } of decoded.records) rememberLine(record, line!);
    if (decoded.plainStrings) rememberPlainLines(bytes);
    return { records: decoded.records.map(({ record }) => record), plain: decoded.plainStrings };
  };
  const text = fc.oneof(
    fc.string({ unit: "binary" }),
    fc.string({ unit: fc.integer({ min: 0, max: 0x7f }).map((c) => String.fromCharCode(c)) }),
    fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 400 }),
  );

  test("property: is estimateTokens of Active read from disk, its lines plain (ASCII, no backslash) or not", () => {
    fc.assert(
      fc.property(fc.array(text, { minLength: 1, maxLength: 12 }), (texts) => {
        const bytes = encodeJsonl(texts.map((body, i) => message(i + 1, body)));
        const { records, plain } = opened(bytes);
        expect(plain === true).toBe(bytes.every((byte) => byte < 0x80 && byte !== 0x5c));
        expect(linesTokens(records)).toBe(estimateTokens(records));
        expect(linesTokens(records.slice(1))).toBe(estimateTokens(records.slice(1)));
      }),
      { numRuns: 1000 },
    );
  });

  test("takes as plain only the lines of the bytes an open noted, not other lines of the same buffer or another's", () => {
    const quoted = message(1, 'a "quoted" text, a \\ backslash and ünïcode');
    const plainPart = encodeJsonl([message(2, "plain text"), message(3, "more plain text")]);
    const head = encodeJsonl([quoted]);
    const buffer = new Uint8Array(head.length + plainPart.length);
    buffer.set(head);
    buffer.set(plainPart, head.length);
    const { records, plain } = opened(buffer.subarray(head.length));
    expect(plain).toBe(true);
    // The quoted message's line lies in the same buffer, before the part noted plain.
    const same = { ...quoted };
    rememberLine(same, buffer.subarray(0, head.length - 1));
    const committed = message(4, '\u00e9t\u00e9 "x"');
    lineOf(committed);
    const all = [same, ...records, committed];
    expect(linesTokens(all)).toBe(estimateTokens(all));
    expect(linesTokens([committed, same])).toBe(estimateTokens([committed, same]));
  });
});

describe("joinLines", () => {
  /** Each line followed by `\n`, one line at a time: what joinLines must equal. */
  const plainly = (lines: readonly Uint8Array[]) => encoder.encode(lines.map((line) => `${new TextDecoder().decode(line)}\n`).join(""));
  /** Views of each line of `text` without its `\n`, as a decoder keeps them (lines end at every `\n`). */
  const viewsOf = (bytes: Uint8Array) => {
    const views: Uint8Array[] = [];
    for (let start = 0, end = bytes.indexOf(0x0a); end !== -1; start = end + 1, end = bytes.indexOf(0x0a, start)) views.push(bytes.subarray(start, end));
    return views;
  };

  test("copies a run of lines read one after the other as the same bytes", () => {
    const read = encoder.encode('{"a":1}\n{"b":"ü"}\n{"c":3}\n');
    const lines = viewsOf(read);
    expect(joinLines(lines)).toEqual(read);
    expect(joinLines(lines.slice(1))).toEqual(read.subarray(lines[1]!.byteOffset));
  });

  test("is each line and a newline where lines skip some, repeat, come from several buffers or are separated by something else", () => {
    const read = encoder.encode('{"a":1}\n\n{"b":2}\n{"c":3}\r{"d":4}\n{"e":5}\n');
    const [a, blank, b, cd, e] = viewsOf(read);
    const other = encoder.encode('{"x":9}');
    const bc = read.subarray(b!.byteOffset, b!.byteOffset + 15); // '{"b":2}\n{"c":3}': a view across a newline
    const [c, d] = [cd!.subarray(0, 7), cd!.subarray(8)]; // next to each other but for the "\r" between them
    const cases = [[a!, b!], [a!, blank!, b!], [b!, b!], [a!, other, e!], [cd!, e!], [c, d], [e!, a!], [bc, e!], [a!.subarray(0, 3), b!], [], [other]];
    for (const lines of cases) expect(joinLines(lines)).toEqual(plainly(lines));
  });
});

describe("joinLinesWithRoom and withLastLine", () => {
  const read = encoder.encode('{"a":1}\n{"b":"ü"}\n');
  const lines = [read.subarray(0, 7), read.subarray(8, read.length - 1)];
  const footer = { record_type: "summary", text: "a summary" };
  const whole = joinLines([...lines, lineOf(footer)]);

  test("the last line goes into the room when it fits: a view of the same buffer, the bytes of a join", () => {
    const open = joinLinesWithRoom(lines, 100);
    expect(open.used).toBe(read.length);
    expect(open.bytes.length).toBe(read.length + 100);
    const bytes = withLastLine(open, footer);
    expect(bytes).toEqual(whole);
    expect(bytes.buffer).toBe(open.bytes.buffer);
  });

  test("a last line longer than the room, or one that fills it exactly, gives the same bytes", () => {
    const short = joinLinesWithRoom(lines, 5);
    const bytes = withLastLine(short, footer);
    expect(bytes).toEqual(whole);
    expect(bytes.buffer).not.toBe(short.bytes.buffer);
    const exact = joinLinesWithRoom(lines, lineOf(footer).length + 1);
    expect(withLastLine(exact, footer)).toBe(exact.bytes);
    expect(exact.bytes).toEqual(whole);
    expect(withLastLine(joinLinesWithRoom([], 0), footer)).toEqual(joinLines([lineOf(footer)]));
  });
});
