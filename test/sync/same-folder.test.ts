/**
 * One folder store reached by two paths (the root and a symbolic link to it, or to a folder
 * above it) is still the store itself: `syncStores` refuses a direct remote over it before
 * anything is written, through the library alone (the CLI's own folder check aside), for
 * `NodeFileStorage` and for the storage worker `openNodeSessions` uses. Sameness is the file
 * system's answer (`storeIdentity`: the root's device and inode), not the path's text; another
 * folder is another store.
 */
import { mkdir, mkdtemp, readdir, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { InvalidInputError } from "../../core/errors.ts";
import { Sessions, type StoragePort } from "../../core/mod.ts";
import { directRemote, syncStores } from "../../core/sync/mod.ts";
import { NodeFileStorage, openNodeSessions, WorkerFileStorage } from "../../runtime-node/mod.ts";

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** `base/real/store`, and `base/link` a link to `base/real`. */
async function linkedStore(): Promise<{ base: string; store: string; linked: string }> {
  const base = await mkdtemp(join(tmpdir(), "sessionfold-same-folder-"));
  dirs.push(base);
  await mkdir(join(base, "real", "store"), { recursive: true });
  await symlink(join(base, "real"), join(base, "link"));
  return { base, store: join(base, "real", "store"), linked: join(base, "link", "store") };
}

async function refusal(local: Sessions, remote: StoragePort): Promise<unknown> {
  return await syncStores({ local, remote: directRemote(remote, { id: "linked" }) }).then(() => "synced", (error: unknown) => error);
}

describe("one folder store under two paths", () => {
  it("NodeFileStorage: syncStores refuses the remote as the local store itself and writes nothing; another folder syncs", async () => {
    const { base, store, linked } = await linkedStore();
    const local = new NodeFileStorage({ root: store, fsync: false });
    const sessions = new Sessions({ storage: local });
    await (await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" })).append({ role: "user", parts: [{ type: "text", text: "one" }] });
    const before = await readdir(store);
    const refused = await refusal(sessions, new NodeFileStorage({ root: linked, fsync: false }));
    expect(refused).toBeInstanceOf(InvalidInputError);
    expect((refused as InvalidInputError).message).toContain("serves the local store itself");
    expect(await readdir(store)).toEqual(before);
    const other = new NodeFileStorage({ root: join(base, "other"), fsync: false });
    expect(await refusal(sessions, other)).toBe("synced");
    expect(await other.storeIdentity()).not.toBe(await local.storeIdentity());
  });

  it("a root not created yet answers too, the same under both paths, and creates nothing", async () => {
    const { base } = await linkedStore();
    const [a, b] = [new NodeFileStorage({ root: join(base, "real", "new", "store") }), new NodeFileStorage({ root: join(base, "link", "new", "store") })];
    expect(await a.storeIdentity()).toBe(await b.storeIdentity());
    expect(await a.storeIdentity()).not.toBe(await new NodeFileStorage({ root: join(base, "real", "new", "other") }).storeIdentity());
    expect((await readdir(join(base, "real"))).sort()).toEqual(["store"]);
  });

  it("openNodeSessions (the storage worker): the same refusal", async () => {
    const { store, linked } = await linkedStore();
    const opened = await openNodeSessions({ root: store });
    const remote = new WorkerFileStorage({ root: linked });
    try {
      const refused = await refusal(opened.sessions, remote);
      expect(refused).toBeInstanceOf(InvalidInputError);
      expect((refused as InvalidInputError).message).toContain("serves the local store itself");
    } finally {
      await remote.close();
      await opened.close();
    }
  });
});
