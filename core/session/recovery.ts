/**
 * The write side of recovery: what an open found but, being a read, did not fix
 * (docs/FORMAT.md "Recovery"), done at the start of the next mutating operation under the
 * lock. Reading and deciding is `load.ts`; this applies its {@linkcode PendingRepairs}.
 *
 * @module
 */
import { relativeToSession, type SessionPaths } from "../layout/paths.ts";
import type { SessionMeta } from "../schema/mod.ts";
import type { StoragePort } from "../storage/port.ts";
import type { PendingRepairs, SessionState } from "./state.ts";
import { encodeWithUnknown, unknownLines, type UnknownLine } from "./unknown-lines.ts";

/** What repairing needs of a session handle (its transaction, which holds the lock). */
export interface RepairTarget {
  readonly ctx: { readonly storage: StoragePort };
  readonly paths: SessionPaths;
  readonly state: SessionState;
  /** Writes `meta.json` from the state with `patch` applied. */
  writeMeta(patch: Partial<SessionMeta>): Promise<void>;
}

/**
 * Applies the repairs recovery left for the next write. `meta.json` goes first, with the
 * figures of the repaired files: every repair that changes `history_bytes` is one that made
 * recovery rebuild `meta.json` (an overlap, a missing final newline), and a crash before
 * the files are repaired leaves that damage in place, so the next open rebuilds `meta.json`
 * again. Repairing the files first would let a crash leave a stale `meta.json` that no
 * longer looks stale.
 *
 * @throws {StorageError} when a write fails; the next open finds and repairs the same again.
 */
export async function applyRepairs(tx: RepairTarget): Promise<void> {
  const { storage } = tx.ctx;
  const state = tx.state;
  const repairs: PendingRepairs = state.repairs;
  const rewritten = repairs.rewriteActive ? encodeWithUnknown(state.active, await unknownActiveLines(tx), true) : undefined;
  const activeBytes = rewritten ? rewritten.length : repairs.addNewline ? state.activeBytes + 1 : state.activeBytes;
  if (activeBytes !== state.activeBytes) {
    state.meta = { ...state.meta, history_bytes: state.meta.history_bytes - state.activeBytes + activeBytes };
    repairs.writeMeta = true;
  }
  if (repairs.writeMeta) await tx.writeMeta({});
  if (rewritten) {
    await storage.replace(tx.paths.active, rewritten);
  } else if (repairs.truncateActiveTo !== undefined) {
    await storage.truncate(tx.paths.active, repairs.truncateActiveTo);
  } else if (repairs.addNewline) {
    await storage.append(tx.paths.active, new TextEncoder().encode("\n"));
  }
  state.activeBytes = activeBytes;
  if (repairs.removeStaleDraft) await storage.remove(tx.paths.draft);
  state.repairs = {};
}

/** Lines of unknown record types in `active.jsonl`, which a rewrite must carry along. */
export async function unknownActiveLines(tx: Omit<RepairTarget, "writeMeta">): Promise<UnknownLine[]> {
  const file = relativeToSession(tx.paths, tx.paths.active);
  if (!tx.state.diagnostics.some((d) => d.code === "unknown_record" && d.file === file)) return [];
  return unknownLines((await tx.ctx.storage.read(tx.paths.active)) ?? new Uint8Array(0));
}
