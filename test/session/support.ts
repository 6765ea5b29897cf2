/**
 * Shared helpers of the session engine tests: hand-written on-disk states in the exact
 * bytes of FORMAT.md, a recording storage wrapper, storage snapshots, deterministic
 * clocks and summarizers, and a full-history reader. Not a test file itself.
 */
import { expect } from "vitest";
import {
  MemoryStorage,
  Sessions,
  sessionPaths,
  type FileTail,
  type MessageRecord,
  type SessionOptions,
  type SessionPaths,
  type SessionRef,
  type StorageCapabilities,
  type StoragePort,
  type Summarizer,
  type SummaryRequest,
  type SummaryResult,
  type WriterIdentity,
} from "../../core/mod.ts";
import type { Session } from "../../core/session/session.ts";

export const TS = "2026-12-02T13:00:00.000Z";
export const REF: SessionRef = { agentId: "a1", workspaceId: "w1", sessionId: "s1" };
export const REF_STRING = "a1/w1/s1";
export const P: SessionPaths = sessionPaths(REF);
export const ACTIVE = "messages/active.jsonl";
export const DRAFT = "messages/assistant_message.json";
export const IDENTITY: WriterIdentity = { pid: 4242, hostname: "test-host", runtime: "node" };
/** The ISO-8601 UTC-with-milliseconds shape FORMAT.md requires. */
export const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

const encoder = new TextEncoder();
export const utf8 = (text: string): Uint8Array => encoder.encode(text);
export const byteLength = (text: string): number => encoder.encode(text).length;
export const decode = (bytes: Uint8Array | undefined): string | undefined =>
  bytes === undefined ? undefined : new TextDecoder().decode(bytes);

/** A clock that advances one second per call, from 2026-12-02T13:00:00.000Z. */
export function steppingClock(start = Date.parse(TS)): () => number {
  let now = start - 1000;
  return () => (now += 1000);
}

/** A registry over `storage` with the test identity and a stepping clock. */
export function registry(storage: StoragePort, defaults?: SessionOptions): Sessions {
  return new Sessions({ storage, identity: IDENTITY, clock: steppingClock(), ...(defaults ? { defaults } : {}) });
}

// ---------------------------------------------------------------------------
// Records, written by hand
// ---------------------------------------------------------------------------

/** A committed message record: odd sequences are users, even ones completed assistants. */
export function msg(sequence: number, extra: Record<string, unknown> = {}): MessageRecord {
  const assistant = sequence % 2 === 0;
  return {
    record_type: "message",
    sequence,
    message_id: `m_${sequence}`,
    role: assistant ? "assistant" : "user",
    created_at: TS,
    ...(assistant ? { status: "completed" } : {}),
    parts: [{ sequence: 1, type: "text", text: `message ${sequence}` }],
    ...extra,
  } as MessageRecord;
}

/** Messages `from..to`, inclusive. */
export function msgs(from: number, to: number): MessageRecord[] {
  const out: MessageRecord[] = [];
  for (let s = from; s <= to; s++) out.push(msg(s));
  return out;
}

/** A summary footer through `through`. */
export function footer(through: number, text = `summary of 1..${through}`, sessionId = "s1"): Record<string, unknown> {
  return { record_type: "summary", session_id: sessionId, summary_id: `sum_${through}`, through_sequence: through, text, created_at: TS };
}

/** One JSONL line. */
export const line = (record: unknown): string => `${JSON.stringify(record)}\n`;
/** Several JSONL lines. */
export const lines = (records: readonly unknown[]): string => records.map(line).join("");

/** The bytes of a segment `start..end` with its footer. */
export function segmentText(start: number, end: number, text?: string): string {
  return lines(msgs(start, end)) + line(footer(end, text));
}

/** `000000000001-000000000450.jsonl` */
export function segmentName(start: number, end: number): string {
  return `${String(start).padStart(12, "0")}-${String(end).padStart(12, "0")}.jsonl`;
}

/** A pretty-printed `meta.json` document, as the engine writes it. */
export function metaText(fields: Record<string, unknown>): string {
  return `${JSON.stringify(fields, null, 2)}\n`;
}

