/**
 * The storage port: the only thing a runtime gives the core. Paths are relative,
 * `/`-separated keys under the store's root, exactly as docs/FORMAT.md lays them out.
 * Every rule (recovery, locks, revisions) lives in the core on top of this port.
 *
 * @module
 */
import type { CatalogListing, CatalogPage } from "./catalog.ts";

/** The last bytes of a file together with the file's full size. */
export interface FileTail {
  /** At most the requested number of bytes, ending at the file's end. */
  readonly bytes: Uint8Array;
  /** Size of the whole file in bytes. */
  readonly size: number;
}

/**
 * Per-call write options. `durable: false` says the caller does not need this write to
 * survive a machine crash (the writer lock only matters while its process lives; `meta.json`
 * is rebuilt from the messages when it is behind), so a backend may skip its flushes; a
 * process crash still sees the write whole or not at all.
 */
export interface WriteOptions {
  readonly durable?: boolean;
}

/** The methods every {@linkcode StoragePort} has (the optional ones are looked up where used): what `new Sessions` checks it is given. */
export const STORAGE_PORT_METHODS: readonly string[] = ["read", "readTail", "list", "replace", "append", "createExclusive", "truncate", "remove", "move"];

/**
 * File-like storage over the paths of docs/FORMAT.md. A missing path is a value, never an
 * error. Folders exist implicitly: whether an empty folder is still listed is
 * unspecified, so the core never depends on it.
 */
