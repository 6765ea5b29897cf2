/**
 * Shared machinery of the format fuzz tests: byte layouts of generated line-based files,
 * truncation and corruption with what the reading rules say must come out, the run count
 * and a timing log. Not a test file itself.
 */
import { isDeepStrictEqual } from "node:util";
import fc from "fast-check";
import { expect } from "vitest";
import { FormatError } from "../../core/formats/mod.ts";
import { SessionfoldError, UnsupportedSchemaError } from "../../core/mod.ts";

/**
 * Cases per damaging property: truncation and corruption, each {@linkcode RUNS} per format
 * (10,000 damaged files per format by default). `FORMAT_FUZZ_RUNS` overrides it.
 */
export const RUNS = Number(process.env.FORMAT_FUZZ_RUNS ?? 5000);
/** Cases of the undamaged "reads exactly" property per format. */
export const EXACT_RUNS = Math.max(1, Math.round(RUNS / 10));

const encoder = new TextEncoder();

/** A generated text file as lines, with byte offsets. */
export interface LineFile {
  readonly bytes: Uint8Array;
  /** Byte offset where each line starts. */
  readonly starts: number[];
  /** Byte offset just after each line's content (before its `\n`, if any). */
  readonly ends: number[];
  /** Whether the last line ends with `\n`. */
  readonly finalNewline: boolean;
}

/** Lays out lines (without `\n`) as a file, with or without a final newline. */
export function layoutLines(lines: readonly (string | Uint8Array)[], finalNewline: boolean): LineFile {
  const parts = lines.map((line) => (typeof line === "string" ? encoder.encode(line) : line));
  const starts: number[] = [];
  const ends: number[] = [];
  let size = 0;
  parts.forEach((part, i) => {
    starts.push(size);
    size += part.length;
    ends.push(size);
    if (i < parts.length - 1 || finalNewline) size += 1;
  });
  const bytes = new Uint8Array(size);
  parts.forEach((part, i) => {
    bytes.set(part, starts[i]!);
    if (i < parts.length - 1 || finalNewline) bytes[ends[i]!] = 0x0a;
  });
  return { bytes, starts, ends, finalNewline: finalNewline && parts.length > 0 };
}

/** What the reading rules keep of a file cut after `cut` bytes (every generated line is a valid, non-blank record). */
export function truncationOutcome(file: LineFile, cut: number): { kept: number; tornLine: number | null } {
  let kept = 0;
  while (kept < file.ends.length && file.ends[kept]! <= cut) kept += 1;
  const torn = kept < file.starts.length && cut > file.starts[kept]!;
  return { kept, tornLine: torn ? kept + 1 : null };
}

/** A cut offset, biased towards line ends (±2) where the interesting cases are. */
export function cutArb(file: LineFile): fc.Arbitrary<number> {
  const size = file.bytes.length;
  const near = fc
    .tuple(fc.constantFrom(0, ...file.ends, ...file.starts), fc.integer({ min: -2, max: 2 }))
    .map(([at, delta]) => Math.min(size, Math.max(0, at + delta)));
  return fc.oneof(fc.integer({ min: 0, max: size }), near);
}

/** The file with line `index` (0-based) replaced by `replacement`. */
export function replaceLine(file: LineFile, index: number, replacement: Uint8Array): Uint8Array {
  const before = file.bytes.subarray(0, file.starts[index]!);
  const after = file.bytes.subarray(file.ends[index]!);
  const out = new Uint8Array(before.length + replacement.length + after.length);
  out.set(before, 0);
  out.set(replacement, before.length);
  out.set(after, before.length + replacement.length);
  return out;
}

/** `true` when line `index` is the last line and has no newline (a torn-tail candidate). */
export function isUnterminatedLast(file: LineFile, index: number): boolean {
  return index === file.starts.length - 1 && !file.finalNewline;
}

/**
 * Runs `read`, classifying the outcome. Any error that is not a located FormatError or
 * UnsupportedSchemaError fails the test: the readers never throw untyped errors.
 */
