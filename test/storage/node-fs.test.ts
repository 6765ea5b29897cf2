import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runStorageTests } from "../../testing/storage-conformance.ts";
import { NodeFileStorage } from "../../runtime-node/mod.ts";

runStorageTests("NodeFileStorage", async () => {
  const root = await mkdtemp(join(tmpdir(), "sessionfold-fs-"));
  return {
    storage: new NodeFileStorage({ root }),
    reopen: async () => new NodeFileStorage({ root }),
    teardown: () => rm(root, { recursive: true, force: true }),
  };
});
