import { mkdir, mkdtemp, readdir, readFile, rm, stat, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { CorruptSessionError, InvalidInputError, SessionfoldError, StorageError, StoreClosedError, StoreEntryError } from "../../core/mod.ts";
import { defaultRoot, keyProviderOf, nodeWriterIdentity, openNodeSessions, WorkerFileStorage } from "../../runtime-node/mod.ts";

const utf8 = (text: string) => new TextEncoder().encode(text);

let base: string;
const toClose: { close(): Promise<void> }[] = [];

beforeEach(async () => {
  base = await mkdtemp(join(tmpdir(), "sessionfold-hop-"));
});

afterEach(async () => {
  await Promise.all(toClose.splice(0).map((s) => s.close()));
  await rm(base, { recursive: true, force: true });
});

function workerStorage(root = join(base, "store")): WorkerFileStorage {
  const storage = new WorkerFileStorage({ root });
  toClose.push(storage);
  return storage;
}

describe("WorkerFileStorage", () => {
  it("typed errors cross the worker hop with class, code and details", async () => {
    const storage = workerStorage();
    await storage.replace("keep", utf8("k"));
    await symlink("/dev/full", join(base, "store", "full.jsonl"));
    const linked = await storage.append("full.jsonl", utf8("x\n")).catch((e: unknown) => e);
    expect(linked).toBeInstanceOf(StoreEntryError);
    expect(linked).toBeInstanceOf(CorruptSessionError);
    expect(linked).toMatchObject({
      name: "StoreEntryError",
      code: "corrupt",
      details: { path: "full.jsonl", found: "a symbolic link", expected: "a regular file" },
    });

    const hostile = await storage.read("../etc/passwd").catch((e: unknown) => e);
    expect(hostile).toBeInstanceOf(InvalidInputError);
    expect(hostile).toMatchObject({ code: "invalid-input", details: { path: "../etc/passwd" } });

    const folder = await storage.read("").catch((e: unknown) => e);
    expect(folder).toBeInstanceOf(InvalidInputError);
    await storage.replace("dir/x", utf8("x"));
    const notFile = await storage.read("dir").catch((e: unknown) => e);
    expect(notFile).toBeInstanceOf(StoreEntryError);
    expect(notFile).toMatchObject({ code: "corrupt", details: { found: "a folder", path: "dir" } });
    expect((notFile as Error).stack).toContain("fs-boundary");

    // Folders that exist, then a path past the system's limit: a plain StorageError, with its errno, across the hop.
    const deep = Array.from({ length: 16 }, (_, i) => String(i).padEnd(250, "d"));
    await mkdir(join(base, "store", ...deep), { recursive: true });
    const long = [...deep, "e".repeat(250), "f".repeat(250)].join("/");
    const refused = await storage.read(long).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(StorageError);
    expect(refused).toMatchObject({ name: "StorageError", code: "internal", details: { errno: "ENAMETOOLONG", path: long } });
  });

  it("transfers large buffers and still leaves the caller's array intact", async () => {
    const storage = workerStorage();
    const big = new Uint8Array(1 << 20).fill(7);
    const part = big.subarray(10, 200_010);
    await storage.replace("big", big);
    await storage.append("big", part);
    expect(big.length).toBe(1 << 20);
    expect(part.length).toBe(200_000);
    const read = await storage.read("big");
    expect(read?.length).toBe((1 << 20) + 200_000);
    expect((await storage.readTail("big", 100_000))?.bytes.length).toBe(100_000);
    expect(await storage.list("")).toEqual(["big"]);
    expect((await readdir(join(base, "store"))).filter((n) => n.startsWith(".tmp-"))).toEqual([]);
  });

  it("a commit plan moves the buffers of writes it is handed over and copies the others", async () => {
    const storage = workerStorage();
    const moved = new Uint8Array(200_000).fill(1);
    const kept = new Uint8Array(200_000).fill(2);
    const result = await storage.applyCommitPlan({
      writes: [
        { op: "replace", path: "moved", bytes: moved, handOver: true },
        { op: "replace", path: "kept", bytes: kept },
      ],
    });
    expect(result).toEqual({ outcome: "committed" });
    // Handed over: the buffer went to the worker (detached here), not a copy of it.
    expect(moved.buffer.byteLength).toBe(0);
    expect(kept.length).toBe(200_000);
    expect(await storage.read("moved")).toEqual(new Uint8Array(200_000).fill(1));
    expect(await storage.read("kept")).toEqual(kept);
    // A view handed over moves its whole buffer (a segment's room for its footer left unused): the view's bytes are written.
    const room = new Uint8Array(300_000).fill(3);
    const view = room.subarray(0, 200_000);
    expect(await storage.applyCommitPlan({ writes: [{ op: "replace", path: "view", bytes: view, handOver: true }] })).toEqual({ outcome: "committed" });
    expect(room.buffer.byteLength).toBe(0);
    expect(await storage.read("view")).toEqual(new Uint8Array(200_000).fill(3));
  });

  it("a terminated worker rejects pending and later calls with a typed StorageError", async () => {
    const storage = workerStorage();
    await storage.replace("a", utf8("a"));
    const pending = storage.replace("big", new Uint8Array(8 << 20));
    await storage.worker.terminate();
    const error = await pending.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StorageError);
    expect((error as StorageError).message).toMatch(/storage worker stopped/);
    await expect(storage.read("a")).rejects.toBeInstanceOf(StorageError);
    await expect(storage.list("")).rejects.toThrow(/storage worker stopped/);
    await storage.close(); // idempotent after a crash
  });

  it("close ends the worker once it answered what was in flight: later calls reject as closed, a second close waits for the first", async () => {
    const storage = new WorkerFileStorage({ root: join(base, "store") });
    const appended = storage.append("log", utf8("1\n"));
    const closing = [storage.close(), storage.close()];
    const late = storage.read("log").catch((e: unknown) => e);
    await expect(appended).resolves.toBeUndefined();
    await Promise.all(closing);
    expect(await late).toBeInstanceOf(StoreClosedError);
    await expect(storage.read("log")).rejects.toMatchObject({ code: "closed", message: expect.stringMatching(/^the store is closed/) });
    expect(await readFile(join(base, "store", "log"), "utf8")).toBe("1\n");
    expect(() => new WorkerFileStorage({ root: "relative" })).toThrow(InvalidInputError);
  });
});

