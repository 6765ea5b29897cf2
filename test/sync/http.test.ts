/**
 * The sync conformance suite over HTTP: devices in memory, a real sync server (the fetch
 * handler behind node:http on 127.0.0.1, wrapped in the suite's fault script, restartable on
 * its port) over a memory store and over a folder; and the handler's own refusals (401,
 * unknown route and version, malformed and oversized bodies).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryStorage, Sessions, type StoragePort } from "../../core/mod.ts";
import { createSyncHandler, httpRemote, SYNC_PROTOCOL_VERSION, syncStores } from "../../core/sync/mod.ts";
import { type FetchServer, NodeFileStorage, serveFetchHandler } from "../../runtime-node/mod.ts";
import { runSyncTests, type SyncTestTarget, testPrincipal } from "../../testing/sync-conformance.ts";
import { SyncFaults } from "../../testing/sync-faults.ts";
import { restartableServer } from "./loopback.ts";
import { recordCase } from "./matrix.ts";

/** Bearer `<user>` is that user; no header is no one (401). */
function authorize(request: Request) {
  const match = /^Bearer (\w+)$/.exec(request.headers.get("authorization") ?? "");
  return match ? testPrincipal(match[1]!) : undefined;
}

async function httpTarget(server: StoragePort, cleanup: () => Promise<void> = async () => {}): Promise<SyncTestTarget> {
  const faults = new SyncFaults();
  const loopback = await restartableServer(faults.wrap(createSyncHandler({ storage: server, authorize, basePath: "/sync" })));
  return {
    server,
    newDevice: () => new MemoryStorage(),
    remote: (user) => httpRemote({ url: `${loopback.url}/sync`, id: "server", headers: user ? { authorization: `Bearer ${user}` } : {} }),
    unauthenticated: true,
    faults,
    restart: () => loopback.restart(),
    teardown: async () => {
      await loopback.close();
      await cleanup();
    },
  };
}

runSyncTests("memory ↔ HTTP server over memory", () => httpTarget(new MemoryStorage()), { onCase: recordCase("memory↔HTTP(memory)") });

runSyncTests(
  "memory ↔ HTTP server over files",
  async () => {
    const dir = await mkdtemp(join(tmpdir(), "sessionfold-sync-server-"));
    return httpTarget(new NodeFileStorage({ root: dir }), () => rm(dir, { recursive: true, force: true }));
  },
  { onCase: recordCase("memory↔HTTP(files)") },
);

describe("the sync handler's refusals", () => {
  let loopback: FetchServer | undefined;
  afterEach(async () => {
    await loopback?.close();
    loopback = undefined;
  });

  async function post(path: string, body: string, headers: Record<string, string> = { authorization: "Bearer alice" }) {
    const storage = new MemoryStorage();
    loopback ??= await serveFetchHandler(createSyncHandler({ storage, authorize, basePath: "/sync", maxBodyBytes: 1024 }));
    const response = await fetch(`${loopback.url}${path}`, { method: "POST", body, headers });
    return { status: response.status, body: (await response.json()) as { v: number; error?: { reason: string; message: string; expected?: number } } };
  }

  it("401 without credentials, before the body is read", async () => {
    expect(await post("/sync/pull", "not json", {})).toMatchObject({ status: 401, body: { error: { reason: "unauthorized" } } });
  });

  it("404 for an unknown route, 405 for another method", async () => {
    expect(await post("/sync/nothing", "{}")).toMatchObject({ status: 404, body: { error: { reason: "unknown-route" } } });
    const response = await fetch(`${loopback!.url}/sync/pull`, { headers: { authorization: "Bearer alice" } });
    expect(response.status).toBe(405);
  });

  it("400 for a body that is not JSON, naming what was found", async () => {
    const { status, body } = await post("/sync/pull", "{v:1");
    expect(status).toBe(400);
    expect(body.error!.reason).toBe("malformed");
    expect(body.error!.message).toMatch(/^pull: the body is not JSON/);
  });

  it("400 for an unknown protocol version, saying which it speaks", async () => {
    expect(await post("/sync/pull", '{"v":3}')).toMatchObject({ status: 400, body: { error: { reason: "unsupported-version", supported: [2] } } });
  });

  it("400 for a version 1 request (every segment name in each head), which a version 2 server no longer answers", async () => {
    for (
      const [route, body] of [["pull", { v: 1 }], ["read", { v: 1, ref: "a1/w1/s1", after_sequence: 0 }], ["push", {
        v: 1,
        client_id: "c1",
        mutations: [],
      }]] as const
    ) {
      const { status, body: answer } = await post(`/sync/${route}`, JSON.stringify(body));
      expect({ status, answer }).toMatchObject({ status: 400, answer: { v: 2, error: { reason: "unsupported-version", supported: [2] } } });
      expect(answer.error!.message).toBe(`${route}: protocol version 1 is not supported; this server speaks v2`);
    }
  });

  it("400 for a mutation that is not valid, naming the field", async () => {
    const { status, body } = await post(
      "/sync/push",
      JSON.stringify({
        v: SYNC_PROTOCOL_VERSION,
        client_id: "c1",
        mutations: [{ number: 1, op: "append", ref: "a1/../s1", base_sequence: 0, base_message_id: null, messages: [] }],
      }),
    );
    expect(status).toBe(400);
    expect(body.error!.message).toMatch(/mutations\.0\.ref/);
  });

  it("413 for a body over the limit, declared or streamed", async () => {
    expect(await post("/sync/pull", JSON.stringify({ v: SYNC_PROTOCOL_VERSION, pad: "x".repeat(2000) }))).toMatchObject({
      status: 413,
      body: { error: { reason: "too-large" } },
    });
    const chunks = new ReadableStream({
      start(controller) {
        for (let i = 0; i < 4; i++) controller.enqueue(new TextEncoder().encode("x".repeat(512)));
        controller.close();
      },
    });
    const response = await fetch(
      `${loopback!.url}/sync/pull`,
      { method: "POST", body: chunks, headers: { authorization: "Bearer alice" }, duplex: "half" } as RequestInit,
    );
    expect(response.status).toBe(413);
  });

  it("an answer whose body fails cuts the connection: the client sees a network error, never a part taken for the whole", async () => {
    loopback = await serveFetchHandler(async () =>
      new Response(new ReadableStream({ start: (controller) => controller.error(new Error("the store went away")) }), { status: 200 })
    );
    await expect(fetch(`${loopback.url}/sync/pull`, { method: "POST", body: "{}" }).then((r) => r.text())).rejects.toThrow(TypeError);
  });

  it("a refused token changes nothing on the server", async () => {
    const storage = new MemoryStorage();
    loopback = await serveFetchHandler(createSyncHandler({ storage, authorize, basePath: "/sync" }));
    const local = new Sessions({ storage: new MemoryStorage() });
    await (await local.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1" })).append({ role: "user", parts: [{ type: "text", text: "hi" }] });
    await expect(syncStores({ local, remote: httpRemote({ url: `${loopback.url}/sync` }) })).rejects.toMatchObject({
      name: "SyncRefusedError",
      status: 401,
      code: "unauthorized",
    });
    expect(await storage.list("")).toEqual([]);
  });
});
