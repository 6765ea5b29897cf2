/**
 * Every message the format accepts travels to a sync server at its defaults (docs/SYNC.md
 * "Batches"): one message of the longest line a session keeps (`MAX_LINE_BYTES`), in the clear
 * (an object in the request) and end-to-end encrypted (a sealed line: a string, its ciphertext
 * in base64), through a real `createSyncHandler` on loopback with no `maxBodyBytes` given.
 */
import { afterEach, describe, expect, it } from "vitest";
import { EncryptedStorage, MAX_LINE_BYTES, MemoryStorage, Sessions, type StoragePort } from "../../core/mod.ts";
import { createSyncHandler, DEFAULT_MAX_BODY_BYTES, httpRemote, type SyncRemote, syncStores } from "../../core/sync/mod.ts";
import { type FetchServer, nodeAesGcm, serveFetchHandler } from "../../runtime-node/mod.ts";
import { newKeyring } from "./encrypted-pair.ts";

const ACTIVE = "agents/a1/workspaces/w1/sessions/big/messages/active.jsonl";

describe("sync: a message of the longest line goes to a server at its defaults", () => {
  const servers: FetchServer[] = [];
  afterEach(async () => {
    for (const server of servers.splice(0)) await server.close();
  });

  /** A sync server on loopback over `storage` with the handler's defaults, and the sizes of the push bodies it was sent. */
  async function defaultServer(storage: StoragePort): Promise<{ remote: SyncRemote; pushed: number[] }> {
    const handler = createSyncHandler({ storage, authorize: () => ({ user: "u", may: () => true }), basePath: "/sync" });
    const server = await serveFetchHandler(handler);
    servers.push(server);
    const pushed: number[] = [];
    const remote = httpRemote({
      url: `${server.url}/sync`,
      id: "server",
      fetch: (url, init) => {
        if (url.endsWith("/push")) pushed.push(new TextEncoder().encode(init.body).length);
        // A connection per request: both sides share this process, whose event loop a 64 MiB message blocks for seconds,
        // so a kept-alive socket could reach the server's idle timeout just as the next request is written on it.
        return fetch(url, { ...init, headers: { ...init.headers, connection: "close" } });
      },
    });
    return { remote, pushed };
  }

  /** Appends to `a1/w1/big` one message whose line (as `local` stores it in the clear) is `MAX_LINE_BYTES` long. */
  async function appendLongestLine(local: Sessions, plain: StoragePort): Promise<void> {
    const session = await local.create({ agentId: "a1", workspaceId: "w1", sessionId: "big" });
    // Measured on a short message: the line is the text plus what surrounds it.
    await session.append({ role: "user", parts: [{ type: "text", text: "" }] });
    const around = (await plain.read(ACTIVE))!.length - 1;
    await session.append({ role: "user", parts: [{ type: "text", text: "x".repeat(MAX_LINE_BYTES - around - 8) }] });
    const lines = new TextDecoder().decode((await plain.read(ACTIVE))!).split("\n");
    expect(MAX_LINE_BYTES - lines[1]!.length).toBeLessThan(16);
  }

  /** The sequences in the clear of the server's `active.jsonl` of the session (sealed lines keep them in the clear). */
  async function serverSequences(server: StoragePort): Promise<number[]> {
    const text = new TextDecoder().decode((await server.read(ACTIVE))!);
    return text.split("\n").filter((line) => line !== "").map((line) => Number(/"sequence":(\d+)/.exec(line)![1]));
  }

  /** Syncs `local` with a server at its defaults over `server`: both messages go; the size of the largest push body. */
  async function largestPushAtDefaults(local: Sessions, server: StoragePort): Promise<number> {
    const { remote, pushed } = await defaultServer(server);
    const report = await syncStores({ local, remote });
    expect(report.conflicts).toEqual([]);
    expect(report.pushed).toBe(2);
    expect(await serverSequences(server)).toEqual([1, 2]);
    return Math.max(...pushed);
  }

  it("in the clear: one append, within the default limit", { timeout: 300_000 }, async () => {
    const [device, server] = [new MemoryStorage(), new MemoryStorage()];
    const local = new Sessions({ storage: device });
    await appendLongestLine(local, device);
    expect(await largestPushAtDefaults(local, server)).toBeLessThanOrEqual(DEFAULT_MAX_BODY_BYTES);
  });

  it("end-to-end encrypted: one sealed line, its ciphertext in base64 inside a JSON string, within the default limit", { timeout: 300_000 }, async () => {
    const provider = await newKeyring();
    const server = new MemoryStorage();
    // node:crypto's cipher, as the Node runtime's stores use: WebCrypto's takes seconds more on a record of this size.
    const device = await EncryptedStorage.create(new MemoryStorage(), provider, { cipher: nodeAesGcm });
    const local = new Sessions({ storage: device });
    await appendLongestLine(local, device);
    const largest = await largestPushAtDefaults(local, server);
    // The sealed line is about 4/3 of the plaintext line: more than MAX_LINE_BYTES travelled in one body.
    expect(largest).toBeGreaterThan(MAX_LINE_BYTES * 4 / 3);
    expect(largest).toBeLessThanOrEqual(DEFAULT_MAX_BODY_BYTES);
  });
});
