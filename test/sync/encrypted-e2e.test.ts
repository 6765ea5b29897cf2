/**
 * The end-to-end encrypted sync checks (docs/SYNC.md "End-to-end encrypted sessions") over a
 * server store in memory reached directly, and a real HTTP server on loopback over a folder
 * (its store read byte for byte from the disk).
 */
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MemoryStorage } from "../../core/mod.ts";
import { createSyncHandler, directRemote, httpRemote } from "../../core/sync/mod.ts";
import { NodeFileStorage, serveFetchHandler } from "../../runtime-node/mod.ts";
import { testPrincipal } from "../../testing/sync-conformance.ts";
import { everyEntry, runEndToEndChecks } from "./encrypted-pair.ts";

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
