/**
 * The playground's sync, end to end, as a newcomer meets it after `npm start`: the built
 * app served by `vite preview` with its local sync server at `/sync` on the same port
 * (demo/sync-server.ts, over a folder store named by `SESSIONFOLD_DEMO_STORE`, here a temp
 * folder), driven in Debian's Chromium.
 *
 * Two devices side by side (devices.html: `?device=a` and `?device=b`, two IndexedDB
 * databases): both offline, each writes to the same session, A comes online, then B; the
 * server's session holds A's tail, a fork holds B's, B's indicator lists the fork with a link
 * to it, and A's list shows the fork once it pulls. And a message written while a device is
 * offline (across a reload) reaches the server when it comes back. Served with a token, a
 * page without it is refused until it is given; served beyond loopback without one, every
 * sync request is refused and the page says why. No page may log a console error other than
 * the refusals those two cases provoke. Screenshots go to test-results/screenshots/.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Browser, type BrowserContext, chromium, type Frame, type Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type MessageRecord, type SessionMeta, Sessions } from "../../core/mod.ts";
import { AGENT_ID, WORKSPACE_ID } from "../../demo/agent-settings.ts";
import { SYNC_PROTOCOL_VERSION } from "../../core/sync/mod.ts";
import { NodeFileStorage } from "../../runtime-node/mod.ts";
import { CHROMIUM_ARGS, CHROMIUM_PATH } from "../support/chromium.ts";
import { until } from "../support/until.ts";
import { type Playground, sendTurn, startPlayground } from "./playground.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const SHOTS = join(ROOT, "test-results/screenshots");

let playground: Playground | undefined;
let browser: Browser | undefined;
let baseUrl = "";
let store = "";
const contexts: BrowserContext[] = [];
const problems: string[] = [];

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  playground = await startPlayground();
  baseUrl = playground.url;
  store = playground.store;
  browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: [...CHROMIUM_ARGS], headless: true });
}, 90_000);

afterAll(async () => {
  await browser?.close();
  playground?.close();
});

afterEach(async () => {
  await closeContexts();
  expect(problems.splice(0), "console errors and uncaught page errors").toEqual([]);
});

// ————————————————————————————————————————— helpers

async function closeContexts(): Promise<void> {
  for (const ctx of contexts.splice(0)) await ctx.close();
}

async function openPage(path: string, label: string, url = baseUrl): Promise<Page> {
  const ctx = await browser!.newContext({ viewport: { width: 1600, height: 900 } });
  contexts.push(ctx);
  const page = await ctx.newPage();
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(`[${label}] console.error: ${message.text()}`);
  });
  page.on("pageerror", (error) => problems.push(`[${label}] uncaught: ${error.message}`));
  await page.goto(`${url}${path}`);
  return page;
}

type Surface = Page | Frame;

/** The playground in `surface` has started and its sync indicator says `state`. */
async function syncState(surface: Surface, state: string, timeout = 20_000): Promise<void> {
  await surface.locator("#app[aria-busy=false]").waitFor({ timeout });
  await surface.locator(`#sync-panel[data-sync-state=${state}]`).waitFor({ timeout });
}

async function pending(surface: Surface): Promise<number> {
  return Number(await surface.locator("#sync-panel").getAttribute("data-pending"));
}

async function setOffline(surface: Surface, offline: boolean): Promise<void> {
  const box = surface.locator("#sync-offline");
  if (offline) await box.check();
  else await box.uncheck();
}

function openSessionId(surface: Surface): Promise<string | undefined> {
  return surface.evaluate(() => (window as unknown as { playground: { session?: { ref: { sessionId: string } } } }).playground.session?.ref.sessionId);
}

/** The texts of the user messages the chat of `surface` shows. */
function userTexts(surface: Surface): Promise<string[]> {
  return surface.locator("#messages article.message-committed[data-role=user] .message-body").allTextContents();
}

/** What the sync server's store holds: every live session of the playground with its whole history. */
async function serverSessions(): Promise<{ meta: SessionMeta; messages: readonly MessageRecord[] }[]> {
  const sessions = new Sessions({ storage: new NodeFileStorage({ root: store }) });
  const metas = await sessions.list({ agentId: AGENT_ID, workspaceId: WORKSPACE_ID });
  return Promise.all(metas.map(async (meta) => {
    const session = await sessions.open({ agentId: AGENT_ID, workspaceId: WORKSPACE_ID, sessionId: meta.session_id });
    return { meta, messages: (await session.exportPortable()).messages };
  }));
}

