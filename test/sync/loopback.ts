/**
 * A sync server on loopback that can be restarted: `serveFetchHandler` closed (its open
 * connections cut, a request in the middle included) and started again on the same port
 * over the same store, so a client's URL stays valid across the restart.
 */
import { type FetchServer, serveFetchHandler } from "../../runtime-node/mod.ts";

export interface RestartableServer {
  readonly url: string;
  /** Restarts: every open connection is cut, then a new server listens on the same port. */
  restart(): Promise<void>;
  /** How many times it was restarted. */
  readonly restarts: number;
  close(): Promise<void>;
}

export async function restartableServer(handler: (request: Request) => Promise<Response>): Promise<RestartableServer> {
  let server: FetchServer = await serveFetchHandler(handler);
  const port = Number(new URL(server.url).port);
  let restarts = 0;
  return {
    url: server.url,
    get restarts() {
      return restarts;
    },
    async restart() {
      await server.close();
      server = await serveFetchHandler(handler, { port });
      restarts++;
    },
    close: () => server.close(),
  };
}
