/**
 * A web-standard fetch handler (`(Request) => Promise<Response>`, such as
 * `createSyncHandler` of `sessionfold/sync`, `chatRoute` of `sessionfold/ai-sdk`) served by
 * node:http: request bodies stream in, answers stream out as they are produced,
 * a body the handler does not read to its end (refused over its limit) is read and dropped so
 * the answer reaches the client, a client that goes away aborts the request's signal, an
 * answer whose body fails cuts the connection, a handler that rejects is answered 500 with an id
 * only (the error to `console.error`, docs/SYNC.md "Errors"), a client too slow to send its request is
 * answered 408 and cut (docs/SYNC.md "Slow clients"). What `sessionfold serve` listens with.
 *
 * @module
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { InvalidInputError } from "../core/errors.ts";
import { corsHeaders, corsOrigins, hideFailure } from "../core/internal.ts";

/** Options of {@linkcode fetchRequestListener}. */
export interface FetchListenerOptions {
  /** The URL's host when a request carries no `Host` header. Default `127.0.0.1`. */
  readonly host?: string;
  /**
   * Milliseconds a request's body may arrive without a byte while the handler waits for it;
   * then the answer is 408 and the connection is closed. Default 30 000.
   */
  readonly bodyIdleTimeoutMs?: number;
  /**
   * The origins whose pages get the listener's own answers (a stalled body's 408) with the
   * CORS headers `createSyncHandler` gives them, so such a page reads the 408 instead of a
   * network error: pass the handler's `corsOrigins` (docs/SYNC.md "Slow clients"). Default: none.
   */
  readonly corsOrigins?: readonly string[];
}

/** Options of {@linkcode serveFetchHandler}. */
export interface ServeFetchOptions extends FetchListenerOptions {
  /** The address to listen on. Default `127.0.0.1`. */
  readonly host?: string;
  /** The port; 0 (the default) picks a free one. */
  readonly port?: number;
  /** Milliseconds a client has to send a request's headers, from the connection's start; then 408. Default 30 000. */
  readonly headersTimeoutMs?: number;
  /**
   * Milliseconds a client has to send a whole request, headers and body; then 408. Not the
   * time to answer it: a long-poll waits after its body arrived. Default 300 000.
   */
  readonly requestTimeoutMs?: number;
}

/** The defaults of the timeouts (docs/SYNC.md "Slow clients"). */
const DEFAULT_TIMEOUTS = { headersTimeoutMs: 30_000, bodyIdleTimeoutMs: 30_000, requestTimeoutMs: 300_000 } as const;

/** A listening server: its URL (`http://host:port`) and how to stop it. */
export interface FetchServer {
  readonly url: string;
  /** Stops listening and ends open connections (a waiting long-poll included). */
  close(): Promise<void>;
}

/**
 * `handler` as a node:http request listener (`(req, res) => void`), for a server that is
 * not {@linkcode serveFetchHandler}'s own: a Connect middleware stack (Vite's dev and preview
 * servers, Express) mounts it where it calls `next()` for other paths. The request's URL
 * keeps its full path, so a handler with a `basePath` finds its routes. A body that stops
 * arriving while the handler waits for it is answered 408 (`bodyIdleTimeoutMs`, with the
 * CORS headers of `corsOrigins`); the server's own timeouts (Node's `headersTimeout`,
 * `requestTimeout`) are its owner's to set.
 *
 * @example
 * ```ts
 * import { createServer } from "node:http";
 * import { MemoryStorage } from "sessionfold";
 * import { createSyncHandler } from "sessionfold/sync";
 *
 * const sync = fetchRequestListener(createSyncHandler({ storage: new MemoryStorage(), basePath: "/sync", authorize: () => ({ user: "me", may: () => true }) }));
 * createServer((req, res) => (req.url?.startsWith("/sync/") ? sync(req, res) : res.writeHead(404).end())).listen(8787, "127.0.0.1");
 * ```
 * @throws {InvalidInputError} when `bodyIdleTimeoutMs` is not a positive number, or a `corsOrigins` entry is not an
 * http(s) origin.
 */
export function fetchRequestListener(
  handler: (request: Request) => Promise<Response>,
  options: FetchListenerOptions = {},
): (req: IncomingMessage, res: ServerResponse) => void {
  const host = options.host ?? "127.0.0.1";
  const idleMs = timeoutOption(options, "bodyIdleTimeoutMs");
  const allowed = corsOrigins(options.corsOrigins ?? [], "fetchRequestListener(options).corsOrigins");
  return (req, res) => {
    const gone = new AbortController();
    res.on("close", () => gone.abort());
    const stalled = () => {
      // Answered already (the handler failed while its body was still coming): Node's keep-alive timeout ends the connection.
      if (res.headersSent) return;
      // The handler's answer, if it comes, is dropped: the connection ends with this one.
      const origin = req.headers.origin ?? null;
      const cors = allowed.size === 0 ? {} : corsHeaders(allowed, origin);
      res.writeHead(408, { ...cors, "content-type": "text/plain; charset=utf-8", connection: "close" });
      res.end(`no byte of the request's body arrived for ${idleMs} ms; the connection is closed`);
    };
    const body = req.method !== "GET" && req.method !== "HEAD" ? requestBody(req, idleMs, stalled) : undefined;
    const request = new Request(`http://${req.headers.host ?? host}${req.url ?? "/"}`, {
      method: req.method ?? "GET",
      headers: headersOf(req.headers),
      ...(body ? { body: body.stream, duplex: "half" } : {}),
      signal: gone.signal,
    } as RequestInit);
    handler(request).then(
      async (response) => {
        // Answered before the body was read (a body over the handler's limit): the rest is read and dropped, so the
        // answer reaches the client and the connection serves its next request.
        if (!req.complete) body?.discard();
        await sendAnswer(response, res);
      },
      (error: unknown) => {
        // The handler answers its own errors; this is a bug in it, still answered, its message kept from the client.
        const { message } = hideFailure(error, "the fetch handler failed", "fetch listener", { request });
        if (res.headersSent) return;
        res.writeHead(500, { "content-type": "text/plain" });
        res.end(message);
      },
    );
  };
}

