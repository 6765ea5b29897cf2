/**
 * The size limits of a store (docs/FORMAT.md "Limits"). A reader refuses a file or a line
 * beyond them as corrupt instead of loading it, so no file in a store, hostile or damaged,
 * can make a reader allocate without bound.
 *
 * @module
 */
import { LimitExceededError } from "../errors.ts";

/**
 * The largest file a backend reads whole (`StoragePort.read`): 256 MiB. A session never
 * needs more: compaction keeps `active.jsonl` near the context window and a segment holds
 * one compaction's messages.
 */
export const MAX_FILE_BYTES: number = 256 * 1024 * 1024;

/**
 * The longest line a JSONL reader of the store accepts: 64 MiB (one message, inline images
 * included). A longer line is reported as fatal `oversized_line` without being decoded.
 */
export const MAX_LINE_BYTES: number = 64 * 1024 * 1024;

/**
 * A byte count in words: `256 MiB`, `1.5 KiB`, `12 bytes`.
 *
 * @example
 * ```ts
 * formatBytes(MAX_LINE_BYTES); // "64 MiB"
 * ```
 */
export function formatBytes(bytes: number): string {
  const units = ["GiB", "MiB", "KiB"] as const;
  for (const [i, unit] of units.entries()) {
    const size = 1024 ** (units.length - i);
    if (bytes >= size) return `${Number((bytes / size).toFixed(1))} ${unit}`;
  }
  return `${bytes} bytes`;
}

export { MAX_JSON_DEPTH } from "../schema/json-depth.ts";

/** Where {@linkcode assertJsonlFits} writes: the file, and what a line of it holds. */
export interface JsonlWriteTarget {
  /** The file as messages name it (`messages/active.jsonl`). */
  readonly file: string;
  /** The size the file has before the write (an append); 0 for a file written whole. */
  readonly sizeBefore: number;
  /** What the n-th line written is, for messages: `message 3 of the commit`. */
  readonly describeLine: (index: number) => string;
}

/**
 * Refuses JSONL bytes about to be written that a reader would refuse (docs/FORMAT.md
 * "Limits"): a line over {@linkcode MAX_LINE_BYTES}, or a file that would grow past
 * {@linkcode MAX_FILE_BYTES}. The write limits are the read limits: nothing is acknowledged
 * that an open cannot read back. Costs one `indexOf` per line, and nothing for a write
 * shorter than the line limit.
 *
 * @example
 * ```ts
 * const bytes = new TextEncoder().encode('{"record_type":"message"}\n');
 * assertJsonlFits(bytes, { file: "messages/active.jsonl", sizeBefore: 0, describeLine: (i) => `message ${i + 1}` });
 * ```
 * @throws {LimitExceededError} naming the limit, the file and the line (nothing was written).
 */
export function assertJsonlFits(
  bytes: Uint8Array,
  target: JsonlWriteTarget,
  maxLineBytes: number = MAX_LINE_BYTES,
  maxFileBytes: number = MAX_FILE_BYTES,
): void {
  const { file, sizeBefore, describeLine } = target;
  if (bytes.length > maxLineBytes) {
    let start = 0;
    for (let index = 0; start < bytes.length; index += 1) {
      const newline = bytes.indexOf(0x0a, start);
      const end = newline === -1 ? bytes.length : newline;
      if (end - start > maxLineBytes) {
        throw new LimitExceededError(
          `${file}: ${describeLine(index)} would be a line of ${formatBytes(end - start)}, over the line limit of ${
            formatBytes(maxLineBytes)
          } (MAX_LINE_BYTES) that every reader applies; nothing was written`,
          {
            limit: "MAX_LINE_BYTES",
            max: maxLineBytes,
            found: end - start,
            file,
          },
        );
      }
      start = end + 1;
    }
  }
  assertFileFits(sizeBefore + bytes.length, file, maxFileBytes, sizeBefore > 0 ? " (compact the session to move older messages into a segment)" : "");
}

/**
 * Refuses a write that would make `file` `size` bytes, over the file limit every reader
 * applies (docs/FORMAT.md "Limits"): a JSONL file, `meta.json` or `instruction.md`.
 *
 * @example
 * ```ts
 * assertFileFits(1024, "meta.json"); // fine
 * ```
 * @throws {LimitExceededError} naming the limit and the file (nothing was written).
 */
export function assertFileFits(size: number, file: string, maxFileBytes: number = MAX_FILE_BYTES, advice = ""): void {
  if (size <= maxFileBytes) return;
  throw new LimitExceededError(
    `${file}: this write would make the file ${formatBytes(size)}, over the file limit of ${
      formatBytes(maxFileBytes)
    } (MAX_FILE_BYTES) that every reader applies; nothing was written${advice}`,
    { limit: "MAX_FILE_BYTES", max: maxFileBytes, found: size, file },
  );
}
