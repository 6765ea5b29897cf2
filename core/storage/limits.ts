/**
 * The size limits of a store (docs/FORMAT.md "Limits"). A reader refuses a file or a line
 * beyond them as corrupt instead of loading it, so no file in a store, hostile or damaged,
 * can make a reader allocate without bound.
 *
 * @module
 */

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
