// `npm run build` (and `prepack`): compiles the package into dist/ with tsconfig.build.json
// (JavaScript, declarations, source maps), then finishes what tsc
// leaves for a consumer:
// - declarations keep the sources' `.ts` import paths (tsc rewrites them only in JavaScript);
//   a consumer's TypeScript without allowImportingTsExtensions refuses those (TS5097), so
//   relative `.ts` specifiers in `.d.ts` files become `.js`;
// - the browser runtime names its worker as `new URL("./storage-worker.ts", import.meta.url)`
//   so that Vite bundles it from sources; the compiled file must name `storage-worker.js`.
// - the CLI as installed runs from a bundle, dist/cli/: its entry (`main.js`, what
//   bin/sessionfold.mjs imports) and the storage worker it starts, with one chunk per command
//   and chunks of what they share (zod included). A fresh process then loads a few files
//   instead of the ~270 modules of dist/ and node_modules, most of `sessionfold show`'s
//   start-up (docs/decisions.md "CLI start-up"). The library's entry points stay unbundled.
// dist/demo (the playground, built by `npm run build:demo`) is left alone.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const dist = join(root, "dist");

for (const entry of safeList(dist)) if (entry !== "demo") rmSync(join(dist, entry), { recursive: true, force: true });
execFileSync(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-p", join(root, "tsconfig.build.json")], { stdio: "inherit" });

const relativeTs = /(["'])(\.\.?\/[^"'\n]*?)\.ts\1/g;
let declarations = 0;
for (const file of walk(dist)) {
  if (file.endsWith(".d.ts")) {
    const text = readFileSync(file, "utf8");
    const fixed = text.replace(relativeTs, "$1$2.js$1");
    if (fixed !== text) writeFileSync(file, fixed), declarations++;
  }
}
const browserWorker = join(dist, "runtime-browser/storage-worker-client.js");
const workerSource = readFileSync(browserWorker, "utf8");
const workerFixed = workerSource.replaceAll('new URL("./storage-worker.ts", import.meta.url)', 'new URL("./storage-worker.js", import.meta.url)');
if (workerFixed === workerSource) throw new Error(`${browserWorker}: expected new URL("./storage-worker.ts", import.meta.url) to rewrite`);
writeFileSync(browserWorker, workerFixed);

// The CLI's bundle. The worker is an entry of its own in the same folder, so the storage
// worker client (bundled into a chunk beside it) finds it as `./storage-worker.js`; chunks
// sit beside the entries for the same reason. `pg` (an optional peer dependency) stays an
// import, loaded only for a postgres:// store.
const { build } = await import("esbuild");
await build({
  entryPoints: { main: join(dist, "runtime-node/cli/main.js"), "storage-worker": join(dist, "runtime-node/storage-worker.js") },
  outdir: join(dist, "cli"),
  chunkNames: "[name]-[hash]",
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  // jsonc-parser's `main` is a UMD build with runtime requires; its ESM build is `module`.
  mainFields: ["module", "main"],
  external: ["pg"],
  sourcemap: "linked",
  sourcesContent: false,
  logLevel: "warning",
});
console.log(`dist/: ${declarations} declaration files with .js import paths; browser worker URL set to storage-worker.js; CLI bundled in dist/cli/`);

function safeList(dir) {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function* walk(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (path !== join(dist, "demo")) yield* walk(path);
    } else yield path;
  }
}