function textsOf(messages: readonly MessageRecord[], role = "user"): string[] {
  return messages.filter((m) => m.role === role).map((m) => m.parts.map((p) => ("text" in p ? p.text : "")).join(""));
}

// ————————————————————————————————————————— tests

describe("npm start: the playground's local sync server", () => {
  it("serves the sync protocol at /sync on the playground's port, over the store it printed", async () => {
    expect(playground!.log()).toContain(`sessionfold sync server: /sync on this server, store ${store}`);
    const response = await fetch(`${baseUrl}/sync/pull`, {
      method: "POST",
      body: JSON.stringify({ v: SYNC_PROTOCOL_VERSION }),
      headers: { "content-type": "application/json" },
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ v: SYNC_PROTOCOL_VERSION, sessions: expect.any(Array) });
  });

  it("two devices write offline after the same message: the first back online continues the session, the other's tail becomes a fork both see", async () => {
    const page = await openPage("/devices.html?delay=0", "devices");
    const a = page.frame({ name: "device-a" })!;
    const b = page.frame({ name: "device-b" })!;
    await syncState(a, "synced");
    await syncState(b, "synced");
    // Two local stores, two sync clients.
    const dbs = await Promise.all(
      [a, b].map((f) => f.evaluate(() => (window as unknown as { playground: { browser: { dbName: string } } }).playground.browser.dbName)),
    );
    expect(dbs).toEqual(["sessionfold-playground-device-a", "sessionfold-playground-device-b"]);

    // A starts a session; B pulls it and opens it.
    await sendTurn(a, "Plan the release, shared by both devices");
    const id = (await openSessionId(a))!;
    // The indicator may still say "synced" from before the commit: wait on the server itself.
    const shared = await until("the server to hold A's session", async () => (await serverSessions()).find((s) => s.meta.session_id === id));
    await syncState(a, "synced");
    expect(textsOf(shared.messages)).toEqual(["Plan the release, shared by both devices"]);
    const base = shared.messages.at(-1)!.sequence;
    await b.getByRole("button", { name: "Sync now" }).click();
    await b.locator("#session-list .session-item").first().waitFor();
    await b.evaluate((sessionId) => (location.hash = `#/${sessionId}`), id);
    await until("B to show the shared session", async () => (await userTexts(b)).includes("Plan the release, shared by both devices"));

    // Both offline; each writes after the same sequence.
    await setOffline(a, true);
    await setOffline(b, true);
    await syncState(a, "offline");
    await syncState(b, "offline");
    await sendTurn(a, "A: ship on Tuesday");
    await sendTurn(b, "B: ship on Friday");
    // The count follows each commit (read from the store after it).
    await until("A's pending count", async () => (await pending(a)) > 0);
    await until("B's pending count", async () => (await pending(b)) > 0);
    expect(await b.locator("#sync-state").textContent()).toMatch(/^Offline · \d+ pending$/);
    expect(textsOf((await serverSessions()).find((s) => s.meta.session_id === id)!.messages)).toEqual(["Plan the release, shared by both devices"]);
    await page.screenshot({ path: join(SHOTS, "sync-devices-offline.png") });

    // A first: its tail continues the session.
    await setOffline(a, false);
    await syncState(a, "synced");
    expect(await pending(a)).toBe(0);
    expect(textsOf((await serverSessions()).find((s) => s.meta.session_id === id)!.messages)).toEqual([
      "Plan the release, shared by both devices",
      "A: ship on Tuesday",
    ]);

    // Then B: its tail becomes a fork, and B says so.
    await setOffline(b, false);
    const forkItem = b.locator("#sync-forks .sync-fork");
    await forkItem.waitFor({ timeout: 20_000 });
    await syncState(b, "synced");
    const server = await serverSessions();
    const session = server.find((s) => s.meta.session_id === id)!;
    const fork = server.find((s) => s.meta.forked_from?.session_id === id)!;
    expect(fork, "a fork of the session on the server").toBeDefined();
    expect(textsOf(session.messages)).toEqual(["Plan the release, shared by both devices", "A: ship on Tuesday"]);
    expect(textsOf(fork.messages)).toEqual(["Plan the release, shared by both devices", "B: ship on Friday"]);
    expect(fork.meta.forked_from!.through_sequence).toBe(base);
    // Every message once: the fork shares the history through the base, then B's tail.
    expect(fork.messages.slice(0, base).map((m) => m.message_id)).toEqual(session.messages.slice(0, base).map((m) => m.message_id));
    const onSession = new Set(session.messages.map((m) => m.message_id));
    expect(fork.messages.slice(base).filter((m) => onSession.has(m.message_id))).toEqual([]);

    // B's UI: which session, after which message, and a link to the fork.
    expect(await forkItem.getAttribute("data-fork")).toBe(`${AGENT_ID}/${WORKSPACE_ID}/${fork.meta.session_id}`);
    expect(await forkItem.textContent()).toContain(`after message #${base}.`);
    expect(await forkItem.getByRole("link", { name: "open the fork" }).getAttribute("href")).toBe(`#/${fork.meta.session_id}`);
    // The session B shows now is the server's: A's tail.
    await until("B's session to show A's tail", async () => (await userTexts(b)).includes("A: ship on Tuesday"));
    expect(await userTexts(b)).not.toContain("B: ship on Friday");
    await page.screenshot({ path: join(SHOTS, "sync-devices-fork.png") });
    await forkItem.getByRole("link", { name: "open the fork" }).click();
    await until("B to open the fork", async () => (await openSessionId(b)) === fork.meta.session_id);
    await until("the fork to show B's tail", async () => (await userTexts(b)).includes("B: ship on Friday"));
    expect(await userTexts(b)).toEqual(["Plan the release, shared by both devices", "B: ship on Friday"]);

    // A sees the fork in its list once it pulls.
    await a.getByRole("button", { name: "Sync now" }).click();
    const forkOnA = a.locator("#session-list .session-item", { has: a.locator(".tag", { hasText: "fork" }) });
    await forkOnA.first().waitFor({ timeout: 20_000 });
    await forkOnA.first().click();
    await until("A to open the fork", async () => (await openSessionId(a)) === fork.meta.session_id);
    await until("A to show B's tail in the fork", async () => (await userTexts(a)).includes("B: ship on Friday"));
    await page.screenshot({ path: join(SHOTS, "sync-devices-fork-on-both.png") });
  }, 120_000);

  it("a message written offline stays pending across a reload and reaches the server once the device is back online", async () => {
    const page = await openPage("/?device=solo&delay=0", "solo");
    await syncState(page, "synced");
    await setOffline(page, true);
    await syncState(page, "offline");
    await sendTurn(page, "Written with the switch off");
    const id = (await openSessionId(page))!;
    const local = await page.evaluate(async (sessionId) => {
      const { browser } = (window as unknown as {
        playground: { browser: { sessions: { open(ref: string): Promise<{ exportPortable(): Promise<{ messages: MessageRecord[] }> }> } } };
      })
        .playground;
      const session = await browser.sessions.open(`demo/playground/${sessionId}`);
      return (await session.exportPortable()).messages.map((m) => m.message_id);
    }, id);
    await until("the pending count to cover the new session", async () => (await pending(page)) === local.length);
    expect((await serverSessions()).some((s) => s.meta.session_id === id)).toBe(false);

    // The switch outlives a reload: still offline, still pending, still nothing on the server.
    await page.reload();
    await syncState(page, "offline");
    expect(await page.locator("#sync-offline").isChecked()).toBe(true);
    await until("the pending count after the reload", async () => (await pending(page)) === local.length);
    expect((await serverSessions()).some((s) => s.meta.session_id === id)).toBe(false);

    await setOffline(page, false);
    await syncState(page, "synced");
    expect(await pending(page)).toBe(0);
    const onServer = (await serverSessions()).find((s) => s.meta.session_id === id)!;
    expect(textsOf(onServer.messages)).toEqual(["Written with the switch off"]);
    expect(onServer.messages.map((m) => m.message_id)).toEqual(local);
    expect(await page.locator("#sync-detail").textContent()).toContain("last synced");
  }, 60_000);
});

