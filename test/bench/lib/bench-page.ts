/**
 * The bench page in chromium (`test/bench/browser/index.html`): a Vite dev server over the
 * repository and Debian's chromium driven by playwright-core with a persistent profile in a
 * temp folder (so IndexedDB lives on disk, as for a user). Each call of a page method runs
 * in a freshly loaded page: a new JS realm and a new storage worker.
 *
 * @module
 */
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { BrowserContext } from "playwright-core";
import type { CaseContext } from "./result.ts";
import { CHROMIUM_ARGS, CHROMIUM_PATH } from "../../support/chromium.ts";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const PAGE = "/test/bench/browser/index.html";

/** Calls `window.bench[method](...args)` in a freshly loaded page and resolves its result (`"ready"`: only loads the page). */
export type InPage = <T>(
  method: string,
  ...args: readonly unknown[]
) => Promise<T>;

/** Runs `body` with the bench page served and chromium started; both end with it. `label` prefixes the log. */
export async function withBenchPage<T>(
  ctx: CaseContext,
  label: string,
  body: (inPage: InPage) => Promise<T>,
): Promise<T> {
  const { createServer } = await import("vite");
  const { chromium } = await import("playwright-core");
  const server = await createServer({
    configFile: false,
    root: ROOT,
    cacheDir: join(ROOT, "node_modules/.vite/bench"),
    logLevel: "error",
    clearScreen: false,
    // Cross-origin isolated, so performance.now() resolves to 5 µs, not Chromium's coarse 100 µs.
    server: {
      host: "127.0.0.1",
      port: 0,
      hmr: false,
      watch: null,
      headers: { "Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Embedder-Policy": "require-corp" },
    },
    optimizeDeps: {
      entries: [PAGE.slice(1)],
      include: ["comlink", "idb-keyval", "zod", "jsonc-parser"],
    },
  });
  await server.listen();
  const { port } = server.httpServer!.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}${PAGE}`;
  let context: BrowserContext | undefined;
  try {
    context = await chromium.launchPersistentContext(
      join(ctx.tmp, `profile-${label}`),
      {
        executablePath: CHROMIUM_PATH,
        args: [...CHROMIUM_ARGS],
        headless: true,
      },
    );
    ctx.log(
      `${label} (chromium ${context.browser()?.version() ?? "unknown"}): ${url}`,
    );
    const inPage: InPage = async <R>(
      method: string,
      ...args: readonly unknown[]
    ): Promise<R> => {
      const page = await context!.newPage();
      const errors: string[] = [];
      page.on("pageerror", (error) => errors.push(error.message));
      // The page's own errors win over the result and over a failure of the call (the call's
      // failure is usually their consequence), once the page is closed.
      const closed = async () => {
        await page.close();
        if (errors.length > 0) {
          throw new Error(`bench page errors: ${errors.join("; ")}`);
        }
      };
      let result: R;
      try {
        await page.goto(url);
        await page.waitForFunction(
          "globalThis.bench !== undefined",
          undefined,
          { timeout: 60_000 },
        );
        // A string expression: nothing of this file's JS is shipped.
        result = method === "ready"
          ? (null as R)
          : ((await page.evaluate(`globalThis.bench.${method}(${args.map((a) => JSON.stringify(a)).join(", ")})`)) as R);
      } catch (error) {
        await closed();
        throw error;
      }
      await closed();
      return result;
    };
    // A first page load makes Vite transform and pre-bundle everything before any timing.
    await inPage("ready");
    return await body(inPage);
  } finally {
    await context?.close();
    await server.close();
  }
}
