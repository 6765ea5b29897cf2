/**
 * The playground as `npm start` serves it, for the end-to-end tests: the demo built by
 * `vite build` (vite.config.ts: root demo/, out dist/demo), then `vite preview` on a free
 * loopback port with its local sync server at `/sync` (demo/sync-server.ts) over a temp
 * folder store of its own, so no test writes into the repository's `.sessionfold-demo-store/`.
 * Plus the waits the tests share.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Frame, Page } from "playwright-core";
import { build } from "vite";
import { until } from "../support/until.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** A running playground: its URL, its sync server's store, what it printed, and how to stop it. */
export interface Playground {
  readonly url: string;
  /** The folder the sync server's store is in (`SESSIONFOLD_DEMO_STORE`). */
  readonly store: string;
  /** What `vite preview` printed so far (stdout and stderr). */
  log(): string;
  /** Stops `vite preview` and removes the store it made. */
  close(): void;
}

/** Options of {@linkcode startPlayground}. */
export interface PlaygroundOptions {
  /** Build the demo first (default `true`); `false` serves the build already in dist/demo. */
  readonly build?: boolean;
  /** `vite preview --host` (default `127.0.0.1`); the URL is on 127.0.0.1 either way. */
  readonly host?: string;
  /** More environment for `vite preview` (e.g. `SESSIONFOLD_DEMO_SYNC_TOKEN`). */
  readonly env?: Record<string, string>;
  /** The sync server's store (default a new temp folder, removed by `close()`). */
  readonly store?: string;
}

/** Builds the demo and serves it as `npm start` does. */
export async function startPlayground(options: PlaygroundOptions = {}): Promise<Playground> {
  if (options.build !== false) {
    const nodeEnv = process.env.NODE_ENV;
    process.env.NODE_ENV = "production";
    try {
      await build({ configFile: join(ROOT, "vite.config.ts"), root: join(ROOT, "demo"), mode: "production", logLevel: "warn" });
    } finally {
      process.env.NODE_ENV = nodeEnv;
    }
  }
  const store = options.store ?? mkdtempSync(join(tmpdir(), "sessionfold-demo-store-"));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const preview: ChildProcess = spawn(
    process.execPath,
    [join(ROOT, "node_modules/vite/bin/vite.js"), "preview", "--host", options.host ?? "127.0.0.1", "--port", String(port), "--strictPort"],
    { cwd: ROOT, env: { ...process.env, ...options.env, SESSIONFOLD_DEMO_STORE: store }, stdio: ["ignore", "pipe", "pipe"] },
  );
  let log = "";
  preview.stdout!.on("data", (chunk: Buffer) => (log += chunk.toString()));
  preview.stderr!.on("data", (chunk: Buffer) => (log += chunk.toString()));
  // A deadline for an event, not a time the test relies on: a loaded machine starts vite in tens of seconds.
  await until("vite preview to answer", async () => (await fetch(url).catch(() => undefined))?.ok === true, 120_000);
  return {
    url,
    store,
    log: () => log,
    close: () => {
      preview.kill("SIGTERM");
      if (options.store === undefined) rmSync(store, { recursive: true, force: true });
    },
  };
}

/** A free TCP port on loopback. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
    server.on("error", reject);
  });
}

/** Sends one message from the playground in `surface` (a page, or a device's frame) and waits until its turn is committed. */
export async function sendTurn(surface: Page | Frame, text: string): Promise<void> {
  await surface.getByRole("textbox", { name: "Message" }).fill(text);
  await surface.getByRole("button", { name: "Send", exact: true }).click();
  await surface.waitForFunction(
    (sent) => {
      const users = document.querySelectorAll("#messages article.message-committed[data-role=user]");
      const last = users[users.length - 1];
      return document.getElementById("app")!.dataset["running"] === "false" && last?.querySelector(".message-body")?.textContent === sent;
    },
    text,
    { timeout: 20_000 },
  );
}
