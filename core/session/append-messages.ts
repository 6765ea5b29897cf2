/**
 * The one append of messages through a handle's commit path: a host's (`Session.append`), whose
 * `updated_at` is its time now, and a sync's ({@linkcode appendSynced}), whose `updated_at` is the activity the source
 * had (docs/SYNC.md "Activity"): the time is a parameter of the commit, no work more for a host's append.
 *
 * @module
 */
import { InvalidInputError } from "../errors.ts";
import type { CommitPath } from "./commit-path.ts";
import type { CommitResult } from "./locked-operation.ts";
import { type NewMessage, toMessageRecord } from "./message-input.ts";
import { assertNewMessageIds } from "./message-ids.ts";
import { syncedActivity } from "./planned-change.ts";
import { partsOf, type SessionView } from "./session-view.ts";
import { hasRepairs, stoppedDraftMessages } from "./state.ts";
import { removeDraft } from "./build-locked-operation.ts";

/**
 * Appends `messages` through `tx` as one commit; `synced`: with `updated_at` the later of the session's and the
 * newest message's `created_at` instead of the time now.
 *
 * @example
 * ```ts
 * declare const tx: Parameters<typeof appendMessages>[0];
 * await appendMessages(tx, [{ role: "user", parts: [{ type: "text", text: "hi" }] }], false);
 * ```
 */
export async function appendMessages(tx: CommitPath, messages: NewMessage | readonly NewMessage[], synced: boolean): Promise<CommitResult> {
  // async: invalid input rejects the promise like every other failure, never throws synchronously.
  const list = (Array.isArray(messages) ? messages : [messages]) as readonly NewMessage[];
  if (list.length === 0) throw new InvalidInputError("append needs at least one message");
  const records = list.map((m, i) => toMessageRecord(m, tx.ctx.clock, `messages[${i}]`));
  return await tx.exclusive("append", () => { // awaited: an async function returning a promise as is settles two turns later
    assertNewMessageIds(tx.state.active, list); // in the slot: after a reload it would do first
    // Read in the slot too: the session's own time is the one the commit follows.
    const at = synced ? syncedActivity(tx.state.meta.updated_at, records) : undefined;
    // The common case is one plan run by the storage: one round trip through a worker.
    // Held, the lease stands for the lock and the revision check: the commit's promise as is (no turn more).
    if (!tx.state.draft && !hasRepairs(tx.state)) return tx.held ? tx.commit(records, at) : tx.commitAlone("append", records, at);
    return tx.locked("append", async () => {
      const draft = tx.state.draft;
      const recovered = draft ? stoppedDraftMessages(draft, false) : [];
      const result = await tx.commit([...recovered, ...records], at);
      // A draft without output and pending messages commits nothing but goes all the same.
      if (draft) await removeDraft(tx);
      return { sequences: result.sequences.slice(recovered.length), revision: result.revision };
    });
  });
}

/**
 * Appends messages a sync copies into `session` (a `Session`; their ids and times kept), as `Session.append` does but
 * with `updated_at` the activity the source had, never the time of the sync (docs/SYNC.md "Activity").
 *
 * @example
 * ```ts
 * import type { Session } from "sessionfold";
 * declare const session: Session;
 * await appendSynced(session, [{ role: "user", parts: [{ type: "text", text: "hi" }], created_at: "2020-01-01T00:00:00.000Z" }]);
 * ```
 */
export function appendSynced(session: SessionView, messages: readonly NewMessage[]): Promise<CommitResult> {
  return appendMessages(partsOf(session).tx, messages, true);
}
