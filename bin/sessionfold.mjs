#!/usr/bin/env node
// `npx sessionfold …`. An installed package runs the compiled CLI (dist/). In a clone of the
// repository the TypeScript sources are next to this file and run through tsx (a dev
// dependency), so the command works after `npm ci` without a build and never runs a stale one.
// The exit status is main()'s.
import { existsSync } from "node:fs";
import module from "node:module";

const sources = new URL("../runtime-node/cli/main.ts", import.meta.url);
// A reader that stops early (`sessionfold ls | head -1`) is not an error of ours.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error) => process.exit(error.code === "EPIPE" ? 0 : 5));
}
let main;
if (existsSync(sources)) {
  const { register } = await import("tsx/esm/api");
  register();
  ({ main } = await import(sources.href));
} else {
  // Node >= 22.1 keeps V8's compiled code of the bundle in its own cache folder
  // (NODE_COMPILE_CACHE, else the OS temp folder; never the store) for the next start;
  // older versions have no such call (docs/decisions.md "CLI start-up").
  module.enableCompileCache?.();
  ({ main } = await import("../dist/cli/main.js"));
}
const status = await main(process.argv.slice(2));
// Let stdout and stderr drain (a pipe may still hold the JSON document), then exit:
// the storage worker is closed by main(), but nothing else may keep the process waiting.
await new Promise((resolve) => process.stdout.write("", resolve));
await new Promise((resolve) => process.stderr.write("", resolve));
// The process ends with its event loop, not by process.exit(), which can hang it for ever
// while V8 still compiles on a background thread (docs/decisions.md "The CLI exits with
// its event loop"); a handle left open by mistake still cannot keep it waiting long.
process.exitCode = status;
setTimeout(() => process.exit(status), 1000).unref();
