/**
 * How much of the local store a remote has not acknowledged yet, for a sync status
 * (docs/SYNC.md "Background sync in the browser"). Read from the same two things the engine
 * pushes from: the local sessions and the agreed state in `sync/remotes/<remote>.json`.
 *
 * @module
 */
import { formatSessionRef, parseSessionRef } from "../layout/ids.ts";
import type { Sessions } from "../session/registry.ts";
import { type SyncState, syncStatePath } from "./sync-state.ts";
import { lastSequenceOf, skipUnlisted } from "./session-files.ts";

/**
 * The local messages the remote `remoteId` has not acknowledged: every message of a session
 * it never took, and those after the agreed sequence of the others.
 *
 * @example
 * ```ts
 * import { MemoryStorage, Sessions } from "sessionfold";
 *
 * const local = new Sessions({ storage: new MemoryStorage() });
 * const s = await local.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
 * await s.append({ role: "user", parts: [{ type: "text", text: "hello" }] });
 * await pendingMessages(local, "server"); // 1
 * ```
 */
export async function pendingMessages(local: Sessions, remoteId: string, refs?: readonly string[]): Promise<number> {
  const only = refs && new Set(refs.map((r) => formatSessionRef(parseSessionRef(r))));
  const bytes = await local.storage.read(syncStatePath(remoteId));
  const known = bytes ? (JSON.parse(new TextDecoder().decode(bytes)) as SyncState).sessions : {};
  let pending = 0;
  for (const archived of [false, true]) {
    for (const meta of await local.list({ archived, onProblem: skipUnlisted })) {
      const ref = `${meta.agent_id}/${meta.workspace_id}/${meta.session_id}`;
      if (only && !only.has(ref)) continue;
      const agreed = known[ref];
      const base = agreed ? agreed.fork?.through ?? agreed.last_sequence : 0;
      pending += Math.max(0, lastSequenceOf(await local.open(ref, { archived })) - base);
    }
  }
  return pending;
}
