/**
 * A named prepared statement whose answer is one value, sent without what `pg` adds to every
 * execution (docs/decisions.md "PostgreSQL's per-operation commit: the contract's own bound,
 * and the statement sent lean"):
 * `pg`'s `Query` asks the server to describe the portal before each run (a RowDescription the
 * server builds and the client parses into field objects), builds a `Result` and a row object,
 * and is an `EventEmitter`. A commit's answer is the first column of its one row (the
 * outcome, as text), so this sends Parse once per connection (recorded where `pg` records its
 * own, so both agree on what the connection has prepared), then Bind, Execute and Sync, and
 * keeps the first field of the first DataRow. Bind, Execute and Sync are written as one
 * buffer of the size they need, in one write to the socket (docs/decisions.md "PostgreSQL's
 * commit: its messages in one buffer, and the commit path's UTF-8"): `pg`'s serializer grows
 * a 256-byte buffer by copies to the size of a commit's parameters and sends the three
 * messages as a corked `writev`.
 * It goes through `Client#query` as a submittable (the extension point `pg-cursor` uses), so
 * the client's queue and its handling of a lost connection apply as to any query. The client's
 * `query_timeout` applies too, kept by one timer per connection (`ReadTimeout`) instead of the
 * timer `pg` sets and clears around every query, which cost a commit 8–13 µs of the main thread
 * on a durable server (docs/decisions.md "PostgreSQL's commit: the client's read timeout without
 * a timer per statement, and what the collector copies"). A client in `pg`'s pipeline mode
 * refuses submittables, and a `pg` whose
 * connection keeps no such record (the record is not in its types, so another 8.x may move
 * it): there the statement goes as `pg`'s own query.
 *
 * @module
 */
import { Socket } from "node:net";
import type pg from "pg";

/** A statement prepared once per connection under its name. */
export interface NamedStatement {
  readonly name: string;
  readonly text: string;
}

/** The calls a submitted query makes on `pg`'s wire connection, and its record of prepared statements (not in its types). */
interface WireConnection {
  readonly stream: { cork?(): void; uncork?(): void; write(bytes: Uint8Array): boolean; readonly writable: boolean };
  readonly parsedStatements: Record<string, string | undefined>;
  readonly submittedNamedStatements: Record<string, string | undefined>;
  parse(config: { name: string; text: string; types: readonly unknown[] }): void;
  bind(config: { statement: string; values: readonly unknown[]; valueMapper: (value: unknown) => unknown }): void;
  execute(config: { portal: string; rows: number }): void;
  sync(): void;
}

/**
 * Runs `statement` with `values` on `client` and resolves the first column of its first row as
 * text (`null` for SQL `NULL` or no row). Parameters are sent as `pg` sends them: a `Buffer` in
 * binary, `null` and `undefined` as `NULL`, anything else as its string.
 *
 * @example
 * ```ts
 * import pg from "pg";
 *
 * const client = new pg.Client();
 * await client.connect();
 * const sum = await firstValue(client, { name: "add", text: "SELECT $1::int + $2::int" }, [1, 2]);
 * console.log(sum); // "3"
 * await client.end();
 * ```
 */
export function firstValue(client: pg.ClientBase, statement: NamedStatement, values: readonly unknown[]): Promise<string | null> {
  const connection = (client as { connection?: Partial<WireConnection> }).connection;
  const lean = !(client as { pipeline?: boolean }).pipeline && typeof connection?.parsedStatements === "object" &&
    typeof connection.submittedNamedStatements === "object";
  if (!lean) return firstValueAsQuery(client, statement, values);
  return new Promise((resolve, reject) => {
    const submitted = new LeanStatement(statement, values, (error, value) => (error ? reject(error) : resolve(value ?? null)));
    const settings = (client as TimedClient).connectionParameters;
    const timeout = settings?.query_timeout;
    if (!settings || !timeout) return void client.query(submitted);
    // `pg` reads the setting as the query is queued: with it unset for this one call, it sets no timer of its own and the
    // client's `ReadTimeout` keeps the same timeout.
    settings.query_timeout = 0;
    try {
      client.query(submitted);
    } finally {
      settings.query_timeout = timeout;
    }
    readTimeoutOf(client, timeout).watch(submitted);
  });
}

/** `pg`'s client as the lean statement reads it (not in its types): its settings and its queue of queries not yet sent. */
interface TimedClient {
  readonly connectionParameters?: { query_timeout?: number };
  readonly _queryQueue?: unknown[];
  _pulseQueryQueue?(): void;
}

/** The read timeout of each client that ran a lean statement. */
const readTimeouts = new WeakMap<pg.ClientBase, ReadTimeout>();

function readTimeoutOf(client: pg.ClientBase, ms: number): ReadTimeout {
  let found = readTimeouts.get(client);
  if (!found || found.ms !== ms) readTimeouts.set(client, found = new ReadTimeout(client, ms));
  return found;
}

