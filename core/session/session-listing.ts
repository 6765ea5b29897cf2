/**
 * Listing sessions from their `meta.json` (`Sessions.list`): by agent, workspace and place,
 * newest update first; a folder whose `meta.json` cannot be read is a problem reported to
 * the caller, not the end of the listing.
 *
 * @module
 */
import { asSessionfoldError } from "../errors.ts";
import { assertId, isValidId } from "../layout/ids.ts";
import { sessionsDir, workspacesDir } from "../layout/paths.ts";
import { parseMetaJson, type SessionMeta } from "../schema/mod.ts";
import type { StoragePort } from "../storage/port.ts";
import type { ListSessionsOptions } from "./registry-options.ts";

/** The sessions `options` selects, newest update first (see `Sessions.list`). @throws {InvalidIdError} when a filter id is not valid. */
export async function listSessions(storage: StoragePort, options: ListSessionsOptions): Promise<SessionMeta[]> {
  const { onProblem, ...filter } = options;
  const agents = filter.agentId !== undefined ? [filter.agentId] : (await storage.list("agents")).filter(isValidId);
  const metas: SessionMeta[] = [];
  for (const agentId of agents) {
    assertId("agent_id", agentId);
    const workspaces = filter.workspaceId !== undefined ? [filter.workspaceId] : (await storage.list(workspacesDir(agentId))).filter(isValidId);
    for (const workspaceId of workspaces) {
      const dir = sessionsDir(agentId, workspaceId, filter.archived ? "archived" : "live");
      for (const sessionId of (await storage.list(dir)).filter(isValidId)) {
        const ref = `${agentId}/${workspaceId}/${sessionId}`;
        // One session that cannot be read (a bad meta.json, a link or a FIFO where a file belongs) is a problem, not the end of the listing.
        try {
          const bytes = await storage.read(`${dir}/${sessionId}/meta.json`);
          if (bytes) {
            metas.push(parseMetaJson(bytes, `${ref}/meta.json`));
          } else if ((await storage.list(`${dir}/${sessionId}/messages`)).length > 0) {
            // An empty folder (a create interrupted before meta.json) is no session at all.
            onProblem?.({ refText: ref, message: "meta.json is missing (open the session to rebuild it)" });
          }
        } catch (error) {
          onProblem?.({ refText: ref, message: asSessionfoldError(error, ref).message });
        }
      }
    }
  }
  return metas.sort((a, b) => b.updated_at.localeCompare(a.updated_at) || a.session_id.localeCompare(b.session_id));
}
