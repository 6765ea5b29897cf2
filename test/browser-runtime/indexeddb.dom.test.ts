/**
 * Focused tests of IndexedDbStorage's record layout and failure behaviour, on
 * fake-indexeddb under happy-dom (which has no Web Locks: the core's writer.lock fallback).
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { type MessageRecord, Sessions, StorageError, StorageFullError, StoreClosedError, WriterLockedError } from "../../core/mod.ts";
import { IndexedDbStorage } from "../../runtime-browser/indexeddb-storage.ts";
import { catalogSnapshotKey as snapshotKey, chunkKey, LAST_CHUNK_BYTES, MAX_CHUNK_BYTES } from "../../runtime-browser/indexeddb-records.ts";
import { ScriptedSummarizer } from "../../testing/scripted-summarizer.ts";
import { catalogSnapshotEntries, sameBytes } from "../../core/internal.ts";
import { catalogMeta } from "./catalog-meta.ts";

const utf8 = (text: string) => new TextEncoder().encode(text);
const text = (bytes: Uint8Array | undefined) => (bytes === undefined ? undefined : new TextDecoder().decode(bytes));

let next = 0;
const opened: IndexedDbStorage[] = [];
const dbNames: string[] = [];

function fresh(): IndexedDbStorage {
  const dbName = `focused-${Date.now()}-${next++}`;
  dbNames.push(dbName);
  const storage = new IndexedDbStorage({ dbName });
  opened.push(storage);
  return storage;
}

function again(storage: IndexedDbStorage): IndexedDbStorage {
  const other = new IndexedDbStorage({ dbName: storage.dbName });
  opened.push(other);
  return other;
}

afterEach(async () => {
  vi.restoreAllMocks();
  for (const storage of opened.splice(0)) await storage.close();
  for (const name of dbNames.splice(0)) {
    await new Promise<void>((resolve) => {
      const request = indexedDB.deleteDatabase(name);
      request.onsuccess = request.onerror = () => resolve();
    });
  }
});

/** A separate raw connection to the database `dbName`, beside the storage's own. */
function rawConnection(dbName: string): Promise<IDBDatabase> {
  return new Promise<IDBDatabase>((resolve, reject) => {
    const request = indexedDB.open(dbName);
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

/** Every record of the store, read through a separate raw connection. */
async function records(dbName: string): Promise<Map<string, unknown>> {
  const db = await rawConnection(dbName);
  try {
    const store = db.transaction("files", "readonly").objectStore("files");
    const [keys, values] = await Promise.all([
      new Promise<IDBValidKey[]>((resolve) => (store.getAllKeys().onsuccess = (e) => resolve((e.target as IDBRequest<IDBValidKey[]>).result))),
      new Promise<unknown[]>((resolve) => (store.getAll().onsuccess = (e) => resolve((e.target as IDBRequest<unknown[]>).result))),
    ]);
    return new Map(keys.map((key, i) => [key as string, values[i]]));
  } finally {
    db.close();
  }
}

/** Puts `entries` (key, value) into the store through a separate raw connection, as another version of the code would have written them. */
async function putRecords(dbName: string, entries: readonly (readonly [string, unknown])[]): Promise<void> {
  const db = await rawConnection(dbName);
  try {
    const transaction = db.transaction("files", "readwrite");
    for (const [key, value] of entries) transaction.objectStore("files").put(value, key);
    await new Promise<void>((resolve, reject) => {
      transaction.oncomplete = () => resolve();
      transaction.onerror = () => reject(transaction.error);
    });
  } finally {
    db.close();
  }
}

const chunkKeysOf = (all: Map<string, unknown>, path: string) => [...all.keys()].filter((k) => k.startsWith(`\u0000${path}\u0000`));

/** Records the key of every `put` and counts transactions while `fn` runs. */
async function observe<T>(
  fn: () => Promise<T>,
): Promise<{ result: T; puts: string[]; transactions: IDBTransactionMode[]; cursorSteps: number; getAlls: number }> {
  const puts: string[] = [];
  const transactions: IDBTransactionMode[] = [];
  let cursorSteps = 0;
  let getAlls = 0;
  const put = IDBObjectStore.prototype.put;
  const transaction = IDBDatabase.prototype.transaction;
  const getAll = IDBObjectStore.prototype.getAll;
  const spies = [
    vi.spyOn(IDBObjectStore.prototype, "put").mockImplementation(function (this: IDBObjectStore, value: unknown, key?: IDBValidKey) {
      puts.push(key as string);
      return put.call(this, value, key);
    }),
    vi.spyOn(IDBDatabase.prototype, "transaction").mockImplementation(function (this: IDBDatabase, ...args: Parameters<IDBDatabase["transaction"]>) {
      transactions.push(args[1] ?? "readonly");
      return transaction.apply(this, args);
    }),
    vi.spyOn(IDBObjectStore.prototype, "getAll").mockImplementation(function (this: IDBObjectStore, ...args: Parameters<IDBObjectStore["getAll"]>) {
      getAlls++;
      return getAll.apply(this, args);
    }),
    vi.spyOn(IDBCursor.prototype, "continue").mockImplementation(function (this: IDBCursor, key?: IDBValidKey) {
      cursorSteps++;
      return continueStep.call(this, key);
    }),
  ];
  try {
    const result = await fn();
    return { result, puts, transactions, cursorSteps, getAlls };
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
}
const continueStep = IDBCursor.prototype.continue;

/** Makes the `n`th `put` from now throw a quota DOMException synchronously (as a full disk would). */
function failNthPut(n: number, name = "QuotaExceededError"): void {
  const put = IDBObjectStore.prototype.put;
  let calls = 0;
  vi.spyOn(IDBObjectStore.prototype, "put").mockImplementation(function (this: IDBObjectStore, value: unknown, key?: IDBValidKey) {
    if (++calls === n) throw new DOMException(`simulated ${name}`, name);
    return put.call(this, value, key);
  });
}

describe("IndexedDbStorage record layout", () => {
  it("append is O(new bytes): N appends make N chunk records, and no append rewrites an earlier chunk", async () => {
    const storage = fresh();
    const path = "s/messages/active.jsonl";
    const lines = Array.from({ length: 40 }, (_, i) => `{"sequence":${i + 1}}\n`);
    await storage.list(""); // opens the database, so only the appends' own transactions are counted
    for (const [i, line] of lines.entries()) {
      const { puts, transactions, getAlls, cursorSteps } = await observe(() => storage.append(path, utf8(line)));
      // Exactly the new chunk and the file's small header, in one read-write transaction; no chunk is read.
      expect(puts).toEqual([chunkKey(path, i), path]);
      expect(transactions).toEqual(["readwrite"]);
      expect(getAlls).toBe(0);
      expect(cursorSteps).toBe(0);
    }
    const all = await records(storage.dbName);
    expect(chunkKeysOf(all, path)).toHaveLength(40);
    expect(all.get(path)).toEqual({ size: lines.join("").length, chunks: 40 });
    expect(text(all.get(chunkKey(path, 0)) as Uint8Array)).toBe(lines[0]);
    expect(text(await storage.read(path))).toBe(lines.join(""));
  });

  it("readTail reads only the chunks covering the tail", async () => {
    const storage = fresh();
    for (let i = 0; i < 100; i++) await storage.append("log", utf8(`line ${String(i).padStart(3, "0")}\n`));
    const { result, cursorSteps, getAlls } = await observe(() => storage.readTail("log", 12));
    expect(text(result?.bytes)).toBe("98\nline 099\n");
    expect(result?.size).toBe(900);
    expect(getAlls).toBe(0);
    expect(cursorSteps).toBeLessThanOrEqual(1);
  });

  it("readMany is one readonly transaction, and finds a folder's last file from its keys whatever the folder's size", async () => {
    const storage = fresh();
    const name = (i: number) => `s/segments/${String(i * 10 + 1).padStart(12, "0")}-${String(i * 10 + 10).padStart(12, "0")}.jsonl`;
    for (let i = 0; i < 200; i++) await storage.replace(name(i), utf8(`line\nfooter ${i}\n`));
    await storage.replace("s/segments/999999999999-999999999999.jsonl/inner.jsonl", utf8("a folder's file\n")); // sorts last, skipped
    await storage.replace("s/meta.json", utf8("{}"));
    const { result, transactions, cursorSteps, getAlls } = await observe(() =>
      storage.readMany([{ path: "s/meta.json" }, { path: "s/active.jsonl" }, { lastIn: "s/segments", tailBytes: 11 }])
    );
    expect(transactions).toEqual(["readonly"]);
    expect(result.map((r) => r && { path: r.path, text: text(r.bytes) })).toEqual([
      { path: "s/meta.json", text: "{}" },
      undefined,
      { path: name(199), text: "footer 199\n" },
    ]);
    // The key cursor steps over the folder's own folder only, never over the 200 files.
    expect(cursorSteps).toBeLessThanOrEqual(2);
    expect(getAlls).toBe(1);
  });

  it("splits large writes into bounded chunks", async () => {
    const storage = fresh();
    const big = new Uint8Array(MAX_CHUNK_BYTES * 2 + 10).map((_, i) => i % 251);
    await storage.replace("big", big);
    const all = await records(storage.dbName);
    expect(chunkKeysOf(all, "big")).toHaveLength(3);
    expect(all.get("big")).toEqual({ size: big.length, chunks: 3 });
    // Compared as a boolean: vitest would diff half a megabyte.
    const read = await storage.read("big");
    expect(read !== undefined && sameBytes(read, big)).toBe(true);
    expect([...(await storage.readTail("big", 5))!.bytes]).toEqual([...big.slice(-5)]);
  });

  it("a write ends in a chunk of at most LAST_CHUNK_BYTES, so an open's tail read of a segment loads that chunk alone", async () => {
    const storage = fresh();
    // A segment of 500 messages is about 170 KB (test/bench/notes.md): one chunk before this layout.
    const segment = new Uint8Array(170_000).map((_, i) => i % 251);
    await storage.replace("s/segments/seg.jsonl", segment);
    const all = await records(storage.dbName);
    const chunks = chunkKeysOf(all, "s/segments/seg.jsonl").map((key) => (all.get(key) as Uint8Array).length);
    expect(chunks).toEqual([segment.length - LAST_CHUNK_BYTES, LAST_CHUNK_BYTES]);
    // The reverse cursor stops at its first record, the last chunk: no step to the chunk before it.
    const { result: [tail], cursorSteps } = await observe(() => storage.readMany([{ lastIn: "s/segments", tailBytes: LAST_CHUNK_BYTES }]));
    expect(cursorSteps).toBe(0);
    expect(tail && sameBytes(tail.bytes, segment.slice(-LAST_CHUNK_BYTES))).toBe(true);
    // An append of more than that ends in such a chunk too.
    await storage.append("s/segments/seg.jsonl", segment.slice(0, LAST_CHUNK_BYTES + 5));
    const appended = await records(storage.dbName);
    expect(chunkKeysOf(appended, "s/segments/seg.jsonl").map((key) => (appended.get(key) as Uint8Array).length)).toEqual([
      segment.length - LAST_CHUNK_BYTES,
      LAST_CHUNK_BYTES,
      5,
      LAST_CHUNK_BYTES,
    ]);
  });

  it("a file an earlier version wrote as one large chunk still reads whole, by its tail and after an append", async () => {
    const storage = fresh();
    await storage.list(""); // creates the store
    const segment = new Uint8Array(170_000).map((_, i) => i % 251);
    const path = "s/segments/seg.jsonl";
    await putRecords(storage.dbName, [[path, { size: segment.length, chunks: 1 }], [chunkKey(path, 0), segment]]);
    const whole = await storage.read(path);
    expect(whole !== undefined && sameBytes(whole, segment)).toBe(true);
    const [tail] = await storage.readMany([{ lastIn: "s/segments", tailBytes: LAST_CHUNK_BYTES }]);
    expect(tail && tail.size === segment.length && sameBytes(tail.bytes, segment.slice(-LAST_CHUNK_BYTES))).toBe(true);
    await storage.append(path, utf8("more\n"));
    const longer = await storage.readTail(path, 10);
    expect(text(longer?.bytes)).toBe(`${text(segment.slice(-5))}more\n`);
    expect(longer?.size).toBe(segment.length + 5);
  });

  it("replace is one transaction and compacts the chunk list to the new content", async () => {
    const storage = fresh();
    for (let i = 0; i < 25; i++) await storage.append("f", utf8(`${i}\n`));
    const { transactions } = await observe(() => storage.replace("f", utf8("fresh\n")));
    expect(transactions).toEqual(["readwrite"]);
    const all = await records(storage.dbName);
    expect(chunkKeysOf(all, "f")).toEqual([chunkKey("f", 0)]);
    expect(all.get("f")).toEqual({ size: 6, chunks: 1 });
  });

  it("truncate drops whole chunks past the cut and cuts the straddling one", async () => {
    const storage = fresh();
    for (const piece of ["aaaa", "bbbb", "cccc", "dddd"]) await storage.append("f", utf8(piece));
    await storage.truncate("f", 6);
    const all = await records(storage.dbName);
    expect(chunkKeysOf(all, "f")).toEqual([chunkKey("f", 0), chunkKey("f", 1)]);
    expect(all.get("f")).toEqual({ size: 6, chunks: 2 });
    await storage.append("f", utf8("!"));
    expect(text(await storage.read("f"))).toBe("aaaabb!");
  });

  it("move of a tree is one transaction; remove leaves no record behind", async () => {
    const storage = fresh();
    await storage.replace("live/s1/meta.json", utf8("{}"));
    for (let i = 0; i < 5; i++) await storage.append("live/s1/messages/active.jsonl", utf8(`${i}\n`));
    await storage.replace("live/s10/meta.json", utf8("other"));
    const { result, transactions } = await observe(() => storage.move("live/s1", "archived/s1"));
    expect(result).toBe(true);
    expect(transactions).toEqual(["readwrite"]);
    const all = await records(storage.dbName);
    expect([...all.keys()].filter((k) => k.includes("live/s1/"))).toEqual([]);
    expect(chunkKeysOf(all, "archived/s1/messages/active.jsonl")).toHaveLength(5);
    expect(text(await storage.read("archived/s1/messages/active.jsonl"))).toBe("0\n1\n2\n3\n4\n");
    await storage.remove("archived");
    expect([...(await records(storage.dbName)).keys()].sort()).toEqual(["\u0000live/s10/meta.json\u0000000000000000", "live/s10/meta.json"]);
  });
});

describe("IndexedDbStorage failures are atomic and typed", () => {
  it("a quota failure in replace is a StorageFullError and leaves the previous content", async () => {
    const storage = fresh();
    await storage.replace("s/meta.json", utf8('{"revision":1}'));
    failNthPut(2); // the header is written, then the chunk's put fails
    const error = await storage.replace("s/meta.json", utf8('{"revision":2}')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StorageFullError);
    expect(error).toMatchObject({ code: "storage-full", details: { path: "s/meta.json", operation: "replace" } });
    vi.restoreAllMocks();
    expect(text(await storage.read("s/meta.json"))).toBe('{"revision":1}');
    expect((await records(storage.dbName)).get("s/meta.json")).toEqual({ size: 14, chunks: 1 });
  });

  it("a quota failure part-way through a multi-chunk append writes nothing", async () => {
    const storage = fresh();
    await storage.append("log", utf8("kept\n"));
    const before = await records(storage.dbName);
    failNthPut(2); // the first new chunk is put, the second fails
    const big = new Uint8Array(MAX_CHUNK_BYTES * 2 + 1).fill(0x78);
    await expect(storage.append("log", big)).rejects.toBeInstanceOf(StorageFullError);
    vi.restoreAllMocks();
    expect(await records(storage.dbName)).toEqual(before);
    expect(text(await storage.read("log"))).toBe("kept\n");
    await storage.append("log", utf8("more\n"));
    expect(text(await storage.read("log"))).toBe("kept\nmore\n");
  });

  it("a transaction the engine aborts with QuotaExceededError is a StorageFullError, with nothing applied", async () => {
    const storage = fresh();
    await storage.append("log", utf8("kept\n"));
    const before = await records(storage.dbName);
    const put = IDBObjectStore.prototype.put;
    vi.spyOn(IDBObjectStore.prototype, "put").mockImplementation(function (this: IDBObjectStore, value: unknown, key?: IDBValidKey) {
      const request = put.call(this, value, key);
      // What a browser does when the commit outgrows the quota: abort with that error (fake-indexeddb's internal hook).
      if (key === "log") (this.transaction as unknown as { _abort(name: string): void })._abort("QuotaExceededError");
      return request;
    });
    const error = await storage.append("log", utf8("lost\n")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StorageFullError);
    expect((error as StorageFullError).message).toContain('"log"');
    vi.restoreAllMocks();
    expect(await records(storage.dbName)).toEqual(before);
    expect(text(await storage.read("log"))).toBe("kept\n");
  });

  it("a quota failure in createExclusive leaves no lock behind", async () => {
    const storage = fresh();
    failNthPut(1);
    await expect(storage.createExclusive("s/writer.lock", utf8("{}"))).rejects.toMatchObject({ code: "storage-full" });
    vi.restoreAllMocks();
    expect(await storage.read("s/writer.lock")).toBeUndefined();
    expect(await storage.createExclusive("s/writer.lock", utf8("{}"))).toBe(true);
  });

  it("a failure in the middle of a move leaves source and target as they were", async () => {
    const storage = fresh();
    await storage.replace("a/meta.json", utf8("m"));
    await storage.append("a/messages/active.jsonl", utf8("1\n"));
    await storage.append("a/messages/active.jsonl", utf8("2\n"));
    const before = await records(storage.dbName);
    failNthPut(3, "UnknownError");
    const error = await storage.move("a", "b").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StorageError);
    expect(error).toMatchObject({ code: "internal", details: { path: "a", operation: "move", dom_error: "UnknownError" } });
    vi.restoreAllMocks();
    expect(await records(storage.dbName)).toEqual(before);
    expect(await storage.list("")).toEqual(["a"]);
  });

  it("rejects with a StoreClosedError (code closed) after close", async () => {
    const storage = fresh();
    await storage.close();
    await expect(storage.read("x")).rejects.toBeInstanceOf(StoreClosedError);
    await expect(storage.read("x")).rejects.toMatchObject({ code: "closed" });
  });
});

describe("IndexedDbStorage held lock", () => {
  it("has no acquireLock/releaseLock where navigator.locks is missing (happy-dom)", () => {
    const storage = fresh();
    expect(navigator.locks ?? undefined).toBeUndefined();
    expect("acquireLock" in storage).toBe(false);
    expect("releaseLock" in storage).toBe(false);
  });

  it("defines them over navigator.locks when it exists, namespaced by database", async () => {
    const held = new Set<string>();
    const locks = {
      request: (name: string, _options: LockOptions, callback: (lock: Lock | null) => Promise<void> | undefined) => {
        if (held.has(name)) return Promise.resolve(callback(null));
        held.add(name);
        return Promise.resolve(callback({ name, mode: "exclusive" } as Lock)).finally(() => held.delete(name));
      },
      query: () => Promise.resolve({ held: [...held].map((name) => ({ name })) }),
    };
    vi.spyOn(navigator, "locks", "get").mockReturnValue(locks as unknown as LockManager);
    const storage = fresh();
    const other = again(storage);
    expect(Object.hasOwn(storage, "acquireLock")).toBe(true);
    expect(await storage.acquireLock!("s/writer.lock")).toBe(true);
    // The lock, and its record lock until the owner's record is written (runtime-browser/web-locks.ts).
    expect([...held].sort()).toEqual([`sessionfold:${storage.dbName}:s/writer.lock`, `sessionfold:${storage.dbName}:s/writer.lock:record`]);
    expect(await other.acquireLock!("s/writer.lock")).toBe(false);
    await storage.releaseLock!("s/writer.lock");
    expect(held.size).toBe(0);
    expect(await other.acquireLock!("s/writer.lock")).toBe(true);
    await other.close(); // close releases what it holds
    expect(held.size).toBe(0);
  });
});

describe("Sessions on IndexedDbStorage", () => {
  it("creates, appends, compacts and reopens from a new connection", async () => {
    const storage = fresh();
    const summarizer = new ScriptedSummarizer();
    const identity = { pid: 0, hostname: "tab-test", runtime: "browser" };
    const sessions = new Sessions({ storage, identity, defaults: { summarizer } });
    const session = await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1", title: "IndexedDB", instruction: "Be brief." });
    for (let i = 1; i <= 6; i++) {
      await session.append({ role: i % 2 ? "user" : "assistant", parts: [{ type: "text", text: `message ${i}` }] });
    }
    const outcome = await session.compact();
    // floor(6/2) = 3 is a reply: the cut moves to the turn boundary after it.
    expect(outcome.segment).toEqual({ start: 1, end: 4 });
    expect(summarizer.calls).toHaveLength(1);
    await session.append({ role: "user", parts: [{ type: "text", text: "after compaction" }] });

    const reopened = await new Sessions({ storage: again(storage), identity }).open("a1/w1/s1");
    expect(reopened.revision).toBe(session.revision);
    expect(reopened.meta).toEqual(session.meta);
    expect(await reopened.segments()).toEqual([{ start: 1, end: 4 }]);
    expect(reopened.summary?.text).toBe(session.summary?.text);
    expect(reopened.active.map((m: MessageRecord) => m.sequence)).toEqual([5, 6, 7]);
    expect(reopened.system).toBe("Be brief.");
    expect(reopened.diagnostics).toEqual([]);
    const { messages } = await reopened.readSegment({ start: 1, end: 4 });
    expect(messages.map((m) => m.parts[0])).toMatchObject([{ text: "message 1" }, { text: "message 2" }, { text: "message 3" }, { text: "message 4" }]);
    expect(await storage.read(reopened.paths.lock)).toBeUndefined();
  });

  it("a second handle is refused with WriterLockedError by the writer.lock record (no Web Locks here)", async () => {
    const storage = fresh();
    const identity = { pid: 0, hostname: "tab-one", runtime: "browser" };
    const first = await new Sessions({ storage, identity }).create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
    const second = await new Sessions({ storage: again(storage), identity: { ...identity, hostname: "tab-two" } }).open("a1/w1/s1");
    let release!: () => void;
    const holding = first.mutate("append", () => new Promise<void>((resolve) => (release = resolve)));
    await vi.waitFor(async () => expect(await storage.read(first.paths.lock)).toBeDefined());
    const error = await second.append({ role: "user", parts: [{ type: "text", text: "x" }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WriterLockedError);
    expect((error as WriterLockedError).owner).toMatchObject({ hostname: "tab-one", runtime: "browser", operation: "append" });
    release();
    await holding;
    await expect(second.append({ role: "user", parts: [{ type: "text", text: "now" }] })).resolves.toMatchObject({ revision: 1 });
  });
});

/** Runs `body` in a `readwrite` transaction of a raw connection (what another version, or damage, leaves). */
async function writeRaw(dbName: string, body: (store: IDBObjectStore) => void): Promise<void> {
  const db = await new Promise<IDBDatabase>((resolve) => (indexedDB.open(dbName).onsuccess = (e) => resolve((e.target as IDBOpenDBRequest).result)));
  await new Promise<void>((resolve) => {
    const tx = db.transaction("files", "readwrite");
    body(tx.objectStore("files"));
    tx.oncomplete = () => resolve();
  });
  db.close();
}

describe("the catalog: a snapshot record and the session records changed since", () => {
  const dir = "agents/a1/workspaces/w1/sessions";
  const archived = "agents/a1/workspaces/w1/archived-sessions";
  const meta = catalogMeta;
  const catalogKeys = async (dbName: string, folder = dir) => [...(await records(dbName)).keys()].filter((k) => k.startsWith(`\u0001${folder}/`));
  const titles = async (storage: IndexedDbStorage, folder = dir) =>
    new Map((await storage.readCatalog(folder))!.entries.map((e) => [e.name, (e.meta as { title?: string } | undefined)?.title]));

  it("a listing that finds many session records folds them into one snapshot; writes, removals and moves after it are listed as they are", async () => {
    const storage = fresh();
    const ids = Array.from({ length: 200 }, (_, i) => `s${i}`);
    for (const id of ids) await storage.replace(`${dir}/${id}/meta.json`, meta(id));
    expect(await catalogKeys(storage.dbName)).toHaveLength(200);
    expect((await titles(storage)).size).toBe(200);
    // Folded: one record, the snapshot, holds the 200 entries by columns, newest activity first.
    const folded = await records(storage.dbName);
    expect(await catalogKeys(storage.dbName)).toEqual([snapshotKey(dir, 1)]);
    const text = folded.get(snapshotKey(dir, 1)) as string;
    expect(JSON.parse(text)).toMatchObject({ layout: "columns" });
    expect(catalogSnapshotEntries(text)!.map((e) => e.name)).toEqual([...ids].reverse());

    await storage.replace(`${dir}/s5/meta.json`, meta("s5", "renamed"));
    await storage.remove(`${dir}/s6`);
    expect(await storage.move(`${dir}/s7`, `${archived}/s7`)).toBe(true);
    await storage.replace(`${dir}/.fork-s300-t_1/meta.json`, meta("s300"));
    expect(await storage.move(`${dir}/.fork-s300-t_1`, `${dir}/s300`)).toBe(true);
    expect(await storage.createExclusive(`${dir}/s201/meta.json`, meta("s201"))).toBe(true);
    await storage.remove(`${dir}/s8/meta.json`); // the file alone: its folder keeps its entry, as before the snapshot

    const expected = new Map([...ids.filter((id) => id !== "s6" && id !== "s7").map((id) => [id, id] as const), ["s300", "s300"], ["s201", "s201"]]);
    expected.set("s5", "renamed");
    for (const handle of [storage, again(storage)]) {
      expect(await titles(handle)).toEqual(expected);
      expect(await titles(handle, archived)).toEqual(new Map([["s7", "s7"]]));
    }
    // Few changes: not folded yet (the snapshot, s5, s6 and s7 gone, the fork's two names, s201).
    expect(await catalogKeys(storage.dbName)).toHaveLength(7);

    const more = Array.from({ length: 130 }, (_, i) => `s${400 + i}`);
    for (const id of more) await storage.replace(`${dir}/${id}/meta.json`, meta(id));
    for (const id of more) expected.set(id, id);
    expect(await titles(storage)).toEqual(expected);
    // Folded again, into the next generation.
    expect(await catalogKeys(storage.dbName)).toEqual([snapshotKey(dir, 2)]);
    expect(await titles(again(storage))).toEqual(expected);
  });

  it("removing the workspace takes its snapshots with it; moving it carries them", async () => {
    const storage = fresh();
    for (let i = 0; i < 130; i++) await storage.replace(`${dir}/s${i}/meta.json`, meta(`s${i}`));
    expect((await titles(storage)).size).toBe(130);
    expect(await storage.move("agents/a1/workspaces/w1", "agents/a1/workspaces/w2")).toBe(true);
    expect(await catalogKeys(storage.dbName, "agents/a1/workspaces/w2/sessions")).toEqual([snapshotKey("agents/a1/workspaces/w2/sessions", 1)]);
    expect((await titles(storage, "agents/a1/workspaces/w2/sessions")).size).toBe(130);
    expect((await titles(storage)).size).toBe(0);
    await storage.remove("agents/a1/workspaces/w2");
    expect([...(await records(storage.dbName)).keys()].filter((k) => k.startsWith("\u0001agents"))).toEqual([]);
  });

  it("a snapshot that is not one is a StorageError from readCatalog; Sessions.list then reads every meta.json, and a rebuild replaces it", async () => {
    const storage = fresh();
    const sessions = new Sessions({ storage });
    for (const id of ["s1", "s2"]) await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: id });
    expect((await sessions.list({ agentId: "a1" })).map((m) => m.session_id).sort()).toEqual(["s1", "s2"]);
    await writeRaw(storage.dbName, (store) => store.put("{not json", snapshotKey(dir, 1)));
    await expect(storage.readCatalog(dir)).rejects.toBeInstanceOf(StorageError);
    expect((await sessions.list({ agentId: "a1" })).map((m) => m.session_id).sort()).toEqual(["s1", "s2"]);
    expect(await storage.rebuildCatalog(dir)).toBe(2);
    expect([...(await titles(storage)).keys()].sort()).toEqual(["s1", "s2"]);
    expect(await catalogKeys(storage.dbName)).toEqual([snapshotKey(dir, 1)]);
  });

  it("a snapshot an earlier version wrote as an array of entries is listed as it is; the next fold writes it by columns", async () => {
    const storage = fresh();
    const sessions = new Sessions({ storage });
    const ids = Array.from({ length: 130 }, (_, i) => `s${i}`);
    for (const id of ids.slice(0, 2)) await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: id });
    const listed = async () => (await sessions.list({ agentId: "a1" })).map((m) => [m.session_id, m.title ?? null]).sort();
    const before = await listed();
    // What that version left: the same entries, newest first, as an array of objects.
    const entries = (await storage.readCatalog(dir))!.entries;
    await writeRaw(storage.dbName, (store) => {
      store.delete(IDBKeyRange.bound(`\u0001${dir}/`, `\u0001${dir}/\uffff`));
      store.put(JSON.stringify(entries), snapshotKey(dir, 1));
    });
    expect(await listed()).toEqual(before);
    expect(await titles(again(storage))).toEqual(new Map(entries.map((e) => [e.name, (e.meta as { title?: string }).title])));
    // Enough changes to fold: the next generation is by columns, and lists the same sessions and the new ones.
    for (const id of ids.slice(2)) await storage.replace(`${dir}/${id}/meta.json`, meta(id));
    expect((await titles(storage)).size).toBe(130);
    expect(await catalogKeys(storage.dbName)).toEqual([snapshotKey(dir, 2)]);
    const text = (await records(storage.dbName)).get(snapshotKey(dir, 2)) as string;
    expect(JSON.parse(text)).toMatchObject({ layout: "columns" });
    expect(catalogSnapshotEntries(text)!.map((e) => e.name).sort()).toEqual([...ids].sort());
  });

  it("a store whose catalog a version before the snapshots wrote (marked \\u0001) is caught up from its files, and its old records go", async () => {
    const storage = fresh();
    for (const id of ["s1", "s2", "s3"]) await storage.replace(`${dir}/${id}/meta.json`, meta(id));
    expect((await titles(storage)).size).toBe(3);
    // What that version left: a record per session folder (one of them stale) and its mark.
    await writeRaw(storage.dbName, (store) => {
      store.put({ meta: { session_id: "s1", title: "stale" } }, `\u0001${dir}/s1`);
      store.put({ meta: { session_id: "s9", title: "removed since" } }, `\u0001${dir}/s9`);
      store.put({ complete: true }, "\u0001");
    });
    expect(await titles(storage)).toEqual(new Map([["s1", "s1"], ["s2", "s2"], ["s3", "s3"]]));
    expect([...(await records(storage.dbName)).keys()].filter((k) => k.startsWith("\u0001"))).toEqual(["\u0001\u0000", snapshotKey(dir, 1)]);
  });
});
