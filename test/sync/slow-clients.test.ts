/**
 * A client too slow to send its request (slowloris) against `serveFetchHandler`, what
 * `sessionfold serve` listens with: headers or a body that stop part-way are answered 408
 * and the connection closed after a bounded time, the server goes on serving others, and a
 * long-poll pull, which waits on purpose once its body arrived (docs/SYNC.md "Pull by cursor,
 * long-polled"), is never cut. Raw sockets on loopback; every test waits for the socket's
 * close, and asserts what arrived, never how long it took.
 */
import { connect } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { InvalidInputError } from "../../core/errors.ts";
import { MemoryStorage, Sessions } from "../../core/mod.ts";
import { createSyncHandler, httpRemote, SYNC_PROTOCOL_VERSION, syncStores } from "../../core/sync/mod.ts";
import { type FetchServer, serveFetchHandler, type ServeFetchOptions } from "../../runtime-node/mod.ts";
import { testPrincipal } from "../../testing/sync-conformance.ts";

const authorize = (request: Request) => (request.headers.get("authorization") === "Bearer alice" ? testPrincipal("alice") : undefined);

let server: FetchServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  vi.restoreAllMocks();
});

type Handler = (request: Request) => Promise<Response>;

/** A sync server over a memory store on loopback, its handler wrapped by `wrap`. */
async function syncServer(options: ServeFetchOptions, wrap: (handler: Handler) => Handler = (handler) => handler): Promise<{ url: string }> {
  server = await serveFetchHandler(wrap(createSyncHandler({ storage: new MemoryStorage(), authorize, basePath: "/sync" })), options);
  return { url: server.url };
}

/** Opens a raw connection to `url`, writes `sent` and then nothing; resolves everything the server wrote once it closed the connection. */
function stallAfter(url: string, sent: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(sent));
    let answer = "";
    socket.setEncoding("utf8").on("data", (text: string) => (answer += text)).on("error", reject).on("close", () => resolve(answer));
  });
}

const pushHead = (length: number) =>
  `POST /sync/push HTTP/1.1\r\nHost: loopback\r\nAuthorization: Bearer alice\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;

describe("a client that stops sending is answered 408 and cut", () => {
  it("a body that stops part-way: 408 saying so, and the server serves the next request", async () => {
    const { url } = await syncServer({ bodyIdleTimeoutMs: 50 });
    const answer = await stallAfter(url, `${pushHead(1000)}{"v":2,"client_id":"c`);
    expect(answer).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(answer).toMatch(/\r\nconnection: close\r\n/i);
    expect(answer).toContain("no byte of the request's body arrived for 50 ms");
    const next = await fetch(`${url}/sync/pull`, {
      method: "POST",
      headers: { authorization: "Bearer alice" },
      body: JSON.stringify({ v: SYNC_PROTOCOL_VERSION }),
    });
    expect(next.status).toBe(200);
  });

  it("a body that stops part-way, from a page of a listed origin: the 408 has that origin's CORS headers, an unlisted one's none", async () => {
    const app = "http://localhost:5173";
    const handler = createSyncHandler({ storage: new MemoryStorage(), authorize, basePath: "/sync", corsOrigins: [app] });
    server = await serveFetchHandler(handler, { bodyIdleTimeoutMs: 50, corsOrigins: [app] });
    const fromPage = (origin: string) => stallAfter(server!.url, `${pushHead(1000).replace("\r\n\r\n", `\r\nOrigin: ${origin}\r\n\r\n`)}{"v":2,`);
    const listed = await fromPage(app);
    expect(listed).toMatch(/^HTTP\/1\.1 408 /);
    expect(listed).toMatch(/\r\naccess-control-allow-origin: http:\/\/localhost:5173\r\n/i);
    expect(listed).toMatch(/\r\naccess-control-allow-credentials: true\r\n/i);
    const unlisted = await fromPage("http://evil.example");
    expect(unlisted).toMatch(/^HTTP\/1\.1 408 /);
    expect(unlisted).not.toMatch(/access-control-allow-origin/i);
    expect(unlisted).toMatch(/\r\nvary: Origin\r\n/i);
  });

  it("a body sent in chunked encoding that stops part-way, the same", async () => {
    const { url } = await syncServer({ bodyIdleTimeoutMs: 50 });
    const head = "POST /sync/push HTTP/1.1\r\nHost: loopback\r\nAuthorization: Bearer alice\r\nTransfer-Encoding: chunked\r\n\r\n";
    expect(await stallAfter(url, `${head}7\r\n{"v":2,\r\n`)).toMatch(/^HTTP\/1\.1 408 /);
  });

  it("a handler that fails before its body came is answered 500 (an id, its error to console.error), and the silence after is no second answer", async () => {
    const logged: unknown[][] = [];
    vi.spyOn(console, "error").mockImplementation((...args: unknown[]) => void logged.push(args));
    server = await serveFetchHandler(() => Promise.reject(new Error("a bug in the handler at /srv/app/handler.ts")), { bodyIdleTimeoutMs: 50 });
    const answer = await stallAfter(server.url, "POST /x HTTP/1.1\r\nHost: loopback\r\nContent-Length: 10\r\n\r\n");
    expect(answer).toMatch(/^HTTP\/1\.1 500 /);
    expect(answer).not.toContain("/srv");
    const id = /internal error \(id (err_[0-9a-f]{32})\)/.exec(answer)?.[1];
    expect(logged).toHaveLength(1);
    expect(String(logged[0]![0])).toContain(`(id ${id})`);
    expect((logged[0]![1] as Error).message).toContain("a bug in the handler at /srv/app/handler.ts");
    expect(answer).not.toContain("408");
  });

  it("headers that stop part-way, or none at all: 408", async () => {
    const { url } = await syncServer({ headersTimeoutMs: 50, requestTimeoutMs: 100 });
    const [partial, silent] = await Promise.all([stallAfter(url, "POST /sync/push HTTP/1.1\r\nHost: loop"), stallAfter(url, "")]);
    expect(partial).toMatch(/^HTTP\/1\.1 408 /);
    expect(silent).toMatch(/^HTTP\/1\.1 408 /);
  });

  it("a request not whole within its time, however its bytes come: 408", async () => {
    const { url } = await syncServer({ headersTimeoutMs: 50, requestTimeoutMs: 100, bodyIdleTimeoutMs: 60_000 });
    expect(await stallAfter(url, `${pushHead(1000)}{"v":2,`)).toMatch(/^HTTP\/1\.1 408 /);
  });
});

