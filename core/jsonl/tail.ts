import { formatBytes, MAX_LINE_BYTES } from "../storage/limits.ts";
import type { StoragePort } from "../storage/port.ts";
import { type JsonlDecodeOptions, JsonlDecoder, parseRecordLine } from "./decode.ts";
import type { Diagnostic } from "./diagnostic.ts";

/** What {@linkcode readLastRecord} found at the end of a file. */
export interface LastRecord<T> {
  /** The last record, when the final line is a valid record of a known type. */
  readonly record: T | undefined;
  /** Problems of the final line; line numbers are `null` (the file was not read from its start). */
  readonly diagnostics: Diagnostic[];
  /** Size of the whole file in bytes. */
  readonly size: number;
  /** Bytes read to find it, over every window tried. */
  readonly bytesRead: number;
}

const NEWLINE = 0x0a;
/** The tail {@linkcode readLastRecord} reads first: a whole final line of almost any record. */
export const LAST_RECORD_WINDOW = 4096;

/**
 * Reads just the last record of a JSONL file from its tail, growing the window until
 * it holds a whole final line. Cost: O(length of the last line), whatever the file size; a
 * final line over `maxLineBytes` (default {@linkcode MAX_LINE_BYTES}) is reported as a fatal
 * `oversized_line` after reading at most that many bytes.
 * Returns `undefined` when the file does not exist.
 *
 * @example
 * ```ts
 * import { MemoryStorage, SummaryRecord } from "sessionfold";
 * const storage = new MemoryStorage();
 *
 * const path = "agents/a1/workspaces/w1/sessions/s1/messages/segments/000000000001-000000000004.jsonl";
 * const last = await readLastRecord(storage, path, { file: "messages/segments/…", schemas: { summary: SummaryRecord } });
 * last?.record; // the footer
 * ```
 */
export async function readLastRecord<T = unknown>(
  storage: Pick<StoragePort, "readTail">,
  path: string,
  options: JsonlDecodeOptions & { readonly initialBytes?: number },
): Promise<LastRecord<T> | undefined> {
  let window = Math.max(16, options.initialBytes ?? LAST_RECORD_WINDOW);
  const limit = options.maxLineBytes ?? MAX_LINE_BYTES;
  let bytesRead = 0;
  for (;;) {
    const tail = await storage.readTail(path, window);
    if (!tail) return undefined;
    const { bytes, size } = tail;
    bytesRead += bytes.length;
    const found = lastRecordInWindow<T>(bytes, size, { ...options, maxLineBytes: limit });
    if (found) return { ...found, bytesRead };
    const end = bytes.length > 0 && bytes[bytes.length - 1] === NEWLINE ? bytes.length - 1 : bytes.length;
    if (end > limit) {
      // The final line is longer than any line a reader accepts: it is never read whole.
      const message = `${options.file} (last line): a line of more than ${formatBytes(limit)} is over the limit; not read`;
      return { record: undefined, diagnostics: [{ file: options.file, line: null, code: "oversized_line", fatal: true, message }], size, bytesRead };
    }
    window = Math.min(window * 4, limit + 2);
  }
}

/**
 * The last record of a file from `bytes`, the last bytes of the file (`size` bytes in all),
 * as {@linkcode readLastRecord} judges it; `undefined` when they do not hold the whole final
 * line (a longer window must be read). A reader that already holds a file's tail (a
 * `readMany`) decides from it without another read.
 *
 * @example
 * ```ts
 * import { SummaryRecord } from "sessionfold";
 * const bytes = new TextEncoder().encode('{"record_type":"summary","session_id":"s1","summary_id":"x","through_sequence":4,"text":"t","created_at":"2026-12-02T13:00:00.000Z"}\n');
 * const last = lastRecordInWindow(bytes, bytes.length, { file: "segments/…", schemas: { summary: SummaryRecord } });
 * last?.record; // the footer
 * ```
 */
export function lastRecordInWindow<T = unknown>(bytes: Uint8Array, size: number, options: JsonlDecodeOptions): LastRecord<T> | undefined {
  const end = bytes.length > 0 && bytes[bytes.length - 1] === NEWLINE ? bytes.length - 1 : bytes.length;
  // A negative fromIndex would count from the end: with end === 0 there is nothing before the final line.
  const start = end === 0 ? 0 : bytes.lastIndexOf(NEWLINE, end - 1) + 1;
  if (start === 0 && bytes.length < size) return undefined;
  const maxLineBytes = options.maxLineBytes ?? MAX_LINE_BYTES;
  // The usual final line, ended by its newline and valid, is judged alone (a `show` judges one
  // per segment); any other goes through a decoder, which words its diagnostics.
  if (end < bytes.length && end - start <= maxLineBytes) {
    const parsed = parseRecordLine<T>(bytes.subarray(start, end), options.schemas);
    if (parsed.ok && parsed.unknown === undefined) return { record: parsed.record, diagnostics: [], size, bytesRead: bytes.length };
  }
  const decoder = new JsonlDecoder<T>({
    file: options.file,
    schemas: options.schemas,
    tornTailRecoverable: options.tornTailRecoverable,
    maxLineBytes,
  });
  const decoded = decoder.push(bytes.subarray(start));
  const result = decoder.finish();
  const record = decoded.at(-1)?.record ?? result.records.at(-1)?.record;
  const diagnostics = result.diagnostics.map((d) => ({
    ...d,
    line: null,
    message: d.message.replace(`${options.file}:1: `, `${options.file} (last line): `),
  }));
  return { record, diagnostics, size, bytesRead: bytes.length };
}
