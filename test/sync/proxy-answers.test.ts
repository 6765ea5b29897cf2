/**
 * A sync server behind a proxy (docs/SYNC.md "One session at a time"): the proxy's own answers
 * are not the protocol's JSON. A 413 of its body limit (nginx's `client_max_body_size`
 * answers text/html) is the `too-large` refusal the engine halves, limit unknown; a 502, 503
 * or 504 of an upstream that is down is a `StorageError` (the remote could not be reached, the
 * run can be retried), never `internal`. A real proxy on loopback (node:http) in front of a
 * real sync server.
 */
import { createServer, type IncomingMessage, request as forward, type Server } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryStorage, Sessions, StorageError } from "../../core/mod.ts";
import { createSyncHandler, httpRemote, SyncRefusedError, syncStores } from "../../core/sync/mod.ts";
import { type FetchServer, serveFetchHandler } from "../../runtime-node/mod.ts";

const HTML = "<html><head><title>413 Request Entity Too Large</title></head><body><center><h1>413 Request Entity Too Large</h1></center></body></html>";

/** The proxy's rule for one request: `forward` to the sync server, or answer this status with an HTML page. */
type Rule = (declaredBytes: number) => "forward" | number;

/** A proxy on loopback in front of `upstream`: each request goes where `rule` says, its body read whole first. */
async function proxy(upstream: string, rule: Rule): Promise<{ url: string; server: Server }> {
  const server = createServer(async (incoming: IncomingMessage, outgoing) => {
    const chunks: Buffer[] = [];
    for await (const chunk of incoming) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const decision = rule(body.length);
    if (decision !== "forward") {
      outgoing.writeHead(decision, { "content-type": "text/html" }).end(HTML.replaceAll("413 Request Entity Too Large", `${decision} from the proxy`));
      return;
    }
    const target = new URL(incoming.url!, upstream);
    const upstreamRequest = forward(target, { method: incoming.method, headers: { ...incoming.headers, host: target.host } }, (answer) => {
      outgoing.writeHead(answer.statusCode!, answer.headers);
      answer.pipe(outgoing);
    });
    upstreamRequest.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address() as { port: number };
  return { url: `http://127.0.0.1:${address.port}`, server };
}

async function seed(sessions: Sessions, ref: string, text: string): Promise<void> {
  const [agentId, workspaceId, sessionId] = ref.split("/") as [string, string, string];
  const session = await sessions.create({ agentId, workspaceId, sessionId });
  await session.append({ role: "user", parts: [{ type: "text", text }] });
}

describe("sync: a proxy's answers that are not the protocol's", () => {
  const servers: FetchServer[] = [];
  const proxies: Server[] = [];
  afterEach(async () => {
    for (const server of servers.splice(0)) await server.close();
    for (const server of proxies.splice(0)) await new Promise((resolve) => server.close(resolve));
  });

  async function behindProxy(storage: MemoryStorage, rule: Rule) {
    const upstream = await serveFetchHandler(createSyncHandler({ storage, authorize: () => ({ user: "u", may: () => true }), basePath: "/sync" }));
    servers.push(upstream);
    const front = await proxy(upstream.url, rule);
    proxies.push(front.server);
    return httpRemote({ url: `${front.url}/sync`, id: "server" });
  }

  it("a 413 in HTML above the proxy's limit: batches are halved, the one session over it is its conflict, the others sync", async () => {
    const [device, server] = [new MemoryStorage(), new MemoryStorage()];
    const local = new Sessions({ storage: device });
    for (let i = 1; i <= 4; i++) await seed(local, `a1/w1/s${i}`, "x".repeat(20_000));
    await seed(local, "a1/w1/big", "x".repeat(100_000));
    const remote = await behindProxy(server, (bytes) => (bytes > 64 * 1024 ? 413 : "forward"));
    const report = await syncStores({ local, remote });
    expect(report.conflicts).toEqual([{ ref: "a1/w1/big", reason: "too-large", message: expect.stringMatching(/^a1\/w1\/big: its create .*HTTP 413/) }]);
    expect(report.pushed).toBe(4);
    expect((await new Sessions({ storage: server }).list()).map((m) => m.session_id).sort()).toEqual(["s1", "s2", "s3", "s4"]);
  });

  for (const status of [502, 503, 504]) {
    it(`a ${status} in HTML (the upstream is down) is a StorageError naming the URL and the status: the run can be retried`, async () => {
      const local = new Sessions({ storage: new MemoryStorage() });
      await seed(local, "a1/w1/s1", "hello");
      const remote = await behindProxy(new MemoryStorage(), () => status);
      const failure = await syncStores({ local, remote }).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(StorageError);
      expect(failure).not.toBeInstanceOf(SyncRefusedError);
      expect((failure as StorageError).message).toMatch(new RegExp(`/sync/push answered HTTP ${status} .*could not be reached`));
      expect((failure as StorageError).details).toMatchObject({ status });
      // Retried once the upstream is back: nothing was lost.
      const server = new MemoryStorage();
      expect((await syncStores({ local, remote: await behindProxy(server, () => "forward") })).pushed).toBe(1);
    });
  }
});
