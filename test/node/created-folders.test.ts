/**
 * A folder the Node store creates is durable before anything under it is (docs/FORMAT.md "Compaction": the folder a
 * session's first compaction creates, `messages/segments/`, has its entry flushed with the staged files). When that
 * flush fails, the call fails and the folder must not stay behind as if it were durable: a later call takes a folder it
 * finds as durable. The store removes the empty folders the failed call created, or, when one cannot be removed,
 * flushes its entry before the next write under it. The faults are injected through a mocked `node:fs`, which also
 * records every fsync and rename by path.
 */
import { mkdir, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { MessageRecord } from "../../core/mod.ts";
import { NodeFileStorage, openNodeSessions } from "../../runtime-node/mod.ts";
import { fullHistory } from "../support/session.ts";
import { summarizer, user } from "../session/support.ts";

/** What the mocked `node:fs` records and which calls it fails. */
const fs = vi.hoisted(() => ({
  /** Every fsync (`fsync <path>`), rename (`rename <from> <to>`) and rmdir (`rmdir <path>`), when recording. */
  log: undefined as string[] | undefined,
  /** Folders or files whose next fsync fails with EIO (once each). */
  failSync: new Set<string>(),
  /** Folders whose rmdir fails with EIO. */
  failRmdir: new Set<string>(),
  /** Whether every write fails with ENOSPC. */
  failWrite: false,
  /** Open descriptors' paths. */
  paths: new Map<number, string>(),
}));

vi.mock("node:fs", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:fs")>();
  const fail = (code: string, path: string) => Object.assign(new Error(`${code}: injected at ${path}`), { code });
  /** The fault of an fsync of `fd`, once: its path leaves `failSync`. */
  const syncFault = (fd: number) => {
    const path = fs.paths.get(fd) ?? "";
    fs.log?.push(`fsync ${path}`);
    return fs.failSync.delete(path) ? fail("EIO", path) : undefined;
  };
  return {
    ...real,
    openSync: ((...args: Parameters<typeof real.openSync>) => {
      const fd = real.openSync(...args);
      fs.paths.set(fd, String(args[0]));
      return fd;
    }) as typeof real.openSync,
    fsyncSync: ((fd: number) => {
      const fault = syncFault(fd);
      if (fault) throw fault;
      real.fsyncSync(fd);
    }) as typeof real.fsyncSync,
    fsync: ((fd: number, done: (error: Error | null) => void) => {
      const fault = syncFault(fd);
      if (fault) return queueMicrotask(() => done(fault));
      real.fsync(fd, done);
    }) as typeof real.fsync,
    renameSync: ((from: string, to: string) => {
      fs.log?.push(`rename ${from} ${to}`);
      real.renameSync(from, to);
    }) as typeof real.renameSync,
    rmdirSync: ((path: string) => {
      fs.log?.push(`rmdir ${path}`);
      if (fs.failRmdir.has(String(path))) throw fail("EIO", String(path));
      real.rmdirSync(path);
    }) as typeof real.rmdirSync,
    writeSync: ((...args: Parameters<typeof real.writeSync>) => {
      if (fs.failWrite) throw fail("ENOSPC", fs.paths.get(args[0]) ?? "");
      return real.writeSync(...args);
    }) as typeof real.writeSync,
  };
});

const REF = { agentId: "a1", workspaceId: "w1", sessionId: "s1" };
const EXPECTED = ["m_1", "m_2", "m_3", "m_4", "m_5", "m_6"];
const bases: string[] = [];
afterEach(async () => {
  Object.assign(fs, { log: undefined, failWrite: false });
  fs.failSync.clear();
  fs.failRmdir.clear();
  for (const base of bases.splice(0)) await rm(base, { recursive: true, force: true });
});

async function tempBase(): Promise<string> {
  const base = await mkdtemp(join(tmpdir(), "sessionfold-created-folders-"));
  bases.push(base);
  return base;
}

/** A store (on the calling thread, so the mock sees its calls) holding a session of six messages, never compacted. */
async function sessionOfSix() {
  const root = await tempBase();
  const store = await openNodeSessions({ root, worker: false });
  const session = await store.sessions.create(REF);
  for (let i = 1; i <= 6; i++) await session.append(user(`m${i}`, `m_${i}`));
  const messages = join(root, dirname(session.paths.active));
  return { root, store, session, messages, segments: join(messages, "segments") };
}

const ids = (messages: readonly MessageRecord[]) => messages.map((m) => m.message_id);
/** Where in `log` the first entry starting with `prefix` is (`-1`: none). */
const at = (log: readonly string[], prefix: string) => log.findIndex((entry) => entry.startsWith(prefix));

/**
 * The next compaction of a session whose first one failed, by the same store or (`fresh`) by a new one, as another
 * process would: it commits, `messages/` flushed before the segment's name goes in, and a fresh store reads every
 * message once.
 */
