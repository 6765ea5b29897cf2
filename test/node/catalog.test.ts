/**
 * The catalog of a Node file store (docs/FORMAT.md "The catalog", `runtime-node/fs-catalog.ts`):
 * missing or stale and rebuilt, never trusted over `meta.json`'s membership, compacted, and
 * safe against a compaction that sets the log aside under a writer's feet.
 */
import { readlinkSync, renameSync } from "node:fs";
import { appendFile, mkdtemp, readdir, readFile, rm, stat, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import { type SessionMeta, Sessions, type StoragePort } from "../../core/mod.ts";
import { NodeFileStorage } from "../../runtime-node/mod.ts";
import { registry } from "../support/session.ts";
import { summarizer, user } from "../session/support.ts";

/** A hook the mocked `node:fs` runs before a write (the forced race below); it returns whether it fired. */
const hooks = vi.hoisted(() => ({ beforeWrite: undefined as undefined | ((fd: number) => boolean) }));

vi.mock("node:fs", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:fs")>();
  return {
    ...real,
    writeSync: ((fd: number, ...rest: unknown[]) => {
      if (hooks.beforeWrite?.(fd)) hooks.beforeWrite = undefined;
      return (real.writeSync as (...args: unknown[]) => number)(fd, ...rest);
    }) as typeof real.writeSync,
  };
});

const WS = "agents/a1/workspaces/w1";
let root: string;
let storage: NodeFileStorage;
let sessions: Sessions;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "sessionfold-catalog-"));
  storage = new NodeFileStorage({ root, fsync: false });
  sessions = registry(storage);
});
afterEach(async () => {
  hooks.beforeWrite = undefined;
  await rm(root, { recursive: true, force: true });
});

const catalogFolder = () => join(root, ...WS.split("/"), "catalog");
const titles = (metas: readonly SessionMeta[]) => Object.fromEntries(metas.map((m) => [m.session_id, m.title ?? null]));

