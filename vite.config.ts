/// <reference types="vitest/config" />
import { fileURLToPath } from "node:url";
import { defineConfig, type Plugin } from "vite";
import { playwright } from "@vitest/browser-playwright";
import { configDefaults } from "vitest/config";
import { CHROMIUM_ARGS, CHROMIUM_PATH } from "./test/support/chromium.ts";
import { demoSyncServer } from "./demo/sync-server.ts";

const memoryStorageModule = fileURLToPath(new URL("./core/storage/memory.ts", import.meta.url));
const memoryOnPostgres = fileURLToPath(new URL("./test/postgres/memory-on-postgres.ts", import.meta.url));

/**
 * The session engine's suites on PostgreSQL: resolves the core's MemoryStorage to a
 * PostgresStorage in a fresh schema (test/postgres/memory-on-postgres.ts), so test/session
 * and test/run run unchanged on the real server.
 */
function memoryStorageOnPostgres(): Plugin {
  return {
    name: "sessionfold:memory-storage-on-postgres",
    enforce: "pre",
    async resolveId(source, importer, options) {
      if (!importer || importer === memoryOnPostgres || !source.endsWith("memory.ts")) return null;
      const resolved = await this.resolve(source, importer, { ...options, skipSelf: true });
      return resolved?.id === memoryStorageModule ? memoryOnPostgres : null;
    },
  };
}

/**
 * Engine tests that check a backend mechanism PostgresStorage replaces by design: a planted
 * `writer.lock` that blocks (on PostgreSQL the lock is the server's, the file only a record), a
 * failure injected into one intercepted method (PostgreSQL runs the plan's writes in the server,
 * in one transaction), a crash counted in MemoryStorage calls, or a snapshot taken between two
 * of its synchronous steps.
 */
const POSTGRES_ENGINE_SKIPS = [
  "a pre-existing writer.lock",
  "apply takes the writer lock: refused while another writer holds it",
  "is not told a refused write, and a throwing listener does not fail the commit",
  "a segment write that fails puts meta.json back",
  "a new run first commits the recovered draft as its own commit, then proceeds",
  "one mutating operation at a time (SessionBusyError) through",
  // Dead-owner reclaim is the file lock's rule (see the exclude below).
  "a handle that takes over a dead holder's lock",
  "a held handle commits with its writes and the fence's read of writer.lock alone",
];

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** Where `vite build` writes the demo and `vite preview` serves it from. */
const demoOutDir = fileURLToPath(new URL("./dist/demo", import.meta.url));
/** The store of the sync server beside the playground (demo/sync-server.ts), unless `$SESSIONFOLD_DEMO_STORE` names another. */
const demoStore = fileURLToPath(new URL("./.sessionfold-demo-store", import.meta.url));

export default defineConfig(({ command, mode }) => ({
  // `vite build` builds the demo app (demo/index.html); tests and dev servers keep the repository root.
  root: command === "build" ? "demo" : ".",
  build: {
    outDir: demoOutDir,
    emptyOutDir: true,
    target: "es2023",
    // The playground, and two devices side by side (each frame a playground of its own store).
    rollupOptions: {
      input: { main: fileURLToPath(new URL("./demo/index.html", import.meta.url)), devices: fileURLToPath(new URL("./demo/devices.html", import.meta.url)) },
    },
  },
  // The storage worker is an ES module worker (runtime-browser/storage-worker-client.ts).
  worker: { format: "es" },
  preview: { host: "127.0.0.1", port: 4173, strictPort: true },
  // `npm start` serves the playground and, at /sync on the same port, its local sync server.
  // (Not in vitest's own servers, mode `test`: the e2e tests start `vite preview` as `npm start` does.)
  plugins: command === "serve" && mode !== "test" ? [demoSyncServer({ defaultStore: demoStore })] : [],
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
          // A project's own `exclude` replaces vitest's defaults, so they are kept: `npm run bench`
          // installs its comparison packages (and their test files) under test/bench/node_modules.
          exclude: [...configDefaults.exclude, "test/**/*.dom.test.ts", "test/**/*.browser.test.ts", "test/postgres/**"],
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
        plugins: [memoryStorageOnPostgres()],
        test: {
          // The engine's suites again, every MemoryStorage a PostgresStorage on the same server.
          name: "postgres-engine",
          environment: "node",
          include: ["test/session/**/*.test.ts", "test/run/**/*.test.ts"],
          // Not here: crash injection between single storage calls (a commit on PostgreSQL is one
          // statement; test/postgres/sigkill.test.ts kills real processes instead), and tests of
          // the file lock's own rules or of one method intercepted around MemoryStorage.
          // Dead-owner reclaim is the file lock's rule too: PostgreSQL's advisory locks are freed by the server.
          // So is the fence of a lease by the file's lock_id: on PostgreSQL the lease is the server's lock.
          exclude: [
            ...configDefaults.exclude,
            "test/session/crash-points.test.ts",
            "test/run/crash.test.ts",
            "test/session/dead-owner.test.ts",
            "test/session/lease-fence.test.ts",
          ],
          testNamePattern: new RegExp(`^(?!.*(${POSTGRES_ENGINE_SKIPS.map(escapeRegExp).join("|")}))`),
          globalSetup: ["test/postgres/global-setup.ts"],
          setupFiles: ["test/postgres/engine-setup.ts"],
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
