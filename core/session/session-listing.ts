/**
 * Listing sessions (`Sessions.list`): by agent, workspace and place, newest activity first,
 * a page at a time. Each workspace's sessions come from its catalog in one read where the
 * backend keeps one (docs/FORMAT.md "The catalog"), else from every `meta.json`; a session
 * the catalog has no usable entry for is read from its `meta.json`. A folder whose
 * `meta.json` cannot be read is a problem reported to the caller, not the end of the listing.
 *
 * @module
 */
import { asSessionfoldError, InvalidInputError } from "../errors.ts";
import { isValidId } from "../layout/ids.ts";
import { sessionsDir } from "../layout/paths.ts";
import { metaOfDocument, parseMetaJson, type SessionMeta } from "../schema/records.ts";
import type { CatalogPage } from "../storage/catalog.ts";
import type { StoragePort } from "../storage/port.ts";
import { listOrRefuse, type OnRefusedEntry, workspacesOf } from "../storage/store-walk.ts";
import type { ListSessionsOptions, SessionList } from "./registry-options.ts";

/** Where a page ends: the last session listed, by the order of the listing. */
interface Cursor {
  readonly updatedAt: string;
  readonly ref: string;
}

/**
 * A session listed, with its workspace's `agent/workspace/`: its ref is that and its id, made
 * only where needed (a cursor), not for each of 10⁴ sessions.
 */
interface Listed {
  readonly meta: SessionMeta;
  readonly folder: string;
}

/** `agent/workspace/id`, the ref of a listed session as a cursor holds it. */
function refText(item: Listed): string {
  return `${item.folder}${item.meta.session_id}`;
}

/**
 * The listing's order: newest `updated_at` first, then by ref. Code-unit comparisons: ISO
 * times and ids sort as strings, and a locale-aware compare costs more than the rest of a
 * 10⁴-session listing. Refs compare as their `agent/workspace/`, then their ids: ids hold no
 * "/", so neither of two folders' texts can start the other's.
 */
function listingOrder(a: Listed, b: Listed): number {
  if (a.meta.updated_at !== b.meta.updated_at) return a.meta.updated_at > b.meta.updated_at ? -1 : 1;
  if (a.folder !== b.folder) return a.folder < b.folder ? -1 : 1;
  return a.meta.session_id < b.meta.session_id ? -1 : a.meta.session_id > b.meta.session_id ? 1 : 0;
}

/**
 * The sessions `options` selects, newest activity (`updated_at`) first, then by ref; with
 * `limit`, one page and the cursor of the next (see `Sessions.list`).
 *
 * @throws {InvalidIdError} when a filter id is not valid.
 * @throws {InvalidInputError} when `limit` is not a positive integer or `cursor` is not one this listing gave.
 */
export async function listSessions(storage: StoragePort, options: ListSessionsOptions): Promise<SessionList> {
  const { onProblem, limit, cursor, readMeta, ...filter } = options;
  if (limit !== undefined && !(Number.isSafeInteger(limit) && limit > 0)) {
    throw new InvalidInputError(`list limit must be a positive integer, got ${String(limit)}`, { limit: String(limit) });
  }
  const after = cursor === undefined ? undefined : decodeCursor(cursor);
  const listed: Listed[] = [];
  const onRefused = refusedFolder(onProblem);
  for (const { agentId, workspaceId } of await workspacesOf(storage, filter, onRefused)) {
    const dir = sessionsDir(agentId, workspaceId, filter.archived ? "archived" : "live");
    const prefix = `${agentId}/${workspaceId}`;
    // One more than the page: whether another page follows.
    const page = limit === undefined ? undefined : pageAfter(prefix, limit + 1, after);
    const metas = readMeta
      ? await readMetas(storage, dir, prefix, (await listOrRefuse(storage, dir, onRefused)).filter(isValidId), onProblem)
      : await listFolder(storage, dir, prefix, page, onProblem, onRefused);
    const folder = `${prefix}/`;
    for (const meta of metas) {
      const item = { meta, folder };
      if (!after || isAfter(item, after)) listed.push(item);
    }
  }
  listed.sort(listingOrder);
  const page = limit === undefined ? listed : listed.slice(0, limit);
  const metas: SessionMeta[] = page.map((item) => item.meta);
  const last = page[page.length - 1];
  return Object.assign(
    metas,
    listed.length > page.length && last ? { cursor: encodeCursor({ updatedAt: last.meta.updated_at, ref: refText(last) }) } : {},
  );
}

/**
 * Rebuilds the catalog of every selected workspace's `sessions/` and `archived-sessions/`
 * (see `Sessions.rebuildCatalog`); resolves how many sessions were catalogued.
 *
 * @throws {InvalidIdError} when a filter id is not valid.
 */
export async function rebuildCatalogs(storage: StoragePort, filter: { agentId?: string; workspaceId?: string }): Promise<number> {
  let catalogued = 0;
  // A refused folder is left as it is (verify reports it): its catalog is not the store's to write.
  for (const { agentId, workspaceId } of await workspacesOf(storage, filter, () => {})) {
    for (const place of ["live", "archived"] as const) {
      const dir = sessionsDir(agentId, workspaceId, place);
      let refused = false;
      await listOrRefuse(storage, dir, () => void (refused = true));
      if (!refused) catalogued += (await storage.rebuildCatalog?.(dir)) ?? 0;
    }
  }
  return catalogued;
}

/**
 * A folder above every session that the backend refuses, as a listing problem: named by its
 * agent's or workspace's ids (`a1`, `a1/w1`; `agents` for the store's own folder of agents).
 * Without `onProblem` the listing is refused with it (docs/FORMAT.md "The store's boundary"):
 * a file where a folder belongs is never taken for an empty folder, and only a caller told of
 * it lists the rest.
 */
