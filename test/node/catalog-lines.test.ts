/**
 * A catalog file's lines on files (docs/FORMAT.md "The catalog") read as decoding the whole
 * file as UTF-8 and parsing each line reads them, whichever way they are read: its bytes at
 * once (`applyLines`) or the open file in steps (`applyFileLines`, a listing's whole read),
 * with lines that are not ASCII, a BOM, bytes that are not UTF-8, lines the store does not
 * write, a line longer than a step, and a torn tail.
 */
import { Buffer } from "node:buffer";
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, test } from "vitest";
import { applyFileLines, applyLines, FILE_STEP, SNAPSHOT_HEADER } from "../../runtime-node/fs-catalog-snapshot.ts";

const encoder = new TextEncoder();
const bytesOf = (...parts: (string | Uint8Array)[]): Uint8Array => Buffer.concat(parts.map((part) => (typeof part === "string" ? encoder.encode(part) : part)));
const BOM = Uint8Array.of(0xef, 0xbb, 0xbf);
const NOT_UTF8 = Uint8Array.of(0xc3, 0x28, 0xff);
const line = (name: string, title: string) => `${JSON.stringify({ name, meta: { session_id: name, title, updated_at: "2026-01-01T00:00:00.000Z" } })}\n`;

/** What reading the file whole gave before: one UTF-8 decoding, split at newlines, each line parsed, newest per name. */
function decodedWhole(bytes: Uint8Array): Map<string, unknown> {
  const latest = new Map<string, unknown>();
  for (const text of new TextDecoder().decode(bytes).split("\n")) {
    try {
      const parsed = JSON.parse(text) as { name?: unknown; meta?: unknown } | null;
      if (typeof parsed?.name === "string") latest.set(parsed.name, parsed.meta);
    } catch {
      // not a line
    }
  }
  return latest;
}

/** The lines of a catalog no store writes as such, each kind once. */
const oddLines = [
  line("s-ascii", "port the build"),
  line("s-utf8", "Übersetzung ✓ 🚀"),
  bytesOf(BOM, line("s-bom-inside", "a BOM where only the file's start may drop one")),
  bytesOf('{"name":"s-bad","meta":{"session_id":"s-bad","title":"', NOT_UTF8, '"}}\n'),
  '{"name":"s\\u0031","meta":{"session_id":"s1"}}\n',
  '{"name":".fork-s2","meta":{"session_id":"s2"}}\n',
  '{"name":"s3","meta":{"session_id":"s3"},"meta":{"session_id":"other"}}\n',
  '{"name":"s4","meta":{"session_id":"s4"}} \n',
  '{"name":"s5","meta": {"session_id":"s5"} }\n',
  '{"name":"s6","meta":}\n',
  '{"name":"s7","meta":{"session_id":"s7"}}\r\n',
  "not json\n",
  line("s-ascii", "a later line wins"),
];

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "sessionfold-catalog-lines-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function readInSteps(bytes: Uint8Array): Map<string, unknown> {
  const file = join(dir, "sessions.jsonl");
  writeFileSync(file, bytes);
  const fd = openSync(file, "r");
  try {
    const latest = new Map<string, unknown>();
    applyFileLines(fd, latest, bytes.length, (size) => new Error(`${size} bytes`));
    return latest;
  } finally {
    closeSync(fd);
  }
}

test.each([
  ["ASCII only", bytesOf(`${SNAPSHOT_HEADER}\n`, line("s1", "one"), line("s2", "two"), '{"name":"s9","meta":{"session_id":"s9"')],
  ["lines of every kind", bytesOf(`${SNAPSHOT_HEADER}\n`, ...oddLines, '{"name":"s8","meta":{"title":"torn ✓')],
  ["a BOM at the file's start", bytesOf(BOM, line("s-first", "the BOM a whole decoding drops"), ...oddLines)],
  ["a BOM before an ASCII file", bytesOf(BOM, line("s-first", "ascii"), line("s2", "two"))],
])("%s: read at once and in steps, each line as a whole decoding gives it", (_label, bytes) => {
  const expected = [...decodedWhole(bytes)];
  const atOnce = new Map<string, unknown>();
  applyLines(bytes, atOnce);
  expect([...atOnce]).toEqual(expected);
  expect([...readInSteps(bytes)]).toEqual(expected);
});

test("a file read in steps: lines across every step's end, one longer than a step, and its end without a newline", () => {
  const long = line("s-long", `${"x".repeat(FILE_STEP + 6 * 1024)} ✓`);
  // Lines of about 100 bytes: a few steps' worth before and after the long one.
  const count = Math.ceil((3 * FILE_STEP) / 100);
  const many = Array.from({ length: count }, (_, i) => line(`s${i}`, i % 7 === 0 ? `Sitzung ${i} ✓` : `session ${i}`));
  const half = count >> 1;
  const bytes = bytesOf(`${SNAPSHOT_HEADER}\n`, ...many.slice(0, half), long, ...many.slice(half), ...oddLines, line("s-end", "no newline").trimEnd());
  expect(bytes.length).toBeGreaterThan(4 * FILE_STEP);
  const expected = [...decodedWhole(bytes)];
  expect(expected.length).toBeGreaterThan(count);
  expect([...readInSteps(bytes)]).toEqual(expected);
});

test("a file longer than the limit is refused with the limit's error", () => {
  const bytes = bytesOf(`${SNAPSHOT_HEADER}\n`, line("s1", "one"));
  const file = join(dir, "sessions.jsonl");
  writeFileSync(file, bytes);
  const fd = openSync(file, "r");
  try {
    expect(() => applyFileLines(fd, new Map(), bytes.length - 1, (size) => new Error(`${size} bytes over`))).toThrow(`${bytes.length} bytes over`);
  } finally {
    closeSync(fd);
  }
});