export function outcome<T>(read: () => T): { ok: true; value: T } | { ok: false; error: FormatError | UnsupportedSchemaError } {
  try {
    return { ok: true, value: read() };
  } catch (error) {
    if (!(error instanceof SessionfoldError)) throw new Error(`untyped error: ${String(error)}`, { cause: error });
    if (!(error instanceof FormatError || error instanceof UnsupportedSchemaError)) {
      throw new Error(`unexpected error class ${error.name}: ${error.message}`, { cause: error });
    }
    return { ok: false, error };
  }
}

/**
 * Asserts deep equality. Fast path first (`isDeepStrictEqual`); vitest's `expect` only
 * runs on a mismatch, for its diff (tens of thousands of cases must stay within seconds).
 */
export function same(actual: unknown, expected: unknown): void {
  if (!isDeepStrictEqual(actual, expected)) expect(actual).toEqual(expected);
}

/** Asserts a condition cheaply; `detail` is computed only on failure. */
export function check(condition: boolean, detail: () => string): void {
  if (!condition) expect.fail(detail());
}

/** Asserts a typed error naming `file` and exactly `line` (in details and message). */
export function expectErrorAt(error: FormatError | UnsupportedSchemaError, file: string, line: number, kind: "format" | "unsupported" = "format"): void {
  const details = error.details as { file?: unknown; line?: unknown };
  const ok = error instanceof (kind === "format" ? FormatError : UnsupportedSchemaError) &&
    details.file === file &&
    details.line === line &&
    error.message.startsWith(`${file}:${line}: `);
  check(ok, () => `expected a ${kind} error at ${file}:${line}, got ${error.name}: ${error.message} ${JSON.stringify(details)}`);
}

/** Asserts that an outcome is a success and returns its value. */
export function succeeded<T>(result: { ok: true; value: T } | { ok: false; error: Error }): T {
  if (!result.ok) expect.fail(`expected success, got ${result.error.name}: ${result.error.message}`);
  return result.value;
}

/** Asserts that an outcome is a failure and returns its error. */
export function failed<T, E extends Error>(result: { ok: true; value: T } | { ok: false; error: E }): E {
  if (result.ok) expect.fail("expected a typed error, the read succeeded");
  return result.error;
}

/**
 * Short texts with the characters that matter: empty, multi-byte (2 and 4 bytes, so cuts
 * fall inside characters), quotes, backslashes, newlines, braces, NUL. A fixed pool keeps
 * generation cheap: tens of thousands of cases run in seconds.
 */
export const textArb = fc.constantFrom("", "a", "hello", "é", "ß😀x", "line\nbreak", 'q"uote', "back\\slash", "{}", "a\u0000b", "日本語");

/** Records generated cases and time per format, printed by the suites. */
export const fuzzLog = new Map<string, { cases: number; ms: number }>();

/** Counts a run of `fc.assert` against `format`. */
export function timed(format: string, runs: number, body: () => void): void {
  const start = performance.now();
  body();
  const entry = fuzzLog.get(format) ?? { cases: 0, ms: 0 };
  entry.cases += runs;
  entry.ms += performance.now() - start;
  fuzzLog.set(format, entry);
}

/** Prints the per-format case counts and times. */
export function printFuzzLog(suite: string): void {
  const rows = [...fuzzLog].map(([format, { cases, ms }]) => `  ${format.padEnd(18)} ${String(cases).padStart(6)} cases  ${(ms / 1000).toFixed(2)} s`);
  console.log(`${suite} fuzz cases:\n${rows.join("\n")}`);
}

export const garbageLines: readonly Uint8Array[] = [
  encoder.encode('{"type":'),
  encoder.encode("@@ not json"),
  new Uint8Array([0xff, 0xfe, 0x41]),
  new Uint8Array([0x7b, 0x22, 0xc3]),
  encoder.encode("{}"),
  encoder.encode("[1]"),
  encoder.encode('"text"'),
  encoder.encode("null"),
];