describe("openNodeSessions", () => {
  it("creates a session, appends, and reopens it from a new store (worker and in-thread)", async () => {
    const root = join(base, "home");
    const first = await openNodeSessions({ root });
    toClose.push(first);
    expect(first.root).toBe(root);
    expect(first.storage).toBeInstanceOf(WorkerFileStorage);
    await expect(stat(root)).rejects.toMatchObject({ code: "ENOENT" }); // nothing before the first write
    const session = await first.sessions.create({ agentId: "coder", workspaceId: "repo", sessionId: "s1", title: "t" });
    await session.append({ role: "user", parts: [{ type: "text", text: "hello" }] });
    expect((await stat(root)).mode & 0o777).toBe(0o700);
    await first.close();
    await expect(first.sessions.open("coder/repo/s1")).rejects.toBeInstanceOf(StoreClosedError);

    const second = await openNodeSessions({ root, worker: false });
    toClose.push(second);
    const again = await second.sessions.open("coder/repo/s1");
    expect(again.meta.message_count).toBe(1);
    expect(again.active.map((m) => m.parts[0])).toMatchObject([{ type: "text", text: "hello" }]);
    await again.append({ role: "user", parts: [{ type: "text", text: "again" }] });
    const listed = await second.sessions.list();
    expect(listed.map((m) => [m.session_id, m.message_count])).toEqual([["s1", 2]]);
    const dir = join(root, "agents/coder/workspaces/repo/sessions/s1");
    expect((await stat(join(dir, "messages/active.jsonl"))).mode & 0o777).toBe(0o600);
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    expect((await readdir(dir)).sort()).toEqual(["messages", "meta.json"]);
  });

  it("a held commit through the worker is one message each way", async () => {
    // Spied before the store starts: Comlink's node adapter binds the worker's postMessage once.
    const posts = vi.spyOn(Worker.prototype, "postMessage");
    try {
      const store = await openNodeSessions({ root: join(base, "home"), fsync: false });
      toClose.push(store);
      const answers: unknown[] = [];
      (store.storage as WorkerFileStorage).worker.on("message", (answer) => answers.push(answer));
      const session = await store.sessions.create({ agentId: "coder", workspaceId: "repo", sessionId: "held" }, { hold: true });
      await session.append({ role: "user", parts: [{ type: "text", text: "first" }] });
      posts.mockClear();
      answers.length = 0;
      for (let i = 0; i < 5; i++) await session.append({ role: "user", parts: [{ type: "text", text: `message ${i}` }] });
      expect(posts.mock.calls.map(([call]) => (call as { path: string[] }).path)).toEqual(Array.from({ length: 5 }, () => ["applyCommitPlan"]));
      expect(answers).toHaveLength(5);
      expect(answers).toMatchObject(Array.from({ length: 5 }, () => ({ type: "RAW", value: { outcome: "committed" } })));
      await session.close();
    } finally {
      posts.mockRestore();
    }
  });

  it("typed errors from the core reach the host through the worker", async () => {
    const store = await openNodeSessions({ root: join(base, "home") });
    toClose.push(store);
    const error = await store.sessions.open("coder/repo/missing").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SessionfoldError);
    expect(error).toMatchObject({ code: "not-found" });
  });

  it("defaultRoot honours SESSIONFOLD_HOME, and the identity says node", () => {
    const saved = process.env["SESSIONFOLD_HOME"];
    try {
      process.env["SESSIONFOLD_HOME"] = join(base, "custom");
      expect(defaultRoot()).toBe(join(base, "custom"));
      delete process.env["SESSIONFOLD_HOME"];
      expect(defaultRoot()).toMatch(/[/\\]\.sessionfold$/);
    } finally {
      if (saved === undefined) delete process.env["SESSIONFOLD_HOME"];
      else process.env["SESSIONFOLD_HOME"] = saved;
    }
    const identity = nodeWriterIdentity();
    expect(identity).toMatchObject({ pid: process.pid, hostname: expect.any(String), runtime: "node" });
    if (process.platform === "linux") {
      // What dead-owner reclaim compares: this boot, and this process's start (within 2 s of now minus its uptime).
      expect(identity.bootId).toMatch(/^[0-9a-f-]{36}$/);
      expect(Math.abs(Date.parse(identity.processStartedAt!) - (Date.now() - process.uptime() * 1000))).toBeLessThan(2_000);
    }
  });
});

