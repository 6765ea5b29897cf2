/**
 * Shared helpers of the format tests: fixture loading, typed-error assertions and a
 * registry over MemoryStorage. Not a test file itself.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { expect } from "vitest";
import { MemoryStorage, type MessageRecord, SessionfoldError, Sessions, UnsupportedSchemaError } from "../../core/mod.ts";
import { FormatError } from "../../core/formats/mod.ts";

const FIXTURES = fileURLToPath(new URL("./fixtures/", import.meta.url));

/** The bytes of a fixture under `test/formats/fixtures/`. */
export function fixture(path: string): Uint8Array {
  return new Uint8Array(readFileSync(FIXTURES + path));
}

const encoder = new TextEncoder();
export const utf8 = (text: string): Uint8Array => encoder.encode(text);
export const text = (bytes: Uint8Array): string => new TextDecoder().decode(bytes);

export const TS = "2026-12-02T13:00:00.000Z";

/** A registry over a fresh MemoryStorage with a clock that advances one second per call. */
export function memorySessions(): Sessions {
  let now = Date.parse(TS) - 1000;
  return new Sessions({ storage: new MemoryStorage(), identity: { pid: 1, hostname: "test", runtime: "node" }, clock: () => (now += 1000) });
}

/** Calls `fn`, expecting it to throw; returns what it threw. */
export function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error("expected an error, none was thrown");
}

/** Asserts a `FormatError` (code invalid-input) naming `file` and `line` in details and message. */
export function expectFormatError(error: unknown, expected: { file: string; line: number; path?: string; message?: RegExp }): FormatError {
  expect(error).toBeInstanceOf(FormatError);
  const e = error as FormatError;
  expect(e.code).toBe("invalid-input");
  expect(e.details.file).toBe(expected.file);
  expect(e.details.line).toBe(expected.line);
  expect(e.file).toBe(expected.file);
  expect(e.line).toBe(expected.line);
  expect(e.message.startsWith(`${expected.file}:${expected.line}: `)).toBe(true);
  expect(e.message).toMatch(/found .*; expected /);
  if (expected.path !== undefined) expect(e.details.path).toBe(expected.path);
  if (expected.message) expect(e.message).toMatch(expected.message);
  return e;
}

/** Asserts an `UnsupportedSchemaError` (code unsupported-schema) naming `file` and `line`. */
export function expectUnsupported(error: unknown, expected: { file: string; line: number; found: number }): void {
  expect(error).toBeInstanceOf(UnsupportedSchemaError);
  const e = error as UnsupportedSchemaError;
  expect(e.code).toBe("unsupported-schema");
  expect(e.details.file).toBe(expected.file);
  expect(e.details.line).toBe(expected.line);
  expect(e.details.found).toBe(expected.found);
  expect(e.message.startsWith(`${expected.file}:${expected.line}: `)).toBe(true);
}

/** Asserts a typed error (any SessionfoldError subclass) that names `file` and a 1-based line. */
export function expectTypedLocatedError(error: unknown, file: string, maxLine: number): { line: number } {
  expect(error).toBeInstanceOf(SessionfoldError);
  expect(error instanceof FormatError || error instanceof UnsupportedSchemaError).toBe(true);
  const details = (error as SessionfoldError).details as { file?: unknown; line?: unknown };
  expect(details.file).toBe(file);
  expect(Number.isInteger(details.line)).toBe(true);
  const line = details.line as number;
  expect(line).toBeGreaterThanOrEqual(1);
  expect(line).toBeLessThanOrEqual(maxLine);
  expect((error as Error).message.startsWith(`${file}:${line}: `)).toBe(true);
  return { line };
}

/** A message without what a format conversion regenerates (ids, sequences) or cannot carry. */
export function comparable(message: MessageRecord, drop: readonly string[] = []): Record<string, unknown> {
  const { message_id: _id, sequence: _seq, ...rest } = message as MessageRecord & Record<string, unknown>;
  for (const key of drop) delete (rest as Record<string, unknown>)[key];
  return JSON.parse(JSON.stringify(rest)) as Record<string, unknown>;
}