/**
 * A client's `query_timeout` for its lean statements, as `pg` applies it (from the moment the
 * statement is queued; "Query read timeout"; a statement not yet sent leaves the queue, one
 * sent is left to the caller, who drops the connection), with at most one timer: set when a
 * statement waits and none is set, and when it fires, set again for the oldest statement still
 * waiting. A statement costs a clock read and its entry here, where a timer set and cleared
 * for each is an object, a timer list and calls into libuv each time. Unreferenced: a waiting
 * statement's socket keeps the process alive, the timer does not.
 */
class ReadTimeout {
  readonly ms: number;
  readonly #client: pg.ClientBase;
  /** The statements waiting for their answer, oldest first, each with when it was queued. */
  readonly #waiting = new Map<LeanStatement, number>();
  #armed = false;

  constructor(client: pg.ClientBase, ms: number) {
    this.#client = client;
    this.ms = ms;
  }

  watch(statement: LeanStatement): void {
    this.#waiting.set(statement, performance.now());
    statement.watchedBy = this;
    if (!this.#armed) this.#arm(this.ms);
  }

  settled(statement: LeanStatement): void {
    this.#waiting.delete(statement);
  }

  #arm(ms: number): void {
    this.#armed = true;
    setTimeout(this.#fire, ms).unref();
  }

  readonly #fire = (): void => {
    this.#armed = false;
    const now = performance.now();
    for (const [statement, queued] of this.#waiting) {
      const left = queued + this.ms - now;
      // Timers fire on whole milliseconds: a statement within one of its time is due.
      if (left > 1) return this.#arm(left);
      this.#waiting.delete(statement);
      this.#timeOut(statement);
    }
  };

  #timeOut(statement: LeanStatement): void {
    const client = this.#client as TimedClient;
    statement.callback(new Error("Query read timeout"));
    const at = client._queryQueue?.indexOf(statement) ?? -1;
    if (at < 0) return;
    client._queryQueue!.splice(at, 1);
    client._pulseQueryQueue?.();
  }
}

/** Where the lean statement cannot go (see the module doc): `pg`'s own query, each value kept as the server's text. */
async function firstValueAsQuery(client: pg.ClientBase, statement: NamedStatement, values: readonly unknown[]): Promise<string | null> {
  const result = await client.query<unknown[]>({ ...statement, values: [...values], rowMode: "array", types: { getTypeParser: () => asText } });
  return (result.rows[0]?.[0] as string | null | undefined) ?? null;
}

/** A column's text as the server sent it. */
function asText(value: string): string {
  return value;
}

/**
 * `pg`'s wire form of a parameter (what its `prepareValue` gives for the values a statement here takes): `null`, bytes
 * (any `ArrayBuffer` view, a `Buffer` or a commit's `Uint8Array` alike, sent in binary as `pg` sends the `Buffer` it makes
 * of one) or text.
 */
function wireValue(value: unknown): Uint8Array | string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === "string" || value instanceof Uint8Array) return value;
  return ArrayBuffer.isView(value) ? new Uint8Array(value.buffer, value.byteOffset, value.byteLength) : String(value);
}

/** Execute (`E`, length 9, the unnamed portal, no row limit), then Sync (`S`, length 4): the same bytes after every Bind. */
const EXECUTE_AND_SYNC = Buffer.from([0x45, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0x53, 0, 0, 0, 4]);

/**
 * Each socket's buffer for its next statement's messages: the last one's, kept only when the socket took all of its
 * bytes at once (nothing left queued in the stream or the event loop, so nothing else holds it). A commit's messages
 * otherwise took a slice of Node's shared pool, whose 8 KiB are made anew every few commits, each paid cold after the
 * wait for a durable server (docs/decisions.md "PostgreSQL's commit: its messages in a buffer kept per socket, its bytes
 * sent as they are").
 */
const spareBuffers = new WeakMap<object, ArrayBuffer>();
/** The size of a socket's buffer at first (a commit's messages are 1–2 KiB). */
const SPARE_BYTES = 4096;
/** Messages larger than this (a plan's chunks) get a buffer of their own, never kept. */
const SPARE_BYTES_MAX = 64 * 1024;

/** `size` bytes for messages to `socket`: the start of its spare buffer when that is large enough, else of a new one. */
function messageBuffer(socket: object, size: number): Buffer {
  const spare = spareBuffers.get(socket);
  const buffer = spare && spare.byteLength >= size ? spare : new ArrayBuffer(size > SPARE_BYTES_MAX ? size : Math.max(size, SPARE_BYTES));
  return Buffer.from(buffer, 0, size);
}

/**
 * After `messages` were written to `socket`: their buffer kept for the next statement when the socket took every byte at
 * once, else let go. Only a `net.Socket` (TLS's included), whose write is done with the bytes once its length is back
 * to 0; a stream of a host's own (`pg`'s `stream` setting) may keep a chunk after it called back.
 */
