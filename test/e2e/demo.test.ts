/**
 * The playground (demo/) end to end, as a newcomer meets it after `npm start`: the built
 * app served by `vite preview`, driven in Debian's Chromium with playwright-core.
 *
 * A session compacts within a few turns and the history view shows the new segment;
 * everything survives a reload; a reload in the middle of a stream leaves a draft that is
 * recovered and finished as stopped; the chat renders the AI SDK UI messages the bridge
 * streams (a tool turn is one message with its reasoning, tool result and step boundary,
 * under the id it keeps across reloads); a second tab sees who owns the session and follows
 * its commits; hostile markup in imported DeepCode v1 and Rho snapshot files runs nothing;
 * exports are redacted on request, a session made here exports by default (a Rho snapshot) and
 * to DeepCode v1 and pi once a working folder is given; a refused import names its error class
 * as the minified build keeps it; an OpenAI-compatible key typed into the page reaches
 * the endpoint and nothing else (IndexedDB, localStorage, exports, logs). An encrypted store
 * (the lock button) keeps no message text in any IndexedDB value, asks for its passphrase at
 * start (a wrong one refused, nothing changed), changes it, gets one by a key rotation that
 * leaves no unsealed key, and exports a sealed file that holds no text and imports back with
 * its export passphrase. No page may log
 * a console error. Screenshots go to test-results/screenshots/.
 */
import { copyFileSync, mkdirSync, readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Browser, type BrowserContext, chromium, type Locator, type Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM_ARGS, CHROMIUM_PATH } from "../support/chromium.ts";
import { until } from "../support/until.ts";
import { type Playground, sendTurn, startPlayground } from "./playground.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const FIXTURES = join(ROOT, "test/e2e/fixtures");
const SHOTS = join(ROOT, "test-results/screenshots");
/** A key planted in a message: redacted exports must not contain it. */
const PLANTED_KEY = "sk-proj-PLANTEDsecret7Qx9Vb2Lm4Np8Rt6Wy3Kd5Hf";
/** The key typed into the endpoint form: it may reach the endpoint and nothing else. */
const TYPED_KEY = "sk-test-TYPEDintoPAGE9f8e7d6c5b4a3Z2Y1X0W";

let playground: Playground | undefined;
let browser: Browser | undefined;
let baseUrl = "";
const contexts: BrowserContext[] = [];
const problems: string[] = [];
const dialogs: string[] = [];
const consoleText: string[] = [];
let nextDb = 0;

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  // Built and served once, exactly as `npm start` does (test/e2e/playground.ts).
  playground = await startPlayground();
  baseUrl = playground.url;
  browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: [...CHROMIUM_ARGS], headless: true });
}, 90_000);

afterAll(async () => {
  await browser?.close();
  playground?.close();
});

afterEach(async () => {
  for (const ctx of contexts.splice(0)) await ctx.close();
  const seen = problems.splice(0);
  const opened = dialogs.splice(0);
  expect(seen, "console errors and uncaught page errors").toEqual([]);
  expect(opened, "dialogs opened by page content").toEqual([]);
});

// ————————————————————————————————————————— helpers

async function newContext(options: { colorScheme?: "light" | "dark" } = {}): Promise<BrowserContext> {
  const ctx = await browser!.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: options.colorScheme ?? "light", acceptDownloads: true });
  contexts.push(ctx);
  return ctx;
}

function dbName(): string {
  return `e2e-${Date.now()}-${nextDb++}`;
}

/** Opens the playground, watching for console errors, page errors and dialogs. */
async function openPage(ctx: BrowserContext, query: string, label: string, hash = ""): Promise<Page> {
  const page = await ctx.newPage();
  page.on("console", (message) => {
    consoleText.push(message.text());
    if (message.type() === "error") problems.push(`[${label}] console.error: ${message.text()}`);
  });
  page.on("pageerror", (error) => problems.push(`[${label}] uncaught: ${error.message}`));
  page.on("dialog", (dialog) => {
    dialogs.push(`[${label}] ${dialog.type()}: ${dialog.message()}`);
    void dialog.dismiss().catch(() => undefined);
  });
  await page.goto(`${baseUrl}/?${query}${hash}`);
  await ready(page);
  return page;
}

async function ready(page: Page): Promise<void> {
  await page.locator("#app[aria-busy=false]").waitFor({ timeout: 20_000 });
}

/** Every byte this origin keeps in IndexedDB (chunks joined in key order) and localStorage, as text. */
function storedText(page: Page): Promise<string> {
  return page.evaluate(async () => {
    const request = <T>(r: IDBRequest<T>) =>
      new Promise<T>((resolve, reject) => ((r.onsuccess = () => resolve(r.result)), (r.onerror = () => reject(r.error))));
    const decoder = new TextDecoder();
    const out: string[] = [];
    for (const info of await indexedDB.databases()) {
      const db = await new Promise<IDBDatabase>((resolve, reject) => {
        const r = indexedDB.open(info.name!);
        r.onsuccess = () => resolve(r.result);
        r.onerror = () => reject(r.error);
      });
      for (const name of Array.from(db.objectStoreNames)) {
        const store = db.transaction(name, "readonly").objectStore(name);
        const [keys, values] = await Promise.all([request(store.getAllKeys()), request(store.getAll())]);
        out.push(keys.map(String).join("\n"));
        const bytes: Uint8Array[] = [];
        for (const value of values) {
          if (value instanceof Uint8Array) bytes.push(value);
          else if (value instanceof ArrayBuffer) bytes.push(new Uint8Array(value));
          else out.push(JSON.stringify(value));
        }
        const total = new Uint8Array(bytes.reduce((n, b) => n + b.length, 0));
        let offset = 0;
        for (const b of bytes) total.set(b, (offset += b.length) - b.length);
        out.push(decoder.decode(total));
      }
      db.close();
    }
    for (let i = 0; i < localStorage.length; i++) out.push(`${localStorage.key(i)}=${localStorage.getItem(localStorage.key(i)!)}`);
    return out.join("\n");
  });
}

const FORMAT_LABELS = { rho: /Rho snapshot/, deepcode: /DeepCode v1/, pi: /session version 3/ } as const;

