/**
 * Pages of a listing on files (docs/FORMAT.md "The catalog", catalog version 2): read from the
 * sorted snapshot's first lines (or the cursor's place) and the log, never the whole snapshot;
 * every page exactly what the full listing from every meta.json gives, with the log's newer
 * entries, entries without a document, sessions without a line and lines without a folder; a
 * snapshot of version 1 (unsorted, no header) read whole until a compaction sorts it.
 */
import { appendFile, mkdir, mkdtemp, readdir, readFile, rename, rm, stat, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import { catalogDocument, type Sessions } from "../../core/mod.ts";
import { NodeFileStorage } from "../../runtime-node/mod.ts";
import { applyLines, mergedSnapshot, SNAPSHOT_HEADER } from "../../runtime-node/fs-catalog-snapshot.ts";
import { registry } from "../support/session.ts";
import { withoutCatalog } from "../support/without-catalog.ts";
import { user } from "../session/support.ts";

/** Bytes `readSync` read, per file descriptor (what a page reads of the snapshot); `lstat` of one folder answered with frozen times. */
const reads = vi.hoisted(() => ({ bytes: new Map<number, number>() }));
const frozen = vi.hoisted(() => ({ folder: undefined as string | undefined, changedAgoMs: 0, stats: undefined as unknown }));

vi.mock("node:fs", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:fs")>();
  return {
    ...real,
    readSync: ((fd: number, ...rest: unknown[]) => {
      const read = (real.readSync as (...args: unknown[]) => number)(fd, ...rest);
      reads.bytes.set(fd, (reads.bytes.get(fd) ?? 0) + read);
      return read;
    }) as typeof real.readSync,
    // The folder's times as they were when frozen, changed `changedAgoMs` before now: a change made since does not show.
    lstatSync: ((path: string, options?: { bigint?: boolean }) => {
      const info = real.lstatSync(path, options as never);
      if (path !== frozen.folder || !options?.bigint) return info;
      if (!frozen.stats) {
        const changed = (BigInt(Date.now()) - BigInt(frozen.changedAgoMs)) * 1_000_000n + 123n;
        frozen.stats = Object.assign(Object.create(Object.getPrototypeOf(info) as object) as object, info, { mtimeNs: changed, ctimeNs: changed });
      }
      return frozen.stats;
    }) as typeof real.lstatSync,
  };
});

const WS = "agents/a1/workspaces/w1";
const BASE = Date.parse("2026-01-01T00:00:00.000Z");
let root: string;
let storage: NodeFileStorage;
let sessions: Sessions;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "sessionfold-catalog-pages-"));
  storage = new NodeFileStorage({ root, fsync: false });
  sessions = registry(storage);
});
afterEach(async () => {
  Object.assign(frozen, { folder: undefined, changedAgoMs: 0, stats: undefined });
  await rm(root, { recursive: true, force: true });
});

const folder = (...parts: string[]) => join(root, ...WS.split("/"), ...parts);
const snapshotFile = () => folder("catalog", "sessions.jsonl");
const logFile = () => folder("catalog", "sessions.log.jsonl");

/** Session `s<i>`'s meta.json, last active at `second` (several sessions share one: ties go by name). */
function metaBytes(i: number, second: number): Uint8Array {
  const at = new Date(BASE + second * 1000).toISOString();
  const meta = {
    schema_version: 1,
    session_id: `s${i}`,
    agent_id: "a1",
    workspace_id: "w1",
    title: `session ${i}`,
    created_at: at,
    updated_at: at,
    message_count: i,
    history_bytes: 0,
    revision: 1,
  };
  return new TextEncoder().encode(JSON.stringify(meta));
}

/** Writes `n` sessions' meta.json directly (as a store without lines), three to a second. */
async function writeSessions(n: number, from = 0): Promise<void> {
  for (let i = from; i < from + n; i++) {
    await mkdir(folder("sessions", `s${i}`), { recursive: true });
    await writeFile(folder("sessions", `s${i}`, "meta.json"), metaBytes(i, Math.floor(i / 3)));
  }
}

/** Every page of the workspace's listing, following cursors: the session ids in order. */
async function paged(limit: number, reader: Sessions = sessions): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await reader.list({ agentId: "a1", workspaceId: "w1", limit, ...(cursor ? { cursor } : {}) });
    expect(page.length).toBeLessThanOrEqual(limit);
    ids.push(...page.map((m) => m.session_id));
    cursor = page.cursor;
  } while (cursor);
  return ids;
}

