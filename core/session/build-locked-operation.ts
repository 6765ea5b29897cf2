/**
 * Builds the {@linkcode LockedOperation} a locked operation hands to the code inside it (the
 * run loop) from the handle's commit path.
 *
 * @module
 */
import type { CommitPath } from "./commit-path.ts";
import { DraftFlusher } from "./draft-flusher.ts";
import { PENDING_FIELD } from "./load-draft.ts";
import { compactActive } from "./segment-close.ts";
import type { LockedOperation } from "./locked-operation.ts";

/**
 * The {@linkcode LockedOperation} handed to the code inside one locked operation of the
 * handle whose commit path is `tx` (the run loop): its commits, draft and compactions go
 * down that commit path.
 */
export function buildLockedOperation(tx: CommitPath, system: () => string | null): LockedOperation {
  const { storage, clock } = tx.ctx;
  return {
    ref: tx.ref,
    get system() {
      return system();
    },
    state: tx.state,
    options: tx.options,
    clock,
    commit: (messages) => tx.commit(messages),
    draftFlusher: (current) =>
      new DraftFlusher(
        (bytes) => storage.replace(tx.paths.draft, bytes),
        () => {
          const { draft, pending } = current();
          return new TextEncoder().encode(`${JSON.stringify({ ...draft, [PENDING_FIELD]: pending })}\n`);
        },
        tx.options.draftFlush,
        clock,
      ),
    removeDraft: () => removeDraft(tx),
    compact: (summarizer, signal) => compactActive(tx, summarizer, signal),
  };
}

/** Removes the handle's draft file and forgets the draft (a finished or recovered reply). */
export async function removeDraft(tx: CommitPath): Promise<void> {
  await tx.ctx.storage.remove(tx.paths.draft);
  tx.state.draft = undefined;
}