/** Downloads the open session through the Export dialog (a format left out: the dialog's default); the file's text. */
async function exportSession(
  page: Page,
  format: keyof typeof FORMAT_LABELS | undefined,
  redact: boolean,
  cwd?: string,
): Promise<{ name: string; text: string }> {
  await page.getByRole("button", { name: "Export", exact: true }).click();
  const dialog = page.getByRole("dialog", { name: "Export session" });
  if (format) await dialog.getByLabel(FORMAT_LABELS[format]).check();
  if (cwd !== undefined) await dialog.getByRole("textbox", { name: "Working folder" }).fill(cwd);
  const box = dialog.getByLabel(/Redact secrets/);
  if (redact) await box.check();
  else await box.uncheck();
  const [download] = await Promise.all([page.waitForEvent("download"), dialog.getByRole("button", { name: "Download", exact: true }).click()]);
  const path = await download.path();
  await dialog.waitFor({ state: "hidden" });
  return { name: download.suggestedFilename(), text: readFileSync(path!, "utf8") };
}

async function importFixture(page: Page, file: string): Promise<void> {
  const chooser = page.waitForEvent("filechooser");
  await page.getByRole("button", { name: "Import", exact: true }).click();
  await (await chooser).setFiles(join(FIXTURES, file));
}

/** Asserts that hostile markup from imported text stayed text: nothing injected, nothing ran. */
async function expectInert(page: Page): Promise<void> {
  const report = await page.evaluate(() => ({
    pwned: (window as unknown as { __pwned?: unknown }).__pwned ?? null,
    injected: document.querySelectorAll(
      "#messages script, #messages img, #messages iframe, #messages svg, #messages marquee, #messages b, #app [onerror], #app [onload], #app [onmouseover]",
    ).length,
    jsLinks: Array.from(document.querySelectorAll("a[href]")).filter((a) => !/^https?:/i.test(a.getAttribute("href")!)).length,
    links: Array.from(document.querySelectorAll("#messages a[href]")).map((a) => ({ href: a.getAttribute("href"), rel: a.getAttribute("rel") })),
  }));
  expect(report.pwned).toBeNull();
  expect(report.injected).toBe(0);
  expect(report.jsLinks).toBe(0);
  for (const link of report.links) expect(link.rel).toContain("noopener");
}

async function shot(page: Page, name: string): Promise<string> {
  const path = join(SHOTS, `${name}.png`);
  await page.screenshot({ path });
  return path;
}

// ————————————————————————————————————————— tests

/** Sends messages until the first compaction shows a segment in the history view; returns the turns it took. */
async function compactInTurns(page: Page): Promise<number> {
  await page.getByRole("heading", { name: "Sessions that never lose a message" }).waitFor();
  const topics = [
    "What is this playground?",
    "How are messages stored?",
    "What happens on a crash?",
    "Tell me about drafts.",
    "And about forks?",
    "How do tabs share a session?",
    "What is a segment?",
    "Explain revisions.",
    "One more question.",
    "And another one.",
  ];
  let turns = 0;
  for (const topic of topics) {
    await sendTurn(page, topic);
    turns += 1;
    if ((await page.locator("[data-testid=segment]").count()) > 0) break;
  }
  return turns;
}

/**
 * Sends `text` with the local model set to hold the reply once more than `chars` characters
 * of its text have streamed (the model itself stops: no race with the page's rendering),
 * then waits until the chat shows that much of it (within `within`, a part's class).
 */
async function sendAndHoldAfter(page: Page, text: string, chars: number, within = ""): Promise<void> {
  await page.evaluate((mark) => {
    (window as unknown as { playground: { holdAfterTextChars: number } }).playground.holdAfterTextChars = mark;
  }, chars);
  await page.getByRole("textbox", { name: "Message" }).fill(text);
  await page.getByRole("button", { name: "Send", exact: true }).click();
  await page.waitForFunction(
    ([mark, css]: [number, string]) => (document.querySelector(`#live article[data-role=assistant] ${css}`)?.textContent?.length ?? 0) > mark,
    [chars, within] as [number, string],
    { timeout: 30_000 },
  );
}

