import type { Diagnostic } from "../jsonl/diagnostic.ts";
import { FormatError, formatError, type FormatName } from "./errors.ts";
import { concatBytes } from "../storage/bytes.ts";
import { describeJsonError } from "../schema/json-error.ts";
import { tooDeepError } from "./json-text.ts";
import { formatBytes, MAX_LINE_BYTES } from "../storage/limits.ts";
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
 * Where a JSONL file's bytes come from: the whole file, or its chunks in order (a file
 * read piece by piece, so a large transcript is never held whole).
 */
export type JsonlSource = Uint8Array | Iterable<Uint8Array> | AsyncIterable<Uint8Array>;

/**
 * Reads a JSONL byte stream line by line with the reading rules DeepCode and Rho share:
 * - every line is one JSON value, handed to `handle` with its 1-based line number;
 * - lines of only whitespace are skipped (they hold no record);
 * - an invalid final line without `\n` (not UTF-8, not JSON, or refused by `handle`) is an
 *   interrupted append: ignored and reported as a non-fatal `truncated_tail`;
 * - any other invalid line is a `FormatError` naming the file and its line;
 * - a line over `MAX_LINE_BYTES` (64 MiB), the longest line the store keeps, is a `FormatError`
 *   naming the file, the line and the limit, raised as soon as the line is over it.
 *
 * The bytes are only read, never changed.
 *
 * @example
 * ```ts
 * declare const bytes: Uint8Array;
 *
 * const { diagnostics } = readJsonlRecords(bytes, "deepcode", "s1.v1.jsonl", (record, line) => {
 *   const type = record.object().field("type").string();
 * });
 * ```
 * @throws {FormatError} for an invalid line that is not an interrupted final append.
 * @throws {UnsupportedSchemaError} when `handle` finds a version it does not know.
 */
export function readJsonlRecords(bytes: Uint8Array, format: FormatName, file: string, handle: JsonlRecordHandler): JsonlReadResult {
  const reader = new JsonlLineReader(format, file, handle);
  reader.push(bytes);
  return reader.end();
}

/**
 * {@linkcode readJsonlRecords} over a stream of chunks: only the line being read is held,
 * whatever the file's size, and never more than `MAX_LINE_BYTES` of it (a longer line is
 * refused as soon as it is over, so `/dev/zero`-like input cannot grow memory). The same
 * rules, the same errors.
 *
 * @example
 * ```ts
 * import { readJsonlStream } from "sessionfold";
 *
 * const chunks = [new TextEncoder().encode('{"type":"session"}\n')];
 * const { diagnostics } = await readJsonlStream(chunks, "pi", "s.jsonl", (record, line) => {
 *   console.log(line, record);
 * });
 * ```
 * @throws {FormatError} for an invalid line that is not an interrupted final append.
 */
export async function readJsonlStream(source: JsonlSource, format: FormatName, file: string, handle: JsonlRecordHandler): Promise<JsonlReadResult> {
  const reader = new JsonlLineReader(format, file, handle);
  if (source instanceof Uint8Array) reader.push(source);
  else for await (const chunk of source) reader.push(chunk);
  return reader.end();
}

/** Splits pushed chunks into lines and applies the reading rules to each. */
class JsonlLineReader {
  readonly #format: FormatName;
  readonly #file: string;
  readonly #handle: JsonlRecordHandler;
  readonly #diagnostics: Diagnostic[] = [];
  /** The start of a line whose newline has not come yet. */
  #pending: Uint8Array[] = [];
  #pendingBytes = 0;
  #line = 0;

  constructor(format: FormatName, file: string, handle: JsonlRecordHandler) {
    this.#format = format;
    this.#file = file;
    this.#handle = handle;
  }

  push(chunk: Uint8Array): void {
    let start = 0;
    while (start < chunk.length) {
      const end = chunk.indexOf(NEWLINE, start);
      if (end === -1) {
        this.#hold(chunk.length - start);
        // Copied: a caller may reuse its buffer for the next chunk.
        this.#pending.push(chunk.slice(start));
        return;
      }
      this.#hold(end - start);
      this.#apply(this.#takePending(chunk.subarray(start, end)), true);
      start = end + 1;
    }
  }

  end(): JsonlReadResult {
    if (this.#pending.length > 0) this.#apply(this.#takePending(new Uint8Array(0)), false);
    return { diagnostics: this.#diagnostics, lines: this.#line };
  }

  /** Counts `bytes` more of the current line; a line over the limit is refused before it is held. */
  #hold(bytes: number): void {
    this.#pendingBytes += bytes;
    if (this.#pendingBytes <= MAX_LINE_BYTES) return;
    const line = this.#line + 1;
    this.#pending = [];
    throw formatError(
      { format: this.#format, file: this.#file, line },
      `a line of more than ${formatBytes(MAX_LINE_BYTES)} (${this.#pendingBytes} bytes read so far)`,
      `a line of at most ${formatBytes(MAX_LINE_BYTES)} (MAX_LINE_BYTES, the longest line a session keeps)`,
      { limit: "MAX_LINE_BYTES", max: MAX_LINE_BYTES },
    );
  }

  #takePending(tail: Uint8Array): Uint8Array {
    this.#pendingBytes = 0;
    if (this.#pending.length === 0) return tail;
    const out = concatBytes([...this.#pending, tail]);
    this.#pending = [];
    return out;
  }

  #apply(piece: Uint8Array, terminated: boolean): void {
    this.#line += 1;
    const line = this.#line;
    if (isBlank(piece)) return;
    const file = this.#file;
    try {
      this.#handle(new Value(lineSite(this.#format, file, line), [], parseLine(piece, this.#format, file, line)), line, terminated);
    } catch (error) {
      if (terminated || !(error instanceof FormatError)) throw error;
      this.#diagnostics.push({
        file,
        line,
        code: "truncated_tail",
        fatal: false,
        message:
          `${file}:${line}: interrupted append: the final ${piece.length} bytes have no newline and are not a valid record (${error.details.found}); ignored`,
      });
    }
  }
}

function parseLine(piece: Uint8Array, format: FormatName, file: string, line: number): unknown {
  const decoded = decodeUtf8Strict(piece);
  if (!decoded.ok) throw formatError({ format, file, line }, "bytes that are not UTF-8", "one UTF-8 JSON object per line");
  let value: unknown;
  try {
    value = JSON.parse(decoded.text);
  } catch {
    throw formatError({ format, file, line }, describeJsonError(decoded.text), "one JSON object per line");
  }
  const tooDeep = tooDeepError(value, decoded.text, { format, file, line });
  if (tooDeep) throw tooDeep;
  return value;
}