export interface StoragePort {
  /**
   * Optional: the largest file `read` returns, when the backend was given one below
   * `MAX_FILE_BYTES`. Writers keep every file within it (docs/FORMAT.md "Limits"): nothing is
   * acknowledged that this backend's `read` would refuse. Absent: `MAX_FILE_BYTES`.
   */
  readonly maxFileBytes?: number;
  /** Whole content of a file, or `undefined` when it does not exist; a file over the limit is refused from its stored size, before it is loaded. */
  read(path: string): Promise<Uint8Array | undefined>;
  /** The last `maxBytes` bytes of a file and its size, or `undefined` when it does not exist. */
  readTail(path: string, maxBytes: number): Promise<FileTail | undefined>;
  /** Names of the direct children (files and folders) of a folder, sorted by code unit; `[]` when missing. */
  list(dir: string): Promise<string[]>;
  /** Replaces a file atomically and durably: a reader sees the old or the new content, never a mix. Creates parents. */
  replace(path: string, bytes: Uint8Array, options?: WriteOptions): Promise<void>;
  /** Appends durably; a crash may leave at most a torn final line. Creates the file and parents. */
  append(path: string, bytes: Uint8Array): Promise<void>;
  /** Creates a file only if nothing is at `path`; resolves `false` when something already is. */
  createExclusive(path: string, bytes: Uint8Array, options?: WriteOptions): Promise<boolean>;
  /** Cuts a file to `length` bytes (used to drop a torn tail before appending). */
  truncate(path: string, length: number): Promise<void>;
  /** Removes a file or a whole folder tree; a missing path is not an error. */
  remove(path: string, options?: WriteOptions): Promise<void>;
  /** Moves a file or folder tree as one step, creating `to`'s parents; resolves `false` (moving nothing) when `from` is missing or `to` exists. */
  move(from: string, to: string): Promise<boolean>;
  /**
   * Optional: takes an exclusive lock named `name` that the platform frees when its
   * holder dies (Web Locks). Resolves `false` at once when another holder has it. When a
   * backend offers it, the core uses it for writer ownership and the `writer.lock` file
   * only records the owner, so a dead tab's record can be replaced safely.
   */
  acquireLock?(name: string): Promise<boolean>;
  /** Releases a lock taken with {@linkcode StoragePort.acquireLock}. */
  releaseLock?(name: string): Promise<void>;
  /**
   * Optional: several reads as one step, answered in the order asked, in one round trip. A
   * backend offers it when it can read them all from one state of the store (one snapshot: a
   * PostgreSQL statement), so a commit can never fall between two of them, or else reads
   * each after the ones before it, so that no answer shows an older state than an earlier
   * one (files; a worker over a store without its own, `readManyByCalls`): what a reader of
   * `meta.json` before the lines needs. A `lastIn` request is a prefetch: the core uses its
   * answer only for the path it names, and an answer of `undefined` as "that folder holds no
   * file"; it reads any other path itself. A backend that cannot find a folder's last file in
   * constant time (a file system lists the whole folder, which grows with history) reads the
   * file the request's `namedIn` hint names instead (`hintedFile`: the caller judges what it
   * gets), and answers `null` (not read) when there is no such hint or no such file, unless it
   * knows the folder holds no file.
   */
  readMany?(requests: readonly ReadRequest[]): Promise<(ReadResult | null | undefined)[]>;
  /**
   * Optional: runs a {@linkcode CommitPlan} against the backend itself, in one call (what the
   * core's `applyCommitPlanByCalls` does over the other methods). A
   * backend behind a hop (a worker) offers it so a commit costs one round trip.
   */
  applyCommitPlan?(plan: CommitPlan): Promise<CommitPlanResult>;
  /**
   * Optional, with `applyCommitPlan`: writes `bytes`, the start of a file a later plan puts at `path`, where no reader
   * reads or lists them (on files, a temporary name beside `path`, its missing folders created as by `replace`), so
   * that the plan's replace of `path` names them by `id` ({@linkcode PlannedWrite.staged}) and carries only what follows
   * them. A backend may flush them at once (the plan then flushes only what follows them). A compaction stages its
   * segment and Active while its summary is made (docs/FORMAT.md "Compaction"). The caller gives `bytes` up with their whole
   * buffer, which a backend behind a hop may move. The plan may be given before this call resolves: calls are applied
   * in the order made. A plan that names the id uses the staged bytes up, whether it commits or not; staged bytes no
   * plan names are dropped with {@linkcode StoragePort.unstage}. A failed stage makes the plan that names it fail with
   * the stage's error, so a backend behind a hop may settle the call once it is sent (the worker client posts it with no
   * answer owed). `id` is the caller's, unique among the staged files. A crash leaves at most the staged bytes,
   * which no reader sees.
   */
  stage?(path: string, bytes: Uint8Array, id: string): Promise<void>;
  /**
   * Optional, with `stage`: stages the JSONL bytes of `lines` (each line followed by `\n`) as `stage` stages `bytes`,
   * joined by the backend into memory it may reuse. The caller keeps `lines` (the backend reads them during the call
   * only). A worker's client joins them into shared memory its worker writes from, so a compaction's two large files
   * are neither joined into fresh memory nor moved (docs/decisions.md "A compaction's CPU: its staged files joined
   * into reused memory"). Where it is missing the caller joins them and calls `stage`.
   */
  stageLines?(path: string, lines: readonly Uint8Array[], id: string): Promise<void>;
  /** Drops what {@linkcode StoragePort.stage} staged under `id` (nothing when no such id is staged). */
  unstage?(id: string): Promise<void>;
  /**
   * Optional: keeps `path` ready (an open file) until `unpinFile`, for a writer that holds a
   * session (a lease) and appends to one file (`active.jsonl`) or tail-reads another
   * (`writer.lock`, the fence) again and again. What a read returns is still what the path
   * holds now. A backend that has nothing to keep open leaves both out. Changes to the file
   * other than appends still go through the port as usual.
   */
  pinFile?(path: string): Promise<void>;
  /** Ends what {@linkcode StoragePort.pinFile} started. */
  unpinFile?(path: string): Promise<void>;
  /**
   * Optional: the catalog of the folder of sessions `dir` (docs/FORMAT.md "The catalog"):
   * one entry per session holding its `meta.json` document, read in one step, never by
   * reading each `meta.json`. A backend that offers it keeps the catalog itself: every
   * `replace` or `createExclusive` of a session's `meta.json` (`cataloguedPath`) writes its
   * entry in the same call, and a `move` or `remove` of a session folder carries its entry
   * along. With `page`, a backend that keeps an index by activity may answer with that page
   * only. Resolves `undefined` when this store keeps no catalog (the caller reads every
   * `meta.json`, as before).
   */
  readCatalog?(dir: string, page?: CatalogPage): Promise<CatalogListing | undefined>;
  /**
   * Optional, with {@linkcode StoragePort.readCatalog}: rebuilds the catalog of `dir` from
   * every session's `meta.json` (a stale or missing catalog, docs/FORMAT.md "The catalog").
   * Writers of other sessions may commit meanwhile; none of their entries is lost. Resolves
   * how many sessions it catalogued.
   */
  rebuildCatalog?(dir: string): Promise<number>;
  /**
   * Optional: names where this store's data is, as the place that holds it answers (a
   * PostgreSQL server: its cluster, database and the store's schema), never from how the
   * handle was configured: two handles on the same data answer the same text however they
   * were reached (two spellings of one URL), handles on other data another. Compared for
   * equality only; `syncStores` refuses a remote whose store answers as the local one's.
   * Creates nothing (a store never written answers too).
   */
  storeIdentity?(): Promise<string>;
  /** Releases what the backend holds (a worker, a database connection). Optional. */
  close?(): Promise<void>;
}

/**
 * One read of {@linkcode StoragePort.readMany}: the whole file at `path` (as `read`, with its
 * limits), or with `tailBytes` its last bytes (as `readTail`); or, with `lastIn`, the last
 * `tailBytes` of the file whose name sorts last in that folder (folders below it skipped), or
 * of the file its `namedIn` hint names ({@linkcode LastFileRequest}).
 */
export type ReadRequest = { readonly path: string; readonly tailBytes?: number } | LastFileRequest;

