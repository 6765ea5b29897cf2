/**
 * The playground's local sync server (docs/SYNC.md "The playground's sync server"): a Vite
 * plugin that mounts `createSyncHandler` at `/sync` on the playground's own server (`vite
 * preview`, which `npm start` runs, and `vite` in development), over a folder store, so the
 * page syncs with its own origin: one port, one command, no CORS, nothing to configure.
 *
 * The store is `.sessionfold-demo-store/` at the repository root (git-ignored), or the
 * folder `$SESSIONFOLD_DEMO_STORE` names. Like `sessionfold serve`, it serves a loopback
 * address only, unless `$SESSIONFOLD_DEMO_SYNC_TOKEN` holds a token that every request must
 * then carry (`Authorization: Bearer …`; the page asks for it when refused). Served beyond
 * loopback without one, every sync request is refused (403) and the page says why.
 *
 * This module runs in Node (vite.config.ts loads it); the page never imports it.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { resolve } from "node:path";
import type { Connect, Logger, Plugin } from "vite";
import { createSyncHandler, STORE_OWNER, SYNC_PROTOCOL_VERSION, SyncServer } from "../core/sync/mod.ts";
import { fetchRequestListener, NodeFileStorage, nodeWriterIdentity } from "../runtime-node/mod.ts";
import { bearerMatches, isLoopbackHost } from "../runtime-node/serve-access.ts";

/** Where the routes live, on the page's origin. */
const BASE_PATH = "/sync";

/** Options of {@linkcode demoSyncServer}. */
export interface DemoSyncServerOptions {
  /** The store's folder when `$SESSIONFOLD_DEMO_STORE` is not set. */
  readonly defaultStore: string;
}

/** The Vite plugin: `/sync` on the dev and preview servers. */
export function demoSyncServer(options: DemoSyncServerOptions): Plugin {
  const mount = (middlewares: Connect.Server, host: string | boolean | undefined, logger: Logger) => {
    middlewares.use(syncMiddleware(host, options.defaultStore, logger));
  };
  return {
    name: "sessionfold:demo-sync-server",
    configureServer: (server) => mount(server.middlewares, server.config.server.host, server.config.logger),
    configurePreviewServer: (server) => mount(server.middlewares, server.config.preview.host, server.config.logger),
  };
}

/** The middleware: sync requests to the handler, everything else on to Vite. */
function syncMiddleware(host: string | boolean | undefined, defaultStore: string, logger: Logger): Connect.NextHandleFunction {
  const env = process.env;
  const root = env["SESSIONFOLD_DEMO_STORE"] ? resolve(env["SESSIONFOLD_DEMO_STORE"]) : defaultStore;
  const token = env["SESSIONFOLD_DEMO_SYNC_TOKEN"]?.trim() || undefined;
  // Vite listens on `localhost` when no host is given, on every address for `--host` alone.
  const listensOn = host === undefined ? "localhost" : host === true || host === "" ? "0.0.0.0" : String(host);
  const served = token !== undefined || (host !== true && isLoopbackHost(listensOn));
  const listener = served
    ? fetchRequestListener(
      createSyncHandler({
        server: new SyncServer({ storage: new NodeFileStorage({ root }), identity: nodeWriterIdentity() }),
        basePath: BASE_PATH,
        authorize: (request) => (token === undefined || bearerMatches(request.headers.get("authorization"), token) ? STORE_OWNER : undefined),
      }),
    )
    : refuseAll(listensOn);
  logger.info(
    served
      ? `  sessionfold sync server: ${BASE_PATH} on this server, store ${root}${token === undefined ? "" : " (bearer token required)"}`
      : `  sessionfold sync server: refused — listening on ${listensOn} needs SESSIONFOLD_DEMO_SYNC_TOKEN; without one only a loopback address is served`,
  );
  return (req, res, next) => {
    const path = (req.url ?? "").split("?")[0]!;
    if (path === BASE_PATH || path.startsWith(`${BASE_PATH}/`)) listener(req, res);
    else next();
  };
}

/** Every sync request answered 403, saying why (the protocol's error body, so the page shows the message). */
function refuseAll(listensOn: string): (req: IncomingMessage, res: ServerResponse) => void {
  const body = JSON.stringify({
    v: SYNC_PROTOCOL_VERSION,
    error: {
      reason: "forbidden",
      message:
        `the playground's sync server listens on ${listensOn}, beyond this machine, without a token: start it with SESSIONFOLD_DEMO_SYNC_TOKEN set, or on a loopback address`,
    },
  });
  return (req, res) => {
    req.resume();
    res.writeHead(403, { "content-type": "application/json" }).end(body);
  };
}
