/**
 * A server that takes a request and never answers (docs/SYNC.md "A server that never answers"):
 * `httpRemote` gives the request up after `timeoutMs` with a `StorageError` naming the URL, as
 * a cut connection's, whether the answer's headers never come or its body stops; a host's
 * `fetch` that ignores the signal is cut the same way. The run stops with nothing lost: the
 * next run against a server that answers pushes the same message once. Real node:http
 * servers on loopback.
 */
import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryStorage, Sessions, StorageError } from "../../core/mod.ts";
import { createSyncHandler, httpRemote, syncStores } from "../../core/sync/mod.ts";
import { fetchRequestListener } from "../../runtime-node/mod.ts";
import { testPrincipal } from "../../testing/sync-conformance.ts";
import { deviceWithOneMessage } from "./one-message.ts";

const servers: { close(): void; closeAllConnections(): void }[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    server.close();
  }
});

/** A server on loopback whose `respond` takes each request; its sync URL. */
async function loopback(respond: (req: IncomingMessage, res: ServerResponse) => void) {
  const server = createServer(respond);
  servers.push(server);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return `http://127.0.0.1:${(server.address() as { port: number }).port}/sync`;
}

describe("httpRemote's timeoutMs", () => {
  it("no answer at all: the push fails with a StorageError naming the URL and the timeout; the next run pushes the message once", async () => {
    const held: string[] = [];
    const url = await loopback((req) => void held.push(req.url ?? ""));
    const { sessions, session } = await deviceWithOneMessage({ workspaceId: "w-alice" });
    const failed = await syncStores({ local: sessions, remote: httpRemote({ url, id: "server", timeoutMs: 200 }) }).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(StorageError);
    expect(failed).toMatchObject({ details: { url: `${url}/push`, timeout_ms: 200 } });
    expect((failed as Error).message).toBe(`${url}/push: no answer within 0.2 s (httpRemote's timeoutMs); the request may still have arrived`);
    expect(held).toEqual(["/sync/push"]);

    // The same client against a server that answers: the message the outbox kept goes once.
    const server = new MemoryStorage();
    const answering = await loopback(fetchRequestListener(createSyncHandler({ storage: server, authorize: () => testPrincipal("alice"), basePath: "/sync" })));
    const report = await syncStores({ local: sessions, remote: httpRemote({ url: answering, id: "server", headers: { authorization: "Bearer alice" } }) });
    expect(report.acknowledged).toEqual(session.active.map((m) => m.message_id));
    const onServer = await new Sessions({ storage: server }).open("a1/w-alice/s1");
    expect(onServer.active.map((m) => m.message_id)).toEqual(session.active.map((m) => m.message_id));
  });

  it("headers sent, the body never ended: the same error", async () => {
    const url = await loopback((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write('{"v":2,');
    });
    const { sessions } = await deviceWithOneMessage({ workspaceId: "w-alice" });
    const failed = await syncStores({ local: sessions, remote: httpRemote({ url, id: "server", timeoutMs: 200 }) }).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(StorageError);
    expect(failed).toMatchObject({ details: { url: `${url}/push`, timeout_ms: 200 } });
  });

  it("a host's fetch that ignores the signal is cut all the same", async () => {
    const { sessions } = await deviceWithOneMessage({ workspaceId: "w-alice" });
    let signalGiven: unknown;
    const neverAnswers = (_input: string, init: { signal: AbortSignal }) => {
      signalGiven = init.signal;
      return new Promise<Response>(() => {});
    };
    const remote = httpRemote({ url: "http://127.0.0.1:9/sync", id: "server", fetch: neverAnswers, timeoutMs: 100 });
    const failed = await syncStores({ local: sessions, remote }).catch((e: unknown) => e);
    expect(failed).toMatchObject({ details: { url: "http://127.0.0.1:9/sync/push", timeout_ms: 100 } });
    expect(signalGiven).toBeInstanceOf(AbortSignal);
    expect((signalGiven as AbortSignal).aborted).toBe(true);
  });

  it("a timeoutMs that is not a positive number a timer takes is refused (a longer delay would fire at once)", () => {
    for (const timeoutMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 31, "1000"]) {
      expect(() => httpRemote({ url: "http://127.0.0.1:9/sync", timeoutMs: timeoutMs as number })).toThrow(
        `httpRemote(options).timeoutMs: expected a positive number of milliseconds up to 2147483647, found ${String(timeoutMs)}`,
      );
    }
    expect(() => httpRemote({ url: "http://127.0.0.1:9/sync", timeoutMs: 2 ** 31 - 1 })).not.toThrow();
  });
});
