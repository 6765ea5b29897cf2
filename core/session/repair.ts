/**
 * Carrying out a repair plan (`repair-plan.ts`), and `Session.repair({ apply: true })`
 * around it ({@linkcode repairUnderLock}): the quarantine files first, then the whole
 * files moved into quarantine, then the files written again without their moved lines, and
 * `meta.json` last. A crash at any point loses nothing: a line is removed from its file only
 * after its quarantine copy is durable, and running the repair again finishes the job (a
 * second quarantine copy is harmless).
 *
 * @module
 */
import { CorruptSessionError } from "../errors.ts";
import { formatSessionRef } from "../layout/ids.ts";
import type { StoragePort } from "../storage/port.ts";
import type { CommitPath } from "./commit-path.ts";
import { planRepair, type RepairMove, type RepairPlan, type RepairReport } from "./repair-plan.ts";

/**
 * Writes what `plan` says, in a crash-safe order, and returns its report with `applied: true`.
 * A quarantine name already taken (two repairs in the same millisecond) gets `-2`, `-3`… and
 * the report names the file actually written. The caller holds the session's writer lock.
 *
 * @example
 * ```ts
 * import { MemoryStorage, sessionPaths } from "sessionfold";
 * const storage = new MemoryStorage();
 * const ref = { agentId: "a1", workspaceId: "w1", sessionId: "s1" };
 * declare const plan: Parameters<typeof applyRepair>[1]; // what `planRepair` planned for the session
 *
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

/**
 * `Session.repair({ apply: true })`: in the handle's operation slot, under the session's
 * `writer.lock` taken without a revision check (`meta.json` may be unreadable), plans the
 * repair from the files as they are then and applies it; the handle is reloaded after.
 *
 * @throws {CorruptSessionError} when the plan is refused: nothing changed.
 */
export function repairUnderLock(tx: CommitPath): Promise<RepairReport> {
  const { storage, clock } = tx.ctx;
  return tx.exclusive(
    "repair",
    async () => {
      const lease = await tx.lock("repair", [], true, false);
      try {
        const plan = await planRepair(storage, tx.paths, tx.ref, clock);
        const { refused } = plan.report;
        if (refused.length > 0) {
          throw new CorruptSessionError(`${formatSessionRef(tx.ref)} cannot be repaired: ${refused.map((r) => r.reason).join("; ")}`, {
            file: refused[0]!.file,
            line: refused[0]!.line,
            refused: refused.map((r) => ({ ...r })),
          });
        }
        return plan.report.clean ? plan.report : await applyRepair(storage, plan, tx.paths.dir);
      } finally {
        await tx.unlock(lease).catch(() => undefined);
        await tx.reloadAfterRepair();
      }
    },
    true,
  );
}
