import type { Diagnostic } from "../jsonl/diagnostic.ts";
import { FormatError, type FormatName, formatError } from "./errors.ts";
import { decodeUtf8Strict } from "./json-text.ts";
import { lineSite, Value } from "./shape.ts";

const NEWLINE = 0x0a;

/** What {@linkcode readJsonlRecords} calls for each record, in file order. */
export interface JsonlRecordHandler {
  /**
   * Applies one record (the JSON value of line `line`). It must validate everything
   * before it changes any state: when it throws for the final line and that line has no
   * newline, the line is an interrupted append and is ignored, so nothing of it may remain.
   */
  (record: Value, line: number, terminated: boolean): void;
}

/** How a JSONL file ended. */
export interface JsonlReadResult {
  /** `truncated_tail` when the final line had no newline and was not a valid record. */
  readonly diagnostics: Diagnostic[];
  /** The number of the last line read (0 for an empty file). */
  readonly lines: number;
}

function isBlank(bytes: Uint8Array): boolean {
  for (const byte of bytes) if (byte !== 0x20 && byte !== 0x09 && byte !== 0x0d) return false;
  return true;
}

/**
 * Reads a JSONL byte stream line by line with the reading rules DeepCode and Rho share:
 * - every line is one JSON value, handed to `handle` with its 1-based line number;
 * - lines of only whitespace are skipped (they hold no record);
 * - an invalid final line without `\n` (not UTF-8, not JSON, or refused by `handle`) is an
 *   interrupted append: ignored and reported as a non-fatal `truncated_tail`;
 * - any other invalid line is a `FormatError` naming the file and its line.
 *
 * The bytes are only read, never changed.
 *
 * @example
 * ```ts
 * const { diagnostics } = readJsonlRecords(bytes, "deepcode", "s1.v1.jsonl", (record, line) => {
 *   const type = record.object().field("type").string();
 * });
 * ```
 * @throws {FormatError} for an invalid line that is not an interrupted final append.
 * @throws {UnsupportedSchemaError} when `handle` finds a version it does not know.
 */
export function readJsonlRecords(bytes: Uint8Array, format: FormatName, file: string, handle: JsonlRecordHandler): JsonlReadResult {
  const diagnostics: Diagnostic[] = [];
  let start = 0;
  let line = 0;
  while (start < bytes.length) {
    const end = bytes.indexOf(NEWLINE, start);
    const terminated = end !== -1;
    const piece = bytes.subarray(start, terminated ? end : bytes.length);
    start = terminated ? end + 1 : bytes.length;
    line += 1;
    if (isBlank(piece)) continue;
    try {
      handle(new Value(lineSite(format, file, line), [], parseLine(piece, format, file, line)), line, terminated);
    } catch (error) {
      if (terminated || !(error instanceof FormatError)) throw error;
      diagnostics.push({
        file,
        line,
        code: "truncated_tail",
        fatal: false,
        message: `${file}:${line}: interrupted append: the final ${piece.length} bytes have no newline and are not a valid record (${error.details.found}); ignored`,
      });
    }
  }
  return { diagnostics, lines: line };
}

function parseLine(piece: Uint8Array, format: FormatName, file: string, line: number): unknown {
  const decoded = decodeUtf8Strict(piece);
  if (!decoded.ok) throw formatError({ format, file, line }, "bytes that are not UTF-8", "one UTF-8 JSON object per line");
  try {
    return JSON.parse(decoded.text);
  } catch (error) {
    const reason = error instanceof SyntaxError ? error.message : String(error);
    throw formatError({ format, file, line }, `invalid JSON (${reason})`, "one JSON object per line");
  }
}
