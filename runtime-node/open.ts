/**
 * Opening a store on Node: {@linkcode openNodeSessions}, its default root and the writer
 * identity it stamps. The storage worker's client (and comlink with it) is loaded only when
 * a store is opened with the worker, so a caller that reads on its own thread (the CLI's
 * read-only commands) never loads it.
 *
 * @example
 * ```ts
 * import { openNodeSessions } from "sessionfold/node";
 *
 * const { sessions, close } = await openNodeSessions({ root: "/tmp/my-store", worker: false });
 * const session = await sessions.open("coder/repo/s1");
 * console.log(session.meta.message_count);
 * await close();
 * ```
 * @module
 */
import { homedir, hostname } from "node:os";
import { join, resolve } from "node:path";
import type { LeaseLostNotice, SessionOptions, StaleLockReclaimed, WriterIdentity } from "../core/mod.ts";
import { type KeyProvider, type KnownFields, knownOptions, type StoragePort, wrongArgument } from "../core/reader.ts";
import { assertSessionOptions, Sessions } from "../core/registry.ts";

import { linuxBootId, linuxPidNamespace, linuxProcessStartTime, nodeOwnerProbe } from "./process-probe.ts";
import { openNodeStorage } from "./open-storage.ts";

/**
 * Who writes from this process, stamped into `writer.lock`.
 *
 * @example
 * ```ts
 * nodeWriterIdentity(); // { pid: 4242, hostname: "laptop", runtime: "node", bootId: "…", processStartedAt: "…", pidNamespace: "pid:[4026531836]" }
 * ```
 */
export function nodeWriterIdentity(): WriterIdentity {
  const bootId = linuxBootId();
  const pidNamespace = linuxPidNamespace();
  // The start time as the probe reads it for any pid, so this process compares equal to itself.
  const started = bootId !== undefined && pidNamespace !== undefined ? linuxProcessStartTime(process.pid) : undefined;
  return {
    pid: process.pid,
    hostname: hostname(),
    runtime: "node",
    ...(bootId !== undefined ? { bootId } : {}),
    ...(typeof started === "number" ? { processStartedAt: new Date(started).toISOString() } : {}),
    ...(pidNamespace !== undefined ? { pidNamespace } : {}),
  };
}

/**
 * The store's default root: `$SESSIONFOLD_HOME` when set (resolved against the working
 * directory), else `~/.sessionfold`. A host's project directory never receives a file.
 *
 * @example
 * ```ts
 * defaultRoot(); // "/home/me/.sessionfold"
 * ```
 */
export function defaultRoot(): string {
  const home = process.env["SESSIONFOLD_HOME"];
  return home ? resolve(home) : join(homedir(), ".sessionfold");
}

/** Options of {@linkcode openNodeSessions}. */
export interface OpenNodeSessionsOptions {
  /** The store's folder; default {@linkcode defaultRoot}. A relative path is resolved against the working directory; `""` is refused. */
  readonly root?: string;
  /** Run file I/O in a worker thread (default `true`); `false` does it on the calling thread. */
  readonly worker?: boolean;
  /** fsync every write before it resolves (default `true`); `false` only for tests and benchmarks. */
  readonly fsync?: boolean;
  /** Options for every session the registry opens, unless a call gives its own. */
  readonly defaults?: SessionOptions;
  /** Called when a dead writer's lock was taken over (`stale_lock_reclaimed`), with its old content. */
  readonly onStaleLockReclaimed?: (event: StaleLockReclaimed) => void;
  /**
   * The keys of an encrypted store (docs/FORMAT.md "Encrypted stores"). Without them an
   * encrypted store is refused with `KeyRequiredError`; with them an empty store becomes encrypted.
   */
  readonly keys?: KeyProvider;
  /** Called when a held session's commit finds its lease lost (the commit fails with `LeaseLostError`; docs/FORMAT.md "Fencing"). */
  readonly onLeaseLost?: (event: LeaseLostNotice) => void;
}

