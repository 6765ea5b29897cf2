/**
 * The walk of a store's folders (docs/FORMAT.md "Where sessions live"): agents, their workspaces, and the
 * folders of sessions in each. An entry the backend refuses where a folder belongs (a link,
 * a file: docs/FORMAT.md "The store's boundary") is handed to the caller and walked as
 * empty, so one bad entry never hides the rest of the store and nothing is followed.
 *
 * @module
 */
import { StoreEntryError } from "../errors.ts";
import { assertId, isValidId } from "../layout/ids.ts";
import { workspacesDir } from "../layout/paths.ts";
import type { StoragePort } from "./port.ts";

/** Told of each entry the walk refused: the error names the entry and what was found there. */
export type OnRefusedEntry = (error: StoreEntryError) => void;

/** Which agent's and which workspace's folders a walk takes; every valid one when absent. */
export interface WalkFilter {
  readonly agentId?: string;
  readonly workspaceId?: string;
}

/**
 * The names in folder `dir` (as `StoragePort.list`); `[]` after telling `onRefused` when the
 * backend refuses the folder or one above it.
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 * await listOrRefuse(new MemoryStorage(), "agents", (error) => console.error(error.message)); // []
 * ```
 */
export async function listOrRefuse(storage: StoragePort, dir: string, onRefused: OnRefusedEntry): Promise<string[]> {
  try {
    return await storage.list(dir);
  } catch (error) {
    if (!(error instanceof StoreEntryError)) throw error;
    onRefused(error);
    return [];
  }
}

/**
 * The workspaces a filter selects: the given ids, else every valid one in the store; an
 * agent's folder the backend refuses goes to `onRefused`.
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 * await workspacesOf(new MemoryStorage(), {}, (error) => console.error(error.message)); // []
 * ```
 * @throws {InvalidIdError} when a filter id is not valid.
 */
export async function workspacesOf(
  storage: StoragePort,
  filter: WalkFilter,
  onRefused: OnRefusedEntry,
): Promise<{ agentId: string; workspaceId: string }[]> {
  const agents = filter.agentId !== undefined ? [filter.agentId] : (await listOrRefuse(storage, "agents", onRefused)).filter(isValidId);
  const found: { agentId: string; workspaceId: string }[] = [];
  for (const agentId of agents) {
    assertId("agent_id", agentId);
    const workspaces = filter.workspaceId !== undefined
      ? [filter.workspaceId]
      : (await listOrRefuse(storage, workspacesDir(agentId), onRefused)).filter(isValidId);
    for (const workspaceId of workspaces) found.push({ agentId, workspaceId });
  }
  return found;
}