/** The store's calls that read a session's meta.json, counted (a listing from the catalog makes none). */
function countingMetaReads(inner: StoragePort): { storage: StoragePort; reads: () => number } {
  let reads = 0;
  const counted = new Proxy(inner, {
    get(target, name) {
      if (name === "read") return (path: string) => ((reads += path.endsWith("/meta.json") ? 1 : 0), target.read(path));
      const value = Reflect.get(target, name, target) as unknown;
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { storage: counted, reads: () => reads };
}

/** Forces a catalog compaction's race: at the next write to the log, the log is renamed aside first; returns where it went. */
function setAsideAtNextWrite(log: string): string[] {
  const aside: string[] = [];
  hooks.beforeWrite = (fd) => {
    if (!readlinkSync(`/proc/self/fd/${fd}`).endsWith("sessions.log.jsonl")) return false;
    renameSync(log, `${log}.aside`);
    aside.push(`${log}.aside`);
    return true;
  };
  return aside;
}

describe("files catalog", () => {
  test("every create and commit writes one line; a listing reads the catalog, not one meta.json per session", async () => {
    for (const id of ["s1", "s2", "s3"]) await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: id, title: `t-${id}` });
    await (await sessions.open("a1/w1/s2")).append(user("hi"));
    expect(await readdir(catalogFolder())).toEqual(["sessions.log.jsonl"]);
    const counted = countingMetaReads(storage);
    const metas = await registry(counted.storage).list({ agentId: "a1", workspaceId: "w1" });
    expect(metas.map((m) => [m.session_id, m.message_count])).toEqual([["s2", 1], ["s3", 0], ["s1", 0]]);
    expect(counted.reads()).toBe(0);
  });

  test("a missing catalog: every session is still listed from its meta.json, and a rebuild restores it", async () => {
    for (const id of ["s1", "s2"]) await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: id, title: id });
    await rm(catalogFolder(), { recursive: true });
    const counted = countingMetaReads(storage);
    expect(titles(await registry(counted.storage).list())).toEqual({ s1: "s1", s2: "s2" });
    expect(counted.reads()).toBe(2);
    expect(await sessions.rebuildCatalog()).toBe(2);
    expect(await readdir(catalogFolder())).toEqual(["sessions.jsonl"]);
    const again = countingMetaReads(storage);
    expect(titles(await registry(again.storage).list())).toEqual({ s1: "s1", s2: "s2" });
    expect(again.reads()).toBe(0);
  });

  test("a stale or foreign entry gives way to meta.json: a rebuild, the session's next commit, an entry naming another session, a folder that is gone", async () => {
    const s1 = await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1", title: "real" });
    await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s2", title: "two" });
    const log = join(catalogFolder(), "sessions.log.jsonl");
    // A stale line (what a crash between meta.json and its line leaves, or a writer outside sessionfold).
    const stale = { ...s1.meta, title: "stale", revision: 0 };
    await appendFile(log, `${JSON.stringify({ name: "s1", meta: stale })}\n`);
    expect(titles(await sessions.list())).toMatchObject({ s1: "stale" });
    expect(await sessions.rebuildCatalog()).toBe(2);
    expect(titles(await sessions.list())).toEqual({ s1: "real", s2: "two" });
    // The session's own next commit writes its entry again.
    await appendFile(log, `${JSON.stringify({ name: "s1", meta: stale })}\n`);
    await s1.append(user("again"));
    expect((await sessions.list()).find((m) => m.session_id === "s1")).toMatchObject({ title: "real", message_count: 1 });
    // An entry that names another session, or is not a meta.json, is not trusted: meta.json is read.
    await appendFile(log, `${JSON.stringify({ name: "s2", meta: { ...stale, session_id: "s1" } })}\n${JSON.stringify({ name: "s1", meta: null })}\n`);
    expect(titles(await sessions.list())).toEqual({ s1: "real", s2: "two" });
    // An entry whose folder is gone is not listed.
    await appendFile(log, `${JSON.stringify({ name: "gone", meta: { ...stale, session_id: "gone" } })}\n`);
    expect(Object.keys(titles(await sessions.list())).sort()).toEqual(["s1", "s2"]);
  });

  test("a catalog that cannot be read (a link where its folder belongs) does not stop the listing: meta.json is read", async () => {
    for (const id of ["s1", "s2"]) await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: id, title: id });
    await rm(catalogFolder(), { recursive: true });
    await symlink(tmpdir(), catalogFolder());
    expect(titles(await sessions.list())).toEqual({ s1: "s1", s2: "s2" });
    // Writes go on; the catalog's line is best effort (the link is never followed).
    await (await sessions.open("a1/w1/s1")).append(user("hi"));
    expect((await sessions.list()).find((m) => m.session_id === "s1")?.message_count).toBe(1);
  });

  test("two handles (two writers) committing different sessions: both are listed", async () => {
    const other = registry(new NodeFileStorage({ root, fsync: false }));
    const a = await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "a" });
    const b = await other.create({ agentId: "a1", workspaceId: "w1", sessionId: "b" });
    await Promise.all([a.append(user("1")), b.append(user("1")), a.append(user("2")).catch(() => undefined)]);
    await b.append(user("2"));
    for (const reader of [sessions, other]) {
      const counts = Object.fromEntries((await reader.list()).map((m) => [m.session_id, m.message_count]));
      expect(counts.b).toBe(2);
      expect(counts.a).toBe((await sessions.open("a1/w1/a")).meta.message_count);
    }
  });

  test("a line written to a log a compaction set aside after reading it is written again to the new log", async () => {
    await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
    const log = join(catalogFolder(), "sessions.log.jsonl");
    // Forced: between the writer's open of the log and its write, a compaction renames the log
    // aside (and, having read it, will remove it): the line lands in the file set aside.
    const aside = setAsideAtNextWrite(log);
    await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s2", title: "raced" });
    expect(aside).toHaveLength(1);
    expect(await readFile(aside[0]!, "utf8")).toContain('"raced"');
    // The compactor removes what it set aside (having merged s1's line, which this test drops).
    await rm(aside[0]!);
    expect(await readFile(log, "utf8")).toContain('"raced"');
    const counted = countingMetaReads(storage);
    expect(titles(await registry(counted.storage).list())).toEqual({ s1: null, s2: "raced" });
    expect(counted.reads()).toBe(1); // s1, whose line went with the file set aside, from its meta.json
  });

  test("a compaction's line is written again when a catalog compaction set the log aside before its write", async () => {
    const session = await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1", title: "before" });
    for (let i = 0; i < 4; i++) await session.append(user(`m${i}`));
    const log = join(catalogFolder(), "sessions.log.jsonl");
    // Forced: between the compaction's open of the log and the line's write, a catalog compaction sets the log aside,
    // so the line lands in the file set aside.
    const aside = setAsideAtNextWrite(log);
    const outcome = await session.compact({ summarizer: summarizer() });
    expect(aside).toHaveLength(1);
    await rm(aside[0]!);
    // The new log has the compacted session's line: the listing takes it without reading meta.json.
    expect(await readFile(log, "utf8")).toContain(`"revision":${outcome.revision}`);
    const counted = countingMetaReads(storage);
    const [listed] = await registry(counted.storage).list();
    expect(listed).toMatchObject({ session_id: "s1", revision: outcome.revision, message_count: 4 });
    expect(counted.reads()).toBe(0);
  });

  test("compaction: once the log passes 64 KiB it is merged into the snapshot, sorted as a listing is, every session kept", async () => {
    const many = 20;
    const rounds = 4;
    const handles = [];
    for (let i = 0; i < many; i++) handles.push(await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: `s${i}`, title: "x".repeat(1500) }));
    // ~1.8 KB a line: 80 commits pass 64 KiB and the check at 80 KiB.
    for (let round = 0; round < rounds; round++) for (const handle of handles) await handle.append(user(`round ${round}`));
    const names = await readdir(catalogFolder());
    expect(names).toContain("sessions.jsonl");
    const log = await stat(join(catalogFolder(), "sessions.log.jsonl")).catch(() => undefined);
    expect(log?.size ?? 0).toBeLessThan(64 * 1024);
    const [header, ...snapshot] = (await readFile(join(catalogFolder(), "sessions.jsonl"), "utf8")).trim().split("\n");
    expect(header).toBe('{"catalog":2,"order":"updated_at desc, name"}');
    const metas = await sessions.list();
    expect(metas).toHaveLength(many);
    for (const meta of metas) expect(meta.message_count).toBe(rounds);
    // One line per session; in the listing's order unless the log holds a newer one.
    const lines = snapshot.map((text) => JSON.parse(text) as { name: string; meta: { updated_at: string } });
    expect(new Set(lines.map((line) => line.name)).size).toBe(lines.length);
    const times = lines.map((line) => line.meta.updated_at);
    expect(times).toEqual([...times].sort().reverse());
  });
});
