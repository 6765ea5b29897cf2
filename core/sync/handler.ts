/**
 * The sync server as a web-standard fetch handler, `(Request) => Promise<Response>`: it
 * mounts in Hono, Deno.serve, Bun.serve, Cloudflare Workers or Node (docs/SYNC.md "The wire").
 * Every route is `POST <basePath>/<route>` with a JSON body; the host's `authorize` hook
 * runs first on every request (a CORS preflight from an origin the host listed is answered
 * before it, docs/SYNC.md "A server on another origin"), then the body is read (up to a
 * limit), decoded and checked, and only then does the store see anything.
 *
 * @module
 */
import { SyncRefusedError } from "../errors.ts";
import { corsHeaders, corsOrigins, preflightAnswer } from "./cors.ts";
import { type HiddenFailureHook, hideFailure } from "./hidden-failure.ts";
import { assertFields, type KnownFields, knownOptions, wrongArgument } from "../schema/arguments.ts";
import type { StoragePort } from "../storage/port.ts";
import { parseSyncRequest, refused, SYNC_PROTOCOL_VERSION, SYNC_ROUTES, type SyncRoute } from "./protocol.ts";
import { errorBody, type SyncPrincipal, SyncServer } from "./server.ts";

/** Options of {@linkcode createSyncHandler}. */
export interface SyncHandlerOptions {
  /** The store served (or give `server`). */
  readonly storage?: StoragePort;
  /** A server to use instead of a new one over `storage`. */
  readonly server?: SyncServer;
  /**
   * Decides who a request acts for, per request (a session cookie, a bearer token…): a
   * principal, or `undefined` for 401. What that principal may read and write is then
   * checked per session (403).
   */
  readonly authorize: (request: Request) => SyncPrincipal | undefined | Promise<SyncPrincipal | undefined>;
  /** The path the routes live under, e.g. `/sync`. Default: the root. */
  readonly basePath?: string;
  /**
   * The largest request body accepted, in bytes (413 above). Default
   * {@linkcode DEFAULT_MAX_BODY_BYTES}, 96 MiB: one message of the longest line a session keeps
   * travels at the defaults. Below that, such a message is its session's `too-large` conflict.
   */
  readonly maxBodyBytes?: number;
  /**
   * The origins of the pages that may call the server from another origin, each
   * `scheme://host[:port]` (`http://localhost:5173`): their preflights are answered and every
   * answer to them names their origin (docs/SYNC.md "A server on another origin"). An origin
   * not listed gets no CORS header, so its browser blocks the answer. Default: none.
   */
  readonly corsOrigins?: readonly string[];
  /**
   * Hears every failure the handler answers `500 internal`: the whole error (message, stack,
   * `cause`) and the id its client was told, which tells it nothing else (docs/SYNC.md
   * "Errors"). Default: `console.error`, once per failure. A refusal (4xx) is the client's and
   * is not reported.
   */
  readonly onError?: HiddenFailureHook;
}

const SYNC_HANDLER_FIELDS: KnownFields<SyncHandlerOptions> = {
  storage: true,
  server: true,
  authorize: true,
  basePath: true,
  maxBodyBytes: true,
  corsOrigins: true,
  onError: true,
};

/**
 * 96 MiB: a push of one message of the longest line a session keeps (`MAX_LINE_BYTES`,
 * 64 MiB) fits, end-to-end encrypted too, where it travels as a sealed line whose ciphertext
 * is base64 (85.3 MiB in the request), with room for its session's `keys.json`. The body is
 * read whole, so this is also about the most one request holds in the server's memory
 * (docs/decisions.md "Sync: a message of the longest line travels at the defaults").
 *
 * @example
 * ```ts
 * import { MAX_LINE_BYTES } from "sessionfold";
 *
 * console.log(DEFAULT_MAX_BODY_BYTES > (MAX_LINE_BYTES * 4) / 3); // true
 * ```
 */
export const DEFAULT_MAX_BODY_BYTES = 96 * 1024 * 1024;

/**
 * The sync server as a fetch handler over one store.
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 * import { SYNC_PROTOCOL_VERSION } from "sessionfold/sync";
 *
 * const handler = createSyncHandler({
 *   storage: new MemoryStorage(),
 *   basePath: "/sync",
 *   authorize: (request) =>
 *     request.headers.get("authorization") === "Bearer t0ken" ? { user: "alice", may: () => true } : undefined,
 * });
 * const response = await handler(new Request("http://localhost/sync/pull", { method: "POST", body: JSON.stringify({ v: SYNC_PROTOCOL_VERSION }), headers: { authorization: "Bearer t0ken" } }));
 * ```
 * @throws {InvalidInputError} when `options` is not an object with an `authorize` function and a `storage` or `server`,
 * has a field it does not know, an `onError` that is not a function, or a `corsOrigins` entry that is not an http(s) origin.
 */