/**
 * Writes `response` to `res` as its body is produced (a UI message stream, a long reply), each
 * chunk when it comes, the client's pace respected. The head waits for the first chunk, so a
 * body that fails before it is a cut connection with nothing sent; one that fails later cuts
 * the connection too (as Deno.serve and Bun do): either way the client sees a network error,
 * never a part taken for the whole. A client that goes away cancels the body.
 */
async function sendAnswer(response: Response, res: ServerResponse): Promise<void> {
  const reader = response.body?.getReader();
  res.on("close", () => void reader?.cancel().catch(() => undefined));
  let headSent = false;
  try {
    for (;;) {
      const next = reader ? await reader.read() : { done: true as const, value: undefined };
      if (!headSent) {
        // Answered 408 meanwhile (the request's body stalled): this answer has no connection left.
        if (res.headersSent) return void (await reader?.cancel().catch(() => undefined));
        res.writeHead(response.status, Object.fromEntries(response.headers));
      }
      headSent = true;
      if (next.done) break;
      if (!res.write(next.value)) await drainedOrClosed(res);
    }
  } catch {
    res.destroy();
    return;
  }
  res.end();
}

/** Resolves when `res` can take more, or has closed (a client gone: its `close` cancelled the body). */
function drainedOrClosed(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const settle = () => {
      res.off("drain", settle).off("close", settle);
      resolve();
    };
    res.on("drain", settle).on("close", settle);
  });
}

/**
 * Serves `handler` over HTTP until `close()`.
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 * import { createSyncHandler } from "sessionfold/sync";
 *
 * const server = await serveFetchHandler(createSyncHandler({ storage: new MemoryStorage(), authorize: () => ({ user: "me", may: () => true }) }));
 * console.log(server.url); // http://127.0.0.1:41234
 * await server.close();
 * ```
 */
export async function serveFetchHandler(handler: (request: Request) => Promise<Response>, options: ServeFetchOptions = {}): Promise<FetchServer> {
  const host = options.host ?? "127.0.0.1";
  const headersTimeout = timeoutOption(options, "headersTimeoutMs");
  const requestTimeout = timeoutOption(options, "requestTimeoutMs");
  if (headersTimeout > requestTimeout) {
    throw new InvalidInputError(
      `serveFetchHandler: headersTimeoutMs (${headersTimeout}) is over requestTimeoutMs (${requestTimeout}); the headers are part of the request`,
      {
        option: "headersTimeoutMs",
      },
    );
  }
  const listener = fetchRequestListener(handler, options);
  // Node answers 408 to a request not whole in time, checking every `connectionsCheckingInterval` (30 s by
  // default, longer than these timeouts): checked ten times as often, a cut comes at most a tenth late.
  const server = createServer({ headersTimeout, requestTimeout, connectionsCheckingInterval: Math.ceil(headersTimeout / 10) }, listener);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

/**
 * The option `name` in milliseconds, else its default.
 *
 * @throws {InvalidInputError} naming the option when it is not a positive finite number.
 */
function timeoutOption(options: FetchListenerOptions & ServeFetchOptions, name: keyof typeof DEFAULT_TIMEOUTS): number {
  const value = options[name] ?? DEFAULT_TIMEOUTS[name];
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    throw new InvalidInputError(`${name} takes a positive number of milliseconds, got ${String(value)}`, { option: name });
  }
  return value;
}

/**
 * A request's body as a web stream that reads `req` as it is read, and `discard`, which
 * drops the rest as it arrives (a handler that stopped at its limit, or answered without
 * reading): destroying `req` instead would reset the connection before the client reads the
 * answer, and leaving it paused would stall the connection's next request. `stalled` is
 * called when the handler waits for the body and no byte of it came for `idleMs`; a pause
 * of ours (the handler not reading yet) is not the client's silence, and after `discard` the
 * answer is out (Node's keep-alive timeout then ends a connection that stays silent).
 */
function requestBody(req: IncomingMessage, idleMs: number, stalled: () => void): { readonly stream: ReadableStream<Uint8Array>; discard(): void } {
  let silence: ReturnType<typeof setTimeout> | undefined;
  const waitForClient = () => {
    if (req.complete) return;
    if (silence) silence.refresh();
    else silence = setTimeout(stalled, idleMs);
  };
  const stopWaiting = () => {
    clearTimeout(silence);
    silence = undefined;
  };
  req.on("data", () => silence?.refresh()).once("end", stopWaiting).once("close", stopWaiting);
  let onData = (_chunk: Buffer) => {};
  let onEnd = () => {};
  const discard = () => {
    stopWaiting();
    req.off("data", onData).off("end", onEnd).resume();
  };
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      onData = (chunk) => {
        controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
        if ((controller.desiredSize ?? 0) <= 0) {
          req.pause();
          stopWaiting();
        }
      };
      onEnd = () => controller.close();
      req.on("data", onData).on("end", onEnd).pause();
      // A body the client cut short ends in an error, never in an end a reader would take for the whole.
      req.once("close", () => req.complete || controller.error(new Error("the request's body was cut short")));
    },
    pull() {
      req.resume();
      waitForClient();
    },
    cancel: discard,
  });
  return { stream, discard };
}

function headersOf(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined) out[name] = Array.isArray(value) ? value.join(", ") : value;
  return out;
}