function keepIfTaken(socket: object, messages: Buffer): void {
  if (socket instanceof Socket && socket.writableLength === 0 && messages.buffer.byteLength <= SPARE_BYTES_MAX) {
    spareBuffers.set(socket, messages.buffer as ArrayBuffer);
  } else spareBuffers.delete(socket);
}

/**
 * Bind of the prepared statement `name` to `values` (the unnamed portal, each value's format
 * as `pg` chooses it, results as text), then Execute and Sync, as PostgreSQL's protocol lays
 * them out ("Message Formats"), in one buffer for `socket` ({@linkcode messageBuffer}).
 */
function boundAndSynced(name: string, values: readonly unknown[], socket: object): Buffer {
  const count = values.length;
  const wire: (Uint8Array | string | null)[] = new Array(count);
  const nameBytes = Buffer.byteLength(name);
  // Type and length, the unnamed portal's and the statement's names, the format codes, the values' count, the result format.
  let size = 1 + 4 + 1 + nameBytes + 1 + 2 + 2 * count + 2 + 2 + 2;
  for (let i = 0; i < count; i++) {
    const value = wireValue(values[i]);
    wire[i] = value;
    size += 4 + (value === null ? 0 : typeof value === "string" ? Buffer.byteLength(value) : value.length);
  }
  const out = messageBuffer(socket, size + EXECUTE_AND_SYNC.length);
  out[0] = 0x42; // Bind
  out.writeInt32BE(size - 1, 1);
  out[5] = 0; // the unnamed portal
  let at = 6 + out.write(name, 6);
  out[at++] = 0;
  out.writeInt16BE(count, at);
  at += 2;
  for (let i = 0; i < count; i++, at += 2) out.writeInt16BE(typeof wire[i] === "object" && wire[i] !== null ? 1 : 0, at);
  out.writeInt16BE(count, at);
  at += 2;
  for (let i = 0; i < count; i++) {
    const value = wire[i]!;
    if (value === null) {
      out.writeInt32BE(-1, at);
      at += 4;
      continue;
    }
    // The length goes before the value, once it is written.
    const length = typeof value === "string" ? out.write(value, at + 4) : (out.set(value, at + 4), value.length);
    out.writeInt32BE(length, at);
    at += 4 + length;
  }
  out.writeInt16BE(1, at); // one result format code: text
  out.writeInt16BE(0, at + 2);
  EXECUTE_AND_SYNC.copy(out, at + 4);
  return out;
}

/** The submittable: `Client#query` calls `submit` when the connection is free, then hands it the server's answers. */
class LeanStatement implements pg.Submittable {
  /** Read by `Client`: it records a parsed statement under the active query's name and text. */
  readonly name: string;
  readonly text: string;
  /** The parameters, as given (a watcher of `Client#query` reads them here, as on `pg`'s own queries). */
  readonly values: readonly unknown[];
  #value: string | null | undefined;
  /** The client's read timeout, when it keeps one for this statement. */
  watchedBy: ReadTimeout | undefined;
  /** Called once (`Client#query` wraps it to clear its own `query_timeout` where it keeps one). */
  callback: (error: unknown, value?: string | null) => void;

  constructor(statement: NamedStatement, values: readonly unknown[], settle: (error: unknown, value?: string | null) => void) {
    this.name = statement.name;
    this.text = statement.text;
    this.values = values;
    let settled = false;
    this.callback = (error, value) => {
      if (settled) return;
      settled = true;
      this.watchedBy?.settled(this);
      settle(error, value);
    };
  }

  submit(connection: pg.Connection): void {
    const wire = connection as unknown as WireConnection;
    // As `pg` sends: nothing on a socket no longer writable (the client's own handling of its end applies).
    if (!wire.stream.writable) return;
    const messages = boundAndSynced(this.name, this.values, wire.stream);
    if (wire.parsedStatements[this.name] !== undefined || wire.submittedNamedStatements[this.name] !== undefined) {
      wire.stream.write(messages);
    } else {
      wire.stream.cork?.();
      try {
        wire.parse({ name: this.name, text: this.text, types: [] });
        wire.submittedNamedStatements[this.name] = this.text;
        wire.stream.write(messages);
      } finally {
        wire.stream.uncork?.();
      }
    }
    keepIfTaken(wire.stream, messages);
  }

  handleDataRow(message: { fields: (string | null)[] }): void {
    if (this.#value === undefined) this.#value = message.fields[0] ?? null;
  }

  /** The server's error (the client stops sending it answers), a lost connection, or the client's `query_timeout`. */
  handleError(error: unknown): void {
    this.callback(error);
  }

  handleReadyForQuery(): void {
    this.callback(undefined, this.#value);
  }

  handleRowDescription(): void {}
  handleCommandComplete(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
}