export function createSyncHandler(options: SyncHandlerOptions): (request: Request) => Promise<Response> {
  assertFields(knownOptions(options, "createSyncHandler(options)", SYNC_HANDLER_FIELDS), "createSyncHandler(options)", {
    authorize: "function!",
    onError: "function",
  });
  const allowed = options.corsOrigins === undefined ? undefined : corsOrigins(options.corsOrigins, "createSyncHandler(options).corsOrigins");
  const server = options.server ?? new SyncServer({ storage: requireStorage(options.storage) });
  const basePath = (options.basePath ?? "").replace(/\/+$/, "");
  const maxBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const answer = async (request: Request): Promise<Response> => {
    try {
      const route = routeOf(request.url, basePath);
      if (!route) {
        throw refused(
          "unknown-route",
          404,
          `no sync route at ${pathOf(request.url)}; routes: ${SYNC_ROUTES.map((r) => `POST ${basePath}/${r}`).join(", ")}`,
        );
      }
      if (request.method !== "POST") throw refused("unknown-route", 405, `${request.method} ${pathOf(request.url)}: only POST is served`);
      const principal = await options.authorize(request);
      if (!principal) throw refused("unauthorized", 401, "the request carries no credentials the server accepts");
      const body = decodeBody(await readCapped(request, maxBytes), route);
      switch (route) {
        case "push": {
          const outcome = await server.push(principal, parseSyncRequest("push", body));
          return json(200, outcome);
        }
        case "pull":
          return json(200, await server.pull(principal, parseSyncRequest("pull", body), request.signal));
        case "read":
          return json(200, await server.read(principal, parseSyncRequest("read", body)));
        case "segment":
          return json(200, await server.segment(principal, parseSyncRequest("segment", body)));
      }
    } catch (error) {
      if (error instanceof SyncRefusedError) return json(error.status, { v: SYNC_PROTOCOL_VERSION, error: errorBody(error) });
      // Not a refusal: the server's own failure, whose message may name its files or another user's session.
      const { id, message } = hideFailure(error, "sync request failed", "sync handler", { request, onError: options.onError });
      return json(500, { v: SYNC_PROTOCOL_VERSION, error: { reason: "internal", message, id } });
    }
  };
  if (allowed === undefined) return answer;
  return async (request) => {
    if (routeOf(request.url, basePath)) {
      const preflight = preflightAnswer(allowed, request);
      if (preflight) return preflight;
    }
    const response = await answer(request);
    for (const [name, value] of Object.entries(corsHeaders(allowed, request.headers.get("origin")))) response.headers.set(name, value);
    return response;
  };
}

function requireStorage(storage: StoragePort | undefined): StoragePort {
  if (!storage) throw wrongArgument("createSyncHandler(options).storage", "a StoragePort (or give `server`)", storage);
  return storage;
}

/** The path of a URL, without origin, query or fragment. */
function pathOf(url: string): string {
  return url.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, "").replace(/[?#].*$/, "") || "/";
}

function routeOf(url: string, basePath: string): SyncRoute | undefined {
  const path = pathOf(url);
  if (!path.startsWith(`${basePath}/`)) return undefined;
  const name = path.slice(basePath.length + 1);
  return (SYNC_ROUTES as readonly string[]).includes(name) ? (name as SyncRoute) : undefined;
}

/** The body's bytes, refused (413) as soon as it passes `max`, whatever Content-Length said, or (400) when cut short. */
async function readCapped(request: Request, max: number): Promise<Uint8Array> {
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (declared > max) throw refused("too-large", 413, `the body declares ${declared} bytes; at most ${max} are accepted`, { limit: max });
  const stream = request.body as { getReader(): { read(): Promise<{ done: boolean; value?: Uint8Array }>; cancel(): Promise<void> } } | null;
  if (!stream) return new Uint8Array(0);
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    // A body that fails to arrive is the client's doing (it went away, or stopped sending), not the server's failure.
    const { done, value } = await reader.read().catch(() => {
      throw refused("malformed", 400, `the body was cut short after ${size} bytes: the client went away or stopped sending`);
    });
    if (done) break;
    size += value!.length;
    if (size > max) {
      await reader.cancel().catch(() => undefined);
      throw refused("too-large", 413, `the body is over ${max} bytes`, { limit: max });
    }
    chunks.push(value!);
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) bytes.set(chunk, (at += chunk.length) - chunk.length);
  return bytes;
}

function decodeBody(bytes: Uint8Array, route: SyncRoute): unknown {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw refused("malformed", 400, `${route}: the body is not UTF-8`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw refused("malformed", 400, `${route}: the body is not JSON (${(error as Error).message})`);
  }
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", "cache-control": "no-store" } });
}
