/**
 * A re-read's replacement of a local session by the server's copy as one local step
 * (docs/SYNC.md "Re-reads"). The port has no move onto an existing folder, so the swap is
 * two moves, and a record in the store (`sync/rereads/<agent>/<workspace>/<session>.json`)
 * says which, written before the first: the old copy moves aside into a hidden folder, the
 * new copy (complete, the carried-over messages in it) moves in from its hidden folder, the
 * old copy and the record go. A crash anywhere leaves either the old copy in place (the swap
 * is undone) or the new copy ready to move in (it is finished) by {@linkcode settleRereads},
 * which every sync run calls before anything else: nothing a device wrote is only in a copy
 * that is gone.
 *
 * @module
 */
import { parseSessionRef } from "../layout/ids.ts";
import { sessionPaths, type SessionPlace, sessionsDir } from "../layout/paths.ts";
import { encodeJsonDocument } from "../schema/mod.ts";
import { sessionExists } from "../session/staging.ts";
import type { StoragePort } from "../storage/port.ts";

/** A swap in progress, as its record holds it. */
export interface RereadSwap {
  /** The session (`agent/workspace/session`). */
  readonly ref: string;
  /** Where the old copy is, and where the new one goes. */
  readonly from: SessionPlace;
  readonly to: SessionPlace;
  /** The hidden folder holding the new copy. */
  readonly staged: string;
  /** The hidden folder the old copy moves to. */
  readonly aside: string;
}

/** How a swap ended: done, undone (the old copy stayed), or blocked (a session was created at its ref meanwhile; both copies kept). */
export type SwapOutcome = "finished" | "undone" | "blocked";

/** The folder of the re-reads' records (docs/SYNC.md "Re-reads"). */
export const SYNC_REREADS = "sync/rereads";
const decoder = new TextDecoder();

/** Where the record of a swap of `ref` is. */
function recordPath(ref: string): string {
  const { agentId, workspaceId, sessionId } = parseSessionRef(ref);
  return `${SYNC_REREADS}/${agentId}/${workspaceId}/${sessionId}.json`;
}

/**
 * Swaps the session's old copy (`from`, its lock held by the caller) for the staged one: the
 * record, the old copy aside, then {@linkcode settleSwap}. Any failure before the old copy
 * moved leaves it in place; after, the swap is finished now or by the next run.
 */
export async function swapSession(storage: StoragePort, swap: RereadSwap): Promise<SwapOutcome> {
  await storage.replace(recordPath(swap.ref), encodeJsonDocument(swap));
  await storage.move(sessionPaths(parseSessionRef(swap.ref), swap.from).dir, swap.aside);
  return settleSwap(storage, swap);
}

/**
 * Ends a swap from what the store holds: the new copy still staged and the old one not aside
 * (the swap never started): the staged copy goes and the old one stays; both moved (the
 * crash fell between the two moves): the new copy moves in, unless a session was created at
 * its ref meanwhile (`blocked`: both hidden folders and the record are kept); then the old
 * copy and the record go.
 */
export async function settleSwap(storage: StoragePort, swap: RereadSwap): Promise<SwapOutcome> {
  const ref = parseSessionRef(swap.ref);
  const staged = (await storage.list(swap.staged)).length > 0;
  const aside = (await storage.list(swap.aside)).length > 0;
  let outcome: SwapOutcome = "finished";
  if (staged && !aside) {
    await storage.remove(swap.staged);
    outcome = "undone";
  } else if (staged) {
    if ((await sessionExists(storage, ref, "live")) || (await sessionExists(storage, ref, "archived"))) return "blocked";
    const target = sessionPaths(ref, swap.to).dir;
    // What may be there is no session (a lock another writer took in the moment between the moves, and let go): it goes.
    if ((await storage.list(target)).length > 0) await storage.remove(target);
    if (!(await storage.move(swap.staged, target))) return "blocked";
  }
  if (aside) await storage.remove(swap.aside);
  await storage.remove(recordPath(swap.ref));
  return outcome;
}

/** A record that could not be settled: its ref (or its file, when unreadable) and why. */
export interface UnsettledReread {
  readonly ref: string;
  readonly message: string;
}

/**
 * Settles every swap a crash cut (each record in `sync/rereads/`); resolves those it could
 * not: blocked, or a record that is not one this engine wrote (kept as it is, nothing moved).
 */
export async function settleRereads(storage: StoragePort): Promise<UnsettledReread[]> {
  const unsettled: UnsettledReread[] = [];
  for (const agent of await storage.list(SYNC_REREADS)) {
    for (const workspace of await storage.list(`${SYNC_REREADS}/${agent}`)) {
      for (const name of await storage.list(`${SYNC_REREADS}/${agent}/${workspace}`)) {
        const file = `${SYNC_REREADS}/${agent}/${workspace}/${name}`;
        const bytes = await storage.read(file);
        if (!bytes) continue;
        const swap = recordOf(file, bytes);
        if (typeof swap === "string") unsettled.push({ ref: file, message: swap });
        else if ((await settleSwap(storage, swap)) === "blocked") {
          unsettled.push({
            ref: swap.ref,
            message:
              `${swap.ref}: a re-read was cut and a session was created at its ref meanwhile; the server's copy is kept in ${swap.staged}, the old copy in ${swap.aside}`,
          });
        }
      }
    }
  }
  return unsettled;
}

/** The swap a record holds, or what is wrong with it: its folders must be hidden folders of its session's workspace, as `hiddenFolder` (session-files.ts) names them. */
function recordOf(file: string, bytes: Uint8Array): RereadSwap | string {
  let swap: Partial<RereadSwap>;
  try {
    swap = JSON.parse(decoder.decode(bytes)) as Partial<RereadSwap>;
    const ref = parseSessionRef(String(swap.ref));
    const prefix = `${sessionsDir(ref.agentId, ref.workspaceId)}/.sync-${ref.sessionId}-`;
    const hidden = { test: (path: string) => path.startsWith(prefix) && /^t_[0-9a-f]{32}$/.test(path.slice(prefix.length)) };
    const places = ["live", "archived"];
    if (file !== recordPath(String(swap.ref)) || !places.includes(String(swap.from)) || !places.includes(String(swap.to))) throw new Error("ref or places");
    if (!hidden.test(String(swap.staged)) || !hidden.test(String(swap.aside))) throw new Error("folders");
  } catch {
    return `${file}: expected a re-read record of this session (ref, from, to, and two hidden folders of its workspace); kept as it is`;
  }
  return swap as RereadSwap;
}
