/**
 * The foreign readers' limits (issue 27): a stream with no newline (`/dev/zero` read as a
 * pi, Codex or Claude Code file) is refused once its line passes 64 MiB, holding no more than
 * that; a value nested 100,000 deep is a `FormatError` at its line instead of a stack
 * overflow; and detection reads only the first line, so a bad byte further on is the reader's
 * to report, with its line.
 */
import { describe, expect, it } from "vitest";
import { detectSessionFormat, FormatError, MAX_JSON_DEPTH, MAX_LINE_BYTES, readCodex, readJsonlStream, readRhoSnapshot } from "../../core/mod.ts";

const encoder = new TextEncoder();
const CODEX_HEADER =
  '{"timestamp":"2025-09-10T12:00:00.000Z","type":"session_meta","payload":{"id":"5f2c","timestamp":"2025-09-10T12:00:00.000Z","cwd":"/app"}}\n';

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection");
}

describe("a line without end is refused at the line limit, with bounded memory", () => {
  it("an endless stream of zero bytes: FormatError naming the line and MAX_LINE_BYTES after at most 64 MiB + one chunk", async () => {
    const chunk = new Uint8Array(1 << 20);
    let pulled = 0;
    async function* zeros(): AsyncGenerator<Uint8Array> {
      for (;;) {
        pulled += 1;
        yield chunk;
      }
    }
    const error = await rejection(readJsonlStream(zeros(), "pi", "zero.jsonl", () => undefined));
    expect(error).toBeInstanceOf(FormatError);
    expect((error as FormatError).details).toMatchObject({ file: "zero.jsonl", line: 1, limit: "MAX_LINE_BYTES", max: MAX_LINE_BYTES });
    expect((error as Error).message).toMatch(/^zero\.jsonl:1: found a line of more than 64 MiB/);
    expect(pulled).toBe(MAX_LINE_BYTES / chunk.length + 1);
  });

  it("the line number is the long line's, after shorter ones", async () => {
    const long = new Uint8Array(MAX_LINE_BYTES + 1).fill(0x78);
    const error = await rejection(readCodex([encoder.encode(CODEX_HEADER), long], "rollout.jsonl"));
    expect((error as FormatError).line).toBe(2);
  });
});

describe("nesting past MAX_JSON_DEPTH is a FormatError at its line", () => {
  const deep = `${"[".repeat(100_000)}${"]".repeat(100_000)}`;

  it("a JSONL line (Codex)", async () => {
    const error = await rejection(
      readCodex([encoder.encode(`${CODEX_HEADER}{"timestamp":"2025-09-10T12:00:01.000Z","type":"response_item","payload":${deep}}\n`)], "rollout.jsonl"),
    );
    expect(error).toBeInstanceOf(FormatError);
    expect((error as FormatError).line).toBe(2);
    expect((error as Error).message).toMatch(new RegExp(`found a value nested deeper than ${MAX_JSON_DEPTH} levels`));
  });

  it("JSON text inside a line (Codex function_call arguments), at that line and path", async () => {
    const call = JSON.stringify({
      timestamp: "2025-09-10T12:00:01.000Z",
      type: "response_item",
      payload: { type: "function_call", call_id: "c1", name: "t", arguments: deep },
    });
    const error = await rejection(readCodex([encoder.encode(`${CODEX_HEADER}${call}\n`)], "rollout.jsonl"));
    expect(error).toBeInstanceOf(FormatError);
    expect((error as FormatError).line).toBe(2);
    expect((error as Error).message).toMatch(/\$\.payload\.arguments: found arguments nested deeper than 512 levels/);
  });

  it("a JSON document (a Rho snapshot), at the line where the limit is crossed", () => {
    const text = `{\n  "schema_version": 2,\n  "history": [],\n  "extra":\n${deep}\n}`;
    let error: unknown;
    try {
      readRhoSnapshot(encoder.encode(text), "snap.json");
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(FormatError);
    expect((error as FormatError).line).toBe(5);
  });
});

describe("detection reads the first line only", () => {
  it("invalid UTF-8 on line 3 does not hide a Codex rollout", () => {
    const bytes = new Uint8Array([...encoder.encode(CODEX_HEADER), ...encoder.encode('{"a":1}\n'), 0x7b, 0xff, 0x7d, 0x0a]);
    expect(detectSessionFormat(bytes)?.format).toBe("codex");
  });

  it("a first line that is not UTF-8 matches nothing", () => {
    expect(detectSessionFormat(new Uint8Array([0xff, 0x0a, ...encoder.encode(CODEX_HEADER)]))).toBeUndefined();
  });
});