function refusedFolder(onProblem: ListSessionsOptions["onProblem"]): OnRefusedEntry {
  return (error) => {
    if (!onProblem) throw error;
    const ids = error.details.path.split("/").filter((_, i) => i % 2 === 1);
    onProblem({ refText: ids.length > 0 ? ids.join("/") : error.details.path, message: error.message });
  };
}

/** The sessions of one folder: its catalog's entries, and `meta.json` for what the catalog cannot answer. */
async function listFolder(
  storage: StoragePort,
  dir: string,
  prefix: string,
  page: CatalogPage | undefined,
  onProblem: ListSessionsOptions["onProblem"],
  onRefused: OnRefusedEntry,
): Promise<SessionMeta[]> {
  // A catalog that cannot be read (a link or a FIFO where its file belongs) is no reason not to
  // list: the sessions' meta.json files are the truth, and are read instead.
  const catalog = await storage.readCatalog?.(dir, page).catch(() => undefined);
  if (!catalog) return readMetas(storage, dir, prefix, (await listOrRefuse(storage, dir, onRefused)).filter(isValidId), onProblem);
  const metas: SessionMeta[] = [];
  const unread = catalog.unlisted.filter(isValidId);
  for (const { name, meta } of catalog.entries) {
    if (!isValidId(name)) continue;
    try {
      const parsed = plainListing(meta, name) ?? metaOfDocument(meta, `${prefix}/${name} (catalog)`);
      // An entry that names another session is not this one's: its meta.json says what it is.
      if (parsed.session_id === name) metas.push(parsed);
      else unread.push(name);
    } catch {
      // Not a meta.json this reader takes (a version it does not know, a document that is not
      // one): the file itself is read, and its error, if any, is the one reported.
      unread.push(name);
    }
  }
  metas.push(...(await readMetas(storage, dir, prefix, unread, onProblem)));
  return metas;
}

/** Each named session's `meta.json`; one that cannot be read (a bad meta.json, a link or a FIFO where a file belongs) is a problem, not the end of the listing. */
async function readMetas(
  storage: StoragePort,
  dir: string,
  prefix: string,
  names: readonly string[],
  onProblem: ListSessionsOptions["onProblem"],
): Promise<SessionMeta[]> {
  const metas: SessionMeta[] = [];
  for (const sessionId of names) {
    const ref = `${prefix}/${sessionId}`;
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
  return metas;
}

/** A time as sessionfold writes it (docs/FORMAT.md "Lines and records"): a strict subset of what the schema takes. */
const WRITTEN_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const isCount = (value: unknown) => Number.isSafeInteger(value) && (value as number) >= 0;
const isOptionalText = (value: unknown) => value === undefined || typeof value === "string";

/**
 * The catalog entry of session `name` as a `SessionMeta` without the schema's parser, when
 * it is exactly what sessionfold writes (the schema's cold start alone costs more than a
 * 10⁴-session listing); anything else, `undefined`: the schema judges it.
 */
function plainListing(value: unknown, name: string): SessionMeta | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const m = value as Record<string, unknown>;
  const plain = m.schema_version === 1 && m.session_id === name && typeof m.agent_id === "string" && m.agent_id !== "" &&
    typeof m.workspace_id === "string" && m.workspace_id !== "" && typeof m.created_at === "string" && WRITTEN_TIME.test(m.created_at) &&
    typeof m.updated_at === "string" && WRITTEN_TIME.test(m.updated_at) && isCount(m.message_count) && isCount(m.history_bytes) &&
    isCount(m.revision) && isOptionalText(m.title) && isOptionalText(m.model_label) && m.forked_from === undefined && m.compaction === undefined;
  return plain ? (m as SessionMeta) : undefined;
}

/**
 * The page of the folder of sessions of workspace `prefix` (`agent/workspace`) that follows
 * `cursor` in the listing's order: among sessions as recently active as the cursor's, those
 * whose ref sorts after it (all of this workspace's, none, or those named after the cursor's).
 */
function pageAfter(prefix: string, limit: number, cursor: Cursor | undefined): CatalogPage {
  if (!cursor) return { limit };
  const cursorPrefix = cursor.ref.slice(0, cursor.ref.lastIndexOf("/"));
  // Refs of two workspaces compare by their `agent/workspace/` (ids hold no "/").
  const name = cursorPrefix === prefix ? cursor.ref.slice(prefix.length + 1) : `${prefix}/` > `${cursorPrefix}/` ? "" : "\uffff";
  return { limit, after: { updatedAt: cursor.updatedAt, name } };
}

/** Whether a listed session comes after the cursor in the listing's order (older, or as old with a later ref). */
function isAfter(item: Listed, cursor: Cursor): boolean {
  const updatedAt = item.meta.updated_at;
  return updatedAt < cursor.updatedAt || (updatedAt === cursor.updatedAt && refText(item) > cursor.ref);
}

/** The cursor as text a host passes back: base64url of `[updated_at, ref]`. */
function encodeCursor(cursor: Cursor): string {
  return btoa(JSON.stringify([cursor.updatedAt, cursor.ref])).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

function decodeCursor(text: string): Cursor {
  try {
    const value = JSON.parse(atob(text.replaceAll("-", "+").replaceAll("_", "/"))) as unknown;
    if (Array.isArray(value) && value.length === 2 && typeof value[0] === "string" && typeof value[1] === "string") {
      return { updatedAt: value[0], ref: value[1] };
    }
  } catch {
    // Reported below, with what was given.
  }
  throw new InvalidInputError(`list cursor ${JSON.stringify(text.slice(0, 40))} is not a cursor a listing gave`, { cursor: text.slice(0, 40) });
}
