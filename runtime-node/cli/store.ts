/**
 * The store one CLI invocation works on: a folder (`--root`) or a PostgreSQL database
 * (`--store postgres://…`, `SESSIONFOLD_STORE`), opened lazily (a read-only command on a
 * missing store opens nothing and creates nothing), the agent file of an agent, and finding
 * a session live or archived.
 *
 * @module
 */
import { homedir } from "node:os";
import { join } from "node:path";
import type { MigrationReport, Session, SessionOptions, Sessions, StaleLockReclaimed } from "../../core/mod.ts";
import { InvalidInputError, NotFoundError, UnsupportedSchemaError } from "../../core/errors.ts";
import {
  EncryptedStorage,
  formatSessionRef,
  type KeyProvider,
  sessionPaths,
  type SessionRef,
  staleCatalogEntries,
  storageForKeys,
  type StoragePort,
} from "../../core/reader.ts";
import { nodeAesGcm } from "../aes-gcm.ts";
import { NodeFileStorage } from "../fs-storage.ts";
import { formatConnectionUrl, parseConnectionUrl } from "../../runtime-postgres/connection-url.ts";
import { openNodeStorage } from "../open-storage.ts";
import { UsageError } from "./exit.ts";
import type { CliIo } from "./io.ts";
import { absoluteAsOpened, folderAsOpened, storeFolderExists } from "./user-paths.ts";

/** An opened store's storage, without its registry: what `show` reads through. */
export interface OpenStorage {
  readonly storage: StoragePort;
  /** The folder, or for a database its URL without password (what messages name). */
  readonly root: string;
  close(): Promise<void>;
}

/**
 * An opened store: the registry and the storage under it. The registry (and with it the
 * session handle's writers, `runtime-node/open.ts`) is loaded only by a command that opens
 * sessions through it.
 */
export interface OpenStore extends OpenStorage {
  readonly sessions: Sessions;
}

/** Where the store is: a folder, or a schema of a PostgreSQL database. */
export type StoreLocation =
  & (
    | { readonly kind: "files"; readonly root: string }
    | {
      readonly kind: "postgres";
      readonly root: string;
      readonly url: string;
      readonly schema: string | undefined;
    }
  )
  & {
    /** `--key-file`, else `$SESSIONFOLD_KEY_FILE`: the key file of an encrypted store. */
    readonly keyFile?: string | undefined;
  };

/**
 * `--store URL`, else `--root DIR`, else `$SESSIONFOLD_STORE`, else the folder of
 * {@linkcode resolveRoot}. A store URL is `postgres://…` (or `postgresql://…`), with
 * `?schema=NAME` for a schema other than `sessionfold`. A folder and the key file are taken
 * as the system opens them, a `..` after a link going up from its target ({@linkcode folderAsOpened},
 * {@linkcode absoluteAsOpened}).
 *
 * @throws {UsageError} for `--root` and `--store` together, or a store that is not a postgres:// URL.
 */
export async function resolveStore(
  globals: { readonly root: string | undefined; readonly store: string | undefined; readonly keyFile?: string | undefined },
  io: CliIo,
): Promise<StoreLocation> {
  const env = io.env ?? process.env;
  const keyFile = globals.keyFile ?? (env["SESSIONFOLD_KEY_FILE"] || undefined);
  const location = await resolveStoreLocation(globals, io);
  return keyFile === undefined ? location : { ...location, keyFile: absoluteAsOpened(io.cwd ?? process.cwd(), keyFile) };
}

async function resolveStoreLocation(globals: { readonly root: string | undefined; readonly store: string | undefined }, io: CliIo): Promise<StoreLocation> {
  if (globals.root !== undefined && globals.store !== undefined) {
    throw new UsageError("give --root DIR or --store URL, not both", { option: "--store" });
  }
  const env = io.env ?? process.env;
  const store = globals.store ?? (globals.root === undefined && env["SESSIONFOLD_STORE"] ? env["SESSIONFOLD_STORE"] : undefined);
  if (store === undefined) return { kind: "files", root: await resolveRoot(globals.root, io) };
  const from = globals.store !== undefined ? "--store" : "SESSIONFOLD_STORE";
  const url = parseConnectionUrl(store) ?? new URL("invalid:");
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:") {
    throw new UsageError(`${from} takes a postgres:// URL (a folder is --root DIR); got ${url.protocol === "invalid:" ? "no URL" : `a ${url.protocol} URL`}`, {
      option: from,
    });
  }
  const schema = url.searchParams.get("schema") ?? undefined;
  url.searchParams.delete("schema");
  const shown = new URL(url);
  shown.password = "";
  shown.searchParams.delete("password");
  return {
    kind: "postgres",
    root: `${formatConnectionUrl(shown)}${schema ? ` (schema ${schema})` : ""}`,
    url: formatConnectionUrl(url),
    schema,
  };
}

