/**
 * Retention (`Sessions.purge`): an explicit policy the host runs, never the store on its own
 * (docs/decisions.md "Retention is never automatic"). It selects sessions by age of last
 * activity (`meta.json`'s `updated_at`) and by count per workspace, lists them archived
 * first then oldest first, and deletes each through `Sessions.delete`, so it writes nothing
 * itself and an encrypted store is crypto-shredded the same way. A dry run lists exactly what
 * a run would delete; a session a live writer holds or whose draft is streaming is skipped
 * with the reason, and so is one whose `meta.json` cannot be read (it has no last activity
 * to judge, so it is never deleted and not counted among the newest).
 *
 * @module
 */
import { InvalidInputError, WriterLockedError } from "../errors.ts";
import { formatSessionRef, type SessionRef, sessionRef } from "../layout/ids.ts";
import { sessionPaths, type SessionPlace } from "../layout/paths.ts";
import { type KnownFields, knownOptions } from "../schema/arguments.ts";
import type { SessionMeta } from "../schema/mod.ts";
import { describeLockOwner, readLockOwner } from "./lock.ts";
import type { StoragePort } from "../storage/port.ts";
import type { DeletedSession, ListProblem, ListSessionsOptions } from "./registry-options.ts";

/** What `Sessions.purge` selects: at least one of `olderThan` and `keepNewest`. */
export interface PurgeOptions {
  /** Sessions whose last activity (`updated_at`) is more than this many milliseconds ago. */
  readonly olderThan?: number;
  /** Keeps the N most recently active sessions of each workspace (live ones before archived ones). */
  readonly keepNewest?: number;
  /** Only this agent's sessions. */
  readonly agentId?: string;
  /** Only this workspace's sessions. */
  readonly workspaceId?: string;
  /** Archived sessions are candidates too (and go first). Default: only live sessions. */
  readonly includeArchived?: boolean;
  /** Lists what a run would delete and deletes nothing. */
  readonly dryRun?: boolean;
}

const PURGE_OPTION_FIELDS: KnownFields<PurgeOptions> = {
  olderThan: true,
  keepNewest: true,
  agentId: true,
  workspaceId: true,
  includeArchived: true,
  dryRun: true,
};

/**
 * One session purge selected, and what happened to it; or one it could not judge: a session
 * whose `meta.json` cannot be read (or a refused folder above sessions, `ref` then naming its
 * agent or workspace) is `skipped` with the reason, never deleted and not counted by `keepNewest`.
 */
export interface PurgeEntry {
  /** `agent/workspace/session`. */
  readonly ref: string;
  readonly place: SessionPlace;
  /** Its last activity (`meta.json`'s `updated_at`); `null` when its `meta.json` cannot be read (then it is `skipped`). */
  readonly updatedAt: string | null;
  /** `would-delete` on a dry run; `skipped` with `reason` when it was left alone. */
  readonly outcome: "deleted" | "would-delete" | "skipped";
  readonly reason?: string;
  /** The files removed (`deleted` only). */
  readonly removed?: readonly string[];
}

/** What `Sessions.purge` did (or, on a dry run, would do), in the order it went. */
export interface PurgeResult {
  readonly dryRun: boolean;
  readonly entries: readonly PurgeEntry[];
}

/** What purge needs of `Sessions`: its listing and its one delete path (so purge itself writes nothing). */
interface PurgeTarget {
  readonly storage: StoragePort;
  list(options: ListSessionsOptions): Promise<SessionMeta[]>;
  delete(ref: SessionRef, options: { archived?: boolean }): Promise<DeletedSession>;
}

interface Candidate {
  readonly meta: SessionMeta;
  readonly place: SessionPlace;
}

/**
 * Runs the policy `options` over `sessions` (see `Sessions.purge`).
 *
 * @throws {InvalidInputError} when neither `olderThan` nor `keepNewest` is given, or one is not a non-negative number.
 * @throws {InvalidIdError} when a filter id is not valid.
 */
