/**
 * The other side of a sync, as the engine sees it: four calls of the protocol
 * (docs/SYNC.md). Two kinds: another store reached directly ({@linkcode directRemote}, the
 * server's logic run in this process over that store, with the same checks as over HTTP)
 * and a sync server over HTTP ({@linkcode httpRemote}, fetch).
 *
 * @module
 */
import { InternalError, InvalidInputError, StorageError, SyncRefusedError } from "../errors.ts";
import { assertFields, type KnownFields, knownOptions } from "../schema/arguments.ts";
import { untilAborted } from "../session/until-aborted.ts";
import type { StoragePort } from "../storage/port.ts";
import {
  type ErrorResponse,
  parseSyncRequest,
  type PullRequest,
  type PullResponse,
  type PushRequest,
  type ReadRequest,
  type ReadResponse,
  type SegmentRequest,
  type SegmentResponse,
  type SyncRoute,
} from "./protocol.ts";
import { type PushOutcome, STORE_OWNER, type SyncPrincipal, SyncServer } from "./server.ts";

/** One side of a sync the engine talks to. */
export interface SyncRemote {
  /** Names the remote in the local store's sync state (`sync/remotes/…`): stable across runs. */
  readonly id: string;
  /**
   * The store a direct remote serves: {@linkcode syncStores} refuses a remote that serves
   * the local store itself (a sync with itself would install its sessions over themselves).
   */
  readonly storage?: StoragePort;
  push(request: PushRequest): Promise<PushOutcome>;
  pull(request: PullRequest): Promise<PullResponse>;
  read(request: ReadRequest): Promise<ReadResponse>;
  segment(request: SegmentRequest): Promise<SegmentResponse>;
}

/** Options of {@linkcode directRemote}. */
export interface DirectRemoteOptions {
  /** Names this remote in the local sync state; default `direct`. Give each remote store its own. */
  readonly id?: string;
  /** Who the requests act for; default the store's owner (everything allowed). */
  readonly principal?: SyncPrincipal;
  /** Milliseconds since the epoch, for the server side. */
  readonly clock?: () => number;
}

const DIRECT_REMOTE_FIELDS: KnownFields<DirectRemoteOptions> = { id: true, principal: true, clock: true };

/**
 * Another store as the remote: the server's rules run here over that store. Requests and
 * answers go through JSON as on the wire, so nothing is shared between the two sides.
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 *
 * const backup = directRemote(new MemoryStorage(), { id: "backup" });
 * ```
 * @throws {InvalidInputError} when `target` is neither a store (`StoragePort`) nor a `SyncServer`, or `options` is not
 * an object or has a field it does not know.
 */
export function directRemote(target: StoragePort | SyncServer, options: DirectRemoteOptions = {}): SyncRemote {
  knownOptions(options, "directRemote(target, options)", DIRECT_REMOTE_FIELDS);
  const server = target instanceof SyncServer ? target : new SyncServer({ storage: assertStorage(target), ...(options.clock ? { clock: options.clock } : {}) });
  const principal = options.principal ?? STORE_OWNER;
  const call = async <R extends SyncRoute, T>(route: R, request: unknown, answer: (parsed: ReturnType<typeof parseSyncRequest<R>>) => Promise<T>): Promise<T> =>
    wire(await answer(parseSyncRequest(route, wire(request))));
  return {
    id: options.id ?? "direct",
    storage: server.storage,
    push: (request) => call("push", request, (parsed) => server.push(principal, parsed)),
    pull: (request) => call("pull", request, (parsed) => server.pull(principal, parsed)),
    read: (request) => call("read", request, (parsed) => server.read(principal, parsed)),
    segment: (request) => call("segment", request, (parsed) => server.segment(principal, parsed)),
  };
}

/** The calls every store has (`StoragePort`). */
const STORAGE_CALLS = ["read", "readTail", "list", "replace", "append", "createExclusive", "truncate", "remove", "move"] as const;

/**
 * `target` when it has a store's calls: anything else (a `Sessions`, a path, `undefined`) is
 * refused by name here rather than failing at its first read.
 */
function assertStorage(target: unknown): StoragePort {
  const missing = STORAGE_CALLS.filter((call) => typeof (target as Record<string, unknown> | null | undefined)?.[call] !== "function");
  if (missing.length === 0) return target as StoragePort;
  const hint = typeof target === "object" && target !== null && "storage" in target ? " (a Sessions: give its storage)" : "";
  throw new InvalidInputError(`directRemote: expected a store (StoragePort) or a SyncServer${hint}; it has no ${missing.join(", ")}`, {
    argument: "target",
  });
}