describe("playground", () => {
  it("compacts within a few turns and shows the new segment in the history view", async () => {
    const main = await openPage(await newContext(), `db=${dbName()}&delay=1`, "main");
    const turns = await compactInTurns(main);
    expect(turns, "turns until the first compaction").toBeLessThanOrEqual(7);
    const segment = main.locator("[data-testid=segment]").last();
    expect(await segment.getAttribute("data-start")).toBe("1");
    // The segment's summary is read when its disclosure opens: one segment, one read.
    await segment.locator("summary").click();
    const summary = segment.locator("[data-testid=segment-summary]");
    await summary.waitFor();
    expect(await summary.textContent()).toContain("#1 user: What is this playground?");
    // The cumulative summary is part of the model context now.
    expect(await main.locator("[data-testid=current-summary]").textContent()).toContain("#1 user");
    // Older history pages in one segment at a time.
    const loadEarlier = main.getByRole("button", { name: "Load earlier messages", exact: true });
    await loadEarlier.click();
    await main.locator("#messages article[data-sequence='1']").waitFor();
    expect(await main.locator("#messages article[data-sequence='1']").textContent()).toContain("What is this playground?");
    await main.getByRole("meter").waitFor();
    expect(main.url()).toMatch(/#\/s_/);

    // The picture for the README: the boundary between the compacted segment and the Active window.
    await main.evaluate(() => {
      document.getElementById("toasts")!.replaceChildren();
      document.querySelector(".history-active-divider")!.scrollIntoView({ block: "center" });
    });
    const light = await shot(main, "playground-light");
    // The README's picture is refreshed on request only: a test run leaves tracked files alone.
    if (process.env["UPDATE_README_SCREENSHOT"] === "1") copyFileSync(light, join(ROOT, "docs/screenshot.png"));
    await main.getByRole("button", { name: "Dark theme", exact: true }).click();
    expect(await main.evaluate(() => document.documentElement.dataset["theme"])).toBe("dark");
    await main.waitForTimeout(300); // colour transitions
    await shot(main, "playground-dark");
    await main.getByRole("button", { name: "Dark theme", exact: true }).click();
  }, 90_000);

  it("keeps everything across a reload", async () => {
    // Its own session, compacted like the one above: no test depends on another's page.
    const page = await openPage(await newContext(), `db=${dbName()}&delay=1`, "reload");
    await compactInTurns(page);
    await page.getByRole("button", { name: "Load earlier messages", exact: true }).click();
    await page.locator("#messages article[data-sequence='1']").waitFor();
    const before = await page.evaluate(() => ({
      title: document.getElementById("session-title")!.textContent,
      meta: document.getElementById("session-meta")!.textContent,
      segments: document.querySelectorAll("[data-testid=segment]").length,
      active: document.querySelectorAll("#messages article.message-committed").length,
    }));
    await page.reload();
    await ready(page);
    const after = await page.evaluate(() => ({
      title: document.getElementById("session-title")!.textContent,
      meta: document.getElementById("session-meta")!.textContent,
      segments: document.querySelectorAll("[data-testid=segment]").length,
      active: document.querySelectorAll("#messages article.message-committed").length,
    }));
    expect(after.title).toBe(before.title);
    expect(after.meta).toBe(before.meta);
    expect(after.segments).toBe(before.segments);
    // Before the reload the first segment was paged in too; after it only Active is shown.
    expect(after.active).toBeGreaterThan(0);
    expect(await page.getByRole("button", { name: "Load earlier messages", exact: true }).count()).toBe(1);
    expect(await page.getByRole("button", { name: /What is this playground\?/ }).count()).toBe(1);

    // A crash in the middle of an append leaves a torn final line: recovery reports it on open.
    await page.evaluate(async () => {
      const app = (window as unknown as {
        playground: { session: { paths: { active: string } }; browser: { storage: { append(p: string, b: Uint8Array): Promise<void> } } };
      }).playground;
      await app.browser.storage.append(app.session.paths.active, new TextEncoder().encode('{"record_type":"message","sequ'));
    });
    await page.reload();
    await ready(page);
    const diagnostics = page.locator("[data-testid=diagnostics-banner]");
    await diagnostics.waitFor();
    expect(await diagnostics.textContent()).toMatch(/truncated_tail — messages\/active\.jsonl:\d+/);
    await shot(page, "recovery-diagnostics");
    // The next write cuts the torn tail; the session goes on.
    await sendTurn(page, "Still here after the torn append?");
    await page.reload();
    await ready(page);
    expect(await page.locator("[data-testid=diagnostics-banner]").count()).toBe(0);
  }, 90_000);

  it("recovers the draft after a reload in the middle of a stream", async () => {
    const ctx = await newContext();
    const db = dbName();
    const page = await openPage(ctx, `db=${db}&delay=1`, "draft");
    await sendTurn(page, "First, a short warm-up.");
    // Start a long turn, stop its stream in the middle, and reload once the draft is stored.
    await sendAndHoldAfter(page, "Tell me a long story about drafts.", 60);
    // The coalesced draft writer stores a snapshot: wait for it in IndexedDB, not for a time.
    await until("the draft to be stored with its text", () =>
      page.evaluate(async () => {
        const app = (window as unknown as {
          playground: { session: { paths: { draft: string } }; browser: { storage: { read(p: string): Promise<Uint8Array | undefined> } } };
        }).playground;
        const bytes = await app.browser.storage.read(app.session.paths.draft);
        if (!bytes) return false;
        const draft = JSON.parse(new TextDecoder().decode(bytes)) as { parts: { type: string; text?: string }[] };
        return draft.parts.filter((p) => p.type === "text").reduce((n, p) => n + (p.text?.length ?? 0), 0) > 40;
      }));
    await page.reload();
    await ready(page);
    const banner = page.locator("[data-testid=draft-banner]");
    await banner.waitFor();
    expect(await banner.textContent()).toContain("An interrupted reply was recovered");
    const draft = page.locator("#messages article.message-draft");
    expect((await draft.textContent())!.length).toBeGreaterThan(40);
    expect(await page.locator("#messages article.message-pending").textContent()).toContain("Tell me a long story about drafts.");
    await shot(page, "recovered-draft");
    await page.getByRole("button", { name: "Finish as stopped", exact: true }).click();
    await banner.waitFor({ state: "detached" });
    const stopped = page.locator("#messages article.message-committed.message-stopped");
    await stopped.waitFor();
    expect(await stopped.textContent()).toContain("stopped");
    expect(await page.locator("#messages article.message-committed[data-role=user]").last().textContent()).toContain("Tell me a long story about drafts.");

    // Stop: cooperative cancellation commits the partial reply as stopped (the stream is held so it cannot end first).
    await sendAndHoldAfter(page, "Another long one, which I will stop.", 40);
    await page.getByRole("button", { name: "Stop", exact: true }).click();
    await page.waitForFunction(() => document.querySelectorAll("#messages article.message-committed.message-stopped").length === 2, null, { timeout: 10_000 });
    expect(await page.locator("#messages article.message-committed[data-role=user]").last().textContent()).toContain("which I will stop");
  }, 60_000);

  it("renders the chat from the AI SDK UI message stream: one message per turn, tool result and step boundary inside, ids kept across reloads", async () => {
    const page = await openPage(await newContext(), `db=${dbName()}&delay=1`, "ui-stream");
    /**
     * Every id the streaming reply's UI message had: the live end (`#live`, itself made anew
     * when the conversation renders) is rendered anew at each chunk, so each of its assistant
     * articles is among a mutation record's added nodes, even one already replaced or removed
     * when the observer is called (none can be missed).
     */
    const watchLiveIds = () =>
      page.evaluate(() => {
        const seen = new Set<string>();
        (window as unknown as { liveIds: Set<string> }).liveIds = seen;
        const observer = new MutationObserver((records) => {
          for (const record of records) {
            const intoLive = record.target instanceof Element && record.target.id === "live";
            for (const node of record.addedNodes) {
              if (!(node instanceof Element)) continue;
              const articles = node.matches("article[data-role=assistant]") ? [node] : [...node.querySelectorAll("article[data-role=assistant]")];
              for (const article of articles) {
                const id = article.getAttribute("data-message-id");
                if ((intoLive || article.closest("#live")) && id && id !== "pending-reply") seen.add(id);
              }
            }
          }
        });
        observer.observe(document.getElementById("messages")!, { subtree: true, childList: true });
      });
    const liveIds = () => page.evaluate(() => [...(window as unknown as { liveIds: Set<string> }).liveIds]);
    /** The last assistant turn as the chat shows it: its id, the kinds of its parts in order, and its text. */
    const lastTurn = (selector: string) =>
      page.evaluate((css) => {
        const article = [...document.querySelectorAll(css)].at(-1)!;
        const kinds = [...article.querySelector(".message-body")!.children].map((part) =>
          [...part.classList].find((c) => c.startsWith("part-") && c !== "part")!
        );
        return { id: article.getAttribute("data-message-id"), kinds, text: article.textContent!, tools: article.querySelectorAll(".part-tool").length };
      }, selector);
    /** The ids `toUIMessages(session)` gives (all of history and the draft), and the ids the chat shows. */
    const ids = () =>
      page.evaluate(async () => ({
        loaded: (await (window as unknown as { playground: { uiMessages(): Promise<{ id: string }[]> } }).playground.uiMessages()).map((m) => m.id),
        shown: [...document.querySelectorAll("#messages article[data-message-id]")].map((a) => a.getAttribute("data-message-id")),
      }));

    // A tool turn: the model thinks (reasoning), says it will calculate, calls the calculator (step 1), then answers (step 2).
    await watchLiveIds();
    await sendTurn(page, "What is 17 * 23?");
    const committed = "#messages article.message-committed[data-role=assistant]";
    const turn = await lastTurn(committed);
    expect(turn.kinds).toEqual(["part-reasoning", "part-text", "part-tool", "part-step", "part-text"]);
    expect(turn.tools).toBe(1);
    expect(turn.text).toContain("the calculator tool computes it exactly");
    expect(turn.text).toContain("calculator");
    expect(turn.text).toContain("391");
    expect(turn.text).toContain("17 * 23 = 391");
    expect(await page.locator(`${committed} [data-testid=step-boundary]`).textContent()).toBe("step 2");
    expect(await page.locator(`${committed} .part-tool`).getAttribute("data-tool-state")).toBe("output-available");
    // The reply streamed as one UI message whose id is the committed turn's.
    expect(await liveIds()).toEqual([turn.id]);
    expect(turn.id).toMatch(/\S/);
    const loaded = await ids();
    expect(loaded.shown).toEqual(loaded.loaded);
    expect(loaded.shown).toHaveLength(2);
    await shot(page, "ui-message-tool-turn");

    // After a reload the same UI messages come back: same ids, same parts in the same order.
    await page.reload();
    await ready(page);
    expect(await lastTurn(committed)).toEqual(turn);
    expect((await ids()).shown).toEqual(loaded.shown);

    // A reply interrupted by a reload: the recovered draft is the streamed message, under the same id.
    await watchLiveIds();
    // Held once text follows the reasoning, in the first step (before the dice are rolled).
    await sendAndHoldAfter(page, "Roll 3d20 for me.", 5, ".part-text");
    const [streamingId] = await liveIds();
    expect(streamingId).toBeDefined();
    // The draft's steps (the pending ones and the one streaming) hold at least what the chat showed.
    await until("the draft to be stored with the streamed text", () =>
      page.evaluate(async () => {
        const app = (window as unknown as {
          playground: { session: { paths: { draft: string } }; browser: { storage: { read(p: string): Promise<Uint8Array | undefined> } } };
        }).playground;
        const bytes = await app.browser.storage.read(app.session.paths.draft);
        if (!bytes) return false;
        type Message = { role: string; parts: { type: string; text?: string }[] };
        const draft = JSON.parse(new TextDecoder().decode(bytes)) as Message & { pending_messages?: Message[] };
        const parts = [...(draft.pending_messages ?? []), draft].filter((m) => m.role === "assistant").flatMap((m) => m.parts);
        return parts.filter((p) => p.type === "text").reduce((n, p) => n + (p.text?.length ?? 0), 0) > 5;
      }));
    await page.reload();
    await ready(page);
    const draft = await lastTurn("#messages article.message-draft");
    expect(draft.id).toBe(streamingId);
    expect(draft.kinds[0]).toBe("part-reasoning");
    const withDraft = await ids();
    expect(withDraft.shown).toEqual(withDraft.loaded);
    expect(withDraft.shown).toEqual([...loaded.shown, withDraft.shown[2], streamingId]);
    // Finished as stopped, it is committed under that id too (wherever the stream was held:
    // in the first step, or in the second, with or without its text yet).
    await page.getByRole("button", { name: "Finish as stopped", exact: true }).click();
    await page.locator("[data-testid=draft-banner]").waitFor({ state: "detached" });
    await page.locator("#messages article.message-draft").waitFor({ state: "detached" });
    expect((await lastTurn(committed)).id).toBe(streamingId);
    expect((await ids()).shown).toEqual(withDraft.shown);
  }, 60_000);

  it("shows a second tab who owns the session and follows its commits", async () => {
    const ctx = await newContext();
    const db = dbName();
    const a = await openPage(ctx, `db=${db}&delay=1`, "tab A");
    await sendTurn(a, "Hello from tab A.");
    const hash = new URL(a.url()).hash;
    const b = await openPage(ctx, `db=${db}&delay=1`, "tab B", hash);
    expect(await b.locator("#session-title").textContent()).toBe("Hello from tab A.");
    // Tab A streams slowly; tab B sees the owner and the live draft.
    await a.getByRole("tab", { name: "Model" }).click();
    await a.locator("#model-speed").selectOption("60");
    await a.getByRole("textbox", { name: "Message" }).fill("A slow reply, please.");
    await a.getByRole("button", { name: "Send", exact: true }).click();
    const owner = b.locator("[data-testid=owner-banner]");
    await owner.waitFor({ timeout: 10_000 });
    await b.waitForFunction(() => /Tab tab-[0-9a-f]{4} owns this session/.test(document.querySelector("[data-testid=owner-banner]")?.textContent ?? ""), null, {
      timeout: 5_000,
    });
    await b.locator("#messages article.message-draft").waitFor();
    // A write from tab B fails at once with WriterLockedError and keeps the typed text.
    await b.getByRole("textbox", { name: "Message" }).fill("Can I write too?");
    await b.getByRole("button", { name: "Send", exact: true }).click();
    const locked = b.locator("[data-testid=notice-locked]");
    await locked.waitFor();
    expect(await locked.textContent()).toContain("WriterLockedError");
    expect(await b.getByRole("textbox", { name: "Message" }).inputValue()).toBe("Can I write too?");
    await shot(b, "second-tab");
    // When tab A commits, tab B follows: same messages, ownership released.
    await a.waitForFunction(() => (document.getElementById("stop") as HTMLElement).hidden, null, { timeout: 30_000 });
    const aCount = await a.locator("#messages article.message-committed").count();
    await b.waitForFunction((n) => document.querySelectorAll("#messages article.message-committed").length === n, aCount, { timeout: 10_000 });
    await owner.waitFor({ state: "detached", timeout: 10_000 });
    // The refusal notice goes with the ownership, and tab B can write now.
    expect(await locked.count()).toBe(0);
    await sendTurn(b, "My turn now.");
    await a.waitForFunction(() => document.body.textContent!.includes("My turn now."), null, { timeout: 10_000 });
  }, 90_000);

  it("imports DeepCode v1 and Rho snapshot files full of hostile markup without running any of it", async () => {
    const ctx = await newContext();
    const page = await openPage(ctx, `db=${dbName()}&delay=1`, "import");
    await importFixture(page, "hostile.v1.jsonl");
    await page.waitForFunction(() => document.getElementById("session-title")!.textContent!.startsWith("DeepCode import"));
    expect(await page.locator("#session-title").textContent()).toBe(`DeepCode import <img src=x onerror="window.__pwned='title'">`);
    const text = (await page.locator("#messages").textContent())!;
    expect(text).toContain("<script>window.__pwned='script';alert('script')</script>");
    expect(text).toContain(`<img src=x onerror="window.__pwned='img';alert('img')">`);
    expect(text).toContain("a link that must not run");
    expect(await page.locator("#messages a[href='https://example.com/docs']").count()).toBe(1);
    expect(await page.locator("#messages strong", { hasText: "still bold" }).count()).toBe(1);
    expect(await page.locator("#messages .part-tool").textContent()).toContain("calculator");
    await expectInert(page);
    await shot(page, "import-deepcode");

    await importFixture(page, "hostile.snapshot.json");
    await page.waitForFunction(() => document.getElementById("session-meta")!.textContent!.includes("revision 7"));
    const rho = (await page.locator("#messages").textContent())!;
    expect(rho).toContain("<script>window.__pwned='rho-script'</script>");
    expect(rho).toContain("<marquee>noon</marquee>");
    await expectInert(page);
    // Both imports are sessions like any other: listed, and a turn continues them.
    expect(await page.locator("#session-list li").count()).toBe(2);
    await sendTurn(page, "What is 6 * 7?");
    expect(await page.locator("#messages").textContent()).toContain("6 * 7 = 42");
    await expectInert(page);
  }, 60_000);

  it("imports Codex rollouts and Claude Code transcripts, detected by content", async () => {
    const ctx = await newContext();
    const page = await openPage(ctx, `db=${dbName()}&delay=1`, "import-agents");
    await importFixture(page, "../../formats/fixtures/codex/rollout-2025-09-10T12-00-00-5f2c9a1e.jsonl");
    // The rollout's compaction is a closed segment: Active (shown) is what came after it.
    await page.waitForFunction(() => document.getElementById("messages")!.textContent!.includes("Now add a test."));
    expect(await page.locator("#messages").textContent()).toContain("Added.");
    await importFixture(page, "../../formats/fixtures/claude-code/6a1f0c2e-session.jsonl");
    await page.waitForFunction(() => document.getElementById("session-title")!.textContent === "Fix the flaky date test");
    expect(await page.locator("#messages").textContent()).toContain("CI runs in UTC; fixed with Date.UTC.");
    expect(await page.locator("#session-list li").count()).toBe(2);
  }, 60_000);

  it("exports redacted and not, and never stores or exports the endpoint key", async () => {
    const seen: { authorization: string | undefined; body: string }[] = [];
    const endpoint = await mockChatCompletions(seen);
    try {
      const ctx = await newContext({ colorScheme: "dark" });
      const page = await openPage(ctx, `db=${dbName()}&delay=1`, "export");
      await importFixture(page, "hostile.v1.jsonl");
      await page.waitForFunction(() => document.getElementById("session-title")!.textContent!.startsWith("DeepCode import"));

      // Use an OpenAI-compatible endpoint with a key typed into the page.
      await page.getByRole("tab", { name: "Model" }).click();
      await page.getByRole("textbox", { name: "Base URL", exact: true }).fill(`${endpoint.url}/v1`);
      await page.getByRole("textbox", { name: "Model", exact: true }).fill("mock-model");
      await page.locator("#openai-key").fill(TYPED_KEY);
      await page.getByRole("button", { name: "Use endpoint", exact: true }).click();
      await sendTurn(page, "Hello, endpoint. Use your streaming reply.");
      expect(await page.locator("#messages").textContent()).toContain("Hello from the mock endpoint");
      expect(seen).toHaveLength(1);
      expect(seen[0]!.authorization).toBe(`Bearer ${TYPED_KEY}`);
      expect(seen[0]!.body).toContain('"stream":true');
      expect(seen[0]!.body).toContain("Hello, endpoint.");

      const redactedDeepCode = await exportSession(page, "deepcode", true);
      expect(redactedDeepCode.name).toMatch(/\.v1\.jsonl$/);
      expect(redactedDeepCode.text).not.toContain(PLANTED_KEY);
      expect(redactedDeepCode.text).toContain("[REDACTED:");
      const redactedRho = await exportSession(page, "rho", true);
      expect(redactedRho.name).toMatch(/\.snapshot\.json$/);
      expect(redactedRho.text).not.toContain(PLANTED_KEY);
      const plainDeepCode = await exportSession(page, "deepcode", false);
      expect(plainDeepCode.text).toContain(PLANTED_KEY);
      const plainRho = await exportSession(page, "rho", false);
      expect(plainRho.text).toContain(PLANTED_KEY);
      expect(JSON.parse(plainRho.text).schema_version).toBe(2);

      for (const file of [redactedDeepCode, redactedRho, plainDeepCode, plainRho]) expect(file.text).not.toContain(TYPED_KEY);
      const stored = await storedText(page);
      expect(stored).toContain("Hello from the mock endpoint");
      expect(stored).not.toContain(TYPED_KEY);
      expect(consoleText.join("\n")).not.toContain(TYPED_KEY);
      await shot(page, "export-dark");
    } finally {
      await endpoint.close();
    }
  }, 60_000);

  it("exports a session made here: a Rho snapshot by default, DeepCode v1 and pi once a working folder is given", async () => {
    const ctx = await newContext();
    const page = await openPage(ctx, `db=${dbName()}&delay=1`, "export-default");
    // The intro card names every format import takes and every format export writes.
    expect(await page.locator(".welcome").textContent()).toContain("import from DeepCode, Rho, pi, Codex and Claude Code; export to Rho, DeepCode v1 and pi");
    await sendTurn(page, "Export me in every format.");

    // Export, then Download, with nothing chosen: a Rho snapshot of both messages.
    const byDefault = await exportSession(page, undefined, true);
    expect(byDefault.name).toMatch(/\.snapshot\.json$/);
    const snapshot = JSON.parse(byDefault.text) as { schema_version: number; history: Record<string, unknown>[] };
    expect(snapshot.schema_version).toBe(2);
    expect(snapshot.history.map((entry) => Object.keys(entry)[0])).toEqual(["System", "User", "EnrichedAssistant"]);

    // DeepCode v1 for a session that has no folder: the dialog asks for one and stays open; nothing is downloaded.
    await page.getByRole("button", { name: "Export", exact: true }).click();
    const dialog = page.getByRole("dialog", { name: "Export session" });
    const folder = dialog.getByRole("textbox", { name: "Working folder" });
    expect(await folder.isVisible()).toBe(false);
    await dialog.getByLabel(FORMAT_LABELS.deepcode).check();
    expect(await folder.inputValue()).toBe("");
    let downloads = 0;
    page.on("download", () => downloads++);
    await dialog.getByRole("button", { name: "Download", exact: true }).click();
    await page.waitForFunction(() => document.getElementById("export-report")!.textContent!.includes("enter a working folder"));
    expect(await dialog.isVisible()).toBe(true);
    expect(downloads).toBe(0);
    await dialog.getByRole("button", { name: "Cancel", exact: true }).click();

    const deepcode = await exportSession(page, "deepcode", true, "/home/me/project");
    expect(deepcode.name).toMatch(/\.v1\.jsonl$/);
    const deepcodeLines = deepcode.text.trim().split("\n").map((line) => JSON.parse(line));
    expect(deepcodeLines[0]).toMatchObject({ type: "session_meta", schema_version: 1, cwd: "/home/me/project" });
    expect(deepcodeLines.filter((r) => r.type === "message")).toHaveLength(2);

    const pi = await exportSession(page, "pi", false, "/home/me/project");
    expect(pi.name).toMatch(/^\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z_.+\.jsonl$/);
    const piLines = pi.text.trim().split("\n").map((line) => JSON.parse(line));
    expect(piLines[0]).toMatchObject({ type: "session", version: 3, cwd: "/home/me/project" });
    expect(piLines.filter((e) => e.type === "message").map((e) => e.message.role)).toEqual(["user", "assistant"]);
  }, 60_000);

  it("names the error class of a refused import, as the production build keeps it (FormatError, not a minified name)", async () => {
    const page = await openPage(await newContext(), `db=${dbName()}&delay=1`, "import-error");
    await importFixture(page, "broken.v1.jsonl");
    const notice = page.getByText(/broken\.v1\.jsonl:2: \$\.role: found "system"/);
    await notice.waitFor();
    expect(await notice.textContent()).toContain("[FormatError, invalid-input]");
  }, 60_000);

  it("validates the agent settings with line and column, and session actions work", async () => {
    const ctx = await newContext();
    const page = await openPage(ctx, `db=${dbName()}&delay=1`, "settings");
    await page.getByRole("button", { name: "Agent settings", exact: true }).click();
    const editor = page.getByRole("textbox", { name: "Agent settings (JSONC)" });
    const original = await editor.inputValue();
    expect(original).toContain('"context_window": 2000');
    await editor.fill(original.replace('"context_window": 2000', '"context_window": -5'));
    const status = page.locator("#settings-status");
    await page.waitForFunction(() => document.getElementById("settings-status")!.textContent!.includes("positive integer"));
    const line = original.split("\n").findIndex((l) => l.includes('"context_window"')) + 1;
    expect(await status.textContent()).toContain(`agents/demo/agent.jsonc:${line}:21: context_window: expected a positive integer`);
    expect(await status.textContent()).toContain(`Line ${line}, column 21`);
    expect(await page.getByRole("button", { name: "Save settings", exact: true }).isDisabled()).toBe(true);
    await shot(page, "settings-error");
    await editor.fill(original.replace('"context_window": 2000', '"context_window": 4000'));
    await page.waitForFunction(() => document.getElementById("settings-status")!.textContent!.includes("Valid"));
    await page.getByRole("button", { name: "Save settings", exact: true }).click();
    await page.getByRole("dialog", { name: "Agent settings" }).waitFor({ state: "hidden" });
    expect(await page.locator("#gauge").textContent()).toContain("4,000 tokens");

    await sendTurn(page, "A session to fork.");
    await page.getByRole("button", { name: "Compact now", exact: true }).click();
    await page.locator("[data-testid=segment]").waitFor();
    expect(await page.locator("[data-testid=segment]").getAttribute("data-end")).toBe("1");
    await page.getByRole("button", { name: "Fork", exact: true }).click();
    await page.waitForFunction(() => document.getElementById("session-meta")!.textContent!.includes("forked from"));
    expect(await page.locator("#session-list li").count()).toBe(2);
    expect(await page.locator("#messages").textContent()).toContain("A session to fork.");
    await page.getByRole("button", { name: "Archive", exact: true }).click();
    await page.waitForFunction(() => document.getElementById("session-meta")!.textContent!.startsWith("archived"));
    expect(await page.getByRole("textbox", { name: "Message" }).isDisabled()).toBe(true);
    await page.getByRole("button", { name: "Delete", exact: true }).click();
    await page.getByRole("dialog", { name: "Are you sure?" }).getByRole("button", { name: "Delete", exact: true }).click();
    await page.waitForFunction(() => document.querySelectorAll("#archived-list li").length === 0);
    expect(await page.locator("#session-list li").count()).toBe(1);
  }, 60_000);
});

describe("encrypted playground", () => {
  /** Message text that must never be stored or exported in the clear once the store is encrypted. */
  const PLANTED = "planted-cleartext-Q7vX2 the harbour gate opens at dawn";

  /** Types `passphrase` into the store's unlock prompt; with `refused`, expects the prompt to stay with its error. */
  async function unlock(page: Page, passphrase: string, refused = false): Promise<void> {
    const prompt = page.getByRole("dialog", { name: "Unlock this store" });
    await prompt.waitFor();
    await prompt.getByLabel("Passphrase", { exact: true }).fill(passphrase);
    await prompt.getByRole("button", { name: "Unlock", exact: true }).click();
    if (refused) {
      await prompt.getByRole("alert").filter({ hasText: "does not unlock this store" }).waitFor();
      expect(await page.locator("#app").getAttribute("aria-busy")).toBe("true");
    } else {
      await ready(page);
    }
  }

  async function lockDialog(page: Page): Promise<Locator> {
    await page.locator("#store-lock").click();
    const dialog = page.getByRole("dialog", { name: "Store encryption" });
    await dialog.waitFor();
    return dialog;
  }

  it("encrypts the store behind a passphrase, refuses a wrong one, and exports and imports back a sealed file", async () => {
    const ctx = await newContext();
    const db = dbName();
    const page = await openPage(ctx, `db=${db}&delay=1`, "encrypted");
    await sendTurn(page, PLANTED);
    expect(await page.locator("#store-lock").getAttribute("data-state")).toBe("plain");
    expect(await storedText(page)).toContain(PLANTED);

    // Encrypt this store with a passphrase: it is migrated in place and the page reloads into the unlock prompt.
    const encrypt = await lockDialog(page);
    await encrypt.getByLabel("New passphrase", { exact: true }).fill("first harbour words");
    await encrypt.getByLabel("Confirm new passphrase", { exact: true }).fill("first harbour words");
    await encrypt.getByRole("button", { name: "Encrypt this store", exact: true }).click();
    await unlock(page, "not the words", true);
    await shot(page, "unlock-refused");
    await unlock(page, "first harbour words");
    await page.locator("#messages article.message-committed[data-role=user] .message-body", { hasText: PLANTED }).waitFor();
    expect(await page.locator("#store-lock").getAttribute("data-state")).toBe("encrypted");
    expect(await page.locator("#store-lock").getAttribute("aria-label")).toBe("Store encrypted and unlocked (passphrase)");
    await shot(page, "encrypted-store");
    // Nothing of the message is in any IndexedDB value: every line is an envelope.
    const sealedStore = await storedText(page);
    expect(sealedStore).toContain('"sealed":1');
    expect(sealedStore).not.toContain(PLANTED);
    expect(sealedStore).not.toContain("harbour gate");

    // Change the passphrase: a wrong current one changes nothing; then the old one no longer unlocks.
    const dialog = await lockDialog(page);
    await dialog.getByLabel("Current passphrase", { exact: true }).fill("not the words");
    await dialog.getByLabel("New passphrase", { exact: true }).fill("second harbour words");
    await dialog.getByLabel("Confirm new passphrase", { exact: true }).fill("second harbour words");
    await dialog.getByRole("button", { name: "Change passphrase", exact: true }).click();
    await dialog.getByRole("alert").filter({ hasText: "WrongKeyError" }).waitFor();
    await shot(page, "lock-dialog-wrong-passphrase");
    await dialog.getByLabel("Current passphrase", { exact: true }).fill("first harbour words");
    await dialog.getByRole("button", { name: "Change passphrase", exact: true }).click();
    await dialog.waitFor({ state: "hidden" });
    await page.reload();
    await unlock(page, "first harbour words", true);
    await unlock(page, "second harbour words");
    await page.locator("#messages .message-body", { hasText: PLANTED }).first().waitFor();

    // A sealed export holds none of the text, and its name none of the session.
    await page.getByRole("button", { name: "Export", exact: true }).click();
    const exportDialog = page.getByRole("dialog", { name: "Export session" });
    await exportDialog.getByLabel(/Redact secrets/).uncheck();
    await exportDialog.getByLabel(/Seal with a passphrase/).check();
    await exportDialog.getByLabel("Export passphrase", { exact: true }).fill("export harbour words");
    await exportDialog.getByLabel("Confirm export passphrase", { exact: true }).fill("export harbour words");
    const [download] = await Promise.all([page.waitForEvent("download"), exportDialog.getByRole("button", { name: "Download", exact: true }).click()]);
    const sealedPath = (await download.path())!;
    const sealed = readFileSync(sealedPath, "utf8");
    expect(download.suggestedFilename()).toMatch(/^sessionfold-export-[\d-]+\.sealed\.json$/);
    expect(JSON.parse(sealed)).toMatchObject({ format: "sessionfold-sealed-export", version: 1, kdf: { name: "PBKDF2-SHA-256" } });
    expect(sealed).not.toContain(PLANTED);
    expect(sealed).not.toContain("harbour gate");
    const sessionId = await page.evaluate(() =>
      (window as unknown as { playground: { session: { ref: { sessionId: string } } } }).playground.session.ref.sessionId
    );
    expect(sealed).not.toContain(sessionId);

    // Import reads it back given its passphrase (a wrong one is asked again), into a new encrypted session.
    const chooser = page.waitForEvent("filechooser");
    await page.getByRole("button", { name: "Import", exact: true }).click();
    await (await chooser).setFiles(sealedPath);
    const prompt = page.getByRole("dialog", { name: "Open a sealed export" });
    await prompt.getByLabel("Passphrase", { exact: true }).fill("second harbour words");
    await prompt.getByRole("button", { name: "Open and import", exact: true }).click();
    await prompt.getByRole("alert").filter({ hasText: "does not open this file" }).waitFor();
    await prompt.getByLabel("Passphrase", { exact: true }).fill("export harbour words");
    await prompt.getByRole("button", { name: "Open and import", exact: true }).click();
    await page.locator(".toast", { hasText: "Imported 2 messages from a Rho snapshot file" }).waitFor();
    await until("the imported session to open", () =>
      page.evaluate((id) => {
        const open = (window as unknown as { playground: { session?: { ref: { sessionId: string } } } }).playground.session;
        return open !== undefined && open.ref.sessionId !== id;
      }, sessionId));
    await page.locator("#messages .message-body", { hasText: PLANTED }).first().waitFor();
    expect(await page.locator("#session-list li").count()).toBe(2);
    const afterImport = await storedText(page);
    expect(afterImport).not.toContain(PLANTED);
    expect(afterImport).not.toContain("harbour gate");
  }, 120_000);

  it("encrypts without a passphrase (other tabs follow), then sets one by rotating the key: no unsealed key is left", async () => {
    const ctx = await newContext();
    const db = dbName();
    const page = await openPage(ctx, `db=${db}&delay=1`, "encrypted-plain");
    await sendTurn(page, PLANTED);
    const other = await openPage(ctx, `db=${db}&delay=1`, "encrypted-other");
    expect(await other.locator("#store-lock").getAttribute("data-state")).toBe("plain");

    // No passphrase: the key is kept non-extractable in this browser, and the reload opens the store at once.
    const encrypt = await lockDialog(page);
    await encrypt.getByRole("button", { name: "Encrypt this store", exact: true }).click();
    await page.locator("#store-lock[data-state=encrypted]").waitFor();
    await ready(page);
    expect(await page.locator("#store-lock").getAttribute("aria-label")).toBe("Store encrypted and unlocked");
    await page.locator("#messages .message-body", { hasText: PLANTED }).first().waitFor();
    // The other tab was told to reload, and opened the store encrypted too.
    await other.locator("#store-lock[data-state=encrypted]").waitFor();
    await ready(other);
    expect(await storedText(page)).not.toContain(PLANTED);

    // Set a passphrase: a new key sealed by it, every data key re-wrapped, the old key dropped; every tab reloads into the prompt.
    const dialog = await lockDialog(page);
    const status = await dialog.getByTestId("lock-status").textContent();
    await dialog.getByLabel("New passphrase", { exact: true }).fill("short");
    await dialog.getByLabel("Confirm new passphrase", { exact: true }).fill("short");
    await dialog.getByRole("button", { name: "Set passphrase", exact: true }).click();
    await dialog.getByRole("alert").filter({ hasText: "at least 8 characters" }).waitFor();
    await dialog.getByLabel("New passphrase", { exact: true }).fill("rotated harbour words");
    await dialog.getByLabel("Confirm new passphrase", { exact: true }).fill("rotated harbour words");
    await dialog.getByRole("button", { name: "Set passphrase", exact: true }).click();
    await unlock(page, "rotated harbour words");
    await other.getByRole("dialog", { name: "Unlock this store" }).waitFor();
    await page.locator("#messages .message-body", { hasText: PLANTED }).first().waitFor();
    const after = await lockDialog(page);
    const rotatedStatus = await after.getByTestId("lock-status").textContent();
    expect(rotatedStatus).toContain("sealed by a passphrase");
    expect(rotatedStatus!.match(/Key (k_[0-9a-f]+)/)![1]).not.toBe(status!.match(/Key (k_[0-9a-f]+)/)![1]);
    await after.getByRole("button", { name: "Close", exact: true }).click();
    // The key database holds one sealed key and no usable CryptoKey.
    const keyring = await page.evaluate(async (name) => {
      const db = await new Promise<IDBDatabase>((resolve, reject) => {
        const r = indexedDB.open(name);
        r.onsuccess = () => resolve(r.result);
        r.onerror = () => reject(r.error);
      });
      const record = await new Promise<Record<string, unknown>>((resolve, reject) => {
        const r = db.transaction("keys", "readonly").objectStore("keys").get("keyring");
        r.onsuccess = () => resolve(r.result);
        r.onerror = () => reject(r.error);
      });
      db.close();
      const values = (value: unknown): unknown[] =>
        value && typeof value === "object" && !(value instanceof Uint8Array) ? Object.values(value).flatMap((v) => [v, ...values(v)]) : [];
      return {
        kind: record["kind"],
        sealed: Object.keys(record["sealed"] as object).length,
        cryptoKeys: values(record).filter((v) => v instanceof CryptoKey).length,
      };
    }, `${db}-keys`);
    expect(keyring).toEqual({ kind: "passphrase", sealed: 1, cryptoKeys: 0 });
    expect(await storedText(page)).not.toContain(PLANTED);
  }, 120_000);
});

// ————————————————————————————————————————— a mock OpenAI-compatible endpoint

async function mockChatCompletions(seen: { authorization: string | undefined; body: string }[]): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = createServer((request: IncomingMessage, response: ServerResponse) => {
    response.setHeader("access-control-allow-origin", "*");
    response.setHeader("access-control-allow-headers", "authorization, content-type, accept");
    response.setHeader("access-control-allow-methods", "POST, OPTIONS");
    if (request.method === "OPTIONS") {
      response.writeHead(204).end();
      return;
    }
    let body = "";
    request.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
    request.on("end", () => {
      seen.push({ authorization: request.headers.authorization, body });
      response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      const events = [
        { choices: [{ delta: { role: "assistant", content: "Hello from " } }] },
        { choices: [{ delta: { content: "the mock endpoint" } }] },
        { choices: [{ delta: { content: ", streamed." }, finish_reason: "stop" }] },
        { choices: [], usage: { prompt_tokens: 321, completion_tokens: 9, total_tokens: 330 } },
      ];
      for (const event of events) response.write(`data: ${JSON.stringify(event)}\n\n`);
      response.end("data: [DONE]\n\n");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}