/** The listing from every meta.json (no catalog): what every page must agree with. */
async function truth(): Promise<string[]> {
  return (await registry(withoutCatalog(storage)).list({ agentId: "a1", workspaceId: "w1" })).map((m) => m.session_id);
}

describe("files catalog pages", () => {
  test("a rebuild writes the snapshot sorted as a listing is, under the version 2 header", async () => {
    await writeSessions(30);
    expect(await sessions.rebuildCatalog()).toBe(30);
    const lines = (await readFile(snapshotFile(), "utf8")).trim().split("\n");
    expect(lines[0]).toBe(SNAPSHOT_HEADER);
    expect(lines.slice(1).map((line) => (JSON.parse(line) as { name: string }).name)).toEqual(await truth());
  });

  test("every page agrees with the listing from meta.json: the log's newer entries, an entry without a document, a session without a line, a line without a folder", async () => {
    await writeSessions(400);
    await sessions.rebuildCatalog();
    // Newer lines in the log: commits (now newest), and an entry without a document (its meta.json is read).
    for (const id of ["s5", "s200", "s399"]) await (await sessions.open(`a1/w1/${id}`)).append(user("bump"));
    await appendFile(logFile(), `${JSON.stringify({ name: "s77", meta: null })}\n`);
    // A session folder without any line (written outside sessionfold), and a snapshot line whose folder is gone.
    await writeSessions(2, 1000);
    await rm(folder("sessions", "s150"), { recursive: true });
    const expected = await truth();
    expect(expected).toHaveLength(401);
    expect(expected.slice(0, 3)).toEqual(["s399", "s200", "s5"]);
    for (const limit of [1, 7, 50, 1000]) expect(await paged(limit), `limit ${limit}`).toEqual(expected);
    // The handle remembers the folder's names: a session added or removed since is still seen.
    await writeSessions(1, 2000);
    await rm(folder("sessions", "s151"), { recursive: true });
    const now = await truth();
    expect(now).toContain("s2000");
    expect(now).not.toContain("s151");
    expect(await paged(50)).toEqual(now);
    expect(await paged(50, registry(new NodeFileStorage({ root, fsync: false })))).toEqual(now);
    // A place whose folder is gone has no sessions, whatever its catalog and the handle remember.
    await rm(folder("sessions"), { recursive: true });
    expect(await paged(50)).toEqual([]);
  });

  test("a handle reads the folder's names again unless its reading was taken well after the folder's last change (git's racy rule)", async () => {
    await writeSessions(20);
    await sessions.rebuildCatalog();
    const ids = async () => (await sessions.list({ agentId: "a1", workspaceId: "w1", limit: 50 })).map((m) => m.session_id).sort();
    // Times that say the folder changed no earlier than the reading (here a minute ahead, so that
    // no stall of this machine can make them old): the reading is not trusted, so a change that
    // leaves the times as they were (one in the same clock tick) is still seen.
    Object.assign(frozen, { folder: folder("sessions"), changedAgoMs: -60_000 });
    expect(await ids()).toHaveLength(20);
    await writeSessions(1, 100);
    expect(await ids()).toContain("s100");
    // Times a second old when read: the reading is trusted while they stay, and read again once they change.
    Object.assign(frozen, { changedAgoMs: 1000, stats: undefined });
    expect(await ids()).toHaveLength(21);
    await writeSessions(1, 101);
    expect(await ids()).not.toContain("s101");
    Object.assign(frozen, { folder: undefined, stats: undefined });
    expect(await ids()).toContain("s101");
  });

  test("a page reads the log and the snapshot's first lines, and a cursor's page its place by bisection, not the whole snapshot", async () => {
    await writeSessions(3000);
    await sessions.rebuildCatalog();
    const expected = await truth();
    const first = await sessions.list({ agentId: "a1", workspaceId: "w1", limit: 50 }); // the folder's and the snapshot's names, once
    const cursor = (await sessions.list({ agentId: "a1", workspaceId: "w1", limit: 2000 })).cursor!;
    const { size } = await stat(snapshotFile());
    expect(size).toBeGreaterThan(500_000);
    const bytesRead = async (list: () => Promise<readonly { session_id: string }[]>) => {
      reads.bytes.clear();
      const ids = (await list()).map((m) => m.session_id);
      return { ids, bytes: [...reads.bytes.values()].reduce((a, b) => a + b, 0) };
    };
    const again = await bytesRead(() => sessions.list({ agentId: "a1", workspaceId: "w1", limit: 50 }));
    expect(again.ids).toEqual(first.map((m) => m.session_id));
    expect(again.ids).toEqual(expected.slice(0, 50));
    expect(again.bytes).toBeLessThan(64 * 1024);
    const deep = await bytesRead(() => sessions.list({ agentId: "a1", workspaceId: "w1", limit: 50, cursor }));
    expect(deep.ids).toEqual(expected.slice(2000, 2050));
    expect(deep.bytes).toBeLessThan(160 * 1024);
  });

  test("a version 1 snapshot (no header, any order) is read whole; the first compaction sorts it", async () => {
    await writeSessions(60);
    const lines = Array.from({ length: 60 }, (_, i) => `${JSON.stringify({ name: `s${i}`, meta: catalogDocument(metaBytes(i, Math.floor(i / 3))) })}\n`);
    await mkdir(folder("catalog"), { recursive: true });
    await writeFile(snapshotFile(), lines.join(""));
    const expected = await truth();
    for (const limit of [1, 7, 100]) expect(await paged(limit)).toEqual(expected);
    // A log just under a step of 16 KiB, past 64 KiB (filler a reader skips): the next line starts a compaction.
    const filler = `${" ".repeat(5 * 16 * 1024 - 20)}\n`;
    await writeFile(logFile(), filler);
    await (await sessions.open("a1/w1/s3")).append(user("bump"));
    const sorted = (await readFile(snapshotFile(), "utf8")).trim().split("\n");
    expect(sorted[0]).toBe(SNAPSHOT_HEADER);
    const after = await truth();
    expect(after[0]).toBe("s3");
    expect(sorted.slice(1).map((line) => (JSON.parse(line) as { name: string }).name)).toEqual(after);
    await truncate(logFile(), 0).catch(() => undefined);
    for (const limit of [1, 7, 100]) expect(await paged(limit)).toEqual(after);
  });

  test("a compaction cut short at any step, or a snapshot torn by a machine crash, leaves a catalog every page reads right", async () => {
    await writeSessions(200);
    await sessions.rebuildCatalog();
    for (const id of ["s3", "s120", "s199"]) await (await sessions.open(`a1/w1/${id}`)).append(user("bump"));
    const expected = await truth();
    const checkPages = async (label: string) => {
      for (const limit of [7, 50]) {
        // A fresh handle each time: nothing remembered from before the crash.
        expect(await paged(limit, registry(new NodeFileStorage({ root, fsync: false }))), `${label}, limit ${limit}`).toEqual(expected);
      }
    };
    const snapshotBefore = await readFile(snapshotFile());
    const log = await readFile(logFile());
    const aside = folder("catalog", "sessions.merging-0000000000001-0a0b0c0d.jsonl");
    // Cut after the log was set aside: the old snapshot, the log aside, no log.
    await rename(logFile(), aside);
    await checkPages("log set aside");
    // Cut after the new snapshot was written, before the log set aside was removed: its lines apply again.
    const updates = new Map<string, unknown>();
    applyLines(log, updates);
    await writeFile(snapshotFile(), mergedSnapshot(snapshotBefore, updates, new Set(await readdir(folder("sessions")))));
    await checkPages("snapshot written, log aside kept");
    await rm(aside);
    await checkPages("compacted");
    // A machine crash after the snapshot's rename lost its unflushed end (cut inside a line), or all of it.
    await truncate(snapshotFile(), Math.floor((await stat(snapshotFile())).size * 0.6) + 7);
    await checkPages("snapshot torn");
    // Torn one byte before a line's end: what is left ends with "}" as a whole line does, but does not parse.
    const text = await readFile(snapshotFile(), "utf8");
    await truncate(snapshotFile(), text.lastIndexOf("}}\n", text.length - 2) + 1);
    expect((await readFile(snapshotFile(), "utf8")).endsWith("}")).toBe(true);
    await checkPages("snapshot torn inside its last line");
    await truncate(snapshotFile(), 0);
    await checkPages("snapshot empty");
    // The next rebuild writes it whole again.
    await sessions.rebuildCatalog();
    expect((await readFile(snapshotFile(), "utf8")).split("\n")[0]).toBe(SNAPSHOT_HEADER);
    await checkPages("rebuilt");
  });
});
