/**
 * Synthetic histories for the benchmarks, built without committing: deterministic
 * message records, and a writer that lays out a whole session tree per docs/FORMAT.md
 * (closed segments of `SEGMENT_SIZE` messages, each ending in its cumulative summary
 * footer, a bounded Active window and `meta.json`) through any `(path, bytes)` sink.
 *
 * Web-standard APIs only: the browser bench page imports it too.
 *
 * @module
 */
import { prng } from "../../support/prng.ts";
import { type MessageRecord, type SessionMeta, sessionPaths, type SessionRef, type SummaryRecord } from "../../../core/mod.ts";
import { NEWEST_SEGMENT_FIELD } from "../../../core/internal.ts";
import { BENCH_PROVIDER, BENCH_REF, COMPACTED_REF } from "./bench-ref.ts";
import { BENCH_SYSTEM } from "./plain-jsonl.ts";

export { BENCH_PROVIDER, BENCH_REF, COMPACTED_REF };

/** Messages per closed segment. */
export const SEGMENT_SIZE = 500;
/** Messages left in Active (the bounded window the next model call reads). */
export const ACTIVE_SIZE = 100;
/**
 * Active of the histories the flatness rows of case 1 compare: half of 10², where
 * sessionfold's own compaction of a 10²-message Active cuts (docs/FORMAT.md "Compaction"), so
 * that every size, 10² included, is a compacted session with the same Active and an equal
 * footer: the same open whatever the history length (test/bench/notes.md, case 1).
 */
export const COMPACTED_ACTIVE_SIZE = 50;

const BASE_TIME = Date.UTC(2026, 0, 1);
const WORDS = (
  "the a build test file session compaction summary agent model token stream worker commit append " +
  "segment footer history context window error fixed reads writes durable index async await type " +
  "function returns value path folder lock revision message user assistant tool output input cache"
).split(" ");

/** Deterministic text of about `chars` characters (words from a small vocabulary). */
export function syntheticText(seed: number, chars: number): string {
  const next = prng(seed);
  let text = "";
  while (text.length < chars) text += (text ? " " : "") + WORDS[Math.floor(next() * WORDS.length)];
  return `${text}.`;
}

/** ISO timestamp of message `sequence` (one per second from 2026-01-01). */
export function timestampOf(sequence: number): string {
  return new Date(BASE_TIME + sequence * 1000).toISOString();
}

/** Text length of the synthetic messages of case 1: about 280 bytes per JSONL line. */
export const HISTORY_TEXT_CHARS = 120;

/**
 * Message `sequence` of a synthetic history: odd sequences are the user's, even ones the
 * assistant's (with usage and provider, as a real reply has).
 */
export function syntheticMessage(sequence: number, textChars = HISTORY_TEXT_CHARS): MessageRecord {
  const text = syntheticText(sequence, textChars);
  const id = `m_${sequence.toString(36).padStart(8, "0")}`;
  if (sequence % 2 === 1) {
    return { record_type: "message", sequence, message_id: id, role: "user", created_at: timestampOf(sequence), parts: [{ sequence: 1, type: "text", text }] };
  }
  return {
    record_type: "message",
    sequence,
    message_id: id,
    role: "assistant",
    created_at: timestampOf(sequence),
    status: "completed",
    parts: [{ sequence: 1, type: "text", text }],
    usage: { input_tokens: 900 + (sequence % 97), output_tokens: 40 + (sequence % 13), total_tokens: 940 + (sequence % 97) + (sequence % 13) },
    provider: { ...BENCH_PROVIDER },
  };
}

/** The cumulative summary footer closing a segment at `through`. */
export function syntheticFooter(sessionId: string, through: number): SummaryRecord {
  return {
    record_type: "summary",
    session_id: sessionId,
    summary_id: `sum_${through.toString(36).padStart(8, "0")}`,
    through_sequence: through,
    text: `Summary of messages 1..${through}: ${syntheticText(through + 7, 600)}`,
    created_at: timestampOf(through),
  };
}

/** The shape of a synthetic history of `n` messages: closed segments, then Active. */
export interface HistoryPlan {
  readonly n: number;
  readonly segments: readonly { readonly start: number; readonly end: number }[];
  readonly active: { readonly start: number; readonly end: number };
}

