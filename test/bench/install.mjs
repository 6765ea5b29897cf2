// `npm run bench` first: the systems the benchmarks compare against (LangGraph's SQLite
// checkpointer and its LangChain packages, better-sqlite3) are this folder's own
// dependencies (test/bench/package.json), so the root `npm ci` of every contributor does not
// bring them. They are installed here when one is missing; otherwise this does nothing.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL(".", import.meta.url));
const { dependencies } = JSON.parse(readFileSync(join(here, "package.json"), "utf8"));
const missing = Object.keys(dependencies).filter((name) => !existsSync(join(here, "node_modules", name, "package.json")));
if (missing.length > 0) {
  console.error(`bench: installing ${missing.join(", ")} into test/bench/node_modules`);
  execFileSync("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--no-package-lock"], { cwd: here, stdio: "inherit" });
}
