/** The encrypted-store attack suite on files (NodeFileStorage), with WebCrypto and with the Node runtime's node:crypto cipher: the no-plaintext check reads every file on disk. */
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { nodeAesGcm, NodeFileStorage } from "../../runtime-node/mod.ts";
import { runEncryptionAttackTests } from "../../testing/encryption-attacks.ts";

/** Every byte of every file under `root`, as it lies on disk. */
async function everyFile(root: string): Promise<Uint8Array> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  const files = entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
  return Buffer.concat(await Promise.all(files.map((file) => readFile(file))));
}

// The attacks are on the bytes at rest; durability has its own suites (crash points, SIGKILL). Without flushes a
// run does not wait on the disk's fsyncs, about 700 a variant (docs/decisions.md, "The encrypted-store attacks on files
// flush nothing").
runEncryptionAttackTests("NodeFileStorage", async () => {
  const root = await mkdtemp(join(tmpdir(), "sessionfold-enc-"));
  return { storage: new NodeFileStorage({ root, fsync: false }), dump: () => everyFile(root), teardown: () => rm(root, { recursive: true, force: true }) };
});

// The Node runtime's stores seal with node:crypto (runtime-node/aes-gcm.ts): the same attacks hold.
runEncryptionAttackTests("NodeFileStorage, node:crypto AES-GCM", async () => {
  const root = await mkdtemp(join(tmpdir(), "sessionfold-enc-"));
  return {
    storage: new NodeFileStorage({ root, fsync: false }),
    cipher: nodeAesGcm,
    dump: () => everyFile(root),
    teardown: () => rm(root, { recursive: true, force: true }),
  };
});
