/**
 * What a sync tells its caller ({@linkcode SyncReport}): messages pushed and pulled, sessions
 * removed, forks, conflicts and re-reads (docs/SYNC.md "The engine").
 *
 * @module
 */

/** A tail that became a fork on the server: the session, the fork's ref, the last shared sequence. */
export interface SyncFork {
  readonly ref: string;
  readonly forked_as: string;
  readonly at_sequence: number;
}

/** Something sync did not do, and why (nothing was lost: the local copy stays as it was). */
export interface SyncConflict {
  readonly ref: string;
  readonly reason: string;
  readonly message: string;
}

/**
 * Sessions removed (deleted, or archived) in a sync: `pushed`, removals the remote applied;
 * `pulled`, removals done in the local store as the remote's (docs/SYNC.md "The engine").
 *
 * @example
 * ```ts
 * import { MemoryStorage, Sessions } from "sessionfold";
 * import { directRemote, syncStores, type SyncRemovals } from "sessionfold/sync";
 *
 * const report = await syncStores({ local: new Sessions({ storage: new MemoryStorage() }), remote: directRemote(new MemoryStorage()) });
 * const deletes: SyncRemovals = report.deletes;
 * console.log(`deleted: ${deletes.pushed} there, ${deletes.pulled} here`);
 * ```
 */
export interface SyncRemovals {
  pushed: number;
  pulled: number;
}

/** What a sync did. */
export interface SyncReport {
  /** Messages the remote took (applied or forked). */
  pushed: number;
  /** Messages written into the local store. */
  pulled: number;
  /** Sessions deleted: `pushed`, deletes the remote applied; `pulled`, local copies a tombstone deleted. */
  deletes: SyncRemovals;
  /** Sessions archived: `pushed`, archives the remote applied; `pulled`, live local copies archived as the remote's are. */
  archives: SyncRemovals;
  forks: SyncFork[];
  conflicts: SyncConflict[];
  /** Sessions replaced by the server's copy: a fork took their local tail, or the server kept its own segmentation. */
  reread: string[];
  /** Message ids the remote acknowledged in this sync (applied, duplicate or forked). */
  acknowledged: string[];
}
