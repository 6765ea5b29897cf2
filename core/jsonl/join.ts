/**
 * JSONL lines joined into bytes: each line (without its `\n`) followed by `\n`, runs of lines that lie one after the
 * other in the bytes they were read from copied as one.
 *
 * @module
 */

const NEWLINE = 0x0a;

/**
 * How many bytes {@linkcode joinLinesInto} writes for `lines`: each line and its `\n`.
 *
 * @example
 * ```ts
 * joinedLength([new Uint8Array([0x61]), new Uint8Array([0x62, 0x63])]); // 5
 * ```
 */
export function joinedLength(lines: readonly Uint8Array[]): number {
  let size = 0;
  for (const line of lines) size += line.length + 1;
  return size;
}

/**
 * Writes `lines` into `into` from its start, each followed by `\n`, and returns how many bytes it wrote
 * ({@linkcode joinedLength}; `into` must hold them). Lines that lie one after the other in the bytes they were read
 * from, each ended there by its `\n` (the lines of Active an open remembered), are copied as one run: a compaction's
 * segment and Active are a copy or two, not one per line.
 *
 * @example
 * ```ts
 * const lines = [new Uint8Array([0x61]), new Uint8Array([0x62])];
 * const into = new Uint8Array(joinedLength(lines));
 * joinLinesInto(lines, into); // 4: into holds "a\nb\n"
 * ```
 */
export function joinLinesInto(lines: readonly Uint8Array[], into: Uint8Array): number {
  let offset = 0;
  for (let i = 0; i < lines.length;) {
    const first = lines[i]!;
    const source = new Uint8Array(first.buffer);
    let end = first.byteOffset + first.length;
    // Extend the run while the next line starts right after this one's newline in the same bytes.
    for (i++; i < lines.length; i++) {
      const next = lines[i]!;
      if (next.buffer !== first.buffer || next.byteOffset !== end + 1 || source[end] !== NEWLINE) break;
      end = next.byteOffset + next.length;
    }
    into.set(source.subarray(first.byteOffset, end), offset);
    offset += end - first.byteOffset;
    into[offset++] = NEWLINE;
  }
  return offset;
}
