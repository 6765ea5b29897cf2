/**
 * Shared helpers of the run() tests: a registry with a deterministic clock, a recording
 * storage wrapper, storage snapshots, hand-written sessions, and event helpers.
 * Not a test file itself.
 */
import { expect } from "vitest";
import {
  MemoryStorage,
  Sessions,
  sessionPaths,
  type FileTail,
  type MessageRecord,
  type RunEvent,
  type RunHandle,
  type RunOutcome,
  type Session,
  type SessionOptions,
  type SessionPaths,
  type SessionRef,
  type StorageCapabilities,
  type StoragePort,
  type WriterIdentity,
} from "../../core/mod.ts";

export const TS = "2026-12-02T13:00:00.000Z";
export const REF: SessionRef = { agentId: "a1", workspaceId: "w1", sessionId: "s1" };
export const P: SessionPaths = sessionPaths(REF);
export const IDENTITY: WriterIdentity = { pid: 4242, hostname: "test-host", runtime: "node" };

const encoder = new TextEncoder();
export const utf8 = (text: string): Uint8Array => encoder.encode(text);
export const decode = (bytes: Uint8Array | undefined): string | undefined => (bytes === undefined ? undefined : new TextDecoder().decode(bytes));

/** A clock that advances one millisecond per call (deterministic, monotonic). */
export function steppingClock(start = Date.parse(TS)): () => number {
  let now = start - 1;
  return () => (now += 1);
}

/** A registry over `storage` with the test identity and a stepping clock. */
export function registry(storage: StoragePort, defaults?: SessionOptions, clock: () => number = steppingClock()): Sessions {
  return new Sessions({ storage, identity: IDENTITY, clock, ...(defaults ? { defaults } : {}) });
}

/** Creates session a1/w1/s1 (optionally with an instruction) and returns it opened with `options`. */
export async function createSession(storage: StoragePort, options: SessionOptions = {}, instruction?: string): Promise<{ sessions: Sessions; session: Session }> {
  const sessions = registry(storage, options);
  const session = await sessions.create({ ...REF, ...(instruction !== undefined ? { instruction } : {}) }, options);
  return { sessions, session };
}

/** Collects every event of a run by iterating it; returns events and the settled result (or error). */
export async function drain(run: RunHandle): Promise<{ events: RunEvent[]; outcome?: RunOutcome; error?: unknown }> {
  const events: RunEvent[] = [];
  let error: unknown;
  try {
    for await (const event of run) events.push(event);
  } catch (thrown) {
    error = thrown;
  }
  if (error !== undefined) return { events, error };
  return { events, outcome: await run.result };
}

/** The events' types, with text deltas collapsed into one `text-delta*` entry per run of them. */
export function shape(events: readonly RunEvent[]): string[] {
  const out: string[] = [];
  for (const event of events) {
    const name = event.type === "text-delta" || event.type === "reasoning-delta" ? `${event.type}*` : event.type;
    if (out.at(-1) === name && name.endsWith("*")) continue;
    out.push(name);
  }
  return out;
}

/** Awaits `promise` expecting a rejection of `type` (and `code`); returns the error. */
export async function rejection<E extends Error>(promise: Promise<unknown>, type: abstract new (...args: never[]) => E, code?: string): Promise<E> {
  let error: unknown;
  let resolved = false;
  try {
    await promise;
    resolved = true;
  } catch (thrown) {
    error = thrown;
  }
  expect(resolved, `expected a rejection with ${type.name}`).toBe(false);
  expect(error, `expected a ${type.name}, got ${String(error)}`).toBeInstanceOf(type);
  if (code !== undefined) expect((error as { code?: unknown }).code).toBe(code);
  return error as E;
}

/** Every file of `storage` under `root` with its content as text. */
export async function snapshot(storage: StoragePort, root = ""): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (dir: string): Promise<void> => {
    for (const name of await storage.list(dir)) {
      const path = dir === "" ? name : `${dir}/${name}`;
      const bytes = await storage.read(path);
      if (bytes !== undefined) out[path] = decode(bytes)!;
      else await walk(path);
    }
  };
  await walk(root);
  return out;
}

