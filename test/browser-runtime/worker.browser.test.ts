/**
 * The browser runtime in real Chromium: typed errors across the Comlink hop, and Web
 * Locks held by storage workers (two workers on one database stand for two tabs).
 */
import { afterEach, describe, expect, it } from "vitest";
import * as Comlink from "comlink";
import {
  InternalError,
  InvalidInputError,
  SessionfoldError,
  Sessions,
  StorageError,
  StorageFullError,
  type WriterIdentity,
  WriterLockedError,
} from "../../core/mod.ts";
import { IndexedDbStorage } from "../../runtime-browser/indexeddb-storage.ts";
import { catalogSnapshotKey } from "../../runtime-browser/indexeddb-records.ts";
import { catalogMeta } from "./catalog-meta.ts";

import { WorkerIndexedDbStorage } from "../../runtime-browser/storage-worker-client.ts";
import { ScriptedProvider } from "../../testing/scripted-provider.ts";
import type { ErrorsWorkerApi } from "./errors-worker.ts";
import { catalogSnapshotText, readLockOwner, registerErrorTransfer } from "../../core/internal.ts";

const startWorker = () => new Worker(new URL("../../runtime-browser/storage-worker.ts", import.meta.url), { type: "module" });
const utf8 = (text: string) => new TextEncoder().encode(text);

let next = 0;
const open: WorkerIndexedDbStorage[] = [];
const dbNames: string[] = [];

function tab(dbName: string): WorkerIndexedDbStorage {
  const storage = new WorkerIndexedDbStorage({ dbName, worker: startWorker });
  open.push(storage);
  return storage;
}

function freshDb(): string {
  const name = `locks-${Date.now()}-${next++}`;
  dbNames.push(name);
  return name;
}

afterEach(async () => {
  for (const storage of open.splice(0)) await storage.close();
  for (const name of dbNames.splice(0)) {
    await new Promise<void>((resolve) => {
      const request = indexedDB.deleteDatabase(name);
      request.onsuccess = request.onerror = request.onblocked = () => resolve();
    });
  }
});