const OPEN_NODE_SESSIONS_FIELDS: KnownFields<OpenNodeSessionsOptions> = {
  root: true,
  worker: true,
  fsync: true,
  defaults: true,
  onStaleLockReclaimed: true,
  keys: true,
  onLeaseLost: true,
};

/** An open store: its sessions, the storage under them, and how to release it. */
export interface NodeSessions {
  /** Create, open, list, fork, archive and delete sessions of this store. */
  readonly sessions: Sessions;
  /** The storage port the sessions use (a {@linkcode WorkerFileStorage} unless `worker: false`). */
  readonly storage: StoragePort;
  /** The absolute root folder. */
  readonly root: string;
  /**
   * Closes the store (README "Closing a store"): what is under way settles first with its own outcome (a commit under
   * way resolves), the sessions its handles hold are given back (`writer.lock` removed), then the worker ends. Every
   * operation started after `close()` began rejects with `StoreClosedError` (code `closed`). Idempotent.
   */
  close(): Promise<void>;
}

/**
 * Opens the store at `root`: one worker serves every session of it until `close()`.
 * Nothing is touched on disk until the first call; the first write creates the root `0700`.
 *
 * @example
 * ```ts
 * const store = await openNodeSessions({ root: "/tmp/my-store" });
 * try {
 *   const session = await store.sessions.open("coder/repo/s1");
 *   console.log(session.meta.message_count);
 * } finally {
 *   await store.close();
 * }
 * ```
 * @throws {InvalidInputError} when `options` is not an object, has a field it does not know (nor its `defaults` one
 * session options lack), or `root` is not a non-empty string (absent: the default).
 * @throws {StorageError} when the worker cannot be started (TypeScript sources without tsx).
 * Storage failures surface, typed, from the calls that meet them.
 */
export async function openNodeSessions(options: OpenNodeSessionsOptions = {}): Promise<NodeSessions> {
  knownOptions(options, "openNodeSessions(options)", OPEN_NODE_SESSIONS_FIELDS);
  assertSessionOptions(options.defaults, "openNodeSessions(options).defaults");
  // An empty root would resolve to the working directory, which never receives a file (docs/FORMAT.md "The root").
  if (options.root !== undefined && (typeof options.root !== "string" || options.root === "")) {
    throw wrongArgument("openNodeSessions(options).root", "a folder's path (absent: the default root)", options.root);
  }
  const root = options.root !== undefined ? resolve(options.root) : defaultRoot();
  const storage = await openNodeStorage({ root, worker: options.worker !== false, fsync: options.fsync ?? true, keys: options.keys });
  const sessions = nodeSessions(storage, options);
  // The registry first: its operations under way may still need the storage, and so may giving its held sessions back.
  const close = async () => (await sessions.close(), await storage.close?.());
  return { sessions, storage, root, close };
}

/**
 * The registry of a Node store over its opened `storage`: this process's writer identity and
 * owner probe, and the options' defaults and listeners. What {@linkcode openNodeSessions}
 * builds over {@linkcode openNodeStorage}'s storage, and the CLI over the storage it opened.
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 * const sessions = nodeSessions(new MemoryStorage(), {});
 * await sessions.create({ agentId: "coder", workspaceId: "repo", sessionId: "s1" });
 * ```
 */
export function nodeSessions(storage: StoragePort, options: Pick<OpenNodeSessionsOptions, "defaults" | "onStaleLockReclaimed" | "onLeaseLost">): Sessions {
  const probe = nodeOwnerProbe();
  return new Sessions({
    storage,
    identity: nodeWriterIdentity(),
    ...(probe ? { probe } : {}),
    ...(options.defaults ? { defaults: options.defaults } : {}),
    ...(options.onStaleLockReclaimed ? { onStaleLockReclaimed: options.onStaleLockReclaimed } : {}),
    ...(options.onLeaseLost ? { onLeaseLost: options.onLeaseLost } : {}),
  });
}
