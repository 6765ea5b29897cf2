/**
 * A request sent on a kept-alive connection the server had already closed while it was idle
 * (a device whose event loop was blocked past the server's keep-alive timeout: undici's
 * "other side closed") is sent again once on a new connection; the same close with no idle
 * time before the request (a request cut in flight), or on a connection's first request, is
 * not (docs/SYNC.md "A kept-alive connection closed while idle"). Forced on a real node:http
 * server on loopback: the test closes the idle connection and waits for its `close` before
 * the next request, which the client then writes on the socket it still takes for open; the
 * remote's clock says how long it was idle.
 */
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryStorage, Sessions, StorageError } from "../../core/mod.ts";
import { createSyncHandler, httpRemote, syncStores } from "../../core/sync/mod.ts";
import { fetchRequestListener } from "../../runtime-node/mod.ts";
import { testPrincipal } from "../../testing/sync-conformance.ts";

const text = (t: string) => ({ role: "user" as const, parts: [{ type: "text" as const, text: t }] });

/** A sync server on loopback that can close its idle connections, and can cut the next requests before answering. */
async function loopbackServer() {
  const storage = new MemoryStorage();
  const sync = fetchRequestListener(createSyncHandler({ storage, authorize: () => testPrincipal("alice"), basePath: "/sync" }));
  const sockets = new Set<Socket>();
  const idle = new Set<Socket>();
  const requests: string[] = [];
  const idleWaiters: (() => void)[] = [];
  let cutNext = 0;
  const server: Server = createServer((req, res) => {
    requests.push(req.url ?? "");
    idle.delete(req.socket);
    if (cutNext > 0) {
      cutNext--;
      req.socket.destroy();
      return;
    }
    res.on("finish", () => {
      idle.add(req.socket);
      for (const wake of idleWaiters.splice(0)) wake();
    });
    sync(req, res);
  });
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => (sockets.delete(socket), idle.delete(socket)));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  return {
    storage,
    requests,
    url: `http://127.0.0.1:${port}/sync`,
    /**
     * Closes every idle kept-alive connection, as a keep-alive timeout does, and resolves once each is closed. The client
     * can read an answer before the server's `finish` of it: this waits for that event, never on the order of the two.
     */
    async closeIdle(): Promise<number> {
      while (idle.size === 0) await new Promise<void>((resolve) => idleWaiters.push(resolve));
      const closing = [...idle].map((socket) => (socket.destroy(), once(socket, "close")));
      await Promise.all(closing);
      return closing.length;
    },
    /** Cuts the next `count` requests' connections before any answer. */
    cut(count: number) {
      cutNext = count;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      server.close();
      await once(server, "close");
    },
  };
}

describe("a kept-alive connection the server closed while idle", () => {
  const servers: Awaited<ReturnType<typeof loopbackServer>>[] = [];
  afterEach(async () => {
    for (const server of servers.splice(0)) await server.close();
  });

  it("the request is sent again once, on a new connection, and the sync goes through", async () => {
    const server = await loopbackServer();
    servers.push(server);
    const sent: string[] = [];
    let now = 0;
    const remote = httpRemote({ url: server.url, id: "server", clock: () => now, fetch: (url, init) => (sent.push(url), fetch(url, init)) });
    const local = new Sessions({ storage: new MemoryStorage() });
    const session = await local.create({ agentId: "a1", workspaceId: "w-alice", sessionId: "s1" });
    await session.append(text("one"));
    expect((await syncStores({ local, remote })).pushed).toBe(1);

    await session.append(text("two"));
    expect(await server.closeIdle()).toBeGreaterThan(0);
    now += 5_000; // the server's keep-alive timeout passed while the device's event loop was blocked
    sent.length = 0;
    server.requests.length = 0;
    const report = await syncStores({ local, remote });
    expect(report.pushed).toBe(1);
    // The push sent twice: on the closed connection, which the server never read, then on a new one.
    expect(sent.slice(0, 2)).toEqual([`${server.url}/push`, `${server.url}/push`]);
    expect(server.requests.filter((url) => url === "/sync/push")).toHaveLength(1);
    const copy = await new Sessions({ storage: server.storage }).open("a1/w-alice/s1");
    expect(copy.active.map((m) => m.parts[0])).toMatchObject([{ text: "one" }, { text: "two" }]);
  });

  it("a connection cut before an answer on its first request is not sent again: a StorageError, as before", async () => {
    const server = await loopbackServer();
    servers.push(server);
    let now = 0;
    const remote = httpRemote({ url: server.url, id: "server", clock: () => (now += 5_000) }); // idle before every request
    const local = new Sessions({ storage: new MemoryStorage() });
    await (await local.create({ agentId: "a1", workspaceId: "w-alice", sessionId: "s1" })).append(text("one"));
    server.cut(1);
    await expect(syncStores({ local, remote })).rejects.toBeInstanceOf(StorageError);
    expect(server.requests).toHaveLength(1);
  });

  it("the same close with no idle time before the request is not sent again: a StorageError, as before", async () => {
    const server = await loopbackServer();
    servers.push(server);
    const remote = httpRemote({ url: server.url, id: "server", clock: () => 0 });
    const local = new Sessions({ storage: new MemoryStorage() });
    const session = await local.create({ agentId: "a1", workspaceId: "w-alice", sessionId: "s1" });
    await session.append(text("one"));
    await syncStores({ local, remote });
    await session.append(text("two"));
    expect(await server.closeIdle()).toBeGreaterThan(0);
    server.requests.length = 0;
    await expect(syncStores({ local, remote })).rejects.toBeInstanceOf(StorageError);
    expect(server.requests).toEqual([]);
    expect((await syncStores({ local, remote })).pushed).toBe(1);
  });
});
