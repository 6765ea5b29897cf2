/**
 * Archiving a session, as `Sessions.archive` does: the whole folder moved to
 * `archived-sessions/` in one step, under the session's lock (docs/FORMAT.md "Where sessions
 * live").
 *
 * @module
 */
import { InvalidInputError } from "../errors.ts";
import { formatSessionRef } from "../layout/ids.ts";
import { sessionPaths } from "../layout/paths.ts";
import type { StoragePort } from "../storage/port.ts";
import { notifyRemoved } from "./context.ts";
import type { Session } from "./session.ts";
import { partsOf } from "./session-view.ts";
import { sessionExists } from "./staging.ts";

/**
 * Moves the live `session`'s folder to `archived-sessions/` under its lock, then tells the registry's `onRemoved`.
 *
 * @throws {InvalidInputError} when an archived session with that id exists.
 * @throws {WriterLockedError} when another writer holds it.
 */
export async function archiveSession(storage: StoragePort, session: Session): Promise<void> {
  const { tx } = partsOf(session);
  const archived = sessionPaths(session.ref, "archived");
  const taken = () => new InvalidInputError(`${formatSessionRef(session.ref)} already exists in archived-sessions/`, { ref: formatSessionRef(session.ref) });
  if (await sessionExists(storage, session.ref, "archived")) throw taken();
  await tx.exclusive(
    "archive",
    () =>
      tx.locked("archive", async () => {
        if (!(await storage.move(session.paths.dir, archived.dir))) throw taken();
        // The lock moved with the folder; it is this operation's, so it goes.
        await storage.remove(archived.lock);
      }),
    false,
    true,
  );
  notifyRemoved(tx.ctx, session.ref, "archived");
}
