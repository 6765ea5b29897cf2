/** Deletion and retention on the in-memory store and on files (a temporary folder). */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MemoryStorage } from "../../core/mod.ts";
import { NodeFileStorage } from "../../runtime-node/mod.ts";
import { runRetentionTests } from "./suite.ts";

runRetentionTests("MemoryStorage", async () => ({ storage: new MemoryStorage(), teardown: async () => undefined }));

runRetentionTests("NodeFileStorage", async () => {
  const dir = await mkdtemp(join(tmpdir(), "sessionfold-retention-"));
  const storage = new NodeFileStorage({ root: join(dir, "store"), fsync: false });
  return { storage, teardown: async () => rm(dir, { recursive: true, force: true }) };
});
