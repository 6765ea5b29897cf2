/**
 * The browser runtime's contract with real page loads, in Debian's Chromium driven by
 * Playwright: a session compacts, survives a page reload, recovers its draft after a
 * reload in the middle of a stream, and two pages contending for one session behave as
 * the contract says (WriterLockedError at once, takeover after the holder's tab dies,
 * commits announced to the other tab). A Vite dev server serves the fixture page
 * (`fixture/index.html` + `fixture/main.ts`) with the runtime's real module Web Worker.
 */
import { randomBytes } from "node:crypto";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { createServer, type ViteDevServer } from "vite";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM_ARGS, CHROMIUM_PATH } from "../support/chromium.ts";
import type { LooseJson } from "../support/loose-json.ts";
import { until } from "../support/until.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const FIXTURE = "/test/browser-runtime/fixture/index.html";
const REF = "a1/w1/s1";

type Outcome = { ok: true; value: LooseJson } | { ok: false; error: { name: string; code: string; message: string; details: LooseJson } };

let server: ViteDevServer | undefined;
let browser: Browser | undefined;
let baseUrl = "";
let context: BrowserContext | undefined;
const problems: string[] = [];
let nextDb = 0;

beforeAll(async () => {
  server = await createServer({
    configFile: false,
    root: ROOT,
    // Its own optimizer cache, so it never rewrites the one of vitest's browser project or of a demo server.
    cacheDir: fileURLToPath(new URL("../../node_modules/.vite/pages-test", import.meta.url)),
    logLevel: "error",
    clearScreen: false,
    // No watcher and no HMR: other work on the tree must never reload the pages under test.
    server: { host: "127.0.0.1", port: 0, hmr: false, watch: null },
    // Discover and pre-bundle every dependency up front, so the optimizer never reloads a page mid-test.
    optimizeDeps: { entries: [FIXTURE.slice(1)], include: ["comlink", "idb-keyval", "zod", "jsonc-parser"] },
  });
  await server.listen();
  const { port } = server.httpServer!.address() as AddressInfo;
  baseUrl = `http://127.0.0.1:${port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: [...CHROMIUM_ARGS], headless: true });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

afterEach(async () => {
  await context?.close();
  context = undefined;
  const seen = problems.splice(0);
  expect(seen, "console errors and uncaught page errors").toEqual([]);
});

/** A fresh browser profile context (its own IndexedDB, locks and channels) and a fresh database name. */
async function freshContext(): Promise<{ ctx: BrowserContext; db: string }> {
  context = await browser!.newContext();
  return { ctx: context, db: `pages-${Date.now()}-${nextDb++}` };
}

/** Opens the fixture page on `db`, waits until `window.sf` is ready and opens (or creates) the session. */
async function openTab(ctx: BrowserContext, db: string, label: string): Promise<Page> {
  const page = await ctx.newPage();
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(`[${label}] console.error: ${message.text()}`);
  });
  page.on("pageerror", (error) => problems.push(`[${label}] uncaught: ${error.message}`));
  await load(page, `${baseUrl}${FIXTURE}?db=${encodeURIComponent(db)}&window=400`);
  return page;
}

async function load(page: Page, url?: string): Promise<void> {
  if (url) await page.goto(url);
  else await page.reload();
  await page.waitForFunction(() => (window as unknown as { sf?: { ready?: boolean } }).sf?.ready === true, null, { timeout: 20_000 });
  expect(await sf(page, "open", REF)).toMatchObject({ ok: true });
}

/** Calls `window.sf[name](...args)` in the page. */
function sf(page: Page, name: string, ...args: unknown[]): Promise<Outcome> {
  return page.evaluate(
    ({ name, args }) => (window as unknown as { sf: Record<string, (...a: unknown[]) => Promise<unknown>> }).sf[name]!(...args),
    { name, args },
  ) as Promise<Outcome>;
}

/** `sf(...)` that must succeed; its value. */
async function ok(page: Page, name: string, ...args: unknown[]): Promise<LooseJson> {
  const outcome = await sf(page, name, ...args);
  if (!outcome.ok) throw new Error(`sf.${name} failed: ${outcome.error.name} (${outcome.error.code}): ${outcome.error.message}`);
  return outcome.value;
}

/** The reply text the fixture's scripted provider streams for its `call`th request (see fixture/main.ts). */
function fullReply(call: number, chars: number): string {
  const words = `Reply ${call}: the quick brown fox jumps over the lazy dog and keeps on running. `;
  return words.repeat(Math.ceil(chars / words.length)).slice(0, chars);
}

const textOf = (message: { parts: { type: string; text?: string }[] }) => message.parts.filter((p) => p.type === "text").map((p) => p.text).join("");

describe("browser runtime in real pages (Vite dev server + Chromium)", () => {
  it("a session compacts and survives a page reload", async () => {
    const { ctx, db } = await freshContext();
    const page = await openTab(ctx, db, "A");
    let state: LooseJson;
    for (let turn = 1; turn <= 12; turn++) {
      await ok(page, "run", `question ${turn}: tell me something`);
      state = await ok(page, "state");
      if (state.segments.length > 0) break;
    }
    expect(state.segments.length).toBeGreaterThan(0);
    expect(state.segments[0].start).toBe(1);
    expect(state.summary).toMatch(/^Summary through #/);
    expect(state.meta.compaction.completed).toBeGreaterThanOrEqual(1);
    expect(state.diagnostics).toEqual([]);

    await load(page); // a real reload: new document, new worker, the same IndexedDB
    const reloaded = await ok(page, "state");
    expect(reloaded).toEqual(state);

    const after = await ok(page, "run", "one more after the reload");
    expect(after.revision).toBeGreaterThan(state.revision); // +1, or +2 when it compacted again first
    expect(await ok(page, "storedLock")).toBeNull();
  }, 60_000);

  it("recovers the draft after a reload in the middle of a stream, and finishes it as stopped", async () => {
    const { ctx, db } = await freshContext();
    const page = await openTab(ctx, db, "A");
    const chars = 600;
    await ok(page, "startRun", "tell me a long story", { delayMs: 30, chunkSize: 3, replyChars: chars, reasoning: "Plan: a fox, a dog, a chase." });
    const stored = await until("a stored draft with streamed text", async () => {
      const draft = await ok(page, "storedDraft");
      const text = draft ? textOf(draft) : "";
      return text.length >= 30 ? draft : undefined;
    });
    expect(stored.parts.map((p: { type: string }) => p.type)).toEqual(["reasoning", "text"]);

    await load(page); // reload mid-stream: the stream dies with the old document
    const state = await ok(page, "state");
    expect(state.draft).not.toBeNull();
    expect(state.draft.status).toBe("streaming");
    expect(state.draft.pending).toEqual([{ role: "user", parts: [{ sequence: 1, type: "text", text: "tell me a long story" }] }]);
    expect(state.draft.parts.map((p: { sequence: number; type: string }) => [p.sequence, p.type])).toEqual([
      [1, "reasoning"],
      [2, "text"],
    ]);
    expect(state.draft.parts[0].text).toBe("Plan: a fox, a dog, a chase.");
    const partial: string = state.draft.parts[1].text;
    expect(partial.length).toBeGreaterThanOrEqual(30);
    expect(partial.length).toBeLessThan(chars);
    expect(fullReply(1, chars).startsWith(partial)).toBe(true);
    expect(state.active).toEqual([]); // nothing of the interrupted run was committed

    // The old document's worker held the session's Web Lock; it goes with the document.
    await until("the dead document's lock to be freed", async () => (await ok(page, "lockFree")) === true);
    const finished = await ok(page, "finishDraft");
    expect(finished.sequences).toEqual([1, 2]);
    const done = await ok(page, "state");
    expect(done.draft).toBeNull();
    expect(done.active.map((m: { role: string; status?: string }) => [m.role, m.status ?? null])).toEqual([
      ["user", null],
      ["assistant", "stopped"],
    ]);
    expect(textOf(done.active[0])).toBe("tell me a long story");
    expect(textOf(done.active[1])).toBe(partial);
    expect(await ok(page, "storedDraft")).toBeNull();
  }, 60_000);

  it("two pages contend for one session: WriterLockedError at once, takeover when the holder's tab closes", async () => {
    const { ctx, db } = await freshContext();
    const pageA = await openTab(ctx, db, "A");
    const pageB = await openTab(ctx, db, "B");
    await ok(pageA, "run", "hello");
    await ok(pageB, "reload");
    const tabA = await pageA.evaluate(() => (window as unknown as { sf: { identity: { hostname: string } } }).sf.identity.hostname);

    await ok(pageA, "startRun", "a slow one", { delayMs: 50, chunkSize: 2, replyChars: 600 });
    await until("tab A to stream into its draft", async () => {
      const draft = await ok(pageA, "storedDraft");
      return draft && textOf(draft).length > 0;
    });

    const refused = await sf(pageB, "append", "from B");
    expect(refused.ok).toBe(false);
    if (refused.ok) return;
    expect(refused.error).toMatchObject({ name: "WriterLockedError", code: "writer-locked" });
    expect(refused.error.details.owner).toMatchObject({ pid: 0, hostname: tabA, runtime: "browser", operation: "run" });
    expect(refused.error.details.ms).toBeLessThan(1_000);

    await pageA.close(); // tab A goes away mid-run, releasing nothing itself
    await until("tab A's Web Lock to be freed", async () => (await ok(pageB, "lockFree")) === true);
    expect((await ok(pageB, "storedLock"))?.hostname).toBe(tabA); // its record is stale now…
    await ok(pageB, "reload");
    const written = await ok(pageB, "append", "from B"); // …and B replaces it
    const state = await ok(pageB, "state");
    expect(written.revision).toBe(state.revision);
    expect(state.draft).toBeNull();
    // A's interrupted run was recovered in the same commit: its user message, its stopped reply, then B's message.
    expect(state.active.map((m: { role: string; status?: string }) => [m.role, m.status ?? null])).toEqual([
      ["user", null],
      ["assistant", "completed"],
      ["user", null],
      ["assistant", "stopped"],
      ["user", null],
    ]);
    expect(textOf(state.active[2])).toBe("a slow one");
    expect(textOf(state.active[4])).toBe("from B");
    expect(await ok(pageB, "storedLock")).toBeNull();
  }, 60_000);

  it("a commit in one page reaches onCommit in the other with the new revision", async () => {
    const { ctx, db } = await freshContext();
    const pageA = await openTab(ctx, db, "A");
    const pageB = await openTab(ctx, db, "B");
    await ok(pageB, "reload");
    const before = (await ok(pageB, "state")).revision;
    const { revision } = await ok(pageA, "append", "announced");
    expect(revision).toBe(before + 1);
    const commits = await until("page B to hear of the commit", async () => {
      const seen = await pageB.evaluate(() => (window as unknown as { sf: { commits: unknown[] } }).sf.commits);
      return seen.length > 0 ? seen : undefined;
    });
    expect(commits).toEqual([{ refText: REF, revision }]);
    expect(await pageA.evaluate(() => (window as unknown as { sf: { commits: unknown[] } }).sf.commits)).toEqual([]);
    expect((await ok(pageB, "state")).revision).toBe(before); // B's view follows only when it reloads
    expect(await ok(pageB, "reload")).toBe(revision);
  }, 60_000);
  it(
    "a full quota (the origin's, set by the DevTools protocol): a commit and a compaction are StorageFullError naming what they wrote; the session reopens at its last commit",
    async () => {
      const { ctx, db } = await freshContext();
      // The quota is set before the page first uses IndexedDB: the browser reads it then, and keeps it for a while.
      const cdp = await ctx.newCDPSession(await ctx.newPage());
      await cdp.send("Storage.overrideQuotaForOrigin", { origin: baseUrl, quotaSize: 500_000 });
      const page = await openTab(ctx, db, "A");
      // Text that does not compress (the browser may compress what IndexedDB stores).
      const incompressible = (bytes: number) => randomBytes(bytes * 0.75).toString("base64");
      for (let i = 0; i < 6; i++) await ok(page, "append", incompressible(50_000));
      let committed: LooseJson = await ok(page, "state");
      const full = (path: RegExp) => ({ ok: false, error: { name: "StorageFullError", code: "storage-full", details: { path: expect.stringMatching(path) } } });
      // A compaction writes Active again, as a segment and a new Active: its lock's record fits, they do not. Which of
      // the two the quota refuses is the browser's accounting (Chromium 150 refuses Active, 156 the segment).
      const compaction = await sf(page, "compact");
      expect(compaction).toMatchObject(full(/\/messages\/(segments\/\d+-\d+\.jsonl|active\.jsonl)$/));
      const refusedAt = /^compact on a1\/w1\/s1 failed: IndexedDB \w+ of ".*\/messages\/(segments\/|active\.jsonl).* quota is exhausted; nothing was written/;
      expect(compaction.ok || compaction.error.message).toMatch(refusedAt);
      if (!compaction.ok && String(compaction.error.details.path).endsWith("/messages/active.jsonl")) {
        // meta.json and the segment were in place before Active's write (docs/FORMAT.md "Compaction", the order of its
        // writes): the compaction took effect (recovery rule 3 drops Active's copies of the segment's messages), and the
        // error says so.
        const after: LooseJson = await ok(page, "state");
        expect(after.revision).toBeGreaterThan(committed.revision);
        expect(compaction.error.message).toMatch(
          new RegExp(
            `; nothing was written; the writes before it took effect: the session is at revision ${after.revision} now \\(it was at ${committed.revision}\\)$`,
          ),
        );
        committed = after;
      } else {
        expect(compaction.ok || compaction.error.message).toMatch(/nothing was written$/);
        expect(await ok(page, "state")).toEqual(committed);
      }
      // Then messages until the quota refuses one (its line, or its lock's record once the quota is spent).
      let refused: Outcome | undefined;
      for (let i = 0; i < 20 && !refused; i++) {
        const outcome = await sf(page, "append", incompressible(50_000));
        if (outcome.ok) committed = await ok(page, "state");
        else refused = outcome;
      }
      expect(refused).toMatchObject(full(/\/(messages\/active\.jsonl|writer\.lock)$/));
      expect(refused!.ok || refused!.error.message).toMatch(/^append on a1\/w1\/s1 failed: IndexedDB .* quota is exhausted; nothing was written$/);
      // Nothing acknowledged is lost, and no lock is left behind.
      expect(await ok(page, "state")).toEqual(committed);
      expect(await ok(page, "lockFree")).toBe(true);

      await load(page); // a new document opens what the store holds
      expect(await ok(page, "state")).toEqual(committed);

      await cdp.send("Storage.overrideQuotaForOrigin", { origin: baseUrl });
      expect((await ok(page, "append", "after the quota grew")).revision).toBe(committed.revision + 1);
      expect(await ok(page, "compact")).toBeGreaterThan(committed.revision + 1);
    },
    120_000,
  );
});