describe("a long-poll pull is not a slow client", () => {
  it("waits past every timeout (each shown elapsed by a stalled connection cut meanwhile) and answers the change", async () => {
    // The handler reads each body whole before the sync handler sees it, and says when a long-poll's has arrived.
    let longPollArrived = () => {};
    const arrived = new Promise<void>((resolve) => (longPollArrived = resolve));
    const { url } = await syncServer({ headersTimeoutMs: 50, requestTimeoutMs: 100, bodyIdleTimeoutMs: 50 }, (sync) => async (request) => {
      const body = await request.text();
      if (body.includes('"wait_ms"')) longPollArrived();
      return sync(new Request(request, { body }));
    });
    const headers = { authorization: "Bearer alice" };
    const first = (await (await fetch(`${url}/sync/pull`, { method: "POST", headers, body: JSON.stringify({ v: SYNC_PROTOCOL_VERSION }) })).json()) as {
      cursor: string;
    };
    const waiting = fetch(`${url}/sync/pull`, {
      method: "POST",
      headers,
      body: JSON.stringify({ v: SYNC_PROTOCOL_VERSION, cursor: first.cursor, wait_ms: 60_000 }),
    });
    await arrived;
    // Each cut below comes after its timeout ran out on a connection opened after the pull's body arrived: the pull is older than both.
    // The stalled body is cut by whichever runs out first on a loaded machine: its idle time (50 ms, the listener's 408) or
    // the whole request's (100 ms, Node's own 408); either is at least the body's idle time.
    expect(await stallAfter(url, `${pushHead(1000)}{"v":2,`)).toMatch(/^HTTP\/1\.1 408 /);
    expect(await stallAfter(url, "POST /sync/push HTTP/1.1\r\nHost: loop")).toMatch(/^HTTP\/1\.1 408 /);
    const device = new Sessions({ storage: new MemoryStorage() });
    await (await device.create({ agentId: "a1", workspaceId: "w-alice", sessionId: "s1" })).append({ role: "user", parts: [{ type: "text", text: "hi" }] });
    await syncStores({ local: device, remote: httpRemote({ url: `${url}/sync`, headers }) });
    const answered = await waiting;
    expect(answered.status).toBe(200);
    expect(((await answered.json()) as { sessions: { ref: string }[] }).sessions.map((s) => s.ref)).toEqual(["a1/w-alice/s1"]);
  });
});

describe("the timeouts are checked", () => {
  it.each(
    [
      [{ bodyIdleTimeoutMs: 0 }, "bodyIdleTimeoutMs"],
      [{ headersTimeoutMs: Number.NaN }, "headersTimeoutMs"],
      [{ requestTimeoutMs: -1 }, "requestTimeoutMs"],
      [{ headersTimeoutMs: 200, requestTimeoutMs: 100 }, "headersTimeoutMs"],
    ] as const,
  )("%o is refused naming %s, and nothing listens", async (options, name) => {
    const refused = await serveFetchHandler(async () => new Response(), options).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(InvalidInputError);
    expect((refused as InvalidInputError).message).toContain(name);
  });
});