/** Options of {@linkcode httpRemote}. */
export interface HttpRemoteOptions {
  /** The handler's base URL, e.g. `https://example.com/sync`. */
  readonly url: string;
  /** Headers of every request (an `Authorization`), or a function asked before each one. */
  readonly headers?: Record<string, string> | (() => Record<string, string> | Promise<Record<string, string>>);
  /** The fetch to use; default the global one. */
  readonly fetch?: (input: string, init: { method: string; headers: Record<string, string>; body: string; signal: AbortSignal }) => Promise<Response>;
  /** Names this remote in the local sync state; default the URL. */
  readonly id?: string;
  /** Milliseconds, for how long the remote was idle before a request (a connection the server may have closed); default `Date.now`. */
  readonly clock?: () => number;
  /**
   * Milliseconds a request may take, from its send to the end of its answer; then it fails (the run's error names the
   * URL), as a cut connection would. Default 360 000: the sync server's bound on receiving a request (300 s, a batch
   * over a slow uplink) and its longest long-poll (60 s). A host with a server that answers sooner may set less.
   */
  readonly timeoutMs?: number;
}

const HTTP_REMOTE_FIELDS: KnownFields<HttpRemoteOptions> = { url: true, headers: true, fetch: true, id: true, clock: true, timeoutMs: true };

/** {@linkcode HttpRemoteOptions.timeoutMs}'s default (docs/SYNC.md "A server that never answers"). */
const DEFAULT_TIMEOUT_MS = 360_000;

/** The longest delay a timer takes (2³¹ − 1 ms, about 24.8 days): a longer one fires at once. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * How long the remote must have been idle before a request for a close of its kept-alive connection before any answer
 * to be taken for the server's idle close (and the request sent again): below any usual keep-alive timeout (Node's 5 s).
 */
const IDLE_CLOSE_AFTER_MS = 1_000;

/**
 * A sync server over HTTP (`createSyncHandler`): each call is one `POST <url>/<route>` with
 * a JSON body. A refusal arrives as the server's typed error.
 *
 * @example
 * ```ts
 * const remote = httpRemote({ url: "http://127.0.0.1:8787/sync", headers: { authorization: "Bearer t0ken" } });
 * ```
 * @throws {InvalidInputError} when `options` is not an object with a `url`, has a field it does not know, or a `clock` that
 * is not a function.
 */
export function httpRemote(options: HttpRemoteOptions): SyncRemote {
  assertFields(knownOptions(options, "httpRemote(options)", HTTP_REMOTE_FIELDS), "httpRemote(options)", { url: "string!", clock: "function" });
  const base = options.url.replace(/\/+$/, "");
  const send = options.fetch ?? ((input, init) => fetch(input, init));
  const clock = options.clock ?? Date.now;
  const timeoutMs = requestTimeout(options.timeoutMs);
  // When the last answer ended (or the remote was made): a connection of this remote kept alive since is at least this idle.
  let lastAnswerAt = clock();
  const call = async <T>(route: SyncRoute, request: unknown): Promise<T> => {
    const extra = typeof options.headers === "function" ? await options.headers() : (options.headers ?? {});
    const url = `${base}/${route}`;
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(timedOut(url, timeoutMs)), timeoutMs);
    const init = { method: "POST", headers: { ...extra, "content-type": "application/json" }, body: JSON.stringify(request), signal: timeout.signal };
    let response: Response;
    let text: string;
    try {
      const idle = clock() - lastAnswerAt >= IDLE_CLOSE_AFTER_MS;
      // Raced with the timeout too: a host's `fetch` may not take the signal.
      response = await untilAborted(
        send(url, init).catch((error: unknown) => {
          if (idle && closedBeforeAnswer(error)) return send(url, init);
          throw error;
        }),
        timeout.signal,
      );
      text = await untilAborted(response.text(), timeout.signal);
      lastAnswerAt = clock();
    } catch (error) {
      // A fetch that took the signal rejects with its reason; one that did not, with its own error after it fired.
      if (timeout.signal.aborted) throw timeout.signal.reason;
      throw error instanceof TypeError ? unreachable(url, error) : error;
    } finally {
      clearTimeout(timer);
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw notProtocol(url, response);
    }
    const error = (body as Partial<ErrorResponse>).error;
    if (!response.ok) {
      if (error && typeof error.reason === "string" && response.status < 500) throw new SyncRefusedError(error.message, { ...error, status: response.status });
      throw new InternalError(`${base}/${route} answered HTTP ${response.status}: ${error?.message ?? "no message"}`, {
        status: response.status,
        url: `${base}/${route}`,
      });
    }
    return body as T;
  };
  return {
    id: options.id ?? base,
    push: (request) => call("push", request),
    pull: (request) => call("pull", request),
    read: (request) => call("read", request),
    segment: (request) => call("segment", request),
  };
}