/** Resolves once no context of this origin holds (or waits for) the Web Lock `name`. */
async function lockFreed(name: string, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const { held = [], pending = [] } = await navigator.locks.query();
    if (![...held, ...pending].some((lock) => lock.name === name)) return;
    if (Date.now() > until) throw new Error(`Web Lock ${name} still held after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("typed errors across the Comlink hop", () => {
  it("keep their class, code and details", async () => {
    registerErrorTransfer(Comlink);
    const worker = new Worker(new URL("./errors-worker.ts", import.meta.url), { type: "module" });
    const remote = Comlink.wrap<ErrorsWorkerApi>(worker);
    try {
      const full = await remote.storageFull("s/messages/active.jsonl").catch((e: unknown) => e);
      expect(full).toBeInstanceOf(StorageFullError);
      expect(full).toBeInstanceOf(SessionfoldError);
      expect(full).toMatchObject({ name: "StorageFullError", code: "storage-full", details: { path: "s/messages/active.jsonl", operation: "append" } });
      expect((full as Error).message).toContain("quota exhausted");

      const locked = await remote.writerLocked().catch((e: unknown) => e);
      expect(locked).toBeInstanceOf(WriterLockedError);
      expect((locked as WriterLockedError).code).toBe("writer-locked");
      expect((locked as WriterLockedError).owner).toEqual({
        pid: 0,
        hostname: "tab-beef",
        runtime: "browser",
        operation: "run",
        created_at: "2026-12-02T13:00:00.000Z",
      });

      const plain = await remote.plain().catch((e: unknown) => e);
      expect(plain).toBeInstanceOf(InternalError);
      expect(plain).toMatchObject({ code: "internal", message: "not a sessionfold error", details: { original_name: "TypeError" } });
    } finally {
      worker.terminate();
    }
  });

  it("from the real storage worker: an invalid path is an InvalidInputError with its path", async () => {
    const storage = tab(freshDb());
    const error = await storage.read("../etc/passwd").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidInputError);
    expect(error).toMatchObject({ code: "invalid-input", details: { path: "../etc/passwd" } });
  });

  it("after close, calls reject with a typed StoreClosedError", async () => {
    const storage = tab(freshDb());
    await storage.list("");
    await storage.close();
    await expect(storage.read("x")).rejects.toMatchObject({ code: "closed", name: "StoreClosedError" });
  });
});

describe("Web Locks held by storage workers", () => {
  it("a second worker's acquireLock resolves false at once; a terminated holder frees it", async () => {
    const db = freshDb();
    const first = tab(db);
    const second = tab(db);
    expect(typeof first.acquireLock).toBe("function");
    expect(await first.acquireLock!("s/writer.lock")).toBe(true);
    // At once: the first worker keeps the lock until told to release it below, so an answer at all means no wait.
    expect(await second.acquireLock!("s/writer.lock")).toBe(false);
    expect(await second.acquireLock!("other/writer.lock")).toBe(true);
    await second.releaseLock!("other/writer.lock");

    // A clean release hands it over…
    await first.releaseLock!("s/writer.lock");
    expect(await second.acquireLock!("s/writer.lock")).toBe(true);
    expect(await first.acquireLock!("s/writer.lock")).toBe(false);
    // …and a dying holder (its worker ended without releasing) frees it too.
    await second.close();
    await lockFreed(`sessionfold:${db}:s/writer.lock`);
    expect(await first.acquireLock!("s/writer.lock")).toBe(true);
  });

  it("the engine: a second tab gets WriterLockedError at once while a run holds the session, then takes over from a dead tab", async () => {
    const db = freshDb();
    const tabA: WriterIdentity = { pid: 0, hostname: "tab-aaaa", runtime: "browser" };
    const tabB: WriterIdentity = { pid: 0, hostname: "tab-bbbb", runtime: "browser" };
    const storageA = tab(db);
    const storageB = tab(db);
    const sessionsA = new Sessions({ storage: storageA, identity: tabA });
    const sessionsB = new Sessions({ storage: storageB, identity: tabB });
    const sessionA = await sessionsA.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
    await sessionA.append({ role: "user", parts: [{ type: "text", text: "first" }] });

    // Tab A streams a reply that never ends on its own: it holds the session.
    const provider = new ScriptedProvider([{ text: "a long answer that keeps streaming", hangAfterEvents: 2 }], { delayMs: 5 });
    const controller = new AbortController();
    const run = sessionA.run("second", { provider, signal: controller.signal });
    const failed = run.result.catch((e: unknown) => e);
    for await (const event of run) if (event.type === "text-delta") break;

    const sessionB = await sessionsB.open("a1/w1/s1");
    // At once: tab A's run holds the session until it is aborted below, so an answer at all means B did not wait.
    const locked = await sessionB.append({ role: "user", parts: [{ type: "text", text: "from B" }] }).catch((e: unknown) => e);
    expect(locked).toBeInstanceOf(WriterLockedError);
    expect(locked).toMatchObject({ code: "writer-locked" });
    expect((locked as WriterLockedError).owner).toMatchObject({ hostname: "tab-aaaa", runtime: "browser", operation: "run" });

    // Tab A dies without releasing anything: its worker ends with it.
    await storageA.close();
    const lockPath = sessionB.paths.lock;
    expect(await readLockOwner(storageB, lockPath)).toMatchObject({ hostname: "tab-aaaa" }); // the stale record stays…
    await lockFreed(`sessionfold:${db}:${lockPath}`);

    // …and tab B, holding the Web Lock, replaces it and writes.
    await sessionB.reload();
    const result = await sessionB.append({ role: "user", parts: [{ type: "text", text: "from B" }] });
    expect(result.revision).toBeGreaterThan(1);
    expect(await storageB.read(lockPath)).toBeUndefined();
    const again = await new Sessions({ storage: storageB, identity: tabB }).open("a1/w1/s1");
    expect(again.active.at(-1)?.parts[0]).toMatchObject({ text: "from B" });
    expect(again.active[0]?.parts[0]).toMatchObject({ text: "first" });
    expect(await storageB.createExclusive("probe", utf8("x"))).toBe(true);

    // What was left of tab A's page: its run can only fail now (its storage is gone).
    controller.abort();
    expect(await failed).toBeInstanceOf(SessionfoldError);
  });
});

describe("the IndexedDB catalog across the worker's hop", () => {
  const dir = "agents/a1/workspaces/w1/sessions";
  const meta = catalogMeta;
  const titles = async (storage: { readCatalog(dir: string): Promise<{ entries: readonly { name: string; meta: unknown }[] } | undefined> }) =>
    new Map((await storage.readCatalog(dir))!.entries.map((e) => [e.name, (e.meta as { title?: string } | undefined)?.title]));
  const putRaw = (dbName: string, value: unknown, key: string) =>
    new Promise<void>((resolve, reject) => {
      const request = indexedDB.open(dbName);
      request.onerror = () => reject(request.error);
      request.onsuccess = () => {
        const tx = request.result.transaction("files", "readwrite");
        tx.objectStore("files").put(value, key);
        tx.oncomplete = () => (request.result.close(), resolve());
        tx.onerror = () => reject(tx.error);
      };
    });

  it.each(["by columns", "as an earlier version's array of entries"])(
    "the snapshot's text (%s) crosses as stored, the sessions changed since applied on the page's side",
    async (layout) => {
      const dbName = freshDb();
      const worker = tab(dbName);
      const ids = Array.from({ length: 150 }, (_, i) => `s${i}`);
      for (const id of ids) await worker.replace(`${dir}/${id}/meta.json`, meta(id));
      expect((await titles(worker)).size).toBe(150);
      // A snapshot as another writer may have laid it out: its text reaches the page unparsed.
      const entries = ids.map((id) => ({ name: id, meta: JSON.parse(new TextDecoder().decode(meta(id))) as unknown }));
      const laidOut = layout === "by columns" ? catalogSnapshotText(entries) : `[\n ${entries.map((entry) => JSON.stringify(entry)).join(",\n ")}\n]`;
      await putRaw(dbName, laidOut, catalogSnapshotKey(dir, 1));
      const page = new IndexedDbStorage({ dbName });
      try {
        expect(await page.readCatalogText(dir)).toEqual([laidOut, '{"unlisted":[]}']);
        await worker.replace(`${dir}/s5/meta.json`, meta("s5", "renamed"));
        await worker.remove(`${dir}/s6`);
        expect(await worker.move(`${dir}/s7`, "agents/a1/workspaces/w1/archived-sessions/s7")).toBe(true);
        expect(await worker.createExclusive(`${dir}/s201/meta.json`, meta("s201"))).toBe(true);
        const expected = new Map([...ids.filter((id) => id !== "s6" && id !== "s7").map((id) => [id, id] as const), ["s201", "s201"]]);
        expected.set("s5", "renamed");
        expect(await titles(worker)).toEqual(expected);
        expect(await titles(page)).toEqual(expected);
      } finally {
        await page.close();
      }
    },
  );

  it("a snapshot that is not one (by columns, or an array of entries) is a StorageError from the worker's readCatalog; Sessions.list reads every meta.json", async () => {
    const dbName = freshDb();
    const worker = tab(dbName);
    const sessions = new Sessions({ storage: worker });
    for (const id of ["s1", "s2"]) await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: id });
    expect((await sessions.list({ agentId: "a1" })).map((m) => m.session_id).sort()).toEqual(["s1", "s2"]);
    for (const bad of ["{not json", '{"entries":[]}', "7", '{"layout":"columns","shapes":[],"rows":[["s1",0]]}']) {
      await putRaw(dbName, bad, catalogSnapshotKey(dir, 1));
      await expect(worker.readCatalog(dir)).rejects.toBeInstanceOf(StorageError);
      expect((await sessions.list({ agentId: "a1" })).map((m) => m.session_id).sort()).toEqual(["s1", "s2"]);
    }
  });
});
