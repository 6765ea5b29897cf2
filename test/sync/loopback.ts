/**
 * A real node:http server on 127.0.0.1 (port 0) around a fetch handler, for the sync tests
 * over HTTP: requests and answers go through a socket, bodies stream both ways, and a client
 * that goes away aborts the request's signal.
 */
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";

export interface Loopback {
  readonly url: string;
  close(): Promise<void>;
}

export async function serveOnLoopback(handler: (request: Request) => Promise<Response>): Promise<Loopback> {
  const server = createServer((req, res) => {
    const aborted = new AbortController();
    res.on("close", () => aborted.abort());
    const { port } = server.address() as AddressInfo;
    const hasBody = req.method !== "GET" && req.method !== "HEAD";
    const request = new Request(`http://127.0.0.1:${port}${req.url ?? "/"}`, {
      method: req.method ?? "GET",
      headers: headersOf(req.headers),
      ...(hasBody ? { body: Readable.toWeb(req) as ReadableStream, duplex: "half" } : {}),
      signal: aborted.signal,
    } as RequestInit);
    handler(request)
      .then(async (response) => {
        res.writeHead(response.status, Object.fromEntries(response.headers));
        res.end(Buffer.from(await response.arrayBuffer()));
      })
      .catch((error: unknown) => {
        res.writeHead(500, { "content-type": "text/plain" });
        res.end(String(error));
      });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

function headersOf(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined) out[name] = Array.isArray(value) ? value.join(", ") : value;
  return out;
}
