/**
 * End-to-end encrypted sessions through sync (docs/SYNC.md "End-to-end encrypted sessions"):
 * the conformance suite with every device on an encrypted store under one key-encryption key,
 * against a server store in memory reached directly and a real HTTP server on loopback over
 * memory and over a folder. The server never has the key; the invariants read its store as a
 * key holder would.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MemoryStorage, type StoragePort } from "../../core/mod.ts";
import { createSyncHandler, directRemote, httpRemote } from "../../core/sync/mod.ts";
import { NodeFileStorage, serveFetchHandler } from "../../runtime-node/mod.ts";
import { runSyncTests, testPrincipal } from "../../testing/sync-conformance.ts";
import { encryptedTarget } from "./encrypted-pair.ts";

function authorize(request: Request) {
  const match = /^Bearer (\w+)$/.exec(request.headers.get("authorization") ?? "");
  return match ? testPrincipal(match[1]!) : undefined;
}

async function httpTarget(server: StoragePort, cleanup: () => Promise<void> = async () => {}) {
  const loopback = await serveFetchHandler(createSyncHandler({ storage: server, authorize, basePath: "/sync" }));
  return encryptedTarget(
    server,
    (user) => httpRemote({ url: `${loopback.url}/sync`, id: "server", headers: user ? { authorization: `Bearer ${user}` } : {} }),
    {
      unauthenticated: true,
      teardown: async () => {
        await loopback.close();
        await cleanup();
      },
    },
  );
}

runSyncTests(
  "encrypted memory ↔ memory (direct)",
  () => {
    const server = new MemoryStorage();
    return encryptedTarget(server, (user) => directRemote(server, { id: "server", principal: testPrincipal(user ?? "nobody") }));
  },
  { encrypted: true },
);

runSyncTests("encrypted memory ↔ HTTP server over memory", () => httpTarget(new MemoryStorage()), { encrypted: true });

runSyncTests(
  "encrypted files ↔ HTTP server over files",
  async () => {
    const dirs = [await mkdtemp(join(tmpdir(), "sessionfold-e2e-server-"))];
    const target = await httpTarget(new NodeFileStorage({ root: dirs[0]! }), async () => {
      for (const dir of dirs) await rm(dir, { recursive: true, force: true });
    });
    return {
      ...target,
      newDevice: async () => {
        const dir = await mkdtemp(join(tmpdir(), "sessionfold-e2e-device-"));
        dirs.push(dir);
        const { EncryptedStorage } = await import("../../core/mod.ts");
        return EncryptedStorage.create(new NodeFileStorage({ root: dir }), target.provider);
      },
    };
  },
  { encrypted: true },
);
