/**
 * NodeFileStorage's boundary, method by method: a link anywhere under the root (to a file,
 * to a folder, to a device), a FIFO, a socket, a hard link, a folder where a file belongs and
 * a file over the limit are each refused with a `StoreEntryError` naming the key and what was
 * found, before a byte is read or written; a folder beside the root, hashed before and after,
 * never changes; nothing blocks.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { link, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CorruptSessionError, type ListProblem, Sessions, StoreEntryError } from "../../core/mod.ts";
import { NodeFileStorage, WorkerFileStorage } from "../../runtime-node/mod.ts";
import { StoreBoundary } from "../../runtime-node/fs-boundary.ts";

const utf8 = (text: string) => new TextEncoder().encode(text);

let base: string;
let root: string;
let outside: string;
let storage: NodeFileStorage;
let server: Server | undefined;

beforeEach(async () => {
  base = await mkdtemp(join(tmpdir(), "sessionfold-boundary-"));
  root = join(base, "store");
  outside = join(base, "outside");
  await mkdir(join(outside, "folder"), { recursive: true });
  await writeFile(join(outside, "victim.jsonl"), '{"record_type":"message"}\n');
  await writeFile(join(outside, "folder", "kept"), "kept\n");
  storage = new NodeFileStorage({ root, fsync: false, maxFileBytes: 1024 });
  await storage.replace("s/meta.json", utf8("{}"));
});

afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
  await rm(base, { recursive: true, force: true });
});

/** Every file under `dir` with its mode and the SHA-256 of its bytes. */
async function hashTree(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of (await readdir(dir, { recursive: true })) as string[]) {
    const info = await stat(join(dir, name));
    out[name] = info.isDirectory()
      ? `dir ${(info.mode & 0o777).toString(8)}`
      : `${(info.mode & 0o777).toString(8)} ${createHash("sha256").update(await readFile(join(dir, name))).digest("hex")}`;
  }
  return out;
}

/** Every port method on `key`, each settled. */
function everyMethod(store: NodeFileStorage, key: string): Record<string, Promise<unknown>> {
  const bytes = utf8('{"x":1}\n');
  return {
    read: store.read(key),
    readTail: store.readTail(key, 16),
    // A readMany's tail opens its file without asking first whether it is there (StoreBoundary.open's `named`).
    readManyTail: store.readMany([{ path: key, tailBytes: 16 }]).then(([found]) => found),
    replace: store.replace(key, bytes),
    append: store.append(key, bytes),
    createExclusive: store.createExclusive(key, bytes),
    truncate: store.truncate(key, 0),
  };
}

async function refusals(key: string): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const [name, call] of Object.entries(everyMethod(storage, key))) {
    out[name] = await call.then(
      (value) => ({ resolved: value instanceof Uint8Array ? "bytes" : value }),
      (error: unknown) => (error instanceof StoreEntryError ? { found: error.details.found, expected: error.details.expected } : { other: String(error) }),
    );
  }
  return out;
}