/** `timeoutMs` as given, or its default. @throws {InvalidInputError} when it is not a positive number of milliseconds a timer takes. */
function requestTimeout(timeoutMs: unknown): number {
  if (timeoutMs === undefined) return DEFAULT_TIMEOUT_MS;
  if (typeof timeoutMs !== "number" || !(timeoutMs > 0 && timeoutMs <= MAX_TIMER_MS)) {
    throw new InvalidInputError(`httpRemote(options).timeoutMs: expected a positive number of milliseconds up to ${MAX_TIMER_MS}, found ${String(timeoutMs)}`, {
      option: "timeoutMs",
    });
  }
  return timeoutMs;
}

/** A request the remote did not answer within `timeoutMs`: a {@linkcode StorageError} naming the URL, as a cut connection's. */
function timedOut(url: string, timeoutMs: number): StorageError {
  return new StorageError(
    `${url}: no answer within ${timeoutMs / 1000} s (httpRemote's timeoutMs); the request may still have arrived`,
    { url, timeout_ms: timeoutMs },
  );
}

/**
 * Whether Node's fetch (undici) failed a request, before any answer, on a kept-alive connection the server closed:
 * `SocketError` ("other side closed") on a socket that had read an earlier answer (a connection closed on its first
 * request read nothing). After the remote was idle, that is the server's idle close the client had not read yet (an
 * event loop blocked past the server's keep-alive timeout), and the request is sent again once (docs/SYNC.md "A
 * kept-alive connection closed while idle"); the failed socket is gone, so it goes on a new connection.
 */
function closedBeforeAnswer(error: unknown): boolean {
  const cause = (error as { readonly cause?: { readonly code?: unknown; readonly socket?: { readonly bytesRead?: unknown } } } | null)?.cause;
  const bytesRead = cause?.socket?.bytesRead;
  return error instanceof TypeError && cause?.code === "UND_ERR_SOCKET" && typeof bytesRead === "number" && bytesRead > 0;
}

/**
 * A request the network failed (fetch throws a `TypeError`: refused, reset, no such host) as
 * a {@linkcode StorageError} naming the URL and the cause, which Node keeps in `cause`
 * (`ECONNREFUSED`…); the fetch error stays its `cause`.
 */
function unreachable(url: string, error: TypeError): StorageError {
  const cause = error.cause as { readonly code?: unknown; readonly message?: unknown } | undefined;
  const code = typeof cause?.code === "string" ? cause.code : undefined;
  const detail = typeof cause?.message === "string" && cause.message !== "" ? cause.message : error.message;
  const why = code !== undefined && !detail.includes(code) ? `${code}: ${detail}` : detail;
  return new StorageError(`${url}: the remote could not be reached (${why})`, { url, ...(code !== undefined ? { cause_code: code } : {}) }, { cause: error });
}

/** Statuses a proxy answers when the server behind it is down or slow (bad gateway, unavailable, gateway timeout). */
const GATEWAY_DOWN = [502, 503, 504];

/**
 * An answer that is not the protocol's (its body is not JSON): a proxy's own page. A 413 is
 * its body limit (nginx's `client_max_body_size`), the `too-large` refusal the engine sends
 * again in halves, with no `limit` said; a 502, 503 or 504 is a server that could not be
 * reached, which a later run retries; anything else is `InternalError`.
 */
function notProtocol(url: string, response: Response): Error {
  const type = response.headers.get("content-type") ?? "no content type";
  const what = `${url} answered HTTP ${response.status} with a body that is not JSON (${type})`;
  if (response.status === 413) {
    return new SyncRefusedError(`${what}: a proxy in front of the sync server refused the request's size`, { reason: "too-large", status: 413, url });
  }
  if (GATEWAY_DOWN.includes(response.status)) {
    return new StorageError(`${what}: the remote could not be reached behind its proxy`, { status: response.status, url });
  }
  return new InternalError(what, { status: response.status, url });
}

/** A value as it arrives after a trip through JSON. */
function wire<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}
