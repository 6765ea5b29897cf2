/**
 * Builds the {@linkcode SessionWriter} a locked operation hands to the code inside it (the
 * run loop) from the handle's commit path.
 *
 * @module
 */
import type { CommitPath } from "./commit-path.ts";
import { DraftWriter } from "./draft-writer.ts";
import { PENDING_FIELD } from "./load.ts";
import { compactActive } from "./segment-close.ts";
import type { SessionWriter } from "./writer.ts";

/**
 * The {@linkcode SessionWriter} handed to the code inside one locked operation of the
 * handle whose commit path is `tx` (the run loop): its commits, draft and compactions go
 * down that commit path.
 */
export function sessionWriter(tx: CommitPath, system: () => string | null): SessionWriter {
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
    draftWriter: (current) =>
      new DraftWriter(
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
