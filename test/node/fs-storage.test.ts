import { mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { InvalidInputError, SessionfoldError, StorageError, StorageFullError } from "../../core/mod.ts";
import { NodeFileStorage, storageErrorFromFs } from "../../runtime-node/mod.ts";

/** Faults the mocked `node:fs` injects into the system calls NodeFileStorage makes. */
const faults = vi.hoisted(() => ({ open: "", write: "", sync: "" }));

vi.mock("node:fs", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:fs")>();
  const fail = (code: string) => Object.assign(new Error(`${code}: injected`), { code });
  return {
    ...real,
    openSync: ((...args: Parameters<typeof real.openSync>) => {
      if (faults.open) throw fail(faults.open);
      return real.openSync(...args);
    }) as typeof real.openSync,
    // NodeFileStorage always calls writeSync(fd, bytes, offset, length, position).
    writeSync: ((fd: number, bytes: Uint8Array, offset: number, length: number, position: number | null) => {
      if (!faults.write) return real.writeSync(fd, bytes, offset, length, position);
      // A short write that lands half the bytes, then the disk is full.
      real.writeSync(fd, bytes, offset, Math.ceil(length / 2), position);
      throw fail(faults.write);
    }) as unknown as typeof real.writeSync,
    fsyncSync: ((fd: number) => {
      if (faults.sync) throw fail(faults.sync);
      real.fsyncSync(fd);
    }) as typeof real.fsyncSync,
  };
});

const utf8 = (text: string) => new TextEncoder().encode(text);
const mode = async (file: string) => (await stat(file)).mode & 0o777;
/** Every name under `dir`, recursively, as relative paths. */
const tree = async (dir: string) => ((await readdir(dir, { recursive: true })) as string[]).sort();

let base: string;
let root: string;
let storage: NodeFileStorage;

beforeEach(async () => {
  base = await mkdtemp(join(tmpdir(), "sessionfold-node-"));
  root = join(base, "store");
  storage = new NodeFileStorage({ root });
});

afterEach(async () => {
  Object.assign(faults, { open: "", write: "", sync: "" });
  await rm(base, { recursive: true, force: true });
});

