/**
 * Repair of two writers' lines in one `active.jsonl` (docs/FORMAT.md "Repair", duplicate
 * sequences): when two writers both believed they held the session (a split brain), each
 * numbered its messages from what it had read, so a run of sequences appears twice with
 * different messages. Both writers' messages were acknowledged, so neither copy is dropped:
 * for each sequence the line written first (earlier in the file) keeps it, and every later
 * line that carries a sequence already kept is renumbered after the last kept message, in
 * file order, its message id, parts and every other field unchanged. Its original bytes
 * move to the quarantine (code `renumbered`), so what was written stays on record. A later
 * line that is the same message as a kept one (same `message_id` and content, whatever its
 * time: one message committed twice) moves as a `duplicate` instead, so every message is read exactly once.
 *
 * @module
 */
import type { MessageRecord } from "../schema/mod.ts";
import { BATCH_FIELD, LINE_REVISION_FIELD, lineRevision } from "./batch.ts";

/** A line of a file, without its newline. */
export interface PlannedLine {
  readonly line: number;
  readonly bytes: Uint8Array;
}

/** A line leaving the file for the quarantine (the shape `repair-lines.ts` moves). */
export interface QuarantinedLine {
  readonly line: number;
  readonly code: string;
  readonly reason: string;
  readonly bytes: number;
  readonly lineBytes: Uint8Array;
}

/** What settling the second writer's lines gives the plan of `active.jsonl`. */
export interface RenumberedLines {
  /** New lines to append after the kept ones (line numbers past the file's end). */
  readonly appended: readonly PlannedLine[];
  /** The originals, to the quarantine. */
  readonly moved: readonly QuarantinedLine[];
  /** Their records as renumbered, in order. */
  readonly records: readonly MessageRecord[];
  /** The revision their lines carry: the repair's, above every revision in the file. */
  readonly revision: number;
}

const utf8 = new TextEncoder();

/**
 * Collects the message lines of `active.jsonl` whose sequence a different, kept message
 * already holds, and renumbers them once the kept chain is known.
 *
 * @example
 * ```ts
 * import type { MessageRecord } from "sessionfold";
 * declare const record: MessageRecord;
 * const second = new SecondWriterLines();
 * second.add({ line: 7, bytes: new TextEncoder().encode(JSON.stringify(record)) }, record);
 * const settled = second.settle([], 12, 4, () => 13);
 * settled?.records.map((r) => r.sequence); // [13]
 * ```
 */
export class SecondWriterLines {
  readonly #lines: { readonly line: PlannedLine; readonly record: MessageRecord }[] = [];

  /** Takes a line whose sequence is already kept by a different message. */
  add(line: PlannedLine, record: MessageRecord): void {
    this.#lines.push({ line, record });
  }

  /**
   * Renumbers what was taken after `lastSequence`, or `undefined` when nothing was.
   * `kept`: the messages that keep their sequences; `lastLine`: the file's last line number;
   * `revisionFor(last)`: the repair's revision once the session ends at sequence `last`.
   */
  settle(kept: readonly MessageRecord[], lastSequence: number, lastLine: number, revisionFor: (last: number) => number): RenumberedLines | undefined {
    if (this.#lines.length === 0) return undefined;
    const keptById = new Map(kept.map((record) => [record.message_id, record]));
    const moved: QuarantinedLine[] = [];
    const renumber: { line: PlannedLine; record: MessageRecord }[] = [];
    for (const taken of this.#lines) {
      const same = keptById.get(taken.record.message_id);
      if (same && sameMessage(same, taken.record)) {
        const reason =
          `message ${taken.record.message_id} committed a second time as sequence ${taken.record.sequence}, identical to the kept sequence ${same.sequence}`;
        moved.push({ line: taken.line.line, code: "duplicate", reason, bytes: taken.line.bytes.length, lineBytes: taken.line.bytes });
      } else {
        renumber.push(taken);
        keptById.set(taken.record.message_id, taken.record);
      }
    }
    const newest = Math.max(0, ...kept.map(lineRevision), ...this.#lines.map((t) => lineRevision(t.record)));
    const last = lastSequence + renumber.length;
    const revision = Math.max(revisionFor(last), newest + 1);
    const appended: PlannedLine[] = [];
    const records: MessageRecord[] = [];
    renumber.forEach(({ line, record }, i) => {
      const sequence = lastSequence + 1 + i;
      const raw = renumbered(JSON.parse(new TextDecoder().decode(line.bytes)) as Record<string, unknown>, sequence, revision);
      const reason = `sequence ${record.sequence} is held by a message written before it (another writer's); kept as sequence ${sequence}`;
      moved.push({ line: line.line, code: "renumbered", reason, bytes: line.bytes.length, lineBytes: line.bytes });
      appended.push({ line: lastLine + 1 + i, bytes: utf8.encode(JSON.stringify(raw)) });
      records.push({ ...record, sequence, [LINE_REVISION_FIELD]: revision } as MessageRecord);
    });
    moved.sort((a, b) => a.line - b.line);
    return { appended, moved, records, revision };
  }
}

/** The line's object with its new sequence (in place), no batch mark, and the repair's revision last (it ends every line). */
function renumbered(raw: Record<string, unknown>, sequence: number, revision: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) {
    if (key === BATCH_FIELD || key === LINE_REVISION_FIELD) continue;
    out[key] = key === "sequence" ? sequence : value;
  }
  out[LINE_REVISION_FIELD] = revision;
  return out;
}

/** Whether two records are one message: equal but for what each commit stamps (sequence, revision, batch mark, time). */
function sameMessage(a: MessageRecord, b: MessageRecord): boolean {
  const strip = (record: MessageRecord) => {
    const { sequence: _sequence, created_at: _at, [LINE_REVISION_FIELD]: _revision, [BATCH_FIELD]: _batch, ...rest } = record as
      & MessageRecord
      & Record<string, unknown>;
    return JSON.stringify(rest);
  };
  return strip(a) === strip(b);
}
