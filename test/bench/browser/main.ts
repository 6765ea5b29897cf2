/**
 * The bench page of case 1 in Chromium: seeds IndexedDB with a synthetic history (the
 * docs/FORMAT.md files written directly, no commits) and times "open the session and compose
 * the next model input" through `openBrowserSessions` (IndexedDB in its module Web
 * Worker), against reading the same history as one plain JSONL file through the same
 * storage. `test/bench/cases/browser.ts` drives it through `window.bench`; each timing
 * runs in a freshly loaded page (a new JS realm and a new storage worker).
 *
 * @module
 */
import { Sessions, storageForKeys } from "../../../core/mod.ts";
import { openBrowserSessions, PageStorage, WorkerIndexedDbStorage } from "../../../runtime-browser/mod.ts";
import { IndexedDbStorage } from "../../../runtime-browser/indexeddb-storage.ts";
import { catalogSnapshots } from "../../../runtime-browser/indexeddb-records.ts";
import { timedStorage } from "../lib/timed-storage.ts";
import { median } from "../lib/stats.ts";
import { BENCH_PROVIDER, BENCH_REF, COMPACTED_ACTIVE_SIZE, COMPACTED_REF, writePlainJsonl, writeSyntheticSession } from "../lib/synth.ts";
import { contextFromPlainJsonl } from "../lib/plain-jsonl.ts";
import { LIST_AGENT, LIST_WORKSPACE, listFixtureMeta, withoutCatalog } from "../lib/list-fixture.ts";
import { type OpenFloorTiming, timeOpenFloor } from "./open-floor.ts";
import { READ_MANY_TIMINGS, type ReadManyTiming } from "./read-many-timing.ts";

/** The key of the plain JSONL copy of the history (outside every session folder). */
const PLAIN = "plain/history.jsonl";
/** The largest plain copy the baseline reads (1 GiB). */
const PLAIN_MAX_BYTES = 2 ** 30;

interface OpenTiming {
  ms: number;
  /** Whether the page is cross-origin isolated (performance.now() then resolves to 5 µs). */
  isolated: boolean;
  /** The step of `performance.now()` in this page, measured after the timing (µs, median of 20). */
  timerStepUs: number;
  contextMessages: number;
  summaryChars: number;
}

/** A first open's time split by `timedStorage`: waiting on storage, and the rest; its `readMany` split by the storage worker. */
export interface OpenSteps {
  ms: number;
  waitingMs: number;
  outsideMs: number;
  /** The open's one `readMany`, from the page's call to its answer on the page. */
  readManyMs: number;
  /** The same `readMany` inside the storage worker (browser/idb-timed-worker.ts): the store's call, and its IndexedDB transaction alone. */
  inWorker: ReadManyTiming;
}

/** The timer's resolution in effect: the median of 20 steps between successive distinct readings of `performance.now()`. */
function timerStepUs(): number {
  const steps: number[] = [];
  for (let i = 0; i < 20; i++) {
    const from = performance.now();
    let to = performance.now();
    while (to === from) to = performance.now();
    steps.push((to - from) * 1000);
  }
  return median(steps);
}

/** An open's timing, with the page's timer as it is after the clock stopped and the model input's shape. */
function timing(ms: number, input: { summary?: string | null; messages: readonly unknown[] }): OpenTiming {
  return {
    ms,
    isolated: globalThis.crossOriginIsolated === true,
    timerStepUs: timerStepUs(),
    contextMessages: input.messages.length,
    summaryChars: input.summary?.length ?? 0,
  };
}

/** The session of the history `open` times: each size's own, or its compacted one (lib/synth.ts). */
const refOf = (compacted: boolean) => (compacted ? COMPACTED_REF : BENCH_REF);

