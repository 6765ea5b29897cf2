/**
 * CORS for the sync handler (docs/SYNC.md "A server on another origin"): the origins a host
 * lists, and nothing else, may call the routes from a page. A listed origin's preflight is
 * answered with the method and headers a sync client sends, and every answer to it (a refusal
 * included) names that origin; any other origin's answers carry no CORS header, so its browser
 * blocks them, and a request without `Origin` (same-origin, a non-browser client) is served as
 * before.
 *
 * @module
 */
import { InvalidInputError } from "../errors.ts";
import { wrongArgument } from "../schema/arguments.ts";

/**
 * What `httpRemote` sends: `POST` with a JSON body, and the host's credentials in
 * `Authorization` (a cookie, when the host's fetch includes it, needs no header).
 */
const PREFLIGHT_ANSWER = {
  "access-control-allow-methods": "POST",
  "access-control-allow-headers": "authorization, content-type",
  // Ten minutes: a page syncing every few seconds asks again at most that often (Chromium caps it at two hours).
  "access-control-max-age": "600",
} as const;

/**
 * The origins `createSyncHandler` answers CORS for, checked and written as browsers send
 * `Origin` (`https://app.example`, `http://localhost:5173`).
 *
 * @example
 * ```ts
 * const origins = corsOrigins(["http://localhost:5173/", "https://App.example"], "createSyncHandler(options).corsOrigins");
 * console.log([...origins]); // ["http://localhost:5173", "https://app.example"]
 * ```
 * @throws {InvalidInputError} naming the entry when `origins` is not an array of http(s)
 * origins: a wildcard, `null`, a path, a query or a user name is refused.
 */
export function corsOrigins(origins: unknown, where: string): ReadonlySet<string> {
  if (!Array.isArray(origins)) throw wrongArgument(where, "an array of origins such as http://localhost:5173", origins);
  return new Set(origins.map((origin, index) => corsOrigin(origin, `${where}[${index}]`)));
}

/**
 * One origin of {@linkcode corsOrigins}, as browsers send it in `Origin`.
 *
 * @example
 * ```ts
 * console.log(corsOrigin("HTTP://LOCALHOST:5173/", "--cors-origin")); // "http://localhost:5173"
 * ```
 * @throws {InvalidInputError} naming `where` when `given` is not an http(s) origin.
 */
export function corsOrigin(given: unknown, where: string): string {
  const expected = "an origin, scheme://host[:port], such as http://localhost:5173 (every allowed origin listed; no wildcard)";
  if (typeof given !== "string") throw wrongArgument(where, expected, given);
  const parts = ORIGIN.exec(given);
  if (!parts) throw new InvalidInputError(`${where}: expected ${expected}, found ${JSON.stringify(given)}`, { argument: where, found: given });
  const scheme = parts[1]!.toLowerCase();
  const port = parts[3] === undefined || Number(parts[3]) === DEFAULT_PORTS[scheme] ? "" : `:${Number(parts[3])}`;
  return `${scheme}://${parts[2]!.toLowerCase()}${port}`;
}

/**
 * `scheme://host[:port]`, a trailing `/` allowed: the host a name or an IPv4 address, or an
 * IPv6 one in brackets; no user, path, query or fragment.
 */
const ORIGIN = /^(https?):\/\/([a-z0-9.-]+|\[[0-9a-f:.]+\])(?::(\d{1,5}))?\/?$/i;

/** The ports `Origin` leaves out. */
const DEFAULT_PORTS: Readonly<Record<string, number>> = { http: 80, https: 443 };

/**
 * The CORS headers of an answer to a request from `origin` (its `Origin` header): that origin
 * named, with credentials allowed, when it is listed; only `Vary: Origin` otherwise, for the
 * answer depends on it.
 *
 * @example
 * ```ts
 * corsHeaders(new Set(["http://localhost:5173"]), "http://localhost:5173");
 * // { vary: "Origin", "access-control-allow-origin": "http://localhost:5173", "access-control-allow-credentials": "true" }
 * ```
 */
export function corsHeaders(allowed: ReadonlySet<string>, origin: string | null): Record<string, string> {
  if (origin === null || !allowed.has(origin)) return { vary: "Origin" };
  return { vary: "Origin", "access-control-allow-origin": origin, "access-control-allow-credentials": "true" };
}

/**
 * The answer to a CORS preflight from a listed origin (`OPTIONS` with
 * `Access-Control-Request-Method`), `undefined` for any other request: a preflight carries no
 * credentials, so it is answered before the host's `authorize`.
 *
 * @example
 * ```ts
 * const request = new Request("http://127.0.0.1:8787/pull", {
 *   method: "OPTIONS",
 *   headers: { origin: "http://localhost:5173", "access-control-request-method": "POST" },
 * });
 * console.log(preflightAnswer(new Set(["http://localhost:5173"]), request)?.status); // 204
 * ```
 */
export function preflightAnswer(allowed: ReadonlySet<string>, request: Request): Response | undefined {
  const origin = request.headers.get("origin");
  if (request.method !== "OPTIONS" || request.headers.get("access-control-request-method") === null || origin === null || !allowed.has(origin)) {
    return undefined;
  }
  return new Response(null, { status: 204, headers: { ...corsHeaders(allowed, origin), ...PREFLIGHT_ANSWER } });
}