/**
 * `--root`, else `$SESSIONFOLD_HOME`, else `~/.sessionfold` (docs/FORMAT.md), absolute.
 * The same rule as the runtime's `defaultRoot()`, but over the injectable environment.
 */
async function resolveRoot(option: string | undefined, io: CliIo): Promise<string> {
  const env = io.env ?? process.env;
  const cwd = io.cwd ?? process.cwd();
  if (option !== undefined) return await folderAsOpened(cwd, option);
  const home = env["SESSIONFOLD_HOME"];
  if (home !== undefined && home !== "") return await folderAsOpened(cwd, home);
  return join(homedir(), ".sessionfold");
}

/** Opens the store on first use and closes it once at the end. */
export class Store {
  readonly root: string;
  readonly #location: StoreLocation;
  readonly #io: CliIo;
  readonly #onStaleLockReclaimed: ((event: StaleLockReclaimed) => void) | undefined;
  readonly #readOnly: boolean;
  #storage: Promise<OpenStorage> | undefined;
  #opened: Promise<OpenStore> | undefined;

  /** Where the store is, as the command line named it. */
  get location(): StoreLocation {
    return this.#location;
  }

  /** The store's folder when it is a folder store (`undefined` for a database). */
  get folder(): string | undefined {
    return this.#location.kind === "files" ? this.root : undefined;
  }

  /**
   * `onStaleLockReclaimed`: told each dead writer's lock the commands take over. `readOnly`:
   * the command changes nothing, so a folder store is read on this thread (unless
   * `io.worker` says otherwise): the storage worker is for a host that must stay responsive
   * while it writes, and starting it (a thread, a second module graph, a message per call)
   * would be most of a one-shot read's time (docs/decisions.md).
   */
  constructor(location: StoreLocation | string, io: CliIo, onStaleLockReclaimed?: (event: StaleLockReclaimed) => void, readOnly = false) {
    this.#location = typeof location === "string" ? { kind: "files", root: location } : location;
    this.root = this.#location.root;
    this.#io = io;
    this.#onStaleLockReclaimed = onStaleLockReclaimed;
    this.#readOnly = readOnly;
  }

