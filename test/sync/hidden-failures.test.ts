/**
 * The sync handler's own failures (docs/SYNC.md "Errors"), on a real server on loopback over a
 * store that fails as a disk does, its error naming the store's files: the client is answered
 * `500 internal` with an id and nothing of the error; the host's `onError` hears the whole error
 * under that id, or `console.error` does once without one. A refusal keeps its message and is
 * not reported.
 */
import { connect } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { MemoryStorage, type SessionfoldError } from "../../core/mod.ts";
import { createSyncHandler, STORE_OWNER, SYNC_PROTOCOL_VERSION } from "../../core/sync/mod.ts";
import { type FetchServer, serveFetchHandler } from "../../runtime-node/mod.ts";
import { failingDisk, SERVER_PATH } from "../support/failing-disk.ts";

interface Heard {
  readonly error: SessionfoldError;
  readonly id: string;
  readonly url: string;
}

let server: FetchServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  vi.restoreAllMocks();
});

async function pull(url: string, token = "t0ken"): Promise<{ status: number; text: string }> {
  const response = await fetch(`${url}/sync/pull`, { method: "POST", body: JSON.stringify({ v: SYNC_PROTOCOL_VERSION }), headers: { authorization: token } });
  return { status: response.status, text: await response.text() };
}

describe("the sync handler's 500", () => {
  it("answers an id and nothing of the error, and gives the host's onError the whole error under that id", async () => {
    const heard: Heard[] = [];
    const handler = createSyncHandler({
      storage: failingDisk(true).storage,
      basePath: "/sync",
      authorize: (request) => (request.headers.get("authorization") === "t0ken" ? STORE_OWNER : undefined),
      onError: (error, { id, request }) => void heard.push({ error, id, url: request.url }),
    });
    server = await serveFetchHandler(handler);

    const answer = await pull(server.url);
    expect(answer.status).toBe(500);
    expect(answer.text).not.toContain("/srv");
    expect(answer.text).not.toContain("EIO");
    const body = JSON.parse(answer.text) as { v: number; error: { reason: string; message: string; id: string } };
    expect(body.error.reason).toBe("internal");
    expect(body.error.id).toMatch(/^err_[0-9a-f]{32}$/);
    expect(body.error.message).toBe(`internal error (id ${body.error.id})`);

    expect(heard).toHaveLength(1);
    expect(heard[0]!.id).toBe(body.error.id);
    expect(heard[0]!.url).toBe(`${server.url}/sync/pull`);
    expect(heard[0]!.error.message).toContain(SERVER_PATH);
    expect(heard[0]!.error.stack).toBeTypeOf("string");

    // A refusal is the client's: its message as it was, and nothing reported.
    const refused = await pull(server.url, "wrong");
    expect(refused.status).toBe(401);
    expect(JSON.parse(refused.text).error.message).toBe("the request carries no credentials the server accepts");
    expect(heard).toHaveLength(1);
  });

  it("without onError, writes the whole error to console.error once, with the id the client saw", async () => {
    const logged: unknown[][] = [];
    vi.spyOn(console, "error").mockImplementation((...args: unknown[]) => void logged.push(args));
    server = await serveFetchHandler(createSyncHandler({ storage: failingDisk(true).storage, basePath: "/sync", authorize: () => STORE_OWNER }));

    const answer = await pull(server.url);
    expect(answer.status).toBe(500);
    expect(answer.text).not.toContain("/srv");
    const { id } = (JSON.parse(answer.text) as { error: { id: string } }).error;
    expect(logged).toHaveLength(1);
    expect(String(logged[0]![0])).toContain(id);
    expect((logged[0]![1] as Error).message).toContain(SERVER_PATH);
  });

  it("takes a body the client cut short for the client's doing: a 400 refusal, not reported", async () => {
    const heard: string[] = [];
    let answered: (response: Response) => void = () => {};
    const answer = new Promise<Response>((resolve) => (answered = resolve));
    const handler = createSyncHandler({
      storage: new MemoryStorage(),
      basePath: "/sync",
      authorize: () => STORE_OWNER,
      onError: (_, { id }) => void heard.push(id),
    });
    server = await serveFetchHandler(async (request) => {
      const response = await handler(request);
      answered(response.clone());
      return response;
    });
    const { hostname, port } = new URL(server.url);
    const socket = connect(Number(port), hostname, () => socket.end(`POST /sync/push HTTP/1.1\r\nHost: loopback\r\nContent-Length: 1000\r\n\r\n{"v":2,`));
    socket.on("error", () => undefined);
    const response = await answer;
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { reason: string; message: string } }).error).toEqual({
      reason: "malformed",
      message: "the body was cut short after 7 bytes: the client went away or stopped sending",
    });
    expect(heard).toEqual([]);
  });

  it("refuses an onError that is not a function", () => {
    expect(() => createSyncHandler({ storage: new MemoryStorage(), authorize: () => STORE_OWNER, onError: "log" as never })).toThrow(
      /createSyncHandler\(options\)\.onError: expected a function/,
    );
  });
});