const bench = {
  /**
   * Writes the synthetic session of `n` messages, the same history compacted as the flatness
   * row compares it (`COMPACTED_REF`) and the plain JSONL copy into `dbName`.
   */
  async seed(
    dbName: string,
    n: number,
  ): Promise<{ ms: number; historyBytes: number; plainBytes: number }> {
    const t0 = performance.now();
    const storage = new IndexedDbStorage({ dbName });
    try {
      const historyBytes = await writeSyntheticSession(
        (path, bytes) => storage.replace(path, bytes),
        n,
      );
      await writeSyntheticSession((path, bytes) => storage.replace(path, bytes), n, COMPACTED_REF, COMPACTED_ACTIVE_SIZE);
      await storage.remove(PLAIN);
      const plainBytes = await writePlainJsonl(
        (bytes) => storage.append(PLAIN, bytes),
        n,
      );
      return { ms: performance.now() - t0, historyBytes, plainBytes };
    } finally {
      await storage.close();
    }
  },

  /** Times `sessions.open` + `compose` (the store and its worker are up before the clock starts). */
  async open(dbName: string, compacted = false): Promise<OpenTiming> {
    const browser = await openBrowserSessions({ dbName, channel: false });
    try {
      const t0 = performance.now();
      const session = await browser.sessions.open(refOf(compacted));
      const { input } = session.compose(BENCH_PROVIDER);
      const ms = performance.now() - t0;
      return timing(ms, input);
    } finally {
      await browser.close();
    }
  },

  /**
   * The first open + compose of the compacted history in a freshly loaded page, as `open`
   * times it, through a timing wrapper of the store (`openBreakdown`'s): how much of it the
   * page waited on storage (the open's `readMany`, through the worker) and how much it spent
   * outside storage (the open's code, first-call compiles included). The store is
   * `openBrowserSessions`' (a `PageStorage` over the worker's port, opened as it opens it
   * before the clock), its worker browser/idb-timed-worker.ts, which times the same
   * `readMany`'s IndexedDB transaction inside the worker.
   */
  async openSteps(dbName: string): Promise<OpenSteps> {
    const inWorker: ReadManyTiming[] = [];
    const timings = new BroadcastChannel(READ_MANY_TIMINGS);
    let posted: () => void = () => undefined;
    timings.onmessage = (event: MessageEvent<ReadManyTiming>) => {
      inWorker.push(event.data);
      posted();
    };
    const inner = new WorkerIndexedDbStorage({
      dbName,
      worker: () => new Worker(new URL("./idb-timed-worker.ts", import.meta.url), { type: "module" }),
    });
    try {
      // As openBrowserSessions opens the store before it returns: the database listed, then whether it is encrypted.
      const page = new PageStorage(inner);
      await page.list("");
      const timed = timedStorage(await storageForKeys(page, undefined));
      const sessions = new Sessions({ storage: timed.storage });
      const t0 = performance.now();
      (await sessions.open(COMPACTED_REF)).compose(BENCH_PROVIDER);
      const { totalMs, waitingMs, outsideMs, calls } = timed.measure(performance.now() - t0, 1);
      const readMany = [...calls].filter(([label]) => label.startsWith("readMany("));
      if (readMany.length !== 1) throw new Error(`the open made ${readMany.length} readMany calls (${[...calls.keys()].join(", ")}), not one`);
      // The worker posts its timing as its answer goes out; the two travel apart, so wait for the post.
      if (inWorker.length === 0) await new Promise<void>((resolve) => posted = resolve);
      if (inWorker.length !== 1) throw new Error(`the storage worker timed ${inWorker.length} readMany calls, not one`);
      return { ms: totalMs, waitingMs, outsideMs, readManyMs: readMany[0]![1], inWorker: inWorker[0]! };
    } finally {
      timings.close();
      await inner.close();
    }
  },

  /** Times the floor of the compacted open in each of `dbNames` in turn, each in a fresh bare worker of this page (`open-floor.ts`). */
  async openFloors(dbNames: readonly string[]): Promise<OpenFloorTiming[]> {
    const found: OpenFloorTiming[] = [];
    for (const dbName of dbNames) found.push(await timeOpenFloor(dbName, COMPACTED_REF));
    return found;
  },

  /** Times reading the plain JSONL copy whole through the same storage and taking the next model input from it. */
  async openPlain(dbName: string): Promise<OpenTiming> {
    // On the page's thread, with the store's entry limit raised: at 10⁶ messages the plain
    // copy is about 361 MiB, over the 256 MiB a store entry may have (its reads are refused).
    const storage = new IndexedDbStorage({
      dbName,
      maxFileBytes: PLAIN_MAX_BYTES,
    });
    try {
      const t0 = performance.now();
      const bytes = (await storage.read(PLAIN)) ?? new Uint8Array(0);
      const context = contextFromPlainJsonl(new TextDecoder().decode(bytes));
      const ms = performance.now() - t0;
      return timing(ms, context);
    } finally {
      await storage.close();
    }
  },

  /**
   * Where the time of open + compose goes, storage call by storage call: the same store and
   * worker, a `Sessions` over a timing wrapper of its storage; 3 warm-up opens, then the mean
   * of 10.
   */
  async openBreakdown(dbName: string, compacted = false): Promise<string> {
    const browser = await openBrowserSessions({ dbName, channel: false });
    try {
      const timed = timedStorage(browser.storage);
      const sessions = new Sessions({ storage: timed.storage });
      for (let i = 0; i < 3; i++) {
        (await sessions.open(refOf(compacted))).compose(BENCH_PROVIDER);
      }
      timed.clear();
      const runs = 10;
      const t0 = performance.now();
      for (let i = 0; i < runs; i++) {
        (await sessions.open(refOf(compacted))).compose(BENCH_PROVIDER);
      }
      return `warm open + compose ${timed.describe((performance.now() - t0) / runs, runs)}`;
    } finally {
      await browser.close();
    }
  },

  /**
   * Case 13: writes `n` sessions' `meta.json` of one workspace (the format's files, through
   * the store; each write keeps its catalog record) and a second workspace of 10² beside it.
   * The store is listed before and after, as an app lists while its sessions accumulate: it is
   * then a store of this version (not one caught up from its files at its first listing), and
   * its catalog folded (docs/FORMAT.md "The catalog"), as it is after any listing.
   */
  async seedList(dbName: string, n: number): Promise<{ ms: number }> {
    const t0 = performance.now();
    const storage = new IndexedDbStorage({ dbName });
    const listed = `agents/${LIST_AGENT}/workspaces/${LIST_WORKSPACE}/sessions`;
    try {
      await storage.readCatalog(listed);
      const write = (workspace: string, count: number) => async (from: number) => {
        const batch = Array.from(
          { length: Math.min(100, count - from) },
          (_, k) => from + k,
        );
        await Promise.all(
          batch.map((i) =>
            storage.replace(
              `agents/${LIST_AGENT}/workspaces/${workspace}/sessions/s${i}/meta.json`,
              listFixtureMeta(i, workspace),
            )
          ),
        );
      };
      for (let i = 0; i < n; i += 100) await write(LIST_WORKSPACE, n)(i);
      await write("w2", 100)(0);
      await storage.readCatalog(listed);
      return { ms: performance.now() - t0 };
    } finally {
      await storage.close();
    }
  },

  /**
   * Case 13: times `Sessions.list` of the workspace through `openBrowserSessions` (IndexedDB in
   * its Web Worker; the store is up before the clock starts): `limit` sessions, or every one
   * (`0`); `catalog: false` reads every `meta.json` instead, as before the catalog. One untimed
   * listing first, then the median of `runs`. With the catalog, each listing is followed by
   * the floor (`catalogFloor`), and the medians of its parts come back with it.
   */
  async list(
    dbName: string,
    limit: number,
    catalog: boolean,
    runs: number,
  ): Promise<{ ms: number; listed: number; floor?: CatalogFloor }> {
    const browser = await openBrowserSessions({ dbName, channel: false });
    const floor = catalog ? await startCatalogFloor(dbName) : undefined;
    try {
      const sessions = catalog ? browser.sessions : new Sessions({ storage: withoutCatalog(browser.storage) });
      const options = {
        agentId: LIST_AGENT,
        workspaceId: LIST_WORKSPACE,
        ...(limit > 0 ? { limit } : {}),
      };
      let listed = 0;
      const times: number[] = [];
      const floors: CatalogFloor[] = [];
      for (let r = -1; r < runs; r++) {
        const t0 = performance.now();
        listed = (await sessions.list(options)).length;
        if (r >= 0) times.push(performance.now() - t0);
        const read = await floor?.read();
        if (read && r >= 0) floors.push(read);
        if (read && read.entries !== listed) throw new Error(`the floor parsed ${read.entries} entries, the listing ${listed}`);
      }
      const ms = median(times);
      if (floors.length === 0) return { ms, listed };
      return { ms, listed, floor: { ms: median(floors.map((f) => f.ms)), getMs: median(floors.map((f) => f.getMs)), entries: listed } };
    } finally {
      floor?.close();
      await browser.close();
    }
  },

  /** Deletes the database (frees the profile's disk between sizes). */
  deleteDb(dbName: string): Promise<null> {
    return new Promise((resolve, reject) => {
      const request = indexedDB.deleteDatabase(dbName);
      request.onsuccess = () => resolve(null);
      request.onerror = () => reject(request.error);
    });
  },
};