describe("openNodeSessions' and keyProviderOf's arguments from plain JavaScript", () => {
  it("an empty root is refused (it would be the working directory); an absent one is the default", async () => {
    const error = await openNodeSessions({ root: "" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as Error).message).toBe('openNodeSessions(options).root: expected a folder\'s path (absent: the default root), found ""');
    await expect(openNodeSessions({ root: 5 as never })).rejects.toBeInstanceOf(InvalidInputError);
    await expect(openNodeSessions(null as never)).rejects.toBeInstanceOf(InvalidInputError);
    const saved = process.env["SESSIONFOLD_HOME"];
    try {
      process.env["SESSIONFOLD_HOME"] = join(base, "custom");
      const store = await openNodeSessions({ worker: false });
      toClose.push(store);
      expect(store.root).toBe(join(base, "custom"));
    } finally {
      if (saved === undefined) delete process.env["SESSIONFOLD_HOME"];
      else process.env["SESSIONFOLD_HOME"] = saved;
    }
  });

  it("keys that are not a KeyProvider are refused before the store is touched; keyProviderOf takes only a key file", async () => {
    const root = join(base, "store");
    const keys = await openNodeSessions({ root, keys: {} as never, worker: false }).catch((e: unknown) => e);
    expect(keys).toBeInstanceOf(InvalidInputError);
    expect((keys as Error).message).toBe("keys.wrapKey: expected a function (a KeyProvider { currentKid, wrapKey, unwrapKey }), found nothing");
    await expect(stat(root)).rejects.toMatchObject({ code: "ENOENT" });
    for (const file of [null, {}, { format: "sessionfold-key-file", version: 1, current: "k", keys: {} }]) {
      const error = await keyProviderOf(file as never).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidInputError);
      expect((error as Error).message).toMatch(/^keyProviderOf\(file\): not a sessionfold key file of version 1/);
    }
  });
});
