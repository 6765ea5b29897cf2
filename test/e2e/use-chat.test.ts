/**
 * useChat on a durable run, end to end: the AI SDK's own chat client (AbstractChat with
 * DefaultChatTransport, bundled) in Debian's Chromium, against the bridge's chatRoute in
 * a Node server process of its own (test/e2e/fixtures/chat-server.ts), streaming from a
 * loopback OpenAI-compatible server written here that holds each reply mid-stream until
 * the test releases it. Send, stream, reload mid-reply and see it resume, a second tab
 * on the same chat sees the reply arrive, and a server killed mid-reply brings the draft
 * back as a stopped reply.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM_ARGS, CHROMIUM_PATH } from "../support/chromium.ts";
import { until } from "../support/until.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const FIRST = "Hello from the ";
const REST = "loopback model.";

/** The loopback model: each chat completion streams FIRST, waits for `release()`, then REST. */
interface LoopbackModel {
  readonly baseUrl: string;
  /** Resolves when the n-th request (from 1) has streamed FIRST and is holding. */
  holding(n: number): Promise<void>;
  /** Lets the n-th reply finish. */
  release(n: number): void;
  close(): Promise<void>;
}

async function startModel(): Promise<LoopbackModel> {
  const holding = new Map<number, PromiseWithResolversLike>();
  const released = new Map<number, PromiseWithResolversLike>();
  const slot = (map: Map<number, PromiseWithResolversLike>, n: number) => {
    if (!map.has(n)) map.set(n, resolvers());
    return map.get(n)!;
  };
  let count = 0;
  const chunk = (delta: object, extra: object = {}) =>
    `data: ${
      JSON.stringify({
        id: "r",
        object: "chat.completion.chunk",
        created: 0,
        model: "loopback-model",
        choices: [{ index: 0, delta, finish_reason: null }],
        ...extra,
      })
    }\n\n`;
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const n = ++count;
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      res.write(chunk({ role: "assistant", content: FIRST }));
      slot(holding, n).resolve();
      void slot(released, n).promise.then(() => {
        if (res.destroyed) return;
        res.write(chunk({ content: REST }));
        res.write(
          `data: ${
            JSON.stringify({
              id: "r",
              object: "chat.completion.chunk",
              created: 0,
              model: "loopback-model",
              choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
              usage: { prompt_tokens: 12, completion_tokens: 6, total_tokens: 18 },
            })
          }\n\n`,
        );
        res.end("data: [DONE]\n\n");
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    holding: (n) => slot(holding, n).promise,
    release: (n) => slot(released, n).resolve(),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

interface PromiseWithResolversLike {
  promise: Promise<void>;
  resolve: () => void;
}

function resolvers(): PromiseWithResolversLike {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

let model: LoopbackModel;
let browser: Browser;
let dir: string;
let clientPath: string;
let server: { child: ChildProcess; port: number } | undefined;

/** Starts the chat server process; resolves once it prints its port. */
function startServer(port: number): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, [
    "--import",
    "tsx",
    join(ROOT, "test/e2e/fixtures/chat-server.ts"),
    join(dir, "store"),
    model.baseUrl,
    clientPath,
    String(port),
  ], { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (data: Buffer) => {
      out += data.toString();
      const match = /listening (\d+)/.exec(out);
      if (match) resolve({ child, port: Number(match[1]) });
    });
    child.on("exit", (code) => reject(new Error(`the chat server exited (${code}) before listening`)));
  });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "sessionfold-use-chat-"));
  clientPath = join(dir, "client.js");
  const bundle = await build({
    entryPoints: [join(ROOT, "test/e2e/fixtures/chat-client.ts")],
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    write: false,
    logLevel: "silent",
  });
  writeFileSync(clientPath, bundle.outputFiles[0]!.contents);
  model = await startModel();
  server = await startServer(0);
  browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: [...CHROMIUM_ARGS], headless: true });
}, 90_000);

