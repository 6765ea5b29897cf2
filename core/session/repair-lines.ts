/**
 * The line plan of `Session.repair()` for one JSONL file of a session, a closed segment or
 * `active.jsonl`: which lines stay with their exact bytes, which move to the quarantine,
 * and what is refused. One walk for both files, judged by the shared rules
 * (`segment-rules.ts`): an unreadable line moves; an exact second copy of a kept line
 * moves; a message already in the newest segment (an overlap, Active only) moves; a
 * message out of sequence is refused, since repair never renumbers messages but one: in
 * Active, a second writer's message whose sequence a different kept message holds (a split
 * brain) is kept under a new sequence after the rest (`repair-duplicates.ts`); a segment
 * must end with its footer; the lines of an interrupted final commit of Active move.
 *
 * @module
 */
import { decodeJsonl } from "../jsonl/decode.ts";
import type { SegmentRange } from "../layout/segments.ts";
import type { MessageRecord, SummaryRecord } from "../schema/mod.ts";
import { incompleteFinalBatch } from "./batch.ts";
import { joinLines } from "./lines.ts";
import { sameBytes } from "../storage/bytes.ts";
import { SecondWriterLines } from "./repair-duplicates.ts";
import type { MovedLine, RepairRefusal } from "./repair-report.ts";
import { isFooterOf, SEGMENT_RECORDS, sequenceStep } from "./segment-rules.ts";

/** One line of a file, without its newline. */
export interface Line {
  readonly line: number;
  readonly bytes: Uint8Array;
}

/** A line to move, before it is given its quarantine file. */
export interface Moving extends MovedLine {
  readonly lineBytes: Uint8Array;
}

/** One JSONL file after planning: the lines kept (exact bytes) and the ones to move. */
export interface FilePlan {
  readonly kept: Line[];
  readonly moved: Moving[];
  readonly refused: RepairRefusal[];
  /** The file must be written again even if nothing moved (its final newline is missing). */
  readonly rewrite: boolean;
  /** The messages kept, in order (a second writer's, renumbered, last). */
  readonly messages: readonly MessageRecord[];
  /** The revision the renumbered lines carry, when any were (above every revision in the file). */
  readonly renumberedRevision?: number;
}

/**
 * Which file is planned: a closed segment with its range, or Active after the newest
 * segment's end, with the repair's revision once the session ends at sequence `last`
 * (what renumbered lines carry).
 */
export type LineFrame =
  | { readonly kind: "segment"; readonly range: SegmentRange }
  | { readonly kind: "active"; readonly segmentEnd: number; readonly revisionFor: (last: number) => number };

/** Codes of lines that could not be read (and so may have held a missing message). */
const UNREADABLE = new Set(["invalid_json", "invalid_record", "oversized_line"]);