describe("what the playground's sync server refuses, and what the page shows", () => {
  /** Chromium logs every refused request as a console error: those, and only those, are expected here. */
  const refusals = (status: number) => (problem: string) => !problem.includes(`the server responded with a status of ${status}`);

  it("with SESSIONFOLD_DEMO_SYNC_TOKEN, refuses a page without the token until it is given", async () => {
    const guarded = await startPlayground({ build: false, env: { SESSIONFOLD_DEMO_SYNC_TOKEN: "t0ken-for-the-demo" } });
    try {
      expect(guarded.log()).toContain("(bearer token required)");
      const bare = await fetch(`${guarded.url}/sync/pull`, { method: "POST", body: JSON.stringify({ v: SYNC_PROTOCOL_VERSION }) });
      expect(bare.status).toBe(401);
      const page = await openPage("/?device=t", "token", guarded.url);
      await syncState(page, "refused");
      expect(await page.locator("#sync-problem").textContent()).toContain("no credentials the server accepts");
      await page.getByRole("textbox", { name: "Sync server token" }).fill("t0ken-for-the-demo");
      await page.getByRole("button", { name: "Use token" }).click();
      await syncState(page, "synced");
      await sendTurn(page, "Sent with the token");
      const server = new Sessions({ storage: new NodeFileStorage({ root: guarded.store }) });
      const onServer = await until("the server to hold the session", async () => {
        const metas = await server.list({ agentId: AGENT_ID, workspaceId: WORKSPACE_ID });
        return metas.length > 0 ? metas : undefined;
      });
      expect(onServer.map((m) => m.session_id)).toEqual([await openSessionId(page)]);
    } finally {
      // The pages first: a page left polling a stopped server logs a refused connection.
      await closeContexts();
      guarded.close();
      problems.splice(0, problems.length, ...problems.filter(refusals(401)));
    }
  }, 60_000);

  it("a server whose store fails shows as an error with its message and the next try, and the device keeps its messages", async () => {
    // The store's folder cannot be made (its parent is a file), so every sync request fails inside the server.
    const parent = mkdtempSync(join(tmpdir(), "sessionfold-demo-broken-"));
    writeFileSync(join(parent, "a-file"), "");
    const broken = await startPlayground({ build: false, store: join(parent, "a-file", "store") });
    try {
      const page = await openPage("/?device=broken&delay=0", "broken store", broken.url);
      // Every request fails inside the server, a pull too (it keeps the change log's sweep time in the store).
      await page.locator("#app[aria-busy=false]").waitFor();
      await sendTurn(page, "Kept while the server fails");
      await syncState(page, "error");
      // The text of a render that shows the error: read apart from the state, it may be the next
      // retry's (a second or so later), which shows the panel syncing and names no next try.
      const problem = (await page.locator("#sync-panel[data-sync-state=error] > #sync-problem").textContent())!;
      expect(problem).toMatch(/^The last sync failed: .*answered HTTP 500.*\(next try .+\)$/);
      await until("the message to count as pending", async () => (await pending(page)) > 0);
      expect(await userTexts(page)).toEqual(["Kept while the server fails"]);
    } finally {
      // The pages first: a page left polling a stopped server logs a refused connection.
      await closeContexts();
      broken.close();
      rmSync(parent, { recursive: true, force: true });
      problems.splice(0, problems.length, ...problems.filter(refusals(500)));
    }
  }, 60_000);

  it("beyond loopback without a token, refuses every sync request and the page says why", async () => {
    const open = await startPlayground({ build: false, host: "0.0.0.0" });
    try {
      expect(open.log()).toContain("sessionfold sync server: refused — listening on 0.0.0.0 needs SESSIONFOLD_DEMO_SYNC_TOKEN");
      const response = await fetch(`${open.url}/sync/pull`, { method: "POST", body: JSON.stringify({ v: SYNC_PROTOCOL_VERSION }) });
      expect(response.status).toBe(403);
      expect(await response.json()).toMatchObject({ v: SYNC_PROTOCOL_VERSION, error: { reason: "forbidden" } });
      const page = await openPage("/?device=lan", "beyond loopback", open.url);
      await syncState(page, "refused");
      expect(await page.locator("#sync-problem").textContent()).toContain("start it with SESSIONFOLD_DEMO_SYNC_TOKEN set, or on a loopback address");
      await sendTurn(page, "Kept on this device");
      expect(await new Sessions({ storage: new NodeFileStorage({ root: open.store }) }).list({ agentId: AGENT_ID, workspaceId: WORKSPACE_ID })).toEqual([]);
    } finally {
      // The pages first: a page left polling a stopped server logs a refused connection.
      await closeContexts();
      open.close();
      problems.splice(0, problems.length, ...problems.filter(refusals(403)));
    }
  }, 60_000);
});