describe("NodeFileStorage follows no link and touches only regular files under its root", () => {
  it("a link to a file outside: refused by every method; the outside file is unchanged", async () => {
    const before = await hashTree(outside);
    await symlink(join(outside, "victim.jsonl"), join(root, "s", "active.jsonl"));
    const link = { found: "a symbolic link", expected: "a regular file" };
    expect(await refusals("s/active.jsonl")).toEqual({
      read: link,
      readTail: link,
      readManyTail: link,
      replace: link,
      append: link,
      createExclusive: { resolved: false },
      truncate: link,
    });
    expect(await hashTree(outside)).toEqual(before);
  });

  it("a link to a folder outside, anywhere on the way: refused for every method and for list", async () => {
    const before = await hashTree(outside);
    await symlink(join(outside, "folder"), join(root, "s", "segments"));
    const folder = { found: "a symbolic link", expected: "a folder" };
    for (const key of ["s/segments/kept", "s/segments/new.jsonl", "s/segments/deeper/new.jsonl"]) {
      expect(await refusals(key), key).toEqual({
        read: folder,
        readTail: folder,
        readManyTail: folder,
        replace: folder,
        append: folder,
        createExclusive: folder,
        truncate: folder,
      });
    }
    await expect(storage.list("s/segments")).rejects.toMatchObject({ details: folder });
    await expect(storage.move("s/meta.json", "s/segments/meta.json")).rejects.toBeInstanceOf(StoreEntryError);
    await expect(storage.remove("s/segments/kept")).rejects.toBeInstanceOf(StoreEntryError);
    // Removing the link itself follows nothing: only the link goes.
    await storage.remove("s/segments");
    expect(await hashTree(outside)).toEqual(before);
  });

  it("a readMany whose first file's folder is real still refuses a link one folder below it (checked by the walk, not realpath)", async () => {
    const before = await hashTree(outside);
    await symlink(join(outside, "folder"), join(root, "s", "segments"));
    const folder = { found: "a symbolic link", expected: "a folder" };
    await expect(storage.readMany([{ path: "s/meta.json" }, { path: "s/segments/kept" }])).rejects.toMatchObject({ details: folder });
    await mkdir(join(root, "s", "messages"));
    await writeFile(join(root, "s", "messages", "active.jsonl"), "{}\n");
    const read = await storage.readMany([{ path: "s/meta.json" }, { path: "s/messages/active.jsonl" }]);
    expect(read.map((r) => r && new TextDecoder().decode(r.bytes))).toEqual(["{}", "{}\n"]);
    expect(await hashTree(outside)).toEqual(before);
  });

  it("a commit plan (its folders checked once for the plan) still refuses a link on the way of any of its files", async () => {
    const before = await hashTree(outside);
    await symlink(join(outside, "folder"), join(root, "s", "segments"));
    const folder = { found: "a symbolic link", expected: "a folder" };
    const lock = { path: "s/writer.lock", bytes: utf8('{"lock_id":"l1"}'), lockId: "l1" };
    // The first write's folders are real; the second's are not: the first is written, the plan rejects at the second, the lock goes.
    const plan = storage.applyCommitPlan({
      lock,
      writes: [{ op: "replace", path: "s/meta.json", bytes: utf8('{"a":1}') }, { op: "replace", path: "s/segments/new.jsonl", bytes: utf8("{}\n") }],
    });
    await expect(plan).rejects.toMatchObject({ details: folder });
    expect(await readFile(join(root, "s", "meta.json"), "utf8")).toBe('{"a":1}');
    expect(await storage.read("s/writer.lock")).toBeUndefined();
    // A plan whose files share their folders: written, and the lock it names given back.
    await storage.createExclusive("s/writer.lock", lock.bytes);
    const done = await storage.applyCommitPlan({
      writes: [{ op: "replace", path: "s/meta.json", bytes: utf8('{"a":2}') }, { op: "append", path: "s/active.jsonl", bytes: utf8("{}\n") }],
      release: { path: lock.path, lockId: lock.lockId },
    });
    expect(done).toEqual({ outcome: "committed" });
    expect(await readFile(join(root, "s", "active.jsonl"), "utf8")).toBe("{}\n");
    expect(await storage.read("s/writer.lock")).toBeUndefined();
    expect(await hashTree(outside)).toEqual(before);
  });

  it("a held commit's plan (the fence, then one append, in one synchronous call) refuses a link at either file, naming it, and writes nothing", async () => {
    const before = await hashTree(outside);
    const owner = utf8('{"lock_id":"l1"}');
    const held = { writes: [{ op: "append" as const, path: "s/active.jsonl", bytes: utf8("{}\n") }], fence: { path: "s/writer.lock", lockId: "l1" } };
    await storage.createExclusive("s/writer.lock", owner);
    for (const path of ["s/active.jsonl", "s/writer.lock"]) await storage.pinFile(path);
    expect(await storage.applyCommitPlan(held)).toEqual({ outcome: "committed" });
    // The lock another's: nothing is appended.
    await storage.replace("s/writer.lock", utf8('{"lock_id":"l2"}'));
    expect(await storage.applyCommitPlan(held)).toEqual({ outcome: "locked" });
    // writer.lock a link to a file outside: the fence's tail read refuses it, before the append.
    await rm(join(root, "s", "writer.lock"));
    await symlink(join(outside, "victim.jsonl"), join(root, "s", "writer.lock"));
    const file = { found: "a symbolic link", expected: "a regular file" };
    await expect(storage.applyCommitPlan(held)).rejects.toMatchObject({ name: "StoreEntryError", details: { ...file, path: "s/writer.lock" } });
    // active.jsonl a link (the lock ours again): the append refuses it once its pinned handle is closed by a change through the store.
    await rm(join(root, "s", "writer.lock"));
    await storage.createExclusive("s/writer.lock", owner);
    await storage.remove("s/active.jsonl");
    await symlink(join(outside, "victim.jsonl"), join(root, "s", "active.jsonl"));
    await expect(storage.applyCommitPlan(held)).rejects.toMatchObject({ name: "StoreEntryError", details: { ...file, path: "s/active.jsonl" } });
    expect(await readFile(join(outside, "victim.jsonl"), "utf8")).toBe('{"record_type":"message"}\n');
    expect(await hashTree(outside)).toEqual(before);
  });

  it("a hard link: read as the file the store names, never written", async () => {
    const before = await hashTree(outside);
    await link(join(outside, "victim.jsonl"), join(root, "s", "active.jsonl"));
    const linked = { found: "a file with 2 hard links", expected: "a file of its own" };
    expect(await refusals("s/active.jsonl")).toEqual({
      read: { resolved: "bytes" },
      readTail: { resolved: { bytes: expect.any(Uint8Array), size: 26 } },
      readManyTail: { resolved: { path: "s/active.jsonl", bytes: expect.any(Uint8Array), size: 26 } },
      replace: linked,
      append: linked,
      createExclusive: { resolved: false },
      truncate: linked,
    });
    expect(await hashTree(outside)).toEqual(before);
  });

  it("a FIFO, a socket and a link to a device: refused at once, nothing read (no call blocks)", async () => {
    execFileSync("mkfifo", [join(root, "s", "fifo")]);
    server = createServer();
    await new Promise<void>((resolve) => server!.listen(join(root, "s", "socket"), resolve));
    await symlink("/dev/zero", join(root, "s", "zero"));
    for (const [key, found] of [["s/fifo", "a FIFO"], ["s/socket", "a socket"], ["s/zero", "a symbolic link"]] as const) {
      const refused = { found, expected: "a regular file" };
      expect(await refusals(key), key).toEqual({
        read: refused,
        readTail: refused,
        readManyTail: refused,
        replace: refused,
        append: refused,
        createExclusive: { resolved: false },
        truncate: refused,
      });
    }
  });

  it("a folder where a file belongs, and a file where a folder belongs (for a write)", async () => {
    await mkdir(join(root, "s", "active.jsonl"));
    const folder = { found: "a folder", expected: "a regular file" };
    expect(await refusals("s/active.jsonl")).toEqual({
      read: folder,
      readTail: folder,
      readManyTail: folder,
      replace: folder,
      append: folder,
      createExclusive: { resolved: false },
      truncate: folder,
    });
    const file = { found: "a regular file", expected: "a folder" };
    expect(await refusals("s/meta.json/x")).toEqual({
      read: { resolved: undefined },
      readTail: { resolved: undefined },
      readManyTail: { resolved: undefined },
      replace: file,
      append: file,
      createExclusive: file,
      truncate: file,
    });
  });

  it("a readMany's tail of a file that is not there is undefined, as a read's (its open fails, nothing is asked first)", async () => {
    await mkdir(join(root, "s", "segments"));
    const found = await storage.readMany([{ path: "s/segments/none.jsonl", tailBytes: 16 }, { path: "s/none/x", tailBytes: 16 }, {
      path: "s/meta.json",
      tailBytes: 16,
    }]);
    expect(found.map((r) => r && new TextDecoder().decode(r.bytes))).toEqual([undefined, undefined, "{}"]);
  });

  it("a folder created in a folder the call found real is made at once, and what stands there meanwhile is still checked", async () => {
    await mkdir(join(root, "s", "real"), { recursive: true });
    await symlink(join(outside, "folder"), join(root, "s", "linked"));
    await writeFile(join(root, "s", "file"), "x");
    const boundary = new StoreBoundary(root);
    const checked = () => new Set([join(root, "s")]); // as a walk that found s real and stopped at the missing folder leaves it
    expect(boundary.ensureFolder("s/new", checked())).toEqual([join(root, "s", "new")]);
    expect((await stat(join(root, "s", "new"))).isDirectory()).toBe(true);
    expect(boundary.ensureFolder("s/real", checked())).toEqual([]);
    expect(() => boundary.ensureFolder("s/linked", checked())).toThrow(StoreEntryError);
    expect(() => boundary.ensureFolder("s/file", checked())).toThrow(StoreEntryError);
    expect(await readdir(join(outside, "folder"))).toEqual(["kept"]);
  });

  it("a file over maxFileBytes is refused unread; a tail of it can still be read", async () => {
    await writeFile(join(root, "s", "big"), "x".repeat(1025));
    const error = await storage.read("s/big").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CorruptSessionError);
    expect(error).toMatchObject({ code: "corrupt", details: { path: "s/big", found: "a file of 1 KiB", expected: "a file of at most 1 KiB" } });
    expect((error as Error).message).not.toContain("xxxx");
    expect((await storage.readTail("s/big", 4))?.size).toBe(1025);
  });

  it("the root itself may be a link (the host chose it)", async () => {
    await symlink(root, join(base, "alias"));
    const aliased = new NodeFileStorage({ root: join(base, "alias"), fsync: false });
    expect(await aliased.read("s/meta.json")).toEqual(utf8("{}"));
    await aliased.append("s/messages/active.jsonl", utf8("{}\n"));
    expect(await readFile(join(root, "s", "messages", "active.jsonl"), "utf8")).toBe("{}\n");
  });
});