async function compactsAgain(setup: Awaited<ReturnType<typeof sessionOfSix>>, fresh: boolean): Promise<void> {
  const { root, messages, segments } = setup;
  let { store, session } = setup;
  if (fresh) {
    await store.close();
    store = await openNodeSessions({ root, worker: false });
    session = await store.sessions.open(REF);
  }
  fs.log = [];
  const outcome = await session.compact({ summarizer: summarizer() });
  const log = fs.log;
  fs.log = undefined;
  expect(outcome.segment).toEqual({ start: 1, end: 3 });
  const segment = join(root, session.paths.segment(outcome.segment!));
  // The log holds each call as it is made, in the order made (no timing): the segment's rename is in it, and what precedes it ran first.
  const renamed = log.findIndex((entry) => entry.startsWith("rename ") && entry.endsWith(` ${segment}`));
  expect(renamed, log.join("\n")).not.toBe(-1);
  expect(log.slice(0, renamed), "segments/'s entry in messages/ is flushed before the segment's name goes in").toContain(`fsync ${messages}`);
  expect((await readdir(segments)).filter((name) => name.startsWith(".tmp-"))).toEqual([]);
  await store.close();
  const next = await openNodeSessions({ root, worker: false });
  const reopened = await next.sessions.open(REF);
  expect(reopened.diagnostics).toEqual([]);
  expect(ids(await fullHistory(reopened))).toEqual(EXPECTED);
  expect(await next.storage.list(dirname(session.paths.segment(outcome.segment!)))).toEqual(["000000000001-000000000003.jsonl"]);
  await next.close();
}

describe.runIf(process.platform === "linux")("a folder the Node store created", () => {
  it("is removed when the flush of its entry fails (a first compaction's segments/), and the next compaction, in another store, makes it again", async () => {
    const setup = await sessionOfSix();
    fs.failSync.add(setup.messages); // the flush of segments/'s entry in messages/
    await expect(setup.session.compact({ summarizer: summarizer() })).rejects.toMatchObject({ name: "StorageError", details: { errno: "EIO" } });
    expect(fs.failSync.size, "the injected fault was hit").toBe(0);
    expect(await readdir(setup.messages), "nothing of the failed compaction is left, segments/ included").toEqual(["active.jsonl"]);
    await compactsAgain(setup, true);
  });

  it("that cannot be removed has its entry flushed before the store's next write under it (a compaction's stage)", async () => {
    const setup = await sessionOfSix();
    fs.failSync.add(setup.messages);
    fs.failRmdir.add(setup.segments);
    await expect(setup.session.compact({ summarizer: summarizer() })).rejects.toMatchObject({ name: "StorageError", details: { errno: "EIO" } });
    expect(await readdir(setup.segments), "segments/ stays, empty").toEqual([]);
    fs.failRmdir.clear();
    await compactsAgain(setup, false);
  });

  it("is removed when the fsync of its entry fails on a plain write, with the folders made above it, and made again by the next", async () => {
    const root = join(await tempBase(), "store");
    const storage = new NodeFileStorage({ root });
    await storage.replace("x.json", new TextEncoder().encode("{}"));
    fs.failSync.add(root); // the flush of s/'s entry
    await expect(storage.replace("s/a/meta.json", new TextEncoder().encode("{}"))).rejects.toMatchObject({ name: "StorageError", details: { errno: "EIO" } });
    expect(await readdir(root)).toEqual(["x.json"]);
    fs.log = [];
    await storage.replace("s/a/meta.json", new TextEncoder().encode("{}"));
    const renamed = at(fs.log, "rename ");
    expect(fs.log.slice(0, renamed)).toEqual(expect.arrayContaining([`fsync ${root}`, `fsync ${join(root, "s")}`]));
  });

  it("that cannot be removed after a failed plain write has its entries flushed before the next file under it", async () => {
    const root = join(await tempBase(), "store");
    const storage = new NodeFileStorage({ root });
    await storage.replace("x.json", new TextEncoder().encode("{}"));
    fs.failSync.add(join(root, "s")); // the flush of a/'s entry; s/'s went through
    fs.failRmdir.add(join(root, "s", "a"));
    await expect(storage.replace("s/a/meta.json", new TextEncoder().encode("{}"))).rejects.toMatchObject({ details: { errno: "EIO" } });
    expect(await readdir(join(root, "s")), "s/a stays, and so does s/ above it").toEqual(["a"]);
    fs.failRmdir.clear();
    fs.log = [];
    // An append to a new file in s/a: no folder is created, yet both entries are flushed before the file's.
    await storage.append("s/a/active.jsonl", new TextEncoder().encode("line\n"));
    const file = at(fs.log, `fsync ${join(root, "s", "a", "active.jsonl")}`);
    expect(file, fs.log.join("\n")).not.toBe(-1);
    expect(fs.log.slice(0, file)).toEqual(expect.arrayContaining([`fsync ${root}`, `fsync ${join(root, "s")}`]));
    // Once flushed, they are not flushed again.
    fs.log = [];
    await storage.append("s/a/active.jsonl", new TextEncoder().encode("line\n"));
    expect(fs.log).toEqual([`fsync ${join(root, "s", "a", "active.jsonl")}`]);
  });

  it("by a stage that failed before its flush is removed with its temp file", async () => {
    const root = await tempBase();
    const storage = new NodeFileStorage({ root });
    await mkdir(join(root, "m"));
    fs.failWrite = true;
    await expect(storage.stage("m/segments/000000000001-000000000003.jsonl", new TextEncoder().encode("x\n"), "s1")).rejects.toMatchObject({
      name: "StorageFullError",
    });
    fs.failWrite = false;
    expect(await readdir(join(root, "m"))).toEqual([]);
    await storage.unstage("s1");
  });
});
