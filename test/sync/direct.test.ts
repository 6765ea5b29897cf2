/**
 * The sync conformance suite over direct remotes: memory ↔ memory and files ↔ memory.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MemoryStorage } from "../../core/mod.ts";
import { directRemote } from "../../core/sync/mod.ts";
import { NodeFileStorage } from "../../runtime-node/mod.ts";
import { runSyncTests, testPrincipal } from "../../testing/sync-conformance.ts";
import { recordCase } from "./matrix.ts";

runSyncTests(
  "memory ↔ memory (direct)",
  () => {
    const server = new MemoryStorage();
    return {
      server,
      newDevice: () => new MemoryStorage(),
      remote: (user) => directRemote(server, { id: "server", principal: testPrincipal(user ?? "nobody") }),
    };
  },
  { onCase: recordCase("memory↔memory direct") },
);

runSyncTests(
  "files ↔ memory (direct)",
  async () => {
    const dirs: string[] = [];
    const server = new MemoryStorage();
    return {
      server,
      newDevice: async () => {
        const dir = await mkdtemp(join(tmpdir(), "sessionfold-sync-"));
        dirs.push(dir);
        return new NodeFileStorage({ root: dir });
      },
      remote: (user) => directRemote(server, { id: "server", principal: testPrincipal(user ?? "nobody") }),
      teardown: async () => {
        for (const dir of dirs) await rm(dir, { recursive: true, force: true });
      },
    };
  },
  { onCase: recordCase("files↔memory direct") },
);