/** Plans one file's lines (see the module doc). */
export function planLines(bytes: Uint8Array, file: string, frame: LineFrame): FilePlan {
  const active = frame.kind === "active";
  const decoded = decodeJsonl<MessageRecord | SummaryRecord>(bytes, { file, schemas: SEGMENT_RECORDS, tornTailRecoverable: active });
  const records = new Map(decoded.records.map((r) => [r.line, r.record]));
  const problems = new Map(decoded.diagnostics.filter((d) => d.fatal || d.code === "truncated_tail").map((d) => [d.line!, d]));
  const segmentEnd = active ? frame.segmentEnd : 0;
  const kept: Line[] = [];
  const moved: Moving[] = [];
  const refused: RepairRefusal[] = [];
  const keptBySequence = new Map<number, Uint8Array>();
  const messages: { record: MessageRecord; line: number }[] = [];
  // Active: lines of a second writer (a sequence a different kept message holds), renumbered after the rest.
  const second = new SecondWriterLines();
  // In a segment, any line moved may have held a missing message; in Active, only unreadable ones.
  const couldHold = () => moved.filter((m) => (active ? UNREADABLE.has(m.code) : m.code !== "duplicate")).map((m) => m.line);
  const mayHaveHeld = () => {
    const bad = couldHold();
    return bad.length > 0 ? ` (${linesWord(bad)} could not be read and may have held them)` : "";
  };
  let footer: Line | undefined;
  let expected = active ? segmentEnd + 1 : frame.range.start;
  const lines = splitLines(bytes);
  for (const line of lines) {
    const problem = problems.get(line.line);
    const record = records.get(line.line);
    if (problem) {
      moved.push(reported(line, problem, file));
    } else if (record?.record_type === "summary") {
      if (active) {
        refused.push({ file, line: line.line, reason: `${file}:${line.line}: a summary record in active.jsonl; summaries belong in segments` });
        break;
      }
      if (footer && sameBytes(footer.bytes, line.bytes)) moved.push(duplicate(line, "a second copy of the footer"));
      else if (footer || !isFooterOf(record, frame.range)) {
        refused.push({
          file,
          line: line.line,
          reason: `${file}:${line.line}: a summary through sequence ${record.through_sequence} where only one footer through ${frame.range.end} belongs, last`,
        });
      } else kept.push(footer = line);
    } else if (record?.record_type === "message") {
      const step = sequenceStep(record.sequence, expected, segmentEnd);
      const earlier = keptBySequence.get(record.sequence);
      if (step === "overlap") {
        moved.push({
          line: line.line,
          code: "overlap_removed",
          reason: `message ${record.sequence} is already in the newest segment (through ${segmentEnd})`,
          bytes: line.bytes.length,
          lineBytes: line.bytes,
        });
      } else if (earlier && sameBytes(earlier, line.bytes)) {
        moved.push(duplicate(line, `a second copy of message ${record.sequence}`));
      } else if (active && earlier) {
        second.add(line, record);
      } else if (footer || step !== "next") {
        const missing = `sequences ${expected}–${record.sequence - 1} are missing`;
        // In Active only a gap is left here: a sequence already kept is a second writer's (above).
        const where = active
          ? `where ${expected} was expected: ${missing}`
          : footer
          ? "after the footer"
          : step === "gap"
          ? `where ${expected} was expected: ${missing}`
          : `where ${expected} was expected`;
        refused.push({
          file,
          line: line.line,
          reason: `${file}:${line.line}: message sequence ${record.sequence} ${where}${mayHaveHeld()}; repair never renumbers messages`,
        });
        break;
      } else {
        keptBySequence.set(record.sequence, line.bytes);
        messages.push({ record, line: line.line });
        kept.push(line);
        expected += 1;
      }
    } else {
      kept.push(line); // a record type this reader does not know: kept as it is
    }
  }
  if (!active && refused.length === 0 && expected !== frame.range.end + 1) {
    refused.push({
      file,
      line: null,
      reason: `${file}: sequences ${expected}–${frame.range.end} are missing${mayHaveHeld()}; repair never renumbers messages`,
    });
  }
  if (!active && refused.length === 0 && !footer) {
    refused.push({
      file,
      line: null,
      reason: `${file}: no readable summary footer through sequence ${frame.range.end}; repair cannot write a summary (it would need the summarizer)`,
    });
  }
  // A final batch of Active with fewer lines than its batch_size was never committed (recovery cuts it): its lines move.
  const torn = active ? incompleteFinalBatch(messages) : -1;
  if (torn >= 0) {
    const lineNumbers = new Set(messages.slice(torn).map((m) => m.line));
    for (const line of kept.filter((l) => lineNumbers.has(l.line))) {
      moved.push({
        line: line.line,
        code: "interrupted_commit",
        reason: "part of a final commit whose other messages were never written",
        bytes: line.bytes.length,
        lineBytes: line.bytes,
      });
    }
    moved.sort((a, b) => a.line - b.line);
    kept.splice(0, kept.length, ...kept.filter((l) => !lineNumbers.has(l.line)));
    messages.splice(torn);
  }
  const chainEnd = messages.at(-1)?.record.sequence ?? segmentEnd;
  const settled = active && refused.length === 0 ? second.settle(messages.map((m) => m.record), chainEnd, lines.length, frame.revisionFor) : undefined;
  if (settled) {
    moved.push(...settled.moved);
    moved.sort((a, b) => a.line - b.line);
    kept.push(...settled.appended);
  }
  const all = [...messages.map((m) => m.record), ...(settled?.records ?? [])];
  return { kept, moved, refused, rewrite: active && decoded.missingNewline, messages: all, ...(settled ? { renumberedRevision: settled.revision } : {}) };
}

/** The quarantine file of moved lines: one JSON record per line, its bytes exactly (as text when UTF-8, else base64). */
export function quarantineLines(file: string, lines: readonly Moving[], at: string): Uint8Array {
  const decoder = new TextDecoder("utf-8", { fatal: true });
  const encoder = new TextEncoder();
  const records = lines.map(({ line, code, reason, lineBytes }) => {
    let content: { text: string } | { base64: string };
    try {
      content = { text: decoder.decode(lineBytes) };
    } catch {
      content = { base64: base64Of(lineBytes) };
    }
    return encoder.encode(JSON.stringify({ record_type: "quarantined_line", file, line, code, reason, quarantined_at: at, ...content }));
  });
  return joinLines(records);
}

/** The lines of a file, each without its newline (a final line without one included). */
function splitLines(bytes: Uint8Array): Line[] {
  const lines: Line[] = [];
  for (let start = 0, n = 1; start < bytes.length; n++) {
    const end = bytes.indexOf(0x0a, start);
    lines.push({ line: n, bytes: bytes.subarray(start, end === -1 ? bytes.length : end) });
    if (end === -1) break;
    start = end + 1;
  }
  return lines;
}

/** Lines of a list in words: `line 4`, `lines 4, 7`. */
function linesWord(lines: readonly number[]): string {
  return lines.length === 1 ? `line ${lines[0]}` : `lines ${lines.join(", ")}`;
}

/** A line recovery reported (unreadable, torn, over the limit), as it moves. */
function reported(line: Line, problem: { code: string; message: string }, file: string): Moving {
  return {
    line: line.line,
    code: problem.code,
    reason: problem.message.replace(`${file}:${line.line}: `, ""),
    bytes: line.bytes.length,
    lineBytes: line.bytes,
  };
}

function duplicate(line: Line, what: string): Moving {
  return { line: line.line, code: "duplicate", reason: `${what}, identical to a line kept above`, bytes: line.bytes.length, lineBytes: line.bytes };
}

function base64Of(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x2000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x2000));
  return btoa(binary);
}
