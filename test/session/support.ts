/**
 * Helpers of the session engine tests only: hand-written on-disk states in the exact
 * bytes of docs/FORMAT.md, meta consistency checks, deterministic summarizers and new
 * messages. The helpers shared with the run() tests (registry, clocks, recording
 * storage, snapshots, hand-written records) are in ../support/session.ts.
 * Not a test file itself.
 */
import { expect } from "vitest";
import {
  type MessageRecord,
  type SessionPaths,
  sessionPaths,
  type SessionRef,
  type StoragePort,
  type Summarizer,
  type SummaryRequest,
  type SummaryResult,
} from "../../core/mod.ts";
import type { Session } from "../../core/session/session.ts";
import { footer, fullHistory, line, lines, metaFields, metaOnDisk, metaText, msg, REF, segmentName, TS, utf8 } from "../support/session.ts";

export const REF_STRING = "a1/w1/s1";
export const ACTIVE = "messages/active.jsonl";
export const DRAFT = "messages/assistant_message.json";
/** The ISO-8601 UTC-with-milliseconds shape docs/FORMAT.md requires. */
export const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

export const byteLength = (text: string): number => utf8(text).length;

// ---------------------------------------------------------------------------
// Records, written by hand
// ---------------------------------------------------------------------------

/** Messages `from..to`, inclusive. */
export function msgs(from: number, to: number): MessageRecord[] {
  const out: MessageRecord[] = [];
  for (let s = from; s <= to; s++) out.push(msg(s));
  return out;
}

/** The bytes of a segment `start..end` with its footer. */
export function segmentText(start: number, end: number, text?: string): string {
  return lines(msgs(start, end)) + line(footer(end, text));
}

/** The content of a `writer.lock` written by another process. */
export const FOREIGN_LOCK = {
  pid: 9999,
  hostname: "other-host",
  runtime: "node",
  operation: "append",
  created_at: "2026-12-01T08:30:00.000Z",
};

/** A hand-written streaming draft with a pending (uncommitted) user message, as `run()` writes it. */
export function draftText(draftSequence: number, options: { id?: string; pendingIds?: string[]; parts?: unknown[] } = {}): string {
  const pendingIds = options.pendingIds ?? ["m_pending"];
  const pending = pendingIds.map((id, i) => ({
    record_type: "message",
    sequence: draftSequence - pendingIds.length + i,
    message_id: id,
    role: "user",
    created_at: TS,
    parts: [{ sequence: 1, type: "text", text: `pending question ${i + 1}` }],
  }));
  const draft = {
    record_type: "message",
    sequence: draftSequence,
    message_id: options.id ?? "m_draft",
    role: "assistant",
    created_at: TS,
    status: "streaming",
    parts: options.parts ?? DRAFT_PARTS,
    provider: { provider: "openai", api: "responses", model: "gpt-5" },
    pending_messages: pending,
  };
  return `${JSON.stringify(draft)}\n`;
}

export const DRAFT_PARTS = [
  { sequence: 1, type: "reasoning", text: "let me think" },
  { sequence: 2, type: "text", text: "Here is the first half" },
  { sequence: 3, type: "tool", tool_call_id: "c1", tool_name: "read", state: "input-available", input: { path: "a.txt" } },
  { sequence: 4, type: "text", text: " and more" },
];

export interface HandWrittenSession {
  /** Segments as [start, end] (contiguous from 1); their messages are `msg(s)`. */
  segments?: [number, number][];
  /** Active's messages; default: none. */
  active?: MessageRecord[];
  /** Raw bytes appended after Active's lines (a torn tail, say). */
  activeSuffix?: string;
  /** Replaces the whole of `active.jsonl`. */
  activeText?: string;
  draft?: string;
  instruction?: string;
  /** `null` writes no meta.json; fields override the consistent ones. */
  meta?: Record<string, unknown> | null;
  revision?: number;
  ref?: SessionRef;
  place?: "live" | "archived";
}