/** A fresh MemoryStorage holding a copy of `files`. */
export async function restore(files: Record<string, string>): Promise<MemoryStorage> {
  const copy = new MemoryStorage();
  for (const [path, text] of Object.entries(files)) await copy.replace(path, utf8(text));
  return copy;
}

export async function readText(storage: StoragePort, path: string): Promise<string | undefined> {
  return decode(await storage.read(path));
}

/** The parsed meta.json on storage. */
export async function metaOnDisk(storage: StoragePort, paths: SessionPaths = P): Promise<Record<string, unknown>> {
  const text = await readText(storage, paths.meta);
  expect(text, "meta.json exists").toBeDefined();
  return JSON.parse(text!) as Record<string, unknown>;
}

/** The records of active.jsonl on storage. */
export async function activeOnDisk(storage: StoragePort, paths: SessionPaths = P): Promise<Record<string, unknown>[]> {
  const text = (await readText(storage, paths.active)) ?? "";
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** Every committed message, oldest first, paging back through the segments. */
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

/** The text of a message's text parts, joined. */
export function textOf(message: Pick<MessageRecord, "parts">): string {
  return message.parts.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("");
}

/** A promise with its resolve function exposed. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((res) => (resolve = res));
  return { promise, resolve };
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------
// Hand-written sessions
// ---------------------------------------------------------------------------

/** A committed message: odd sequences are users, even ones completed assistants. */
export function msg(sequence: number, text = `message ${sequence}`): MessageRecord {
  const assistant = sequence % 2 === 0;
  return {
    record_type: "message",
    sequence,
    message_id: `m_${sequence}`,
    role: assistant ? "assistant" : "user",
    created_at: TS,
    ...(assistant ? { status: "completed" } : {}),
    parts: [{ sequence: 1, type: "text", text }],
  } as MessageRecord;
}

export const line = (record: unknown): string => `${JSON.stringify(record)}\n`;
export const lines = (records: readonly unknown[]): string => records.map(line).join("");

export function footer(through: number, text = `summary of 1..${through}`): Record<string, unknown> {
  return { record_type: "summary", session_id: REF.sessionId, summary_id: `sum_${through}`, through_sequence: through, text, created_at: TS };
}

export function segmentName(start: number, end: number): string {
  return `${String(start).padStart(12, "0")}-${String(end).padStart(12, "0")}.jsonl`;
}

export function metaDocument(fields: { message_count: number; history_bytes: number; revision: number } & Record<string, unknown>): string {
  return `${JSON.stringify(
    {
      schema_version: 1,
      session_id: REF.sessionId,
      agent_id: REF.agentId,
      workspace_id: REF.workspaceId,
      created_at: TS,
      updated_at: TS,
      ...fields,
    },
    null,
    2,
  )}\n`;
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
}

/**
 * A transparent wrapper that records every call. `delay` may return a promise the call
 * waits for before it reaches the inner store (a slow disk), and `after` runs once the
 * inner call resolved.
 */
export class RecordingStorage implements StoragePort {
  readonly inner: StoragePort;
  readonly capabilities: StorageCapabilities;
  calls: StorageCall[] = [];
  delay: ((call: StorageCall) => Promise<void> | undefined) | undefined;
  after: ((call: StorageCall) => void) | undefined;

  constructor(inner: StoragePort) {
    this.inner = inner;
    this.capabilities = inner.capabilities;
  }

  /** Calls of `op` on exactly `path`. */
  count(op: CallName, path: string): number {
    return this.calls.filter((c) => c.op === op && c.path === path).length;
  }

  async #record<T>(call: StorageCall, run: () => Promise<T>): Promise<T> {
    this.calls.push(call);
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
    return this.#record({ op: "readTail", path }, () => this.inner.readTail(path, maxBytes));
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
    return this.#record({ op: "truncate", path }, () => this.inner.truncate(path, length));
  }
  remove(path: string): Promise<void> {
    return this.#record({ op: "remove", path }, () => this.inner.remove(path));
  }
  move(from: string, to: string): Promise<boolean> {
    return this.#record({ op: "move", path: from, to }, () => this.inner.move(from, to));
  }
}

/** A user-visible "unlock --force": removes a writer.lock a crashed process left behind. */
export async function forceUnlock(storage: StoragePort, paths: SessionPaths = P): Promise<void> {
  await storage.remove(paths.lock);
}