export async function purgeSessions(sessions: PurgeTarget, now: number, options: PurgeOptions): Promise<PurgeResult> {
  // A misspelt `dryRun` must not delete: every field is one purge knows.
  const { olderThan, keepNewest } = knownOptions(options, "purge(options)", PURGE_OPTION_FIELDS);
  if (olderThan === undefined && keepNewest === undefined) {
    throw new InvalidInputError("purge: give olderThan or keepNewest (a purge without a policy would delete every session)", { field: "olderThan" });
  }
  if (olderThan !== undefined && !(Number.isFinite(olderThan) && olderThan >= 0)) {
    throw new InvalidInputError(`purge: olderThan must be a non-negative number of milliseconds, found ${olderThan}`, { field: "olderThan" });
  }
  if (keepNewest !== undefined && !(Number.isInteger(keepNewest) && keepNewest >= 0)) {
    throw new InvalidInputError(`purge: keepNewest must be a non-negative integer, found ${keepNewest}`, { field: "keepNewest" });
  }
  // Deletion is decided on the files themselves, never on a catalog entry that may be stale.
  const filter = {
    ...(options.agentId !== undefined ? { agentId: options.agentId } : {}),
    ...(options.workspaceId !== undefined ? { workspaceId: options.workspaceId } : {}),
    readMeta: true,
  };
  // A session purge cannot read has no last activity to judge: listed as skipped, never deleted, never counted.
  const unreadable: PurgeEntry[] = [];
  const listPlace = async (place: SessionPlace) => {
    const onProblem = (problem: ListProblem) => unreadable.push(unreadableEntry(problem, place));
    return (await sessions.list({ ...filter, archived: place === "archived", onProblem })).map((meta) => ({ meta, place }));
  };
  const candidates: Candidate[] = await listPlace("live");
  if (options.includeArchived) candidates.push(...(await listPlace("archived")));
  const selected = candidates.filter((c) => (olderThan === undefined || Date.parse(c.meta.updated_at) < now - olderThan) && !kept(c, candidates, keepNewest));
  selected.sort((a, b) =>
    (a.place === b.place ? 0 : a.place === "archived" ? -1 : 1) || a.meta.updated_at.localeCompare(b.meta.updated_at) || refOf(a).localeCompare(refOf(b))
  );
  const entries: PurgeEntry[] = [];
  for (const candidate of selected) entries.push(await purgeOne(sessions, candidate, options.dryRun === true));
  return { dryRun: options.dryRun === true, entries: [...entries, ...unreadable] };
}

/** A session (or a folder above sessions) whose `meta.json` cannot be read, as purge reports it: skipped, with what was found. */
function unreadableEntry(problem: ListProblem, place: SessionPlace): PurgeEntry {
  return {
    ref: problem.refText,
    place,
    updatedAt: null,
    outcome: "skipped",
    reason: `cannot be read: ${problem.message}; not deleted, and not counted among the newest kept`,
  };
}

/** Whether `c` is among the `keepNewest` newest of its workspace: live sessions rank before archived ones, then by last activity. */
function kept(c: Candidate, all: readonly Candidate[], keepNewest: number | undefined): boolean {
  if (keepNewest === undefined) return false;
  const rank = (x: Candidate) => [x.place === "live" ? 0 : 1, x.meta.updated_at] as const;
  const same = all.filter((x) => x.meta.agent_id === c.meta.agent_id && x.meta.workspace_id === c.meta.workspace_id);
  same.sort((a, b) => rank(a)[0] - rank(b)[0] || rank(b)[1].localeCompare(rank(a)[1]) || refOf(a).localeCompare(refOf(b)));
  return same.indexOf(c) < keepNewest;
}

function refOf(c: Candidate): string {
  return `${c.meta.agent_id}/${c.meta.workspace_id}/${c.meta.session_id}`;
}

/** Deletes one session (or says it would), unless a writer holds it or a draft is streaming. */
async function purgeOne(sessions: PurgeTarget, { meta, place }: Candidate, dryRun: boolean): Promise<PurgeEntry> {
  const ref = sessionRef(meta.agent_id, meta.workspace_id, meta.session_id);
  const base = { ref: formatSessionRef(ref), place, updatedAt: meta.updated_at };
  const paths = sessionPaths(ref, place);
  // Any writer.lock is a reason to skip, even a dead owner's: purge never takes a lock over, so a dry run and a run agree.
  const owner = await readLockOwner(sessions.storage, paths.lock);
  if (owner || (await sessions.storage.readTail(paths.lock, 0))) {
    return { ...base, outcome: "skipped", reason: `locked by ${owner ? describeLockOwner(owner) : "an unreadable lock"}` };
  }
  if (await sessions.storage.readTail(paths.draft, 0)) return { ...base, outcome: "skipped", reason: "a draft is streaming (messages/assistant_message.json)" };
  if (dryRun) return { ...base, outcome: "would-delete" };
  try {
    const { removed } = await sessions.delete(ref, { archived: place === "archived" });
    return { ...base, outcome: "deleted", removed };
  } catch (error) {
    // A writer that started after the checks above: its lock refused the delete, which removed nothing.
    if (error instanceof WriterLockedError) return { ...base, outcome: "skipped", reason: error.message };
    throw error;
  }
}