describe("NodeFileStorage", () => {
  it("creates folders 0700 and files 0600, even under a umask that strips owner bits", async () => {
    // No fallback: a pool that cannot set the umask (worker threads) fails here instead of checking nothing.
    const previous = process.umask(0o222);
    expect(process.umask(0o222)).toBe(0o222);
    try {
      await storage.replace("a/b/meta.json", utf8("{}"));
      await storage.append("a/b/messages/active.jsonl", utf8("x\n"));
      expect(await storage.createExclusive("c/writer.lock", utf8("{}"))).toBe(true);
      expect(await storage.move("a/b", "d/e/b")).toBe(true);
    } finally {
      process.umask(previous);
    }
    for (const dir of [root, "a", "c", "d", "d/e", "d/e/b", "d/e/b/messages"]) {
      expect(await mode(dir === root ? root : join(root, dir)), dir).toBe(0o700);
    }
    for (const file of ["d/e/b/meta.json", "d/e/b/messages/active.jsonl", "c/writer.lock"]) {
      expect(await mode(join(root, file)), file).toBe(0o600);
    }
  });

  it("wants an absolute root", () => {
    expect(() => new NodeFileStorage({ root: "relative/store" })).toThrow(InvalidInputError);
  });

  it("leaves no temp file behind and never lists one", async () => {
    await Promise.all(Array.from({ length: 20 }, (_, i) => storage.replace("d/meta.json", utf8(`{"n":${i}}`))));
    await storage.replace("d/sub/x", utf8("x"));
    await expect(storage.replace("d/sub", utf8("onto a folder"))).rejects.toMatchObject({ name: "StoreEntryError", details: { found: "a folder" } });
    expect(await tree(root)).toEqual(["d", "d/meta.json", "d/sub", "d/sub/x"]);
    await writeFile(join(root, "d", ".tmp-0123abcd"), "left by a crash");
    expect(await storage.list("d")).toEqual(["meta.json", "sub"]);
    await expect(storage.read("d/.tmp-0123abcd")).rejects.toBeInstanceOf(InvalidInputError);
    await expect(storage.replace(".tmp-x/y", utf8("y"))).rejects.toBeInstanceOf(InvalidInputError);
  });

  it("a failed append (disk full mid-write) leaves exactly the content before it", async () => {
    await storage.append("log.jsonl", utf8("line 1\n"));
    faults.write = "ENOSPC";
    const error = await storage.append("log.jsonl", utf8("x".repeat(10_000))).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StorageFullError);
    expect(error).toMatchObject({ code: "storage-full", details: { path: "log.jsonl", errno: "ENOSPC", operation: "append" } });
    faults.write = "";
    faults.sync = "EIO";
    await expect(storage.append("log.jsonl", utf8("line 2\n"))).rejects.toMatchObject({ code: "internal", details: { errno: "EIO" } });
    faults.sync = "";
    expect(await readFile(join(root, "log.jsonl"), "utf8")).toBe("line 1\n");
    await storage.append("log.jsonl", utf8("line 2\n"));
    expect(await readFile(join(root, "log.jsonl"), "utf8")).toBe("line 1\nline 2\n");
  });

  it("a failed replace or createExclusive keeps the old state and no temp file", async () => {
    await storage.replace("meta.json", utf8("old"));
    faults.write = "EDQUOT";
    await expect(storage.replace("meta.json", utf8("new content"))).rejects.toBeInstanceOf(StorageFullError);
    await expect(storage.createExclusive("writer.lock", utf8("{}"))).rejects.toBeInstanceOf(StorageFullError);
    faults.write = "";
    expect(await tree(root)).toEqual(["meta.json"]);
    expect(await readFile(join(root, "meta.json"), "utf8")).toBe("old");
    expect(await storage.createExclusive("writer.lock", utf8("{}"))).toBe(true);
  });

  it("maps every other failure to a typed StorageError carrying path and errno", async () => {
    faults.open = "EACCES";
    const denied = await storage.append("a.json", utf8("x")).catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(StorageError);
    expect(denied).toMatchObject({ code: "internal", details: { path: "a.json", file: join(root, "a.json"), errno: "EACCES" } });
    faults.open = "";
    await storage.replace("folder/x", utf8("x"));
    await storage.replace("file", utf8("f"));
    // A folder where a file belongs, or a file where a folder belongs for a write: corrupt, not internal.
    const folderForFile = { name: "StoreEntryError", code: "corrupt", details: { path: "folder", found: "a folder", expected: "a regular file" } };
    await expect(storage.read("folder")).rejects.toMatchObject(folderForFile);
    await expect(storage.readTail("folder", 4)).rejects.toMatchObject(folderForFile);
    await expect(storage.append("folder", utf8("x"))).rejects.toMatchObject(folderForFile);
    await expect(storage.truncate("folder", 0)).rejects.toMatchObject(folderForFile);
    await expect(storage.replace("file/x", utf8("x"))).rejects.toMatchObject({
      code: "corrupt",
      details: { path: "file/x", found: "a regular file", expected: "a folder" },
    });
    await expect(storage.append("file/x", utf8("x"))).rejects.toMatchObject({ code: "corrupt", details: { found: "a regular file", expected: "a folder" } });
    // Reading under a file finds nothing there; listing a file as a folder is corrupt.
    expect(await storage.read("file/x")).toBeUndefined();
    await expect(storage.list("file")).rejects.toMatchObject({ code: "corrupt", details: { found: "a regular file", expected: "a folder" } });
  });

  it("storageErrorFromFs types every errno and passes sessionfold errors through", () => {
    const fsError = (code?: string) => Object.assign(new Error("boom"), code ? { code } : {});
    expect(storageErrorFromFs(fsError("ENOSPC"), "append", "a", "/r/a")).toBeInstanceOf(StorageFullError);
    expect(storageErrorFromFs(fsError("EDQUOT"), "replace", "a", "/r/a")).toBeInstanceOf(StorageFullError);
    for (const code of ["EACCES", "EPERM", "EIO", "EROFS", "EMFILE"]) {
      const mapped = storageErrorFromFs(fsError(code), "replace", "a/b", "/r/a/b");
      expect(mapped).toBeInstanceOf(StorageError);
      expect(mapped.details).toEqual({ path: "a/b", file: "/r/a/b", errno: code, operation: "replace" });
      expect(mapped.message).toContain(code);
    }
    expect(storageErrorFromFs(fsError(), "read", "a", "/r/a").details["errno"]).toBe("UNKNOWN");
    expect(storageErrorFromFs("a string", "read", "a", "/r/a")).toBeInstanceOf(SessionfoldError);
    const typed = new InvalidInputError("bad");
    expect(storageErrorFromFs(typed, "read", "a", "/r/a")).toBe(typed);
  });

  it("rejects hostile keys before touching the disk, and no key leaves the root", async () => {
    const outside = join(base, "outside");
    const bytes = utf8("evil");
    for (const key of ["..", "../outside/x", "a/../../outside", "/etc/passwd", `${base}/outside`, "a\\..\\b", "x\0y", ""]) {
      const calls = [
        storage.read(key),
        storage.readTail(key, 1),
        storage.replace(key, bytes),
        storage.append(key, bytes),
        storage.createExclusive(key, bytes),
        storage.truncate(key, 0),
        storage.remove(key),
        storage.move(key, "x"),
        storage.move("x", key),
        ...(key === "" ? [] : [storage.list(key)]),
      ];
      for (const result of await Promise.allSettled(calls)) {
        expect(result.status, key).toBe("rejected");
        expect((result as PromiseRejectedResult).reason, key).toBeInstanceOf(InvalidInputError);
      }
    }
    // The root was never created and nothing appeared beside it.
    expect(await readdir(base)).toEqual([]);
    await expect(stat(outside)).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("reads a tail without reading the whole file, and truncates", async () => {
    await storage.append("log", utf8("0123456789"));
    expect(await storage.readTail("log", 3)).toEqual({ bytes: utf8("789"), size: 10 });
    await storage.truncate("log", 4);
    expect(await readFile(join(root, "log"), "utf8")).toBe("0123");
    await storage.truncate("missing", 0);
    await expect(storage.truncate("log", Number.NaN)).rejects.toBeInstanceOf(InvalidInputError);
  });

  it("creates a missing root on the first write, and types a root that cannot exist", async () => {
    expect(await storage.list("")).toEqual([]);
    await expect(stat(root)).rejects.toMatchObject({ code: "ENOENT" });
    await writeFile(join(base, "a-file"), "x");
    const blocked = new NodeFileStorage({ root: join(base, "a-file", "store") });
    expect(await blocked.read("x")).toBeUndefined();
    await expect(blocked.append("x", utf8("x"))).rejects.toMatchObject({
      code: "internal",
      message: expect.stringMatching(/file is where a folder was expected/),
    });
  });
});