/** Segments of {@linkcode SEGMENT_SIZE} (the last one may be shorter) cover all but the last `activeSize` messages. */
export function historyPlan(n: number, activeSize = ACTIVE_SIZE): HistoryPlan {
  const activeCount = Math.min(n, activeSize);
  const closed = n - activeCount;
  const segments: { start: number; end: number }[] = [];
  for (let start = 1; start <= closed; start += SEGMENT_SIZE) segments.push({ start, end: Math.min(closed, start + SEGMENT_SIZE - 1) });
  return { n, segments, active: { start: closed + 1, end: n } };
}

const encoder = new TextEncoder();

function lines(records: readonly unknown[]): string {
  let text = "";
  for (const record of records) text += `${JSON.stringify(record)}\n`;
  return text;
}

/** Bytes of one closed segment file: its messages, then its footer. */
export function segmentBytes(range: { start: number; end: number }, sessionId = BENCH_REF.sessionId): Uint8Array {
  const records: unknown[] = [];
  for (let s = range.start; s <= range.end; s++) records.push(syntheticMessage(s));
  records.push(syntheticFooter(sessionId, range.end));
  return encoder.encode(lines(records));
}

/** Bytes of `active.jsonl` for the plan. */
export function activeBytes(plan: HistoryPlan): Uint8Array {
  const records: unknown[] = [];
  for (let s = plan.active.start; s <= plan.active.end; s++) records.push(syntheticMessage(s));
  return encoder.encode(lines(records));
}

/** Where a synthetic session's files go: a storage key (docs/FORMAT.md path) and its bytes. */
export type FileSink = (path: string, bytes: Uint8Array) => Promise<void>;

/**
 * Writes a whole synthetic session of `n` messages through `sink`, meta.json last, and
 * returns the bytes of every `.jsonl` file (= `history_bytes`). Nothing is committed:
 * the files are exactly what `n` commits and `floor(…/500)` compactions would leave, with
 * `activeSize` messages left in Active.
 */
export async function writeSyntheticSession(sink: FileSink, n: number, ref: SessionRef = BENCH_REF, activeSize = ACTIVE_SIZE): Promise<number> {
  const plan = historyPlan(n, activeSize);
  const paths = sessionPaths(ref);
  let historyBytes = 0;
  for (const range of plan.segments) {
    const bytes = segmentBytes(range, ref.sessionId);
    historyBytes += bytes.length;
    await sink(paths.segment(range), bytes);
  }
  const active = activeBytes(plan);
  historyBytes += active.length;
  await sink(paths.active, active);
  await sink(paths.instruction, encoder.encode(BENCH_SYSTEM));
  const meta: SessionMeta = {
    schema_version: 1,
    session_id: ref.sessionId,
    agent_id: ref.agentId,
    workspace_id: ref.workspaceId,
    title: `synthetic ${n}`,
    created_at: timestampOf(0),
    updated_at: timestampOf(n),
    message_count: n,
    history_bytes: historyBytes,
    revision: n + plan.segments.length,
    ...(plan.segments.length > 0
      ? {
        compaction: { completed: plan.segments.length, removed_messages: n - (plan.active.end - plan.active.start + 1), removed_tokens_estimate: 0 },
        // What sessionfold's own compactions write: the newest segment, so an open need not list segments/.
        [NEWEST_SEGMENT_FIELD]: plan.segments.at(-1),
      }
      : {}),
  };
  await sink(paths.meta, encoder.encode(`${JSON.stringify(meta, null, 2)}\n`));
  return historyBytes;
}

/**
 * The same history as one plain JSONL file (segments' lines, footers included, then
 * Active's), streamed in pieces of about `pieceBytes` so no giant buffer is built.
 */
export async function writePlainJsonl(append: (bytes: Uint8Array) => Promise<void>, n: number, pieceBytes = 4 << 20): Promise<number> {
  const plan = historyPlan(n);
  let pending: Uint8Array[] = [];
  let pendingBytes = 0;
  let total = 0;
  const flush = async () => {
    if (pendingBytes === 0) return;
    const out = new Uint8Array(pendingBytes);
    let offset = 0;
    for (const piece of pending) {
      out.set(piece, offset);
      offset += piece.length;
    }
    pending = [];
    pendingBytes = 0;
    await append(out);
  };
  const push = async (bytes: Uint8Array) => {
    pending.push(bytes);
    pendingBytes += bytes.length;
    total += bytes.length;
    if (pendingBytes >= pieceBytes) await flush();
  };
  for (const range of plan.segments) await push(segmentBytes(range));
  await push(activeBytes(plan));
  await flush();
  return total;
}

/** `10^k` as a short label: 100 → "1e2". */
export function sizeLabel(n: number): string {
  const k = Math.log10(n);
  return Number.isInteger(k) ? `1e${k}` : String(n);
}
