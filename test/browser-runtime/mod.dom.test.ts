/**
 * openBrowserSessions on the page's thread (`worker: false`) under happy-dom +
 * fake-indexeddb: identity, persistence request, commit announcements between two
 * instances, and the small helpers behind them.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { ExtractiveSummarizer, MemoryStorage, Sessions } from "../../core/mod.ts";
import { type BrowserSessions, IndexedDbStorage, openBrowserSessions, PageStorage, startBackgroundSync } from "../../runtime-browser/mod.ts";
import type { CommitNotice as CommitEvent } from "../../core/mod.ts";

const opened: BrowserSessions[] = [];
let next = 0;

async function open(dbName: string, options: { channel?: boolean } = {}): Promise<BrowserSessions> {
  const browser = await openBrowserSessions({ dbName, worker: false, ...options });
  opened.push(browser);
  return browser;
}

afterEach(async () => {
  vi.restoreAllMocks();
  for (const browser of opened.splice(0)) await browser.close();
});

describe("openBrowserSessions (worker: false)", () => {
  it("stamps a per-tab browser identity into writer.lock records", async () => {
    const browser = await open(`mod-${next++}`);
    expect(browser.identity).toEqual({ pid: 0, hostname: expect.stringMatching(/^tab-[0-9a-f]{4}$/), runtime: "browser" });
    const session = await browser.sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
    let seen: unknown;
    await session.mutate("probe", async () => {
      seen = JSON.parse(new TextDecoder().decode(await browser.storage.read(session.paths.lock)));
    });
    expect(seen).toMatchObject({ ...browser.identity, operation: "probe" });
  });

  it("asks for persistent storage once, on the first write, and ignores a false answer", async () => {
    const persist = vi.fn(async () => false);
    Object.defineProperty(navigator, "storage", { value: { persist }, configurable: true }); // happy-dom has none
    try {
      const browser = await open(`mod-${next++}`);
      await browser.sessions.list();
      expect(persist).not.toHaveBeenCalled();
      const session = await browser.sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
      await session.append({ role: "user", parts: [{ type: "text", text: "hi" }] });
      expect(persist).toHaveBeenCalledTimes(1);
    } finally {
      delete (navigator as { storage?: unknown }).storage;
    }
  });

  it("announces each commit to the other instances on the database, with the new revision", async () => {
    const dbName = `mod-${next++}`;
    const a = await open(dbName);
    const b = await open(dbName);
    // A third instance on the database that never stops listening: once it has heard a commit,
    // that commit's announcement has reached every instance, so b's silence is observed, not waited for.
    const witness = await open(dbName);
    const other = await open(`mod-${next++}`);
    const toA: CommitEvent[] = [];
    const toB: CommitEvent[] = [];
    const toWitness: CommitEvent[] = [];
    witness.onCommit((e) => toWitness.push(e));
    const toOther: CommitEvent[] = [];
    a.onCommit((e) => toA.push(e));
    const stop = b.onCommit((e) => toB.push(e));
    other.onCommit((e) => toOther.push(e));
    const session = await a.sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
    const { revision } = await session.append({ role: "user", parts: [{ type: "text", text: "hi" }] });
    await vi.waitFor(() => expect(toB).toContainEqual({ refText: "a1/w1/s1", revision }));
    // The session's creation (revision 0), then its commit.
    expect(toB).toEqual([{ refText: "a1/w1/s1", revision: 0 }, { refText: "a1/w1/s1", revision }]);
    expect(toA).toEqual([]); // never its own commits
    expect(toOther).toEqual([]); // another database's channel
    const viewB = await b.sessions.open("a1/w1/s1");
    expect(viewB.revision).toBe(revision);
    stop();
    const again = await session.append({ role: "user", parts: [{ type: "text", text: "again" }] });
    await vi.waitFor(() => expect(toWitness).toContainEqual({ refText: "a1/w1/s1", revision: again.revision }));
    expect(toB).toHaveLength(2);
  });

  it("with channel: false announces nothing", async () => {
    const dbName = `mod-${next++}`;
    const quiet = await open(dbName, { channel: false });
    const listener = await open(dbName);
    const heard: CommitEvent[] = [];
    listener.onCommit((e) => heard.push(e));
    const session = await quiet.sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
    await session.append({ role: "user", parts: [{ type: "text", text: "hi" }] });
    // An instance that does announce commits after it: once its announcement is heard, one from
    // the quiet instance (posted before it) would have been heard too.
    const loud = await open(dbName);
    const marker = await loud.sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s2" });
    const { revision } = await marker.append({ role: "user", parts: [{ type: "text", text: "marker" }] });
    await vi.waitFor(() => expect(heard).toContainEqual({ refText: "a1/w1/s2", revision }));
    expect(heard.filter((e) => e.refText === "a1/w1/s1")).toEqual([]);
  });

  it('refuses a field it does not know, or one of defaults (docs/decisions.md "Unknown option fields are refused"); nothing is opened', async () => {
    const dbName = `mod-${next++}`;
    const unknown = (await openBrowserSessions({ dbName, worker: false, chanel: false } as never).catch((e: Error) => e)) as Error;
    expect(unknown).toMatchObject({ code: "invalid-input", details: { field: "chanel", suggestion: "channel" } });
    expect(unknown.message).toMatch(
      /^openBrowserSessions\(options\): unknown field "chanel" \(did you mean "channel"\?\); the fields are dbName, worker, defaults, channel, keys$/,
    );
    const defaults = (await openBrowserSessions({ dbName, worker: false, defaults: { summarise: null } } as never).catch((e: Error) => e)) as Error;
    expect(defaults.message).toMatch(/^openBrowserSessions\(options\)\.defaults: unknown field "summarise" \(did you mean "summarizer"\?\)/);
    expect((await indexedDB.databases()).map((d) => d.name)).not.toContain(dbName);
    const browser = await open(dbName);
    expect(() => startBackgroundSync({ sessions: browser, remote: {} as never, online: false } as never)).toThrow(
      /^startBackgroundSync\(options\): unknown field "online"; the fields are remote, refs,/,
    );
  });
});

describe("PageStorage", () => {
  it("forwards commit plans and locks exactly when the inner storage has them", async () => {
    const inner = new MemoryStorage();
    const storage = new PageStorage(inner);
    expect("acquireLock" in storage).toBe(false); // MemoryStorage has no held lock, so neither does its wrapper
    expect("applyCommitPlan" in storage).toBe(false);
    const planned: unknown[] = [];
    const withPlans = Object.assign(new MemoryStorage(), {
      applyCommitPlan: async (plan: unknown) => (planned.push(plan), { outcome: "committed" as const }),
    });
    const wrapped = new PageStorage(withPlans);
    await expect(wrapped.applyCommitPlan!({ writes: [] })).resolves.toEqual({ outcome: "committed" });
    expect(planned).toEqual([{ writes: [] }]);
  });

  it("forwards readMany when the inner storage has it: a session's open is one call to the storage worker", async () => {
    expect("readMany" in new PageStorage(new MemoryStorage())).toBe(false);
    const inner = new IndexedDbStorage({ dbName: `page-reads-${Date.now()}` });
    const calls: string[] = [];
    // A wrapper that answers every method wrapped (as the bench's timing one does) must be allowed to.
    const storage = new Proxy(new PageStorage(inner), {
      get(target, prop) {
        const value = Reflect.get(target, prop, target);
        return typeof value === "function" ? (...args: unknown[]) => (calls.push(String(prop)), value.apply(target, args)) : value;
      },
    });
    try {
      const sessions = new Sessions({ storage, identity: { pid: 0, hostname: "tab", runtime: "browser" } });
      const session = await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
      for (let i = 0; i < 6; i++) await session.append({ role: i % 2 ? "assistant" : "user", parts: [{ type: "text", text: `m${i}` }] });
      await session.compact({ summarizer: new ExtractiveSummarizer() });
      calls.length = 0;
      const reopened = await sessions.open("a1/w1/s1");
      expect(reopened.summary).toBeDefined();
      expect(calls).toEqual(["readMany"]);
    } finally {
      await inner.close();
    }
  });
});