describe("a file where a folder belongs is refused for a listing and a write: the root, agents/, a workspace's sessions/", () => {
  const file = { found: "a regular file", expected: "a folder" };
  /** The three stores of file-for-folder: the root a file, `agents` a file, a workspace's `sessions` a file. */
  async function stores(): Promise<{ root: string; agents: string; sessions: string }> {
    await writeFile(join(base, "root-file"), "x");
    await mkdir(join(base, "agents-file"));
    await writeFile(join(base, "agents-file", "agents"), "x");
    await mkdir(join(base, "sessions-file", "agents", "a1", "workspaces", "w1"), { recursive: true });
    await writeFile(join(base, "sessions-file", "agents", "a1", "workspaces", "w1", "sessions"), "x");
    return { root: join(base, "root-file"), agents: join(base, "agents-file"), sessions: join(base, "sessions-file") };
  }

  for (const worker of [false, true]) {
    it(`Sessions.list and create refuse with StoreEntryError (corrupt); with onProblem the listing names it and goes on${worker ? " (through the worker)" : ""}`, async () => {
      for (const [name, at] of Object.entries(await stores())) {
        const backend = worker ? new WorkerFileStorage({ root: at, fsync: false }) : new NodeFileStorage({ root: at, fsync: false });
        try {
          const sessions = new Sessions({ storage: backend });
          for (const filter of [{}, { agentId: "a1", workspaceId: "w1" }, { agentId: "a1", workspaceId: "w1", readMeta: true }]) {
            const listed = await sessions.list(filter).catch((e: unknown) => e);
            expect(listed, `${name} ${JSON.stringify(filter)}`).toBeInstanceOf(StoreEntryError);
            expect(listed).toMatchObject({
              code: "corrupt",
              details: name === "root" ? { found: "a regular file", expected: "the store's root folder" } : file,
            });
            const problems: ListProblem[] = [];
            expect(await sessions.list({ ...filter, onProblem: (p) => problems.push(p) })).toEqual([]);
            expect(problems).toHaveLength(1);
          }
          const created = await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" }).catch((e: unknown) => e);
          expect(created, name).toBeInstanceOf(StoreEntryError);
          expect(created).toMatchObject({ code: "corrupt" });
        } finally {
          if (backend instanceof WorkerFileStorage) await backend.close();
        }
      }
      expect(await readFile(join(base, "root-file"), "utf8")).toBe("x");
    });
  }

  it("the storage's own listing below a root that is a file is refused; a missing root or folder still lists as empty", async () => {
    const { root: rootFile } = await stores();
    const onFile = new NodeFileStorage({ root: rootFile, fsync: false });
    await expect(onFile.list("agents")).rejects.toMatchObject({ code: "corrupt", details: { path: "agents", file: rootFile, found: "a regular file" } });
    await expect(onFile.list("agents/a1/workspaces/w1/sessions")).rejects.toBeInstanceOf(StoreEntryError);
    expect(await onFile.read("agents/a1/meta.json")).toBeUndefined();
    const missing = new NodeFileStorage({ root: join(base, "missing"), fsync: false });
    expect(await missing.list("agents")).toEqual([]);
    expect(await new Sessions({ storage: missing }).list()).toEqual([]);
    expect(await new Sessions({ storage: missing }).list({ agentId: "a1", workspaceId: "w1" })).toEqual([]);
  });
});
