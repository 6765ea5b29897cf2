/**
 * Checking a store's catalogs against the files (docs/FORMAT.md "The catalog"): every entry
 * compared with the listing fields of its session's `meta.json`, the file winning. Read-only;
 * `sessionfold verify` reports what it finds and `verify --repair-catalog` rebuilds.
 *
 * @module
 */
import { isValidId } from "../layout/ids.ts";
import { sessionsDir, workspacesDir } from "../layout/paths.ts";
import { catalogDocument } from "../storage/catalog.ts";
import type { StoragePort } from "../storage/port.ts";

/** A session whose catalog entry does not say what its `meta.json` says. */
export interface StaleCatalogEntry {
  /** `agent/workspace/session`. */
  readonly ref: string;
  /** Whether the session is in `archived-sessions/`. */
  readonly archived: boolean;
  /** What differs, for a person: `no entry`, or the listing fields that differ with both values. */
  readonly reason: string;
}

/**
 * Every session of the store (or of one agent / workspace) whose catalog entry differs from
 * its `meta.json`'s listing fields, or that has none; `[]` on a backend without a catalog.
 * Reads every `meta.json` once.
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 * const stale = await staleCatalogEntries(new MemoryStorage());
 * stale.length; // 0
 * ```
 */
export async function staleCatalogEntries(storage: StoragePort, filter: { agentId?: string; workspaceId?: string } = {}): Promise<StaleCatalogEntry[]> {
  const stale: StaleCatalogEntry[] = [];
  const agents = filter.agentId !== undefined ? [filter.agentId] : (await storage.list("agents")).filter(isValidId);
  for (const agentId of agents) {
    const workspaces = filter.workspaceId !== undefined ? [filter.workspaceId] : (await storage.list(workspacesDir(agentId))).filter(isValidId);
    for (const workspaceId of workspaces) {
      for (const archived of [false, true]) {
        const dir = sessionsDir(agentId, workspaceId, archived ? "archived" : "live");
        const catalog = await storage.readCatalog?.(dir);
        if (!catalog) continue;
        const entries = new Map(catalog.entries.map((entry) => [entry.name, entry.meta]));
        for (const name of (await storage.list(dir)).filter(isValidId)) {
          const bytes = await storage.read(`${dir}/${name}/meta.json`).catch(() => undefined);
          if (!bytes) continue; // no meta.json to compare with: verify reports the session itself
          const reason = entries.has(name) ? differences(entries.get(name), catalogDocument(bytes)) : "no entry";
          if (reason) stale.push({ ref: `${agentId}/${workspaceId}/${name}`, archived, reason });
        }
      }
    }
  }
  return stale;
}

/** The listing fields that differ between an entry and the file's, `""` when none does. */
function differences(entry: unknown, file: Record<string, unknown> | undefined): string {
  if (!file) return "";
  if (typeof entry !== "object" || entry === null) return "an entry without a document";
  const held = entry as Record<string, unknown>;
  const fields = [...new Set([...Object.keys(held), ...Object.keys(file)])];
  return fields
    .filter((field) => JSON.stringify(held[field]) !== JSON.stringify(file[field]))
    .map((field) => `${field} ${JSON.stringify(held[field]) ?? "missing"} where meta.json has ${JSON.stringify(file[field]) ?? "nothing"}`)
    .join(", ");
}