/**
 * What bounds case 13's listing from below in this browser: the workspace's catalog snapshot
 * record read with one bare `get` in a worker of its own (no checks, no session records, no
 * store), posted to the page as the string it is, and parsed there as JSON (its entries not
 * made from their columns). A listing of this layout
 * pays at least that (docs/FORMAT.md "The catalog"; the snapshot's text crosses the storage
 * worker as stored, `core/worker/catalog-text.ts`).
 */
interface CatalogFloor {
  /** From the page's post to its parse of the text. */
  ms: number;
  /** The worker's `get` of the snapshot record alone. */
  getMs: number;
  entries: number;
}

/** The floor worker: opens the database once, then answers each call with the snapshot record's text and the time its `get` took. */
const FLOOR_WORKER = `
let db;
const done = (request) => new Promise((resolve, reject) => { request.onsuccess = () => resolve(request.result); request.onerror = () => reject(request.error); });
onmessage = async ({ data: { dbName, storeName, lower, upper } }) => {
  db ??= await done(indexedDB.open(dbName));
  const store = db.transaction(storeName, "readonly").objectStore(storeName);
  const key = await done(store.getKey(IDBKeyRange.bound(lower, upper, false, true)));
  const t0 = performance.now();
  const text = await done(store.get(key));
  postMessage({ text, getMs: performance.now() - t0 });
};`;