/** A consistent meta record for a hand-written session. */
export function metaFields(fields: { message_count: number; history_bytes: number; revision: number } & Record<string, unknown>, ref: SessionRef = REF): Record<string, unknown> {
  return {
    schema_version: 1,
    session_id: ref.sessionId,
    agent_id: ref.agentId,
    workspace_id: ref.workspaceId,
    title: "hand-written",
    created_at: TS,
    updated_at: TS,
    ...fields,
  };
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

/** Every file under `root` (default: the whole store) with its bytes as a binary string. */
export async function snapshot(storage: StoragePort, root = ""): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (dir: string): Promise<void> => {
    for (const name of await storage.list(dir)) {
      const path = dir === "" ? name : `${dir}/${name}`;
      const bytes = await storage.read(path);
      if (bytes !== undefined) out[path] = Buffer.from(bytes).toString("binary");
      else await walk(path);
    }
  };
  if (root !== "" && (await storage.read(root)) !== undefined) {
    out[root] = Buffer.from((await storage.read(root))!).toString("binary");
    return out;
  }
  await walk(root);
  return out;
}

/** A fresh MemoryStorage holding a copy of every file of `storage`. */
export async function cloneStorage(storage: StoragePort): Promise<MemoryStorage> {
  return restoreStorage(await snapshot(storage));
}

/** A fresh MemoryStorage holding the files of a {@linkcode snapshot}. */
export async function restoreStorage(files: Record<string, string>): Promise<MemoryStorage> {
  const copy = new MemoryStorage();
  for (const [path, binary] of Object.entries(files)) await copy.replace(path, Buffer.from(binary, "binary"));
  return copy;
}

/** Text of a file, or `undefined`. */
export async function readText(storage: StoragePort, path: string): Promise<string | undefined> {
  return decode(await storage.read(path));
}

/** The sum of the bytes of every `.jsonl` file of a session, as found on storage. */
export async function historyBytesOnDisk(storage: StoragePort, paths: SessionPaths): Promise<number> {
  let total = (await storage.read(paths.active))?.length ?? 0;
  for (const name of await storage.list(paths.segmentsDir)) total += (await storage.read(`${paths.segmentsDir}/${name}`))?.length ?? 0;
  return total;
}

