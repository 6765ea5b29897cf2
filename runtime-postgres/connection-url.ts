/**
 * A PostgreSQL connection URL read as libpq and `pg` read it. WHATWG `URL` refuses user info
 * before an empty host (`postgres://app@/db?host=/run/postgresql`, a Unix socket named by its
 * folder), which both accept: such a URL is parsed with a placeholder host, and written back
 * without it.
 *
 * @module
 */

/** The schema a store lives in when none is named (`PostgresStorageOptions.schema`, `?schema=`). */
export const DEFAULT_SCHEMA = "sessionfold";

/** The host that stands for an empty one while the URL is parsed (a reserved name, never a real host). */
const NO_HOST = "sessionfold-no-host.invalid";

/**
 * `text` as a `URL`, its empty host (if any) replaced by a placeholder that
 * {@linkcode formatConnectionUrl} removes again; `undefined` when it is not a URL.
 *
 * @example
 * ```ts
 * const url = parseConnectionUrl("postgres://app@/app?host=/run/postgresql&schema=tenant_a")!;
 * url.searchParams.delete("schema");
 * formatConnectionUrl(url); // "postgres://app@/app?host=%2Frun%2Fpostgresql"
 * ```
 */
export function parseConnectionUrl(text: string): URL | undefined {
  try {
    return new URL(text);
  } catch {
    const emptyHost = /^postgres(?:ql)?:\/\/[^/?#@]*@(?=[/?#]|$)/i.exec(text);
    if (!emptyHost) return undefined;
    try {
      return new URL(`${emptyHost[0]}${NO_HOST}${text.slice(emptyHost[0].length)}`);
    } catch {
      return undefined;
    }
  }
}

/**
 * `url` as text, with the empty host {@linkcode parseConnectionUrl} stood in for given back.
 *
 * @example
 * ```ts
 * formatConnectionUrl(parseConnectionUrl("postgres://app@/app")!); // "postgres://app@/app"
 * ```
 */
export function formatConnectionUrl(url: URL): string {
  // With or without user info: `postgres://app@/db`, `postgres:///db`.
  return url.hostname === NO_HOST ? url.href.replace(`@${NO_HOST}`, "@").replace(`//${NO_HOST}`, "//") : url.href;
}