/**
 * Writes a session's files by hand. Without overrides `meta.json` is consistent: the
 * message count is the last sequence and `history_bytes` the bytes of every `.jsonl` file.
 */
export async function writeSession(storage: StoragePort, spec: HandWrittenSession = {}): Promise<SessionPaths> {
  const paths = sessionPaths(spec.ref ?? REF, spec.place ?? "live");
  let historyBytes = 0;
  let last = 0;
  for (const [start, end] of spec.segments ?? []) {
    const text = segmentText(start, end);
    await storage.replace(`${paths.segmentsDir}/${segmentName(start, end)}`, utf8(text));
    historyBytes += byteLength(text);
    last = end;
  }
  const activeText = spec.activeText ?? lines(spec.active ?? []) + (spec.activeSuffix ?? "");
  if (activeText.length > 0 || spec.active !== undefined) {
    await storage.replace(paths.active, utf8(activeText));
    historyBytes += byteLength(activeText);
  }
  last = spec.active?.at(-1)?.sequence ?? last;
  if (spec.draft !== undefined) await storage.replace(paths.draft, utf8(spec.draft));
  if (spec.instruction !== undefined) await storage.replace(paths.instruction, utf8(spec.instruction));
  if (spec.meta !== null) {
    const meta = metaFields({ message_count: last, history_bytes: historyBytes, revision: spec.revision ?? last, ...spec.meta }, spec.ref ?? REF);
    await storage.replace(paths.meta, utf8(metaText(meta)));
  }
  return paths;
}

// ---------------------------------------------------------------------------
// Storage inspection
// ---------------------------------------------------------------------------

/** The sum of the bytes of every `.jsonl` file of a session, as found on storage. */
export async function historyBytesOnDisk(storage: StoragePort, paths: SessionPaths): Promise<number> {
  let total = (await storage.read(paths.active))?.length ?? 0;
  for (const name of await storage.list(paths.segmentsDir)) total += (await storage.read(`${paths.segmentsDir}/${name}`))?.length ?? 0;
  return total;
}

/** Asserts that `meta.json` on storage matches the files: message count, history bytes, and the handle's view. */
export async function expectMetaConsistent(storage: StoragePort, session: Session): Promise<void> {
  const meta = await metaOnDisk(storage, session.paths);
  const history = await fullHistory(session);
  expect(meta["message_count"]).toBe(history.length);
  expect(meta["history_bytes"]).toBe(await historyBytesOnDisk(storage, session.paths));
  expect(meta["revision"]).toBe(session.revision);
  expect(session.meta).toEqual(meta);
}

// ---------------------------------------------------------------------------
// Summarizers
// ---------------------------------------------------------------------------

export interface RecordingSummarizer extends Summarizer {
  readonly calls: SummaryRequest[];
}

/** A summarizer that records its calls and answers with `answer(request)` (default: ids folded into the previous summary). */
export function summarizer(answer?: (request: SummaryRequest) => SummaryResult | Promise<SummaryResult>): RecordingSummarizer {
  const calls: SummaryRequest[] = [];
  return {
    calls,
    async summarize(request) {
      calls.push(request);
      if (answer) return answer(request);
      const ids = request.messages.map((m) => m.sequence).join(",");
      return { text: `${request.previousSummary ?? ""}[${ids}]` };
    },
  };
}

/** A user message to append. */
export function user(text: string, id?: string): { role: "user"; parts: { type: "text"; text: string }[]; message_id?: string } {
  return { role: "user", parts: [{ type: "text", text }], ...(id !== undefined ? { message_id: id } : {}) };
}

/** An assistant message to append. */
export function assistant(text: string, id?: string): { role: "assistant"; parts: { type: "text"; text: string }[]; message_id?: string } {
  return { role: "assistant", parts: [{ type: "text", text }], ...(id !== undefined ? { message_id: id } : {}) };
}