/** The parsed `meta.json` on storage. */
export async function metaOnDisk(storage: StoragePort, paths: SessionPaths = P): Promise<Record<string, unknown>> {
  const text = await readText(storage, paths.meta);
  expect(text, "meta.json exists").toBeDefined();
  return JSON.parse(text!) as Record<string, unknown>;
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

/** Every committed message of a session, oldest first, paging back through the segments. */
export async function fullHistory(session: Session): Promise<MessageRecord[]> {
  const pages: MessageRecord[][] = [];
  let page = await session.messages();
  let before = page[0]?.sequence ?? (session.segments.at(-1)?.end ?? 0) + 1;
  pages.unshift(page);
  for (;;) {
    page = await session.messages({ beforeSequence: before });
    if (page.length === 0) break;
    pages.unshift(page);
    before = page[0]!.sequence;
  }
  return pages.flat();
}

/** Asserts sequences 1..n, contiguous, and unique message ids. */
export function expectContiguous(history: readonly MessageRecord[]): void {
  expect(history.map((m) => m.sequence)).toEqual(history.map((_, i) => i + 1));
  expect(new Set(history.map((m) => m.message_id)).size).toBe(history.length);
}

// ---------------------------------------------------------------------------
// A recording storage wrapper
// ---------------------------------------------------------------------------

export type CallName = "read" | "readTail" | "list" | "replace" | "append" | "createExclusive" | "truncate" | "remove" | "move";

export interface StorageCall {
  readonly op: CallName;
  readonly path: string;
  readonly to?: string;
  readonly bytes?: Uint8Array;
  readonly maxBytes?: number;
  readonly length?: number;
}

export const MUTATING: ReadonlySet<CallName> = new Set(["replace", "append", "createExclusive", "truncate", "remove", "move"]);

/**
 * A transparent {@linkcode StoragePort} wrapper that records every call, and lets a
 * test look at the inner store at the moment a call is made (`before`).
 */
export class RecordingStorage implements StoragePort {
  readonly inner: StoragePort;
  readonly capabilities: StorageCapabilities;
  calls: StorageCall[] = [];
  /** Runs before each call reaches the inner store. */
  before: ((call: StorageCall, inner: StoragePort) => Promise<void> | void) | undefined;

  constructor(inner: StoragePort) {
    this.inner = inner;
    this.capabilities = inner.capabilities;
  }

  reset(): void {
    this.calls = [];
  }

  /** The mutating calls, as `op path` strings (paths relative to `base` when given). */
  mutations(base = ""): string[] {
    return this.calls.filter((c) => MUTATING.has(c.op)).map((c) => describeCall(c, base));
  }

  /** Every call as `op path`. */
  described(base = ""): string[] {
    return this.calls.map((c) => describeCall(c, base));
  }

  async #record<T>(call: StorageCall, run: () => Promise<T>): Promise<T> {
    this.calls.push(call);
    await this.before?.(call, this.inner);
    return run();
  }

  read(path: string): Promise<Uint8Array | undefined> {
    return this.#record({ op: "read", path }, () => this.inner.read(path));
  }
  readTail(path: string, maxBytes: number): Promise<FileTail | undefined> {
    return this.#record({ op: "readTail", path, maxBytes }, () => this.inner.readTail(path, maxBytes));
  }
  list(dir: string): Promise<string[]> {
    return this.#record({ op: "list", path: dir }, () => this.inner.list(dir));
  }
  replace(path: string, bytes: Uint8Array): Promise<void> {
    return this.#record({ op: "replace", path, bytes: bytes.slice() }, () => this.inner.replace(path, bytes));
  }
  append(path: string, bytes: Uint8Array): Promise<void> {
    return this.#record({ op: "append", path, bytes: bytes.slice() }, () => this.inner.append(path, bytes));
  }
  createExclusive(path: string, bytes: Uint8Array): Promise<boolean> {
    return this.#record({ op: "createExclusive", path, bytes: bytes.slice() }, () => this.inner.createExclusive(path, bytes));
  }
  truncate(path: string, length: number): Promise<void> {
    return this.#record({ op: "truncate", path, length }, () => this.inner.truncate(path, length));
  }
  remove(path: string): Promise<void> {
    return this.#record({ op: "remove", path }, () => this.inner.remove(path));
  }
  move(from: string, to: string): Promise<boolean> {
    return this.#record({ op: "move", path: from, to }, () => this.inner.move(from, to));
  }
}

function describeCall(call: StorageCall, base: string): string {
  const rel = (p: string) => (base !== "" && p.startsWith(`${base}/`) ? p.slice(base.length + 1) : p);
  return `${call.op} ${rel(call.path)}${call.to !== undefined ? ` -> ${rel(call.to)}` : ""}`;
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

/** A promise with its resolve function exposed. */
export function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void; reject: (error: unknown) => void } {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A user message to append. */
export function user(text: string, id?: string): { role: "user"; parts: { type: "text"; text: string }[]; message_id?: string } {
  return { role: "user", parts: [{ type: "text", text }], ...(id !== undefined ? { message_id: id } : {}) };
}

/** An assistant message to append. */
export function assistant(text: string, id?: string): { role: "assistant"; parts: { type: "text"; text: string }[]; message_id?: string } {
  return { role: "assistant", parts: [{ type: "text", text }], ...(id !== undefined ? { message_id: id } : {}) };
}

/** Awaits `promise` expecting a rejection with an error of `type` and `code`; returns it. */
export async function rejection<E extends Error>(promise: Promise<unknown> | (() => Promise<unknown>), type: new (...args: never[]) => E, code?: string): Promise<E> {
  let error: unknown;
  try {
    await (typeof promise === "function" ? promise() : promise);
  } catch (thrown) {
    error = thrown;
  }
  expect(error, `expected a ${type.name}`).toBeInstanceOf(type);
  if (code !== undefined) expect((error as { code?: unknown }).code).toBe(code);
  return error as E;
}
