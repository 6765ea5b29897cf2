/**
 * Helpers shared by the session engine tests (test/session) and the run() tests
 * (test/run): the test session and writer identity, stepping clocks, a registry,
 * hand-written records in the exact bytes of docs/FORMAT.md, storage snapshots, a
 * full-history reader, a recording storage wrapper and promise helpers. Each suite's
 * own `support.ts` holds what only it needs. Not a test file itself.
 */
import { expect } from "vitest";
import {
  type FileTail,
  MemoryStorage,
  type MessageRecord,
  type Session,
  type SessionOptions,
  type SessionPaths,
  sessionPaths,
  type SessionRef,
  Sessions,
  type StoragePort,
  type WriteOptions,
  type WriterIdentity,
} from "../../core/mod.ts";

export const TS = "2026-12-02T13:00:00.000Z";
export const REF: SessionRef = { agentId: "a1", workspaceId: "w1", sessionId: "s1" };
export const P: SessionPaths = sessionPaths(REF);
export const IDENTITY: WriterIdentity = { pid: 4242, hostname: "test-host", runtime: "node" };

const encoder = new TextEncoder();
export const utf8 = (text: string): Uint8Array => encoder.encode(text);
export const decode = (bytes: Uint8Array | undefined): string | undefined => bytes === undefined ? undefined : new TextDecoder().decode(bytes);

// ---------------------------------------------------------------------------
// Clocks and the registry
// ---------------------------------------------------------------------------

/** A deterministic, monotonic clock that advances `stepMs` per call, from `start` (default 2026-12-02T13:00:00.000Z). */
export function steppingClock(start = Date.parse(TS), stepMs = 1000): () => number {
  let now = start - stepMs;
  return () => (now += stepMs);
}

/**
 * A clock that advances one millisecond per call. The run() tests use it: with it a
 * draft-flush interval spans many clock reads, where a one-second step would let every
 * flush through.
 */
export function millisecondClock(start = Date.parse(TS)): () => number {
  return steppingClock(start, 1);
}

/** A registry over `storage` with the test identity and `clock` (default: a one-second {@linkcode steppingClock}). */
export function registry(storage: StoragePort, defaults?: SessionOptions, clock: () => number = steppingClock()): Sessions {
  return new Sessions({ storage, identity: IDENTITY, clock, ...(defaults ? { defaults } : {}) });
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

/** A summary footer through `through`. */
export function footer(through: number, text = `summary of 1..${through}`, sessionId = REF.sessionId): Record<string, unknown> {
  return { record_type: "summary", session_id: sessionId, summary_id: `sum_${through}`, through_sequence: through, text, created_at: TS };
}

/** One JSONL line. */
export const line = (record: unknown): string => `${JSON.stringify(record)}\n`;
/** Several JSONL lines. */
export const lines = (records: readonly unknown[]): string => records.map(line).join("");

/**
 * JSONL text with the `revision` each committed message line carries (docs/FORMAT.md) left
 * out, to compare a file with the records a handle shows.
 */
export function withoutLineRevisions(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  return text
    .split("\n")
    .map((l) => {
      if (l === "") return l;
      const record = JSON.parse(l) as Record<string, unknown>;
      if (record["record_type"] !== "message" || !("revision" in record)) return l;
      const { revision: _revision, ...rest } = record;
      return JSON.stringify(rest);
    })
    .join("\n");
}

/** `000000000001-000000000450.jsonl` */
export function segmentName(start: number, end: number): string {
  return `${String(start).padStart(12, "0")}-${String(end).padStart(12, "0")}.jsonl`;
}

/** A pretty-printed `meta.json` document, as the engine writes it. */
export function metaText(fields: Record<string, unknown>): string {
  return `${JSON.stringify(fields, null, 2)}\n`;
}

/**
 * A consistent meta record for a hand-written session. `title` defaults to
 * `"hand-written"`; `null` writes a record without a title.
 */
export function metaFields(
  fields: { message_count: number; history_bytes: number; revision: number } & Record<string, unknown>,
  ref: SessionRef = REF,
  title: string | null = "hand-written",
): Record<string, unknown> {
  return {
    schema_version: 1,
    session_id: ref.sessionId,
    agent_id: ref.agentId,
    workspace_id: ref.workspaceId,
    ...(title !== null ? { title } : {}),
    created_at: TS,
    updated_at: TS,
    ...fields,
  };
}

// ---------------------------------------------------------------------------
// Storage inspection
// ---------------------------------------------------------------------------

/** Every file under `root` (default: the whole store; a file's path: that file) with its bytes as a binary string. */
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

/** The parsed `meta.json` on storage. */
export async function metaOnDisk(storage: StoragePort, paths: SessionPaths = P): Promise<Record<string, unknown>> {
  const text = await readText(storage, paths.meta);
  expect(text, "meta.json exists").toBeDefined();
  return JSON.parse(text!) as Record<string, unknown>;
}

/** Every committed message of a session, oldest first, paging back through the segments. */
export async function fullHistory(session: Session): Promise<MessageRecord[]> {
  const pages: MessageRecord[][] = [];
  let page = await session.messages();
  let before = page[0]?.sequence ?? (session.newestSegment?.end ?? 0) + 1;
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
 * A transparent {@linkcode StoragePort} wrapper that records every call. Three optional
 * hooks: `before` looks at the inner store at the moment a call is made, `delay` may
 * return a promise the call waits for before it reaches the inner store (a slow disk),
 * and `after` runs once the inner call resolved.
 */
export class RecordingStorage implements StoragePort {
  readonly inner: StoragePort;
  calls: StorageCall[] = [];
  /** Runs before each call reaches the inner store. */
  before: ((call: StorageCall, inner: StoragePort) => Promise<void> | void) | undefined;
  /** A promise to wait for before the call reaches the inner store, or `undefined` for none. */
  delay: ((call: StorageCall) => Promise<void> | undefined) | undefined;
  /** Runs once the inner call resolved. */
  after: ((call: StorageCall) => void) | undefined;

  constructor(inner: StoragePort) {
    this.inner = inner;
  }

  reset(): void {
    this.calls = [];
  }

  /** Calls of `op` on exactly `path`. */
  count(op: CallName, path: string): number {
    return this.calls.filter((c) => c.op === op && c.path === path).length;
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
    if (this.before) await this.before(call, this.inner);
    const wait = this.delay?.(call);
    if (wait) await wait;
    const result = await run();
    this.after?.(call);
    return result;
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
  replace(path: string, bytes: Uint8Array, options?: WriteOptions): Promise<void> {
    return this.#record({ op: "replace", path, bytes: bytes.slice() }, () => this.inner.replace(path, bytes, options));
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
// Promises
// ---------------------------------------------------------------------------

/** A promise with its resolve and reject functions exposed. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void; reject: (error: unknown) => void } {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/**
 * Awaits `promise` (or the promise `promise()` returns) expecting a rejection with an
 * error of `type` (and `code`); returns the error.
 */
export async function rejection<E extends Error>(
  promise: Promise<unknown> | (() => Promise<unknown>),
  type: abstract new (...args: never[]) => E,
  code?: string,
): Promise<E> {
  let error: unknown;
  let resolved = false;
  try {
    await (typeof promise === "function" ? promise() : promise);
    resolved = true;
  } catch (thrown) {
    error = thrown;
  }
  expect(resolved, `expected a rejection with ${type.name}`).toBe(false);
  expect(error, `expected a ${type.name}, got ${String(error)}`).toBeInstanceOf(type);
  if (code !== undefined) expect((error as { code?: unknown }).code).toBe(code);
  return error as E;
}
