/// <reference types="vitest/config" />
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";
import { playwright } from "@vitest/browser-playwright";
import { CHROMIUM_ARGS, CHROMIUM_PATH } from "./test/support/chromium.ts";


/** Where `vite build` writes the demo and `vite preview` serves it from. */
const demoOutDir = fileURLToPath(new URL("./dist/demo", import.meta.url));

export default defineConfig(({ command }) => ({
  // `vite build` builds the demo app (demo/index.html); tests and dev servers keep the repository root.
  root: command === "build" ? "demo" : ".",
  build: { outDir: demoOutDir, emptyOutDir: true, target: "es2023" },
  // The storage worker is an ES module worker (runtime-browser/worker-storage.ts).
  worker: { format: "es" },
  preview: { host: "127.0.0.1", port: 4173, strictPort: true },
  test: {
    // A ceiling, not a speed target: this machine is shared and noisy (speed is checked by `npm run bench`).
    testTimeout: 30_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: {
          name: "node",
          environment: "node",
          include: ["test/**/*.test.ts"],
          exclude: ["test/**/*.dom.test.ts", "test/**/*.browser.test.ts", "test/postgres/**"],
        },
      },
      {
        extends: true,
        test: {
          // On a real PostgreSQL server: the globalSetup starts one (or takes SESSIONFOLD_TEST_POSTGRES_URL).
          name: "postgres",
          environment: "node",
          include: ["test/postgres/**/*.test.ts"],
          globalSetup: ["test/postgres/global-setup.ts"],
        },
      },
      {
        extends: true,
        test: {
          name: "dom",
          environment: "happy-dom",
          setupFiles: ["fake-indexeddb/auto"],
          include: ["test/**/*.dom.test.ts"],
        },
      },
      {
        extends: true,
        // The storage worker (runtime-browser/storage-worker.ts) imports idb-keyval and comlink; the
        // optimizer's scan of the test files cannot see into a worker, so without this it discovers
        // them mid-run and reloads the page under test ("Vite unexpectedly reloaded a test").
        optimizeDeps: { include: ["comlink", "idb-keyval"] },
        test: {
          name: "browser",
          include: ["test/**/*.browser.test.ts"],
          browser: {
            enabled: true,
            headless: true,
            provider: playwright({
              launchOptions: { executablePath: CHROMIUM_PATH, args: [...CHROMIUM_ARGS] },
            }),
            instances: [{ browser: "chromium" }],
          },
        },
      },
    ],
  },
}));