afterAll(async () => {
  await browser?.close();
  server?.child.kill("SIGKILL");
  await model?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function open(chatId: string): Promise<Page> {
  const page = await browser.newPage();
  page.on("pageerror", (error) => {
    throw error;
  });
  await page.goto(`http://127.0.0.1:${server!.port}/?chat=${chatId}`);
  await page.waitForSelector("body[data-loaded=true]", { state: "attached" });
  return page;
}

/** The rendered messages: role, text, metadata status. */
function shown(page: Page): Promise<{ id: string; role: string; text: string; status?: string }[]> {
  return page.$$eval(
    "#messages li",
    (items) =>
      items.map((li) => ({
        id: (li as HTMLElement).dataset["id"]!,
        role: (li as HTMLElement).dataset["role"]!,
        text: li.textContent ?? "",
        ...((li as HTMLElement).dataset["status"] ? { status: (li as HTMLElement).dataset["status"] } : {}),
      })),
  );
}

function assistantShows(page: Page, text: string, status?: string): Promise<unknown> {
  return page.waitForFunction(
    ([want, wantStatus]) => {
      const last = [...document.querySelectorAll<HTMLElement>("#messages li")].at(-1);
      return last?.dataset["role"] === "assistant" && last.textContent === want && (wantStatus === undefined || last.dataset["status"] === wantStatus);
    },
    [text, status] as const,
  );
}

describe("useChat (the AI SDK's chat client in chromium) on chatRoute", () => {
  it("sends and streams; a reload mid-reply resumes; a second tab sees the reply; a killed server's draft comes back stopped", async () => {
    const first = await open("c1");
    await first.evaluate(() =>
      void (window as unknown as { chat: { sendMessage(m: { text: string }): Promise<void> } }).chat.sendMessage({ text: "Hi there" })
    );
    await model.holding(1);
    await assistantShows(first, FIRST);

    // Reload in the middle of the reply: the page reconnects and gets what was streamed.
    await first.reload();
    await first.waitForSelector("body[data-loaded=true]", { state: "attached" });
    await assistantShows(first, FIRST);
    // A second tab on the same chat follows the same reply.
    const second = await open("c1");
    await assistantShows(second, FIRST);

    model.release(1);
    await assistantShows(first, FIRST + REST, "completed");
    await assistantShows(second, FIRST + REST, "completed");
    await first.waitForSelector("body[data-status=ready]", { state: "attached" });
    const stored = await (await fetch(`http://127.0.0.1:${server!.port}/api/chat/c1/messages`)).json() as { id: string }[];
    // The client keeps the stored ids: both tabs show what a reload reads.
    expect((await shown(first)).map((m) => m.id)).toEqual(stored.map((m) => m.id));
    expect(await shown(second)).toEqual(await shown(first));
    expect((await shown(first)).map((m) => [m.role, m.text])).toEqual([["user", "Hi there"], ["assistant", FIRST + REST]]);

    // The server dies in the middle of the next reply.
    await first.evaluate(() =>
      void (window as unknown as { chat: { sendMessage(m: { text: string }): Promise<void> } }).chat.sendMessage({ text: "And again?" })
    );
    await model.holding(2);
    await assistantShows(first, FIRST);
    const draft = join(dir, "store/agents/chat/workspaces/web/sessions/c1/messages/assistant_message.json");
    await until("the draft to hold the first reply", () => existsSync(draft) && readFileSync(draft, "utf8").includes(FIRST), 60_000);
    const { port } = server!;
    const died = new Promise((resolve) => server!.child.once("exit", resolve));
    server!.child.kill("SIGKILL");
    await died;
    server = await startServer(port);

    // After a reload the draft comes back as a stopped reply, and the chat is ready again.
    await first.reload();
    await first.waitForSelector("body[data-loaded=true]", { state: "attached" });
    await assistantShows(first, FIRST, "stopped");
    await first.waitForSelector("body[data-status=ready]", { state: "attached" });
    expect((await shown(first)).map((m) => [m.role, m.text, m.status ?? ""])).toEqual([
      ["user", "Hi there", ""],
      ["assistant", FIRST + REST, "completed"],
      ["user", "And again?", ""],
      ["assistant", FIRST, "stopped"],
    ]);
    const after = await (await fetch(`http://127.0.0.1:${port}/api/chat/c1/messages`)).json() as { id: string; metadata?: { status?: string } }[];
    expect(after.map((m) => m.id)).toEqual((await shown(first)).map((m) => m.id));
    expect(after.at(-1)!.metadata?.status).toBe("stopped");
    await second.close();
    await first.close();
  }, 120_000);
});
