/**
 * `probe.ts`'s open of sessionfold (`lib/open-probe.ts`) through the package as `npm pack`
 * ships it: the `sessionfold/node` module the task's `entry` names (case 1: the packed
 * package's `dist/runtime-node/mod.js`). Started by `lib/child.ts` for an open or warm-sizes
 * task with `entry`, with the flags of every probe, in a process that loads nothing of the sources
 * (a user's process holds the package, not a second copy of sessionfold). The last line of
 * stdout is the JSON result.
 *
 * @module
 */
import { pathToFileURL } from "node:url";
import { openSessionfold, warmSizes, withPeakMemory } from "./lib/open-probe.ts";
import type { ProbeTask } from "./probe.ts";

const task = JSON.parse(process.argv[2] ?? "null") as ProbeTask | null;
if ((task?.kind !== "open" && task?.kind !== "warm-sizes") || !task.entry) {
  throw new Error("probe-package.ts needs an open or warm-sizes task with an entry as JSON in argv[2]");
}
const runtime = (await import(pathToFileURL(task.entry).href)) as typeof import("../../runtime-node/mod.ts");
const result = task.kind === "warm-sizes"
  ? await warmSizes(runtime.openNodeSessions, task.paths, task.rounds)
  : withPeakMemory(await openSessionfold(runtime.openNodeSessions, task.impl !== "sessionfold-noworker", task.path, task.warm));
process.stdout.write(`\n${JSON.stringify(result)}\n`);