/**
 * The `lastIn` prefetch of {@linkcode ReadRequest}: the tail of a folder's last file. With
 * `namedIn`, a backend that cannot find that file in constant time reads the one the hint
 * names: the field `field` of the JSON object at `namedIn.path`, read whole by an earlier
 * request of the same call, holds a segment range `{"start", "end"}`, and the file is that
 * segment's name (docs/FORMAT.md "Segments") in the folder `lastIn`. `meta.json`'s
 * `newest_segment` is such a hint: it keeps an open one call on a backend that lists a
 * folder whole (a file system), whatever the history's length. A hint that is not a range,
 * not read earlier or names no file is no read (`null`); it never names a path outside
 * `lastIn`. The answer's `path` says which file was read: the caller judges it.
 */
export interface LastFileRequest {
  /** The folder whose last file is asked for. */
  readonly lastIn: string;
  /** How many bytes of its end to read. */
  readonly tailBytes: number;
  /** Where the caller believes that file is named (see above). */
  readonly namedIn?: { readonly path: string; readonly field: string };
}

/**
 * What one {@linkcode ReadRequest} found (`undefined` in its place when nothing is there; `null`
 * for a `lastIn` prefetch the backend did not read).
 */
export interface ReadResult {
  /** The file read (for `lastIn`, the one found). */
  readonly path: string;
  /** The whole file, or its last `tailBytes` bytes. */
  readonly bytes: Uint8Array;
  /** Size of the whole file in bytes. */
  readonly size: number;
}

/**
 * One write of a {@linkcode CommitPlan}, done in order: each is in place before the next is. A backend may write (and
 * flush) a later replace's bytes under a name no reader reads before an earlier one is in place (Node's files flush a
 * compaction's three files together, docs/FORMAT.md "Compaction"); when the plan then fails before a write is in
 * place, that write and the later ones are not done.
 */
export interface PlannedWrite {
  readonly op: "append" | "replace";
  readonly path: string;
  readonly bytes: Uint8Array;
  /** Passed to `replace` as {@linkcode WriteOptions.durable}. */
  readonly durable?: boolean;
  /**
   * The caller is done with `bytes` and with the whole buffer under them: a backend behind a
   * hop (a worker) may move that buffer instead of copying it, which leaves them empty on the
   * caller's side. For large writes built for this plan alone (a compaction's segment and
   * Active; the segment may be a view that leaves room unused at its buffer's end).
   */
  readonly handOver?: boolean;
  /**
   * The file is the bytes {@linkcode StoragePort.stage} staged under this id, followed by `bytes` (a `replace` only, on
   * a backend that stages; `applyCommitPlanByCalls` refuses it).
   */
  readonly staged?: string;
}

/**
 * A whole mutating operation whose writes are known before it starts, or (without `lock`
 * and `expect`) the writes of an operation that already holds the lock. An operation that
 * holds the lock across other work (a run, a compaction) starts with a plan that takes it
 * with `hold` and ends with one that gives it back with `release`.
 */
export interface CommitPlan {
  /**
   * The `writer.lock` to create for the span of the writes: its path, content and `lock_id`;
   * `covers`, the paths (a file, or a folder and all under it) whose writes the lock guards
   * while held, by default its own folder (a session's). A backend whose lock lives on a
   * connection (PostgreSQL) sends those writes on it, so none lands once the lock is lost
   * (docs/POSTGRES.md "Fencing").
   */
  readonly lock?: { readonly path: string; readonly bytes: Uint8Array; readonly lockId: string; readonly covers?: readonly string[] };
  /**
   * With `lock`: keep the lock once the plan has committed, for an operation that goes on;
   * a later plan's `release` gives it back. A plan that does not commit releases it anyway.
   */
  readonly hold?: boolean;
  /** `meta.json` must still hold `revision` (`null`: must be missing), or nothing is written. */
  readonly expect?: { readonly path: string; readonly revision: number | null };
  /**
   * The held lock these writes run under (a lease): before any write, `writer.lock` must
   * still carry `lockId`, or nothing is written and the plan ends `locked` (docs/FORMAT.md
   * "Fencing": a holder learns its lock was taken before its next commit lands).
   */
  readonly fence?: { readonly path: string; readonly lockId: string };
  readonly writes: readonly PlannedWrite[];
  /**
   * After the writes, whether they succeeded or not: give back a lock an earlier plan took
   * with `hold`. `writer.lock` is removed only if it still carries `lockId`.
   */
  readonly release?: { readonly path: string; readonly lockId: string };
}

/** How a {@linkcode CommitPlan} ended when it did not throw. */
export type CommitPlanResult =
  | { readonly outcome: "committed" }
  /** Someone else holds the lock (for a plan with `fence`: the held lock is gone or another's); nothing was written. */
  | { readonly outcome: "locked" }
  /** `meta.json` holds another revision (`null`: it is missing); nothing was written. */
  | { readonly outcome: "conflict"; readonly revision: number | null };