  /**
   * The store for reading, or `undefined` when the root folder does not exist: a
   * read-only command then has nothing to read and must not create the root.
   */
  async forReading(): Promise<OpenStore | undefined> {
    if (!this.#storage && !(await this.#exists())) return undefined;
    return this.#open();
  }

  /**
   * The store for reading `ref`, which must be in it: a missing root means no session.
   *
   * @throws {NotFoundError} naming `ref` when the root folder does not exist.
   */
  async holding(ref: SessionRef): Promise<OpenStore> {
    const opened = await this.forReading();
    if (!opened) throw noSuchSession(ref, this.root);
    return opened;
  }

  /**
   * {@linkcode Store.holding}'s storage alone, without the registry: for a command that reads
   * the session's files itself (`show`), and so loads none of the session handle's writers.
   *
   * @throws {NotFoundError} naming `ref` when the root folder does not exist.
   */
  async holdingStorage(ref: SessionRef): Promise<OpenStorage> {
    if (!this.#storage && !(await this.#exists())) throw noSuchSession(ref, this.root);
    return this.#openStorage();
  }

  /** The store for writing; the storage creates the root (`0700`) on its first write. */
  forWriting(): Promise<OpenStore> {
    return this.#open();
  }

  /** The key file the store is opened with (`--key-file`, `$SESSIONFOLD_KEY_FILE`), absolute. */
  get keyFile(): string | undefined {
    return this.#location.keyFile;
  }

  /**
   * Encrypts the store in place with `keys` (`EncryptedStorage.migrate`, crash-safe), on its
   * backend alone: the only way the CLI reads a plaintext record of an encrypted store.
   */
  async encryptInPlace(keys: KeyProvider): Promise<MigrationReport> {
    const location = this.#location;
    if (location.kind === "files") await storeFolderExists(this.root);
    const backend: StoragePort = location.kind === "files"
      ? new NodeFileStorage({ root: this.root, fsync: this.#io.fsync ?? true })
      : await postgresBackend(location);
    try {
      return await EncryptedStorage.migrate(backend, keys, { cipher: nodeAesGcm });
    } finally {
      await backend.close?.();
    }
  }

  /** Ends the storage worker, if one was started. */
  async close(): Promise<void> {
    const opened = this.#storage;
    this.#storage = undefined;
    this.#opened = undefined;
    if (opened) await (await opened.catch(() => undefined))?.close();
  }

  async #exists(): Promise<boolean> {
    const location = this.#location;
    if (location.kind === "files") return storeFolderExists(this.root);
    // Asked of the bare backend: opening the store reads its encryption marker, and the
    // first statement of a PostgresStorage creates its schema.
    const backend = await postgresBackend(location);
    try {
      return await backend.exists();
    } finally {
      await backend.close();
    }
  }

  #open(): Promise<OpenStore> {
    this.#opened ??= this.#withSessions();
    return this.#opened;
  }

  #openStorage(): Promise<OpenStorage> {
    this.#storage ??= this.#openWithKeys();
    return this.#storage;
  }

  async #withSessions(): Promise<OpenStore> {
    const [opened, open] = await Promise.all([this.#openStorage(), import("../open.ts")]);
    const sessions = this.#location.kind === "files"
      ? open.nodeSessions(opened.storage, this.#onStaleLockReclaimed ? { onStaleLockReclaimed: this.#onStaleLockReclaimed } : {})
      : new (await import("../../core/registry.ts")).Sessions({ storage: opened.storage, identity: open.nodeWriterIdentity() });
    return { ...opened, sessions };
  }

  async #openWithKeys(): Promise<OpenStorage> {
    const location = this.#location;
    const keys = location.keyFile === undefined ? undefined : await keysOfFile(location.keyFile);
    if (location.kind === "postgres") return openPostgres(location, keys);
    // A file where the folder belongs is said to be one, before the storage meets it (docs/CLI.md "Exit status").
    await storeFolderExists(this.root);
    const storage = await openNodeStorage({ root: this.root, worker: this.#io.worker ?? !this.#readOnly, fsync: this.#io.fsync ?? true, keys });
    return { storage, root: this.root, close: async () => await storage.close?.() };
  }
}

/** The keys of a key file; its reader (and the key import) is loaded only for a store opened with one. */
async function keysOfFile(path: string): Promise<KeyProvider> {
  const { keyProviderOf, readKeyFile } = await import("../key-file.ts");
  return keyProviderOf(await readKeyFile(path));
}

/** The PostgreSQL backend of a store; `pg` (an optional peer dependency) is loaded only here. */
async function postgresBackend(location: Extract<StoreLocation, { kind: "postgres" }>) {
  let postgres: typeof import("../../runtime-postgres/mod.ts");
  try {
    postgres = await import("../../runtime-postgres/mod.ts");
  } catch (error) {
    throw new UsageError(`a postgres:// store needs the pg package (npm install pg): ${String((error as Error)?.message ?? error)}`, { option: "--store" });
  }
  let storage: InstanceType<typeof postgres.PostgresStorage>;
  try {
    storage = new postgres.PostgresStorage({ connectionString: location.url, ...(location.schema ? { schema: location.schema } : {}) });
  } catch (error) {
    // A `?schema=` or a timeout in the URL that the backend refuses is a bad command line.
    if (error instanceof InvalidInputError) throw new UsageError(`--store: ${error.message}`, { option: "--store", ...error.details });
    throw error;
  }
  return storage;
}

/**
 * Where a PostgreSQL store's data is, as its server says (`PostgresStorage.storeIdentity`),
 * asked of a bare backend so that nothing is created: two spellings of one URL answer the same.
 *
 * @example
 * ```ts
 * const url = "postgres://app@localhost/app";
 * console.log(await databaseStoreIdentity({ kind: "postgres", root: url, url, schema: undefined }));
 * ```
 * @throws {StorageError} when the server cannot be asked.
 */
export async function databaseStoreIdentity(location: Extract<StoreLocation, { kind: "postgres" }>): Promise<string> {
  const backend = await postgresBackend(location);
  try {
    return await backend.storeIdentity();
  } finally {
    await backend.close();
  }
}

/** Opens a PostgreSQL store with its keys (an encrypted store without them is refused). */
async function openPostgres(location: Extract<StoreLocation, { kind: "postgres" }>, keys: KeyProvider | undefined): Promise<OpenStorage> {
  const storage = await postgresBackend(location);
  let sealed: StoragePort;
  try {
    sealed = await storageForKeys(storage, keys, { cipher: nodeAesGcm });
  } catch (error) {
    await storage.close();
    throw error;
  }
  return { storage: sealed, root: location.root, close: () => storage.close() };
}

/**
 * Opens a session to read it: the live one, else the archived one of that id.
 *
 * @throws {NotFoundError} when neither exists.
 * @throws {UnsupportedSchemaError} naming the session when its `meta.json` has an unknown schema version.
 */
export async function openForReading(sessions: Sessions, ref: SessionRef, options: SessionOptions = {}): Promise<Session> {
  try {
    try {
      return await sessions.open(ref, options);
    } catch (error) {
      if (!(error instanceof NotFoundError) || !(await exists(sessions.storage, ref, true))) throw error;
      return await sessions.open(ref, { ...options, archived: true });
    }
  } catch (error) {
    throw await explainOpenError(sessions.storage, ref, error);
  }
}

/**
 * Opens a live session to change it; an archived one is refused by name.
 *
 * @throws {NotFoundError} when there is no such session.
 * @throws {InvalidInputError} when it is archived (archived sessions are read-only).
 * @throws {UnsupportedSchemaError} naming the session when its `meta.json` has an unknown schema version.
 */
export async function openForWriting(sessions: Sessions, ref: SessionRef, options: SessionOptions = {}): Promise<Session> {
  try {
    return await sessions.open(ref, options);
  } catch (error) {
    throw await explainOpenError(sessions.storage, ref, error, true);
  }
}

/**
 * Makes an error of opening a session say which session: an unknown schema version
 * names the session, (for live-only operations, `liveOnly`) a `NotFoundError` for a
 * session that is archived becomes an `InvalidInputError` saying so, and one for a session
 * that `ls` still lists from its catalog entry says that (see {@linkcode notFoundListed}).
 * Other errors are returned as they are.
 */
export async function explainOpenError(storage: StoragePort, ref: SessionRef, error: unknown, liveOnly = false): Promise<unknown> {
  const name = formatSessionRef(ref);
  if (error instanceof UnsupportedSchemaError && !error.message.startsWith(name)) {
    return new UnsupportedSchemaError(`${name}: ${error.message}`, { ref: name, ...error.details });
  }
  if (liveOnly && error instanceof NotFoundError && (await exists(storage, ref, true))) {
    return new InvalidInputError(`${name} is archived; archived sessions are read-only`, { ref: name, archived: true });
  }
  if (error instanceof NotFoundError) return (await notFoundListed(storage, ref)) ?? error;
  return error;
}

/**
 * The not-found error of a session whose folder holds neither `meta.json` nor messages (its
 * `meta.json` removed by hand) while its catalog entry is still there, so `ls`, which reads
 * the catalog and not a `meta.json` per session, lists it: the error names that entry and the
 * rebuild that drops it (docs/FORMAT.md "The catalog": the file wins). `undefined` when the
 * catalog has no such entry. Only called on a not-found path: it reads the workspace's catalog.
 */
async function notFoundListed(storage: StoragePort, ref: SessionRef): Promise<NotFoundError | undefined> {
  const [stale] = await staleCatalogEntries(storage, ref);
  if (stale === undefined) return undefined;
  return new NotFoundError(
    `no session ${stale.ref}: its folder holds neither meta.json nor messages, but the catalog ls reads still lists it` +
      " (sessionfold verify --repair-catalog drops the entry)",
    { ref: stale.ref, stale_catalog: stale.reason },
  );
}

/** The not-found error of a session in a store that does not exist at all. */
export function noSuchSession(ref: SessionRef, root: string): NotFoundError {
  return new NotFoundError(`no session ${formatSessionRef(ref)} (the store ${root} does not exist)`, { ref: formatSessionRef(ref), root });
}

/** `true` when a session folder (meta or messages) is there. */
export async function exists(storage: StoragePort, ref: SessionRef, archived: boolean): Promise<boolean> {
  const names = await storage.list(sessionPaths(ref, archived ? "archived" : "live").dir);
  return names.includes("meta.json") || names.includes("messages");
}
