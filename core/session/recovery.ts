/**
 * The write side of recovery: what an open found but, being a read, did not fix
 * (docs/FORMAT.md "Recovery"), done at the start of the next mutating operation under the
 * lock. Reading and deciding is `load.ts`; {@linkcode planPendingRepairs} turns its
 * {@linkcode PendingRepairs} into a value the commit path applies (`CommitPath.locked`).
 *
 * @module
 */
import { relativeToSession, type SessionPaths } from "../layout/paths.ts";
import type { SessionMeta } from "../schema/mod.ts";
import type { StoragePort } from "../storage/port.ts";
import { nextMeta } from "./planned-change.ts";
import type { SessionState } from "./state.ts";
import { encodeWithUnknown, type UnknownLine, unknownLines } from "./unknown-lines.ts";

/**
 * Recovery's repairs as a value. Applied in this order: `meta.json` first, with the figures
 * of the repaired files: every repair that changes `history_bytes` is one that made
 * recovery rebuild `meta.json` (an overlap, a missing final newline), and a crash before
 * the files are repaired leaves that damage in place, so the next open rebuilds `meta.json`
 * again. Repairing the files first would let a crash leave a stale `meta.json` that no
 * longer looks stale. Then `active.jsonl`, then the stale draft.
 */
export interface PendingRepairPlan {
  /** `meta.json` to write first, when recovery rebuilt it or Active's size changes. */
  readonly meta?: SessionMeta;
  /** What `active.jsonl` needs: rewritten from memory, cut to a size, or its final newline. */
  readonly active?: { readonly op: "replace"; readonly bytes: Uint8Array } | { readonly op: "truncate"; readonly size: number } | { readonly op: "newline" };
  /** Bytes of `active.jsonl` once repaired. */
  readonly activeBytes: number;
  /** Remove a stale `assistant_message.json`. */
  readonly removeDraft: boolean;
}

/**
 * Plans the repairs recovery left for the next write (nothing is read or written).
 * `unknown`: the lines of unknown record types a rewrite of `active.jsonl` carries along.
 */
export function planPendingRepairs(state: SessionState, unknown: readonly UnknownLine[], now: () => string): PendingRepairPlan {
  const repairs = state.repairs;
  const rewritten = repairs.rewriteActive ? encodeWithUnknown(state.active, unknown, true) : undefined;
  const activeBytes = rewritten ? rewritten.length : repairs.addNewline ? state.activeBytes + 1 : state.activeBytes;
  const resized = activeBytes !== state.activeBytes;
  const patch: Partial<SessionMeta> = resized ? { history_bytes: state.meta.history_bytes - state.activeBytes + activeBytes } : {};
  const active: PendingRepairPlan["active"] = rewritten
    ? { op: "replace", bytes: rewritten }
    : repairs.truncateActiveTo !== undefined
    ? { op: "truncate", size: repairs.truncateActiveTo }
    : repairs.addNewline
    ? { op: "newline" }
    : undefined;
  return {
    ...(resized || repairs.writeMeta ? { meta: nextMeta(state, patch, now()) } : {}),
    ...(active ? { active } : {}),
    activeBytes,
    removeDraft: repairs.removeStaleDraft === true,
  };
}

/** Lines of unknown record types in `active.jsonl`, which a rewrite must carry along (read only when recovery saw some). */
export async function unknownActiveLines(
  handle: { readonly ctx: { readonly storage: StoragePort }; readonly paths: SessionPaths; readonly state: SessionState },
): Promise<UnknownLine[]> {
  if (!hasUnknownActiveLines(handle.state, handle.paths)) return [];
  return unknownLines((await handle.ctx.storage.read(handle.paths.active)) ?? new Uint8Array(0));
}

/** Whether recovery saw lines of unknown record types in `active.jsonl` (then {@linkcode unknownActiveLines} reads them). */
export function hasUnknownActiveLines(state: Pick<SessionState, "diagnostics">, paths: SessionPaths): boolean {
  const file = relativeToSession(paths, paths.active);
  return state.diagnostics.some((d) => d.code === "unknown_record" && d.file === file);
}
