import { InvalidInputError } from "../errors.ts";
import { encodeJsonl } from "../jsonl/encode.ts";
import { formatSegmentName } from "../layout/segments.ts";
import { assertJsonlFits, MAX_FILE_BYTES, MAX_LINE_BYTES } from "../storage/limits.ts";
import type { MessageRecord, SummaryRecord } from "../schema/mod.ts";
import { newId } from "./ids.ts";
import type { PortableSegment } from "../model/mod.ts";

/** The files an import writes under `messages/`: closed segments, then Active. */
export interface ImportedHistoryFiles {
  /** Segment files by name (`000000000001-000000000450.jsonl`), each ending with its summary footer. */
  readonly segments: readonly { readonly name: string; readonly bytes: Uint8Array }[];
  /** `active.jsonl`, empty when every message is in a segment. */
  readonly active: Uint8Array;
  /** The bytes of every history file together (`meta.history_bytes`). */
  readonly historyBytes: number;
}

/**
 * Splits imported messages (sequences 1..n) at the source's compaction boundaries: the
 * messages up to each boundary become a closed segment whose footer carries the boundary's
 * summary, the rest Active; so the imported session's model context is the source's.
 *
 * @example
 * ```ts
 * import { MessageRecord } from "sessionfold";
 * declare const messages: MessageRecord[];
 *
 * const now = new Date().toISOString();
 * const files = importedHistoryFiles("s1", messages, [{ through: 4, summary: "Fixed the parser." }], now);
 * files.segments[0]!.name; // "000000000001-000000000004.jsonl"
 * ```
 * @throws {InvalidInputError} when boundaries are not increasing within 1..n or a summary is empty.
 * @throws {LimitExceededError} when a message's line or a file would be over a read limit.
 */
export function importedHistoryFiles(
  sessionId: string,
  messages: readonly MessageRecord[],
  boundaries: readonly PortableSegment[],
  now: string,
  maxFileBytes: number = MAX_FILE_BYTES,
): ImportedHistoryFiles {
  const segments: { name: string; bytes: Uint8Array }[] = [];
  let start = 1;
  let historyBytes = 0;
  for (const [i, boundary] of boundaries.entries()) {
    if (!Number.isSafeInteger(boundary.through) || boundary.through < start || boundary.through > messages.length) {
      throw new InvalidInputError(`imported segment ${i + 1} ends at message ${boundary.through}; expected a message from ${start} to ${messages.length}`, {
        index: i,
      });
    }
    if (boundary.summary.length === 0) throw new InvalidInputError(`imported segment ${i + 1} has an empty summary`, { index: i });
    const footer: SummaryRecord = {
      record_type: "summary",
      session_id: sessionId,
      summary_id: newId("sum"),
      through_sequence: boundary.through,
      text: boundary.summary,
      created_at: boundary.createdAt ?? now,
    };
    const bytes = encodeJsonl([...messages.slice(start - 1, boundary.through), footer]);
    assertImportedFileFits(bytes, `messages/segments/${formatSegmentName({ start, end: boundary.through })}`, start, maxFileBytes);
    segments.push({ name: formatSegmentName({ start, end: boundary.through }), bytes });
    historyBytes += bytes.length;
    start = boundary.through + 1;
  }
  const active = encodeJsonl(messages.slice(start - 1));
  assertImportedFileFits(active, "messages/active.jsonl", start, maxFileBytes);
  return { segments, active, historyBytes: historyBytes + (start <= messages.length ? active.length : 0) };
}

/** An imported file that an open could not read back is refused before anything is written (docs/FORMAT.md "Limits"). */
function assertImportedFileFits(bytes: Uint8Array, file: string, firstSequence: number, maxFileBytes: number): void {
  assertJsonlFits(bytes, { file, sizeBefore: 0, describeLine: (index) => `imported message ${firstSequence + index}` }, MAX_LINE_BYTES, maxFileBytes);
}
