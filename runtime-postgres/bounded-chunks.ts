/**
 * How `PostgresStorage` stores a large file written whole: as chunks of at most
 * {@linkcode CHUNK_BYTES}, the first one the file's `replace` and the others appends in the same
 * statement, so a tail read fetches and decompresses only the chunks its tail overlaps
 * (docs/POSTGRES.md "Tables"; docs/decisions.md "A large write is stored as bounded chunks").
 *
 * @module
 */
import { type PlannedWrite } from "../core/mod.ts";

/**
 * The largest chunk a file written whole is cut into (an append stays the one chunk it came as). 16 KiB, the tail an
 * open reads of the newest segment: that tail overlaps at most two chunks, and TOAST decompresses only those. Measured
 * against 8, 32 and 64 KiB and one chunk in docs/decisions.md "A large write is stored as bounded chunks".
 */
export const CHUNK_BYTES = 16 * 1024;

/** The part of a planned write `run_plan` takes. */
export type ChunkWrite = Pick<PlannedWrite, "op" | "path" | "bytes">;

/**
 * `writes` with each `replace` longer than {@linkcode CHUNK_BYTES} cut into a `replace` of its
 * first chunk and appends of the rest, in order: the same bytes, so `run_plan`'s data value is
 * unchanged and only its lengths cut it finer. A `meta.json` (`metaSuffix`) is never cut: its
 * revision and catalog columns describe a file written as one chunk (docs/POSTGRES.md "Writer
 * ownership and commits"), and an append would clear them.
 *
 * @example
 * ```ts
 * const writes = boundedWrites([{ op: "replace", path: "s/segments/1.jsonl", bytes: new Uint8Array(CHUNK_BYTES + 1) }], "/meta.json");
 * console.assert(writes.length === 2 && writes[1]!.op === "append" && writes[1]!.bytes.length === 1);
 * ```
 */
export function boundedWrites(writes: readonly ChunkWrite[], metaSuffix: string): readonly ChunkWrite[] {
  if (!writes.some((write) => isCut(write, metaSuffix))) return writes;
  const out: ChunkWrite[] = [];
  for (const write of writes) {
    if (!isCut(write, metaSuffix)) {
      out.push(write);
      continue;
    }
    for (let at = 0; at < write.bytes.length; at += CHUNK_BYTES) {
      out.push({ op: at === 0 ? "replace" : "append", path: write.path, bytes: write.bytes.subarray(at, at + CHUNK_BYTES) });
    }
  }
  return out;
}

function isCut(write: ChunkWrite, metaSuffix: string): boolean {
  return write.op === "replace" && write.bytes.length > CHUNK_BYTES && !write.path.endsWith(metaSuffix);
}
