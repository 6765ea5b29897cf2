/**
 * Carrying out a repair plan (`repair-plan.ts`): the quarantine files first, then the whole
 * files moved into quarantine, then the files written again without their moved lines, and
 * `meta.json` last. A crash at any point loses nothing: a line is removed from its file only
 * after its quarantine copy is durable, and running the repair again finishes the job (a
 * second quarantine copy is harmless).
 *
 * @module
 */
import type { StoragePort } from "../storage/port.ts";
import type { RepairMove, RepairPlan, RepairReport } from "./repair-plan.ts";

/**
 * Writes what `plan` says, in a crash-safe order, and returns its report with `applied: true`.
 * A quarantine name already taken (two repairs in the same millisecond) gets `-2`, `-3`… and
 * the report names the file actually written. The caller holds the session's writer lock.
 *
 * @example
 * ```ts
 * import { MemoryStorage, sessionPaths } from "sessionfold";
 * import { planRepair } from "sessionfold/internal";
 * const storage = new MemoryStorage();
 * const ref = { agentId: "a1", workspaceId: "w1", sessionId: "s1" };
 *
 * const plan = await planRepair(storage, sessionPaths(ref), ref, Date.now);
 * if (plan.report.refused.length === 0) await applyRepair(storage, plan, sessionPaths(ref).dir);
 * ```
 * @throws {StorageError} when a write fails; what was written before stays (see the module doc).
 */
export async function applyRepair(storage: StoragePort, plan: RepairPlan, sessionDir: string): Promise<RepairReport> {
  const { writes, report } = plan;
  const renamed = new Map<string, string>();
  for (const { path, bytes } of writes.quarantine) {
    let target = path;
    for (let n = 2; !(await storage.createExclusive(target, bytes)); n++) target = withSuffix(path, n);
    renamed.set(path, target);
  }
  for (const { from, to } of writes.moves) {
    let target = to;
    for (let n = 2; !(await storage.move(from, target)); n++) {
      // `move` also declines when the source is gone: then nothing is left to keep.
      if (!(await storage.readTail(from, 0))) break;
      target = withSuffix(to, n);
    }
    renamed.set(to, target);
  }
  for (const { path, bytes } of writes.replace) await storage.replace(path, bytes);
  if (writes.meta) await storage.replace(`${sessionDir}/meta.json`, writes.meta);
  const relative = (path: string) => path.slice(sessionDir.length + 1);
  const moves: RepairMove[] = report.moves.map((move) => {
    const written = renamed.get(`${sessionDir}/${move.to}`);
    return written ? { ...move, to: relative(written) } : move;
  });
  return { ...report, moves, applied: true };
}

/** `quarantine/x.2026-….jsonl` → `quarantine/x.2026-…-2.jsonl`. */
function withSuffix(path: string, n: number): string {
  const slash = path.lastIndexOf("/");
  const dot = path.endsWith(".jsonl") ? path.length - ".jsonl".length : path.length;
  return dot > slash ? `${path.slice(0, dot)}-${n}${path.slice(dot)}` : `${path}-${n}`;
}
