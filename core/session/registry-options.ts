/**
 * What the registry (`Sessions`) is given: its options, the input of `create`, `open`'s
 * hold option, `list`'s filter and problems, and `fork`'s options; and the check of its
 * calls' options, each field one the call knows (docs/decisions.md "Unknown option fields are refused").
 *
 * @module
 */
import { assertKnownFields, assertMethods, type KnownFields, knownOptions, objectArgument } from "../schema/arguments.ts";
import type { SessionMeta } from "../schema/mod.ts";
import { STORAGE_PORT_METHODS, type StoragePort } from "../storage/port.ts";
import type { CommitNotice, RemovalNotice, StaleLockReclaimed } from "./context.ts";
import type { LeaseLostNotice } from "./lease-fence.ts";
import { assertSessionOptions, SESSION_OPTION_FIELDS, type SessionOptions } from "./options.ts";
import type { OwnerProbe, WriterIdentity } from "./owner.ts";

/** Options of {@linkcode Sessions}. */
export interface SessionsOptions {
  /** Where sessions are stored: any {@linkcode StoragePort}. */
  readonly storage: StoragePort;
  /** Who writes, stamped into `writer.lock` (pid, host, runtime). */
  readonly identity?: WriterIdentity;
  /** Milliseconds since the epoch; injectable for tests. */
  readonly clock?: () => number;
  /** Options for every session this registry opens, unless a call gives its own. */
  readonly defaults?: SessionOptions;
  /**
   * Called after each write of a session opened here that gives it a new revision (a commit,
   * a compaction, a reset, a repair), and after each session written whole (created at
   * revision 0, forked, imported, or written by a sync: new here, re-read, a fork), with the
   * session and its revision now: the browser runtime announces these to other tabs. A
   * listener's error is ignored.
   */
  readonly onCommit?: (event: CommitNotice) => void;
  /**
   * Called after a session was archived or deleted: by this registry's `archive`, `delete` or
   * `purge`, or by a sync that applied the remote's archive or delete (a tombstone). A page
   * that lists sessions lists again; a handle of a deleted session says `NotFoundError` on
   * `reload()`. The browser runtime announces these to other tabs. A listener's error is ignored.
   */
  readonly onRemoved?: (event: RemovalNotice) => void;
  /**
   * What the platform knows of other processes of this host (the Node runtime passes one).
   * With it, a `writer.lock` left by a dead writer of this host and boot is taken over
   * (docs/FORMAT.md `writer.lock`); without it, every lock found is honoured.
   */
  readonly probe?: OwnerProbe;
  /** Called when a dead writer's lock was taken over, with its old content (`stale_lock_reclaimed`). */
  readonly onStaleLockReclaimed?: (event: StaleLockReclaimed) => void;
  /** Called when a held session's commit finds its lease lost (its commit then fails with `LeaseLostError`; docs/FORMAT.md "Fencing"). */
  readonly onLeaseLost?: (event: LeaseLostNotice) => void;
}

/** Opening a session to hold it: `{ hold: true }` on {@linkcode Sessions.open} and {@linkcode Sessions.create}. */
export interface HoldOption {
  /**
   * Keep the session's `writer.lock` until `session.close()` (a lease): commits then need no
   * lock file operations and no revision read, and any other writer is refused at once with
   * `WriterLockedError` naming this one. Default `false`: a lock per operation.
   */
  readonly hold?: boolean;
}

/** What {@linkcode Sessions.create} needs. */
export interface CreateSessionInput {
  readonly agentId: string;
  readonly workspaceId: string;
  /** Defaults to a new random id. */
  readonly sessionId?: string;
  readonly title?: string;
  /** Written to `instruction.md`: the session's fixed system snapshot. */
  readonly instruction?: string;
  readonly modelLabel?: string;
  /** IANA time zone of the user, e.g. `Europe/Berlin`. */
  readonly timezone?: string;
}

/** Options of {@linkcode Sessions.list}: which sessions, and where to report the unreadable. */
export interface ListSessionsOptions {
  /** Only this agent's sessions. */
  readonly agentId?: string;
  /** Only this workspace's sessions (of every agent listed). */
  readonly workspaceId?: string;
  /** List `archived-sessions/` instead of `sessions/`. */
  readonly archived?: boolean;
  /**
   * Called for each session folder whose `meta.json` cannot be read, and each refused folder above them (a link or a
   * file where a folder belongs); they are left out of the list. Without it, a refused folder refuses the listing
   * (`StoreEntryError`), and an unreadable session is left out.
   */
  readonly onProblem?: (problem: ListProblem) => void;
  /** At most this many sessions (a positive integer); the list's `cursor` then names the next page. Default: every session. */
  readonly limit?: number;
  /** The `cursor` of the page before: this page starts after its last session. */
  readonly cursor?: string;
  /**
   * Read every session's `meta.json` instead of the catalog (docs/FORMAT.md "The catalog"):
   * one read per session, and never a stale entry (retention decides on it).
   */
  readonly readMeta?: boolean;
}