/** Starts the floor worker on the listed workspace's catalog in `dbName`; `read()` is one measured floor, `close()` ends the worker. */
async function startCatalogFloor(dbName: string): Promise<{ read(): Promise<CatalogFloor>; close(): void }> {
  const worker = new Worker(URL.createObjectURL(new Blob([FLOOR_WORKER], { type: "text/javascript" })));
  const snapshots = catalogSnapshots(`agents/${LIST_AGENT}/workspaces/${LIST_WORKSPACE}/sessions`);
  const ask = () =>
    new Promise<{ text: string; getMs: number }>((resolve, reject) => {
      worker.onmessage = (event) => resolve(event.data);
      worker.onerror = (event) => reject(new Error(event.message));
      worker.postMessage({ dbName, storeName: "files", lower: snapshots.lower, upper: snapshots.upper });
    });
  // Once before the clock, as the storage worker is up before it.
  await ask();
  return {
    async read() {
      const t0 = performance.now();
      const { text, getMs } = await ask();
      // Parsed as JSON, not made into entries: a snapshot by columns (or an earlier array of entries) costs at least that.
      const parsed = JSON.parse(text) as unknown[] | { rows: unknown[] };
      const entries = Array.isArray(parsed) ? parsed.length : parsed.rows.length;
      return { ms: performance.now() - t0, getMs, entries };
    },
    close: () => worker.terminate(),
  };
}

(globalThis as { bench?: typeof bench }).bench = bench;
document.title = "bench ready";
