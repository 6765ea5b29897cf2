/**
 * Checking a store's catalogs against the files (docs/FORMAT.md "The catalog"): every entry
 * compared with the listing fields of its session's `meta.json`, the file winning. Read-only;
 * `sessionfold verify` reports what it finds and `verify --repair-catalog` rebuilds.
 *
 * @module
 */
import { StoreEntryError } from "../errors.ts";
import { isValidId } from "../layout/ids.ts";
import { sessionsDir } from "../layout/paths.ts";
import { catalogDocument } from "../storage/catalog.ts";
import type { StoragePort } from "../storage/port.ts";
import { listOrRefuse, workspacesOf } from "../storage/store-walk.ts";

/** The reason given for an entry whose session's folder holds no `meta.json`. */
const NO_META_JSON = "an entry, but its folder holds no meta.json";

/** A session whose catalog entry does not say what its `meta.json` says. */
export interface StaleCatalogEntry {
  /** `agent/workspace/session`. */
  readonly ref: string;
  /** Whether the session is in `archived-sessions/`. */
  readonly archived: boolean;
  /**
   * What differs, for a person: `no entry`, `an entry, but its folder holds no meta.json` (the
   * listing shows the entry of a folder left without one), or the listing fields that differ
   * with both values.
   */
  readonly reason: string;
}

/**
 * Every session of the store (or of one agent, workspace or session) whose catalog entry
 * differs from its `meta.json`'s listing fields, that has none, or whose folder has an entry
 * but no `meta.json` (removed outside sessionfold: the listing, which reads no `meta.json`,
 * still shows the entry); `[]` on a backend without a catalog. Reads every selected
 * `meta.json` once. An entry the backend refuses where a folder
 * belongs is passed over: `verify` reports it as `unsafe_entry`.
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 * const stale = await staleCatalogEntries(new MemoryStorage());
 * stale.length; // 0
 * ```
 */
export async function staleCatalogEntries(
  storage: StoragePort,
  filter: { agentId?: string; workspaceId?: string; sessionId?: string } = {},
): Promise<StaleCatalogEntry[]> {
  const stale: StaleCatalogEntry[] = [];
  const passOver = () => {};
  for (const { agentId, workspaceId } of await workspacesOf(storage, filter, passOver)) {
    for (const archived of [false, true]) {
      const dir = sessionsDir(agentId, workspaceId, archived ? "archived" : "live");
      const catalog = await storage.readCatalog?.(dir).catch((error: unknown) => {
        if (error instanceof StoreEntryError) return undefined; // a refused folder: reported by verify's walk
        throw error;
      });
      if (!catalog) continue;
      const entries = new Map(catalog.entries.map((entry) => [entry.name, entry.meta]));
      const folders = filter.sessionId === undefined ? (await listOrRefuse(storage, dir, passOver)).filter(isValidId) : undefined;
      for (const name of folders ?? [filter.sessionId!]) {
        // null: a meta.json the store refuses or cannot read, which verify reports as the session's own diagnostic.
        const bytes = await storage.read(`${dir}/${name}/meta.json`).catch(() => null);
        if (bytes === null) continue;
        let reason: string;
        if (bytes === undefined) {
          // An entry the listing shows for a folder left without meta.json (removed by hand): the file wins (docs/FORMAT.md).
          const listed = entries.has(name) && (folders ?? (await listOrRefuse(storage, dir, passOver))).includes(name);
          reason = listed ? NO_META_JSON : "";
        } else {
          reason = entries.has(name) ? differences(entries.get(name), catalogDocument(bytes)) : "no entry";
        }
        if (reason) stale.push({ ref: `${agentId}/${workspaceId}/${name}`, archived, reason });
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