/**
 * A page of `Sessions.list`: the sessions, newest activity first, and, when more follow,
 * the `cursor` that lists them.
 */
export type SessionList = SessionMeta[] & {
  /** Pass as `ListSessionsOptions.cursor` for the next page; absent on the last page. */
  readonly cursor?: string;
};

/** Options of {@linkcode Sessions.fork}. */
export interface ForkOptions {
  /** Called after each segment copied and once at the end with `(done, total)` files. */
  readonly onProgress?: (done: number, total: number) => void;
}

/**
 * A session folder whose `meta.json` could not be listed, or a folder above every session
 * that the backend refuses (a link, a file: docs/FORMAT.md "The store's boundary"), and why.
 */
export interface ListProblem {
  /**
   * The session's ref as text, `<agent_id>/<workspace_id>/<session_id>`; for a refused folder
   * above every session, its agent's or workspace's ids (`a1`, `a1/w1`), or `agents`.
   */
  readonly refText: string;
  readonly message: string;
}

/** What `Sessions.delete` removed: every copy's every file, named so nothing goes unseen. */
export interface DeletedSession {
  /** `agent/workspace/session`. */
  readonly ref: string;
  /** The places it was removed from (`live`, `archived` or both). */
  readonly places: readonly ("live" | "archived")[];
  /** Every file removed, store-relative: meta, segments, Active, the draft, quarantine, the lock. */
  readonly removed: readonly string[];
}

const SESSIONS_OPTION_FIELDS: KnownFields<SessionsOptions> = {
  storage: true,
  identity: true,
  clock: true,
  defaults: true,
  onCommit: true,
  onRemoved: true,
  probe: true,
  onStaleLockReclaimed: true,
  onLeaseLost: true,
};

/**
 * Refuses what `new Sessions(options)` cannot be built from: options that are not an object, a field it does not know,
 * a storage without the port's calls, session `defaults` with a field sessions do not know.
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 * assertSessionsOptions({ storage: new MemoryStorage(), default: {} } as never); // throws: … unknown field "default" (did you mean "defaults"?) …
 * ```
 * @throws {InvalidInputError} naming the argument or field, what was expected and what was found.
 */
export function assertSessionsOptions(options: SessionsOptions): void {
  knownOptions(options, "new Sessions(options)", SESSIONS_OPTION_FIELDS, "an object { storage, … }");
  assertMethods(options.storage, "new Sessions(options).storage", "a StoragePort", STORAGE_PORT_METHODS);
  assertSessionOptions(options.defaults, "new Sessions(options).defaults");
}

/** Where each registry call's options are named, and the fields they may have. */
const CALLS = {
  create: { where: "create(input, options)", known: { ...SESSION_OPTION_FIELDS, hold: true } satisfies KnownFields<SessionOptions & HoldOption> },
  open: {
    where: "open(ref, options)",
    known: { ...SESSION_OPTION_FIELDS, hold: true, archived: true } satisfies KnownFields<SessionOptions & HoldOption & { archived?: boolean }>,
  },
  list: {
    where: "list(options)",
    known: { agentId: true, workspaceId: true, archived: true, onProblem: true, limit: true, cursor: true, readMeta: true } satisfies KnownFields<
      ListSessionsOptions
    >,
  },
  fork: { where: "fork(source, newSessionId, options)", known: { onProgress: true } satisfies KnownFields<ForkOptions> },
  delete: { where: "delete(ref, options)", known: { archived: true } satisfies KnownFields<{ archived?: boolean }> },
} as const;

/**
 * `options` of the registry call `call` (`{}` when absent), refused when it is not an object or has a field the call
 * does not know (session options: nor `agent` or `draftFlush`).
 *
 * @example
 * ```ts
 * callOptions("delete", { archived: true }); // { archived: true }
 * callOptions("list", { agent: "coder" } as never); // throws: list(options): unknown field "agent" (did you mean "agentId"?) …
 * ```
 * @throws {InvalidInputError} naming the call, the field, what was expected and what was found.
 */
export function callOptions<T extends object>(call: keyof typeof CALLS, options: T | undefined): T {
  const { where, known } = CALLS[call];
  const checked = objectArgument(options, where, "an object", true);
  if (call === "create" || call === "open") assertSessionOptions(checked, where, known);
  else assertKnownFields(checked, where, known);
  return checked;
}
