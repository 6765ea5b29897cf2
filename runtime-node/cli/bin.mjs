#!/usr/bin/env node
// `npx sessionfold …`: Node 20 cannot run TypeScript, so tsx is registered first and the
// CLI's TypeScript entry imported through it. The exit status is main()'s.
import { register } from "tsx/esm/api";

register();
// A reader that stops early (`sessionfold ls | head -1`) is not an error of ours.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error) => process.exit(error.code === "EPIPE" ? 0 : 5));
}
const { main } = await import("./main.ts");
const status = await main(process.argv.slice(2));
// Let stdout and stderr drain (a pipe may still hold the JSON document), then exit:
// the storage worker is closed by main(), but nothing else may keep the process waiting.
await new Promise((resolve) => process.stdout.write("", resolve));
await new Promise((resolve) => process.stderr.write("", resolve));
process.exit(status);
