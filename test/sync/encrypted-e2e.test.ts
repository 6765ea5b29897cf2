/**
 * The end-to-end encrypted sync checks (docs/SYNC.md "End-to-end encrypted sessions") over a
 * server store in memory reached directly, and a real HTTP server on loopback over a folder
 * (its store read byte for byte from the disk).
 */
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { EncryptedStorage, ExtractiveSummarizer, MemoryStorage, Sessions } from "../../core/mod.ts";
import { createSyncHandler, directRemote, httpRemote, SyncRefusedError, SyncServer, syncStores } from "../../core/sync/mod.ts";
import { NodeFileStorage, serveFetchHandler } from "../../runtime-node/mod.ts";
import { testPrincipal } from "../../testing/sync-conformance.ts";
import { everyEntry, newKeyring, runEndToEndChecks } from "./encrypted-pair.ts";

/** Every file under `dir`, its path and its bytes. */
async function everyFile(dir: string): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) chunks.push(Buffer.from(join(entry.parentPath, entry.name)), await readFile(join(entry.parentPath, entry.name)));
  }
  return Buffer.concat(chunks);
}

runEndToEndChecks("memory (direct)", async () => {
  const server = new MemoryStorage();
  return { server, remote: (user) => directRemote(server, { id: "server", principal: testPrincipal(user) }), dump: () => everyEntry(server) };
});

runEndToEndChecks("HTTP server on loopback over files", async () => {
  const dir = await mkdtemp(join(tmpdir(), "sessionfold-e2e-files-"));
  const server = new NodeFileStorage({ root: dir });
  const authorize = (request: Request) => {
    const match = /^Bearer ([\w-]+)$/.exec(request.headers.get("authorization") ?? "");
    return match ? testPrincipal(match[1]!) : undefined;
  };
  const loopback = await serveFetchHandler(createSyncHandler({ storage: server, authorize, basePath: "/sync" }));
  return {
    server,
    remote: (user) => httpRemote({ url: `${loopback.url}/sync`, id: "server", headers: { authorization: `Bearer ${user}` } }),
    dump: () => everyFile(dir),
    teardown: async () => {
      await loopback.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

describe("an encrypted store as the remote (a folder the CLI syncs to, a host's server over its own store)", () => {
  it("is served as stored: it becomes an encrypted replica its key opens, and refuses a store in the clear", async () => {
    const provider = await newKeyring();
    const replica = await EncryptedStorage.create(new MemoryStorage(), provider);
    const remote = directRemote(new SyncServer({ storage: replica }), { id: "replica" });
    const device = new Sessions({ storage: await EncryptedStorage.create(new MemoryStorage(), provider) });
    const s = await device.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1", title: "replicated" });
    await s.append([{ role: "user", parts: [{ type: "text", text: "one" }] }, { role: "assistant", parts: [{ type: "text", text: "two" }] }]);
    await s.compact({ summarizer: new ExtractiveSummarizer() });
    await s.append({ role: "user", parts: [{ type: "text", text: "three" }] });
    expect((await syncStores({ local: device, remote })).pushed).toBe(3);
    // The replica's own files are the device's envelopes: the replica opens with the key like any encrypted store.
    const there = await new Sessions({ storage: await EncryptedStorage.open(replica.inner, provider) }).open("a1/w1/s1");
    expect(there.diagnostics).toEqual([]);
    expect([there.meta.title, there.summary?.text]).toEqual(["replicated", s.summary?.text]);
    expect(there.active.map((m) => m.message_id)).toEqual(s.active.map((m) => m.message_id));
    expect(there.active.at(-1)!.parts[0]).toMatchObject({ type: "text", text: "three" });
    const clear = new Sessions({ storage: new MemoryStorage() });
    await (await clear.create({ agentId: "a1", workspaceId: "w1", sessionId: "s2" })).append({ role: "user", parts: [{ type: "text", text: "in the clear" }] });
    const refusal = await syncStores({ local: clear, remote }).catch((e: unknown) => e);
    expect((refusal as SyncRefusedError).reason).toBe("encryption-mismatch");
    expect(await replica.inner.list("agents/a1/workspaces/w1/sessions")).toEqual(["s1"]);
  });
});
