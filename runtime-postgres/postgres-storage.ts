import pg from "pg";
import {
  applyCommitPlanByCalls,
  assertStoragePath,
  catalogDocument,
  type CatalogEntry,
  type CatalogListing,
  type CatalogPage,
  cataloguedFolder,
  type CommitPlan,
  type CommitPlanResult,
  type FileTail,
  formatBytes,
  InvalidInputError,
  LeaseLostError,
  MAX_FILE_BYTES,
  type PlannedWrite,
  type ReadRequest,
  type ReadResult,
  StorageError,
  StorageFullError,
  type StoragePort,
  StoreClosedError,
  StoreEntryError,
} from "../core/mod.ts";
import { type KnownFields, knownOptions } from "../core/internal.ts";
import { binaryArray } from "./binary-array.ts";
import { boundedWrites, CHUNK_BYTES, type ChunkWrite } from "./bounded-chunks.ts";
import { catalogStatement } from "./catalog-statement.ts";
import { DEFAULT_SCHEMA, parseConnectionUrl } from "./connection-url.ts";
import { KeptConnection } from "./kept-connection.ts";
import { firstValue, type NamedStatement } from "./lean-statement.ts";
import { readStatement, readValues } from "./read-statement.ts";
import { advisoryLockKey, migrate, quoteIdent } from "./schema.ts";

/** How long connecting may take by default (docs/POSTGRES.md "Timeouts"): a server that never answers is an error, not a hang. */
const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
/** How long one statement may run by default (the server's `statement_timeout`). */
const DEFAULT_STATEMENT_TIMEOUT_MS = 60_000;
/** How many sessions' advisory lock numbers a handle keeps computed. */
const LOCK_KEYS_KEPT = 4096;
/** How much longer than the statement timeout the client waits for an answer before it drops the connection. */
const ANSWER_GRACE_MS = 5_000;

/**
 * Options of {@linkcode PostgresStorage}. Give `connectionString` or `pool` settings
 * (or both; the fields of `pool` win); with neither, `pg` reads the usual `PG*` variables.
 */
export interface PostgresStorageOptions {
  /** A `postgres://user@host:port/database` URL; `?host=/path/to/socket-folder` for a Unix socket. */
  readonly connectionString?: string;
  /** The PostgreSQL schema that holds this store's tables (default `sessionfold`): one database can hold many stores. */
  readonly schema?: string;
  /** Connections for reads and writes (default 10). */
  readonly maxConnections?: number;
  /**
   * Connections that may hold a writer lock at once (default 64): each held lock keeps one
   * connection of its own, so the server frees the lock when this process dies.
   */
  readonly maxLockConnections?: number;
  /**
   * How long connecting may take, in ms (default 10 000; `connect_timeout=<seconds>` in the
   * URL sets it too, `0` waits for ever). A server that accepts and never answers fails the
   * operation with a `StorageError` instead of hanging it.
   */
  readonly connectTimeoutMillis?: number;
  /**
   * How long one statement may run, in ms (default 60 000; `statement_timeout=<ms>` in the
   * URL sets it too): the server's `statement_timeout`, and 5 s later the client gives up
   * on a server that never answers and drops the connection.
   */
  readonly statementTimeoutMillis?: number;
  /**
   * The largest file `read` loads (default {@linkcode MAX_FILE_BYTES}, 256 MiB): a larger
   * one is refused from its stored size (`octet_length` on the server) before any byte of it travels.
   */
  readonly maxFileBytes?: number;
  /**
   * Told when a lock this handle holds (a lease, or an operation's lock) is lost because its
   * connection ended (a terminated backend, a server restart, a dropped network): from then
   * on every write to that session through this handle is refused with `LeaseLostError`
   * until the lock is given back (the session handle closed).
   */
  readonly onLeaseLost?: (event: LeaseLost) => void;
  /** Further `pg` pool settings (ssl, passwords, timeouts), passed as they are and winning over the above. */
  readonly pool?: pg.PoolConfig;
}

const POSTGRES_STORAGE_FIELDS: KnownFields<PostgresStorageOptions> = {
  connectionString: true,
  schema: true,
  maxConnections: true,
  maxLockConnections: true,
  connectTimeoutMillis: true,
  statementTimeoutMillis: true,
  maxFileBytes: true,
  onLeaseLost: true,
  pool: true,
};

/** What {@linkcode PostgresStorageOptions.onLeaseLost} is told. */
export interface LeaseLost {
  /** The lock's name (a session's `writer.lock` path). */
  readonly lock: string;
  /** The error every later write under the lock gets. */
  readonly error: LeaseLostError;
}

/** A lock this handle holds: the connection it lives on, and, once that connection ended, the error writes under it get. */
interface HeldLock {
  /** The lock's name (its file's path). */
  readonly name: string;
  readonly client: pg.PoolClient;
  /** What the lock guards: the paths (files, or folders and all under them) whose writes go through `client` (`CommitPlan`'s `lock.covers`, by default the lock's folder: the session). */
  readonly covers: readonly string[];
  readonly onEnd: (error?: unknown) => void;
  lost?: LeaseLostError;
}

type Row = Record<string, unknown>;

/** A read waiting for its batch's statement. */
interface PendingRead {
  readonly request: ReadRequest;
  readonly resolve: (found: ReadResult | undefined) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * A {@linkcode StoragePort} over PostgreSQL: the paths of docs/FORMAT.md are keys of a table,
 * a file is the chunks it was appended in (an append is one new row, `readTail` reads only
 * the newest; a large file written whole is chunks of 16 KiB, bounded-chunks.ts), `replace`,
 * `move` and `remove` are single transactions, writer ownership is a
 * session-level advisory lock on a connection of its own (freed by the server when its
 * holder's connection dies), and a commit plan is one statement. The tables are created and
 * migrated on first use (docs/POSTGRES.md). Several processes and hosts may share one store.
 *
 * @example
 * ```ts
 * import { Sessions } from "sessionfold";
 * import { PostgresStorage } from "sessionfold/postgres";
 *
 * const storage = new PostgresStorage({ connectionString: "postgres://app@db.internal/app" });
 * const sessions = new Sessions({ storage });
 * // ... use sessions ...
 * await storage.close();
 * ```
 */
export class PostgresStorage implements StoragePort {
  readonly #schema: string;
  readonly #s: string;
  /** What both pools connect with: who and where a failure to connect names. */
  readonly #connection: pg.PoolConfig;
  readonly #pool: pg.Pool;
  readonly #lockPool: pg.Pool;
  /** Locks this handle holds, each on its own connection (checked out of `#lockPool`), by name. */
  readonly #held = new Map<string, HeldLock>();
  /** The same locks by each path they cover (a file, or a folder and all under it). */
  readonly #fenced = new Map<string, HeldLock>();
  /** The largest file `read` returns (`maxFileBytes`); writers keep every file within it (docs/FORMAT.md "Limits"). */
  readonly maxFileBytes: number;
  readonly #onLeaseLost: ((event: LeaseLost) => void) | undefined;
  /** Per path, the last write issued: writes to one path run in the order they were issued. */
  readonly #queues = new Map<string, Promise<unknown>>();
  /** Advisory lock numbers by lock name, at most {@linkcode LOCK_KEYS_KEPT}. */
  readonly #lockKeys = new Map<string, string>();
  /** `run_plan`'s named statement, sent lean (lean-statement.ts). */
  readonly #runPlan: NamedStatement;
  /** `run_append`'s named statement (an append's per-operation commit), the same way. */
  readonly #runAppend: NamedStatement;
  /** The statement a batch of reads goes as, prepared once per connection. */
  readonly #readMany: NamedStatement;
  /** A connection of `#pool` kept between the commit plans that run on it (kept-connection.ts). */
  readonly #commits: KeptConnection;
  /** Reads asked for in this turn of the event loop, sent together as one statement. */
  #batch: PendingRead[] | undefined;
  #ready: Promise<void> | undefined;
  /** Set once the schema is migrated: a statement then waits for nothing first (not even a settled promise's turn). */
  #migrated = false;
  /** Set once `close()` began: no connection is handed out afterwards. */
  #closed = false;
  /** Calls under way that run on a held lock's connection or may take one (commit plans, writes, locks): `close()` waits for them. */
  #calls = 0;
  /** Resolves `close()`'s wait once the last call under way ended. */
  #callsEnded: (() => void) | undefined;

  /**
   * @throws {InvalidInputError} when `options` is not an object, has a field it does not know (`pool` is handed to `pg`
   * as it is), or names a schema that is not a plain identifier.
   */
  constructor(options: PostgresStorageOptions = {}) {
    knownOptions(options, "new PostgresStorage(options)", POSTGRES_STORAGE_FIELDS);
    this.#schema = options.schema ?? DEFAULT_SCHEMA;
    if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(this.#schema)) {
      throw new InvalidInputError(`PostgreSQL schema name ${JSON.stringify(this.#schema)} is not a plain identifier (letters, digits, _; at most 63)`, {
        schema: this.#schema,
      });
    }
    this.#s = quoteIdent(this.#schema);
    this.#runPlan = {
      name: `${this.#schema}.run_plan`,
      text:
        `SELECT ${this.#s}.run_plan($1, $2, $3, $4, $5, $6, $7::text[], $8::text[], $9, $10::integer[], $11::bigint[], $12, $13, $14, $15::text[], $16::text[]) AS outcome`,
    };
    this.#runAppend = {
      name: `${this.#schema}.run_append`,
      text: `SELECT ${this.#s}.run_append($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) AS outcome`,
    };
    this.#readMany = readStatement(this.#schema);
    this.maxFileBytes = options.maxFileBytes ?? MAX_FILE_BYTES;
    this.#onLeaseLost = options.onLeaseLost;
    const base: pg.PoolConfig = { ...(options.connectionString ? { connectionString: options.connectionString } : {}), ...timeouts(options), ...options.pool };
    this.#connection = base;
    // An idle pool must not keep a process alive that has nothing else to do.
    this.#pool = new pg.Pool({ max: options.maxConnections ?? 10, allowExitOnIdle: true, ...base });
    this.#lockPool = new pg.Pool({ max: options.maxLockConnections ?? 64, allowExitOnIdle: true, ...base });
    this.#commits = new KeptConnection(this.#pool);
    for (const pool of [this.#pool, this.#lockPool]) {
      // A connection that drops while idle is the pool's to replace, not the process's crash.
      pool.on("error", () => undefined);
      // Nor while checked out (pg-pool listens only to idle ones): the operation that meets
      // the dead connection gets the error as a typed StorageError.
      pool.on("connect", (client) => client.on("error", () => undefined));
    }
  }

  /** The PostgreSQL schema this store lives in. */
  get schema(): string {
    return this.#schema;
  }

  /**
   * Whether this store's schema has been created, without creating it (every other method
   * creates or migrates it first): lets a read-only tool leave a database untouched.
   */
  async exists(): Promise<boolean> {
    this.#commits.spare();
    try {
      const result = await this.#pool.query("SELECT to_regclass($1) IS NOT NULL AS found", [`${this.#s}.schema_version`]);
      return result.rows[0]!.found === true;
    } catch (error) {
      throw this.#failure(error, `looking for schema ${this.#schema}`);
    }
  }

  /**
   * Where this store's data is, as the server says (`StoragePort.storeIdentity`): the
   * cluster (`pg_control_system()`'s `system_identifier`, with the server's start time, which
   * tells a running server from a physical copy of it, such as a restored backup or a replica,
   * that shares the identifier), the database's oid and the schema. Two URLs that reach one
   * database, however spelled, answer the same. Creates nothing.
   *
   * @example
   * ```ts
   * const a = new PostgresStorage({ connectionString: "postgres://app@localhost/app" });
   * const b = new PostgresStorage({ connectionString: "postgresql://app@localhost:5432/app" });
   * console.log((await a.storeIdentity()) === (await b.storeIdentity())); // true: one store
   * ```
   * @throws {StorageError} when the server cannot be asked.
   */
  async storeIdentity(): Promise<string> {
    this.#commits.spare();
    try {
      const result = await this.#pool.query(
        "SELECT c.system_identifier::text AS cluster, extract(epoch FROM pg_postmaster_start_time())::text AS started, d.oid::text AS database" +
          " FROM pg_control_system() c, pg_database d WHERE d.datname = current_database()",
      );
      const { cluster, started, database } = result.rows[0] as { cluster: string; started: string; database: string };
      return `postgres cluster ${cluster} started ${started} database ${database} schema ${this.#schema}`;
    } catch (error) {
      throw this.#failure(error, `asking the server which store schema ${this.#schema} is`);
    }
  }

  async read(path: string): Promise<Uint8Array | undefined> {
    assertStoragePath(path);
    return (await this.#enqueue({ path }))?.bytes;
  }

  async readTail(path: string, maxBytes: number): Promise<FileTail | undefined> {
    assertStoragePath(path);
    const found = await this.#enqueue({ path, tailBytes: maxBytes });
    return found && { bytes: found.bytes, size: found.size };
  }

  /**
   * The reads of `requests` in one statement, so from one snapshot: no commit falls between
   * two of them. Reads asked for by `read`, `readTail` and `readMany` in the same turn of the
   * event loop go out together too (an open's existence check joins its reads).
   */
  async readMany(requests: readonly ReadRequest[]): Promise<(ReadResult | undefined)[]> {
    for (const request of requests) {
      if ("lastIn" in request) assertStoragePath(request.lastIn, true);
      else assertStoragePath(request.path);
    }
    return Promise.all(requests.map((request) => this.#enqueue(request)));
  }

  async list(dir: string): Promise<string[]> {
    assertStoragePath(dir, true);
    const rows = await this.#read(`SELECT name FROM ${this.#s}.entries WHERE parent = $1`, [dir]);
    // Sorted by UTF-16 code unit like every backend (the index's byte order differs above U+FFFF).
    return rows.map((row) => row.name as string).sort();
  }

  async replace(path: string, bytes: Uint8Array): Promise<void> {
    assertStoragePath(path);
    if (bytes.length > CHUNK_BYTES && !path.endsWith(META_SUFFIX)) {
      // Stored as bounded chunks (bounded-chunks.ts): run_plan writes them in one statement, with no lock and no check
      // (its parameters copy the bytes).
      const values = this.#planParameters({ writes: [{ op: "replace", path, bytes }] });
      await this.#inOrder(path, () => this.#write([path], this.#runPlan.text, values, `replace on ${path}`));
      return;
    }
    const copy = Buffer.from(bytes);
    // Outside a commit the revision stays unknown (docs/POSTGRES.md); the catalog entry is kept.
    const { listing, listedAt } = metaColumnsOf(path, bytes);
    await this.#inOrder(path, () => this.#write([path], `SELECT ${this.#s}.replace($1, $2, NULL, $3, $4)`, [path, copy, listing, listedAt]));
  }

  async append(path: string, bytes: Uint8Array): Promise<void> {
    assertStoragePath(path);
    const copy = Buffer.from(bytes);
    await this.#inOrder(path, () => this.#write([path], `SELECT ${this.#s}.append($1, $2)`, [path, copy]));
  }

  async createExclusive(path: string, bytes: Uint8Array): Promise<boolean> {
    assertStoragePath(path);
    const copy = Buffer.from(bytes);
    const { listing, listedAt } = metaColumnsOf(path, bytes);
    const rows = await this.#inOrder(
      path,
      () => this.#write([path], `SELECT ${this.#s}.create_exclusive($1, $2, $3, $4) AS created`, [path, copy, listing, listedAt]),
    );
    return rows[0]!.created === true;
  }

  async truncate(path: string, length: number): Promise<void> {
    assertStoragePath(path);
    await this.#inOrder(path, () => this.#write([path], `SELECT ${this.#s}.truncate($1, $2)`, [path, Math.max(0, Math.floor(length))]));
  }

  async remove(path: string): Promise<void> {
    assertStoragePath(path);
    await this.#inOrder(path, () => this.#write([path], `SELECT ${this.#s}.remove($1)`, [path]));
  }

  async move(from: string, to: string): Promise<boolean> {
    assertStoragePath(from);
    assertStoragePath(to);
    const rows = await this.#write([from, to], `SELECT ${this.#s}.move($1, $2) AS moved`, [from, to]);
    return rows[0]!.moved === true;
  }

  /**
   * Takes the advisory lock of `name` on a connection of its own, which this handle keeps
   * until {@linkcode PostgresStorage.releaseLock}: if the process dies, the server ends the
   * connection and the lock with it. Resolves `false` at once when anyone else (another
   * process, host or handle) holds it. While it is held, every write of this handle under
   * the lock's folder runs on that connection (fencing, docs/POSTGRES.md).
   */
  async acquireLock(name: string): Promise<boolean> {
    this.#calls += 1;
    try {
      assertStoragePath(name);
      if (!this.#migrated) await this.#ensureReady();
      if (this.#held.has(name)) return false;
      const client = await this.#connect(this.#lockPool);
      try {
        const result = await client.query<{ taken: boolean }>("SELECT pg_try_advisory_lock($1) AS taken", [this.#lockKey(name)]);
        if (result.rows[0]!.taken && !this.#held.has(name)) {
          this.#hold(name, client);
          return true;
        }
        if (result.rows[0]!.taken) await client.query("SELECT pg_advisory_unlock($1)", [this.#lockKey(name)]);
        client.release();
        return false;
      } catch (error) {
        client.release(true);
        throw storageError(error, `taking the lock ${name}`);
      }
    } finally {
      this.#callEnded();
    }
  }

  async releaseLock(name: string): Promise<void> {
    this.#calls += 1;
    try {
      const held = this.#unhold(name);
      if (!held || held.lost) return;
      try {
        await held.client.query("SELECT pg_advisory_unlock($1)", [this.#lockKey(name)]);
        held.client.release();
      } catch {
        // Ending the connection frees the lock as surely as unlocking it.
        held.client.release(true);
      }
    } finally {
      this.#callEnded();
    }
  }

  /**
   * A whole commit plan as one statement on the server: lock, revision check, writes,
   * release, in one transaction (so a failed write leaves nothing of the plan). A plan
   * that holds its lock leaves it on the connection that ran it; a plan under a lock this
   * handle holds runs on that lock's connection, so it commits only while the lock is
   * still held (a lost lock: `LeaseLostError`, nothing sent).
   */
  async applyCommitPlan(plan: CommitPlan): Promise<CommitPlanResult> {
    this.#calls += 1;
    try {
      if (!this.#migrated) await this.#ensureReady();
      for (const write of plan.writes) assertStoragePath(write.path);
      if (plan.lock && this.#held.has(plan.lock.path)) return { outcome: "locked" };
      const released = plan.release ? this.#held.get(plan.release.path) : undefined;
      if (plan.release && (!released || released.lost)) {
        // The lock is gone already (its connection ended): there is nothing to give back, and
        // nothing may be written as its holder.
        if (released) this.#unhold(plan.release.path);
        if (plan.writes.length > 0) throw released?.lost ?? this.#lostError(plan.release.path, "not-written");
        return { outcome: "committed" };
      }
      // A plan under a lock this handle holds runs on that lock's connection; one that takes a
      // lock to hold gets a connection of its own; any other runs on the shared pool.
      const holder = released ?? (plan.lock ? undefined : this.#fencing(plan.writes.map((write) => write.path)));
      if (holder?.lost) throw holder.lost;
      // On the shared pool: the connection kept for commits when it is free.
      const pooled = !holder && !(plan.lock && plan.hold);
      const client = holder?.client ?? (pooled ? this.#commits.take() : undefined) ?? (await this.#connect(pooled ? this.#pool : this.#lockPool));
      // A per-operation commit of an append has a function of its own (`run_append`, scalar arguments); any other plan, `run_plan`.
      const append = appendCommitOf(plan);
      const statement = append ? this.#runAppend : this.#runPlan;
      const parameters = append ? this.#appendParameters(plan, append) : this.#planParameters(plan);
      let outcome: string | null;
      try {
        outcome = await firstValue(client, statement, parameters);
      } catch (error) {
        if (holder) {
          if (holder.lost || isConnectionLost(error)) throw this.#lostOnTheWay(holder, error);
          // A failed release: the session lock goes with its connection. A failed write under
          // the lock leaves the lock held (the transaction rolled back, the connection lives).
          if (plan.release) {
            this.#unhold(holder.name);
            holder.client.release(true);
          }
        } else if (pooled) {
          this.#commits.discard(client, isConnectionLost(error));
        } else {
          // A session lock the failed plan may have taken goes with its connection.
          client.release(true);
        }
        throw storageError(error, "running a commit plan");
      }
      if (outcome === "check") {
        if (pooled) this.#commits.put(client);
        else if (!holder) client.release();
        // meta.json is not a document the server can read; the core's own steps (over this
        // port's methods, so still fenced) read it and say what is wrong with it.
        return applyCommitPlanByCalls(this, plan);
      }
      if (released) {
        this.#unhold(plan.release!.path);
        if (!released.lost) released.client.release();
      } else if (pooled) {
        this.#commits.put(client);
      } else if (!holder) {
        if (outcome === "committed") this.#hold(plan.lock!.path, client, plan.lock!.covers);
        else client.release();
      }
      if (outcome === "committed") return { outcome: "committed" };
      if (outcome === "locked") return { outcome: "locked" };
      if (!outcome?.startsWith("conflict:")) {
        throw new StorageError(`PostgreSQL storage: running a commit plan: the server answered ${JSON.stringify(outcome)}`);
      }
      const revision = outcome.slice("conflict:".length);
      return { outcome: "conflict", revision: revision === "null" ? null : Number(revision) };
    } finally {
      this.#callEnded();
    }
  }

  /** `run_plan`'s parameters: the writes' paths, lengths and columns as binary arrays, their bytes as one value. */
  #planParameters(plan: Omit<CommitPlan, "writes"> & { readonly writes: readonly ChunkWrite[] }): unknown[] {
    const writes = boundedWrites(plan.writes, META_SUFFIX);
    const ops: string[] = [];
    const paths: string[] = [];
    const lengths: number[] = [];
    const revisions: (number | null)[] = [];
    const listings: (string | null)[] = [];
    const listedAts: (string | null)[] = [];
    for (const write of writes) {
      const columns = write.op === "replace" ? metaColumnsOf(write.path, write.bytes) : NO_COLUMNS;
      ops.push(write.op);
      paths.push(write.path);
      lengths.push(write.bytes.length);
      revisions.push(columns.revision);
      listings.push(columns.listing);
      listedAts.push(columns.listedAt);
    }
    // The arrays go in binary (binary-array.ts), as the writes' bytes do: one value, cut by their
    // lengths (a bytea[] travels as hex text).
    return [
      plan.lock ? this.#lockKey(plan.lock.path) : null,
      Boolean(plan.hold),
      plan.lock?.path ?? null,
      // The lock record is written only for a lock held on; a per-operation lock is the transaction's advisory lock alone.
      plan.lock && plan.hold ? Buffer.from(plan.lock.bytes) : null,
      plan.expect?.path ?? null,
      plan.expect?.revision ?? null,
      binaryArray("text", ops),
      binaryArray("text", paths),
      Buffer.concat(writes.map((write) => write.bytes)),
      binaryArray("int4", lengths),
      binaryArray("int8", revisions),
      plan.release ? this.#lockKey(plan.release.path) : null,
      plan.release?.path ?? null,
      plan.release?.lockId ?? null,
      binaryArray("text", listings),
      binaryArray("text", listedAts),
    ];
  }

  /** `run_append`'s parameters for an append's commit ({@linkcode appendCommitOf}). */
  #appendParameters(plan: CommitPlan, { lines, meta }: AppendCommit): unknown[] {
    const columns = metaColumnsOf(meta.path, meta.bytes);
    return [
      this.#lockKey(plan.lock!.path),
      plan.lock!.path,
      meta.path,
      plan.expect!.revision,
      lines.path,
      // Sent in binary as they are (lean-statement.ts takes any ArrayBuffer view as bytes, as `pg` does): no `Buffer` made of each.
      lines.bytes,
      meta.bytes,
      columns.revision,
      columns.listing,
      columns.listedAt,
    ];
  }

  /**
   * The catalog of a folder of sessions (docs/FORMAT.md "The catalog"): the `meta.json` rows
   * themselves, whose listing fields and `updated_at` every write of the file stores beside it
   * (`entries.listing`, `listed_at`). One statement on the `entries_by_activity` index
   * (`catalog-statement.ts`): with `page`, only that page's rows, newest activity first; a row
   * whose listing is not known brings its bytes instead.
   */
  async readCatalog(dir: string, page?: CatalogPage): Promise<CatalogListing | undefined> {
    assertStoragePath(dir);
    if (!cataloguedFolder(`${dir}/x`)) return undefined;
    const { values, ...statement } = catalogStatement(this.#schema, dir, page);
    const rows = await this.#read(statement, values);
    const skip = dir.length + 1;
    const entries: CatalogEntry[] = rows.map((row) => ({
      name: (row.parent as string).slice(skip),
      meta: row.listing === null ? catalogDocument((row.bytes as Buffer | null) ?? new Uint8Array(0)) : parsedOrUndefined(row.listing as string),
    }));
    return { entries, unlisted: [], ...(page ? { paged: true } : {}) };
  }

  /** Nothing to rebuild: the catalog is the table itself (see {@linkcode PostgresStorage.readCatalog}). */
  async rebuildCatalog(dir: string): Promise<number> {
    return (await this.readCatalog(dir))?.entries.length ?? 0;
  }

  /**
   * Ends every connection once the calls under way settled (a commit on a held lock's connection is never cut off: it
   * resolves or rejects with its own outcome); locks this handle holds are freed by the server. A call that needs a
   * connection after `close()` began rejects with `StoreClosedError`. Close the `Sessions` over this store first
   * (`sessions.close()`): it settles whole operations and gives held sessions back (README "Closing a store").
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#calls > 0) await new Promise<void>((resolve) => (this.#callsEnded = resolve));
    this.#commits.close();
    for (const name of [...this.#held.keys()]) {
      const held = this.#unhold(name)!;
      if (!held.lost) held.client.release(true);
    }
    await Promise.all([this.#pool.end(), this.#lockPool.end()]);
  }

  /** Creates or migrates the schema once per handle, before the first statement. */
  #ensureReady(): Promise<void> {
    this.#ready ??= (async () => {
      const client = await this.#connect(this.#pool);
      try {
        await migrate(client, this.#schema, this.#lockKey("\0migrate"));
        client.release();
        this.#migrated = true;
      } catch (error) {
        client.release(true);
        throw storageError(error, `creating or migrating schema ${this.#schema}`);
      }
    })().catch((error: unknown) => {
      this.#ready = undefined;
      throw error;
    });
    return this.#ready;
  }

  /** Adds `request` to this turn's batch, which a microtask sends once the caller's synchronous code has asked for all it wants. */
  #enqueue(request: ReadRequest): Promise<ReadResult | undefined> {
    return new Promise((resolve, reject) => {
      if (!this.#batch) {
        this.#batch = [];
        queueMicrotask(() => void this.#sendBatch());
      }
      this.#batch.push({ request, resolve, reject });
    });
  }

  /** Every read of the batch as one statement (read-statement.ts), each request's answer from its rows. */
  async #sendBatch(): Promise<void> {
    const batch = this.#batch!;
    this.#batch = undefined;
    try {
      const rows = await this.#read(this.#readMany, readValues(batch.map(({ request }) => request), this.maxFileBytes));
      const found = new Map<number, { path: string; size: number; stored: number | null; chunks: Buffer[] }>();
      for (const row of rows) {
        const i = Number(row.i) - 1;
        let file = found.get(i);
        if (!file) {
          found.set(i, file = { path: row.path as string, size: Number(row.size), stored: row.stored === null ? null : Number(row.stored), chunks: [] });
        }
        if (row.bytes !== null) file.chunks.push(row.bytes as Buffer);
      }
      batch.forEach(({ resolve, reject }, i) => {
        const file = found.get(i);
        if (!file) return resolve(undefined);
        if (file.stored !== null && file.stored > this.maxFileBytes) return reject(this.#overLimit(file.path, file.stored));
        resolve({ path: file.path, bytes: concat(file.chunks), size: file.size });
      });
    } catch (error) {
      for (const { reject } of batch) reject(error);
    }
  }

  /** A whole read of a file over the read limit (docs/FORMAT.md "Limits"): refused, naming both sizes. */
  #overLimit(path: string, stored: number): StoreEntryError {
    const max = formatBytes(this.maxFileBytes);
    const found = `a file of ${formatBytes(stored)}`;
    return new StoreEntryError(`store entry "${path}": found ${found} where a file of at most ${max} belongs; it is not read`, {
      path,
      found,
      expected: `a file of at most ${max}`,
    });
  }

  /**
   * A read: sent once more on a fresh connection when the first one turns out dead (a pooled
   * connection the server ended while it was idle, as after a restart or an `idle_session_timeout`, or whose socket was
   * reset), which is safe for a read.
   */
  async #read(statement: Statement, values: unknown[]): Promise<Row[]> {
    try {
      return await this.#query(statement, values);
    } catch (error) {
      if (!(error instanceof StorageError) || !isDropped(error.cause)) throw error;
      return this.#query(statement, values);
    }
  }

  /** `statement` on the shared pool; a failure a `StorageError` saying `doing` (by default the statement's function and first argument). */
  async #query(statement: Statement, values: unknown[], doing?: string): Promise<Row[]> {
    if (this.#closed) throw this.#refusedAsClosed();
    if (!this.#migrated) await this.#ensureReady();
    this.#commits.spare();
    try {
      return (await this.#pool.query(typeof statement === "string" ? { text: statement, values } : { ...statement, values })).rows as Row[];
    } catch (error) {
      throw this.#failure(error, doing ?? describe(statement, values));
    }
  }

  /**
   * A write to `paths`: on the connection of a lock this handle holds over them (so it lands
   * only while the lock does), else on the shared pool; a failure says `doing`, as `#query`.
   */
  async #write(paths: readonly string[], text: string, values: unknown[], doing?: string): Promise<Row[]> {
    this.#calls += 1;
    try {
      const holder = this.#fencing(paths);
      if (!holder) return this.#query(text, values, doing);
      if (holder.lost) throw holder.lost;
      try {
        return (await holder.client.query(text, values)).rows as Row[];
      } catch (error) {
        if (holder.lost || isConnectionLost(error)) throw this.#lostOnTheWay(holder, error);
        throw storageError(error, doing ?? describe(text, values));
      }
    } finally {
      this.#callEnded();
    }
  }

  /** The held lock that covers any of `paths` (a session's files, or the session folder itself). */
  #fencing(paths: readonly string[]): HeldLock | undefined {
    if (this.#fenced.size === 0) return undefined;
    for (const path of paths) {
      for (let dir = path; dir !== ""; dir = parentOf(dir)) {
        const held = this.#fenced.get(dir);
        if (held) return held;
      }
    }
    return undefined;
  }

  /** Keeps `client` as the connection of the lock `name`, which covers `covers` (by default its folder), watching for its end. */
  #hold(name: string, client: pg.PoolClient, covers: readonly string[] = [parentOf(name)]): void {
    const held: HeldLock = {
      name,
      client,
      covers,
      onEnd: (error?: unknown) => {
        if (this.#held.get(name) === held) this.#lose(held, "not-written", error);
      },
    };
    client.on("error", held.onEnd);
    client.on("end", held.onEnd);
    this.#held.set(name, held);
    for (const path of covers) this.#fenced.set(path, held);
  }

  /** Forgets the lock `name` (its connection is the caller's to release). */
  #unhold(name: string): HeldLock | undefined {
    const held = this.#held.get(name);
    if (!held) return undefined;
    held.client.off("error", held.onEnd);
    held.client.off("end", held.onEnd);
    this.#held.delete(name);
    for (const path of held.covers) if (this.#fenced.get(path) === held) this.#fenced.delete(path);
    return held;
  }

  /**
   * Marks a held lock lost (its connection ended or failed): the connection is dropped, the
   * host is told once, and every later write under the lock gets the returned error.
   */
  #lose(held: HeldLock, outcome: "not-written" | "unknown", cause?: unknown): LeaseLostError {
    if (held.lost) return held.lost;
    held.lost = this.#lostError(held.name, outcome, cause);
    held.client.off("end", held.onEnd);
    held.client.release(true);
    try {
      this.#onLeaseLost?.({ lock: held.name, error: held.lost });
    } catch {
      // A listener's failure is the host's; the lock is lost all the same.
    }
    return held.lost;
  }

  /**
   * A write under `held` failed because its connection did: the lock is lost, and this
   * write may have reached the server before the end (its outcome is unknown).
   */
  #lostOnTheWay(held: HeldLock, cause: unknown): LeaseLostError {
    this.#lose(held, "unknown", cause);
    return this.#lostError(held.name, "unknown", cause);
  }

  #lostError(name: string, outcome: "not-written" | "unknown", cause?: unknown): LeaseLostError {
    const why = cause ? `: ${(cause as { message?: string }).message ?? String(cause)}` : "";
    const what = outcome === "unknown" ? "the write was on its way and may or may not have landed (reload to see)" : "nothing was written";
    return new LeaseLostError(
      name.endsWith("/writer.lock")
        ? `${name}: this writer's lock was lost when its PostgreSQL connection ended${why}; another writer may hold the session now; ${what}; close the session and open it again`
        : `${name}: this handle's lock was lost when its PostgreSQL connection ended${why}; another holder may have it now; ${what}; run it again`,
      {
        path: name,
        outcome,
        ...(cause && (cause as { code?: unknown }).code ? { sqlstate: (cause as { code?: unknown }).code } : {}),
      },
    );
  }

  /** A call under way ended (see `#calls`). */
  #callEnded(): void {
    this.#calls -= 1;
    if (this.#calls === 0) this.#callsEnded?.();
  }

  /** The refusal of a call that needs a connection once `close()` began. */
  #refusedAsClosed(): StoreClosedError {
    return new StoreClosedError("the store is closed (this PostgresStorage ended its connections); open it again to go on", { schema: this.#schema });
  }

  async #connect(pool: pg.Pool): Promise<pg.PoolClient> {
    if (this.#closed) throw this.#refusedAsClosed();
    if (pool === this.#pool) this.#commits.spare();
    try {
      return await pool.connect();
    } catch (error) {
      throw this.#failure(error, this.#connecting(pool));
    }
  }

  /** A failure of a statement that may have connected first: {@linkcode storageError}, or the server's want of a password. */
  #failure(error: unknown, doing: string): StorageError {
    return passwordNotGiven(error, doing, this.#connection) ?? storageError(error, doing);
  }

  /**
   * What a failed checkout of `pool` was doing: when every connection the pool may open was in use, waiting for one of
   * them (the server is not at fault: the handle's own limit is), named by its option.
   */
  #connecting(pool: pg.Pool): string {
    const max = pool.options.max;
    if (max === undefined || pool.totalCount < max || pool.idleCount > 0) return "connecting to PostgreSQL";
    const limit = pool === this.#lockPool
      ? `maxLockConnections: each writer lock this handle holds (a held session, a run, a compaction) keeps one until it is given back`
      : "maxConnections";
    return `waiting for a connection: all ${max} of this handle's connections were in use (${limit})`;
  }

  /** Runs `write` after every earlier write to the same path that this handle issued. */
  #inOrder<T>(path: string, write: () => Promise<T>): Promise<T> {
    const previous = this.#queues.get(path) ?? Promise.resolve();
    const next = previous.then(write, write);
    const settled = next.then(
      () => undefined,
      () => undefined,
    );
    this.#queues.set(path, settled);
    void settled.then(() => {
      if (this.#queues.get(path) === settled) this.#queues.delete(path);
    });
    return next;
  }

  /** The advisory lock number of `name` (a SHA-256 per name, computed once, not per commit). */
  #lockKey(name: string): string {
    let key = this.#lockKeys.get(name);
    if (key === undefined) {
      if (this.#lockKeys.size >= LOCK_KEYS_KEPT) this.#lockKeys.clear();
      key = advisoryLockKey(this.#schema, name);
      this.#lockKeys.set(name, key);
    }
    return key;
  }
}

/** The name of a session's `meta.json` (docs/FORMAT.md), as the end of a path. */
const META_SUFFIX = "/meta.json";

/** What the server keeps beside a `meta.json` a write stores (`entries.revision`, `listing`, `listed_at`). */
interface MetaColumns {
  readonly revision: number | null;
  readonly listing: string | null;
  readonly listedAt: string | null;
}

const NO_COLUMNS: MetaColumns = { revision: null, listing: null, listedAt: null };

/**
 * The columns the server keeps beside a `meta.json` (for any other file, none): its revision,
 * so that the next commit checks it without parsing the document (the `revision` of a JSON
 * object, when a safe integer), and its catalog entry (docs/FORMAT.md "The catalog": the
 * listing fields as JSON, and `updated_at` for the index a page of a listing reads). `null`
 * for what the bytes do not give; the server then reads the document itself when it needs it.
 */
function metaColumnsOf(path: string, bytes: Uint8Array): MetaColumns {
  // The core writes meta.json as an object; a document that starts otherwise (a BOM,
  // blank) is left to the server's own reading.
  if (!path.endsWith(META_SUFFIX) || bytes[0] !== 0x7b) return NO_COLUMNS;
  const document = catalogDocument(bytes);
  if (!document) return NO_COLUMNS;
  const { revision, updated_at: updatedAt } = document;
  return {
    revision: typeof revision === "number" && Number.isSafeInteger(revision) ? revision : null,
    listing: JSON.stringify(document),
    listedAt: typeof updatedAt === "string" ? updatedAt : null,
  };
}

/** The writes of an append's per-operation commit: its lines, then the `meta.json` it checked. */
interface AppendCommit {
  readonly lines: PlannedWrite;
  readonly meta: PlannedWrite;
}

/**
 * `plan` as an append's per-operation commit, which `run_append` runs (docs/POSTGRES.md
 * "Writer ownership and commits"): a lock taken for the plan alone, a revision expected,
 * non-empty lines appended to one file and then the expected `meta.json` replaced. Any other
 * plan (`undefined`) is `run_plan`'s.
 */
function appendCommitOf(plan: CommitPlan): AppendCommit | undefined {
  if (!plan.lock || plan.hold || plan.release || !plan.expect || plan.expect.revision === null || plan.writes.length !== 2) return undefined;
  const [lines, meta] = plan.writes as [PlannedWrite, PlannedWrite];
  if (lines.op !== "append" || meta.op !== "replace" || meta.path !== plan.expect.path || lines.path === meta.path) return undefined;
  return lines.bytes.length > 0 && meta.bytes.length > 0 ? { lines, meta } : undefined;
}

/** A stored listing as JSON; `undefined` (the reader then reads the file) for text that is not. */
function parsedOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** `a/b/c` → `a/b`; `a` → `""`. */
function parentOf(path: string): string {
  const at = path.lastIndexOf("/");
  return at < 0 ? "" : path.slice(0, at);
}

/**
 * A statement: its text, or with a name, prepared once per connection (parsed and planned
 * once, not per call).
 */
type Statement = string | { readonly name: string; readonly text: string };

/** `append on agents/…` for an error message: the statement's function (or name) and its first argument. */
function describe(statement: Statement, values: readonly unknown[]): string {
  const what = typeof statement === "string" ? statement.split("(")[0]!.trim() : statement.name;
  return `${what} on ${String(values[0])}`;
}

/** A SQLSTATE's shape: five digits or capitals (which an errno code such as `EPIPE` has too). */
const SQLSTATE = /^[0-9A-Z]{5}$/;

/**
 * The socket's failures that mean the connection dropped (docs/POSTGRES.md "Lost connections, timeouts and limits"):
 * reset by the peer or a middlebox (`ECONNRESET`), or written to after it closed (`EPIPE`, which Node also raises
 * itself, without a `syscall`, for a write after the peer's end).
 */
const DROPPED_SOCKET = new Set(["ECONNRESET", "EPIPE"]);

/** The server's SQLSTATE of `error`; `undefined` for a failure of the client or its socket (an errno code, or none). */
function sqlstateOf(error: unknown): string | undefined {
  const { code, syscall } = (error ?? {}) as { code?: unknown; syscall?: unknown };
  if (typeof code !== "string" || syscall !== undefined || DROPPED_SOCKET.has(code)) return undefined;
  return SQLSTATE.test(code) ? code : undefined;
}

/**
 * Whether the server ended the session: class 08 (connection exception), 57P01–57P03 (terminated, crashed,
 * restarting), 57P05 (`idle_session_timeout`).
 */
function endsSession(sqlstate: string): boolean {
  return sqlstate.startsWith("08") || sqlstate === "57P01" || sqlstate === "57P02" || sqlstate === "57P03" || sqlstate === "57P05";
}

/**
 * Whether `error` means the connection is gone (so is a session lock held on it): a
 * socket error or end (no SQLSTATE), the client's own read timeout, or the server ending
 * the session ({@linkcode endsSession}).
 */
function isConnectionLost(error: unknown): boolean {
  const sqlstate = sqlstateOf(error);
  return sqlstate === undefined || endsSession(sqlstate);
}

/**
 * Whether the connection was dropped under the statement (the server ended the session, the socket was reset or
 * closed): not a timeout, which would only repeat, nor a server that cannot be reached, which a new connection meets
 * again.
 */
function isDropped(error: unknown): boolean {
  const sqlstate = sqlstateOf(error);
  if (sqlstate !== undefined) return endsSession(sqlstate);
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === "string") return DROPPED_SOCKET.has(code);
  return typeof message === "string" && message.includes("terminated unexpectedly");
}

/**
 * The pool's timeouts: the options, else the URL's `connect_timeout` (seconds, as libpq
 * reads it) and `statement_timeout` (ms), else the defaults. `pool` settings win over these.
 */
function timeouts(options: PostgresStorageOptions): pg.PoolConfig {
  const url = options.connectionString ? parseConnectionUrl(options.connectionString) : undefined;
  const fromUrl = (name: string, scale: number): number | undefined => {
    const value = url?.searchParams.get(name);
    if (value === null || value === undefined || value.trim() === "") return undefined;
    const number = Number(value);
    if (!Number.isFinite(number) || number < 0) {
      throw new InvalidInputError(`PostgreSQL URL: ${name}=${JSON.stringify(value)} is not a non-negative number`, { [name]: value });
    }
    return number * scale;
  };
  const connect = options.connectTimeoutMillis ?? fromUrl("connect_timeout", 1000) ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const statement = options.statementTimeoutMillis ?? fromUrl("statement_timeout", 1) ?? DEFAULT_STATEMENT_TIMEOUT_MS;
  return {
    // 0 waits for ever, as in libpq.
    connectionTimeoutMillis: connect,
    statement_timeout: statement,
    ...(statement > 0 ? { query_timeout: statement + ANSWER_GRACE_MS } : {}),
  };
}

/** One plain Uint8Array of the chunks, in order (a fresh copy, never a view of a pooled Buffer). */
function concat(chunks: readonly Uint8Array[]): Uint8Array {
  return new Uint8Array(Buffer.concat(chunks));
}

/** What `pg` says when the server asks for a password (SCRAM, PostgreSQL's default) and it was given none. */
const NO_PASSWORD = "client password must be a string";

/**
 * A connection the server refused for want of a password as a `StorageError` that names the user and the server and
 * says where a password goes (docs/POSTGRES.md "Lost connections, timeouts and limits"); `undefined` for any other
 * failure. The user and host are what `pg` connected with (the URL, then `pool`, then the `PG*` variables).
 */
function passwordNotGiven(error: unknown, doing: string, connection: pg.PoolConfig): StorageError | undefined {
  const said = (error as { message?: unknown } | undefined)?.message;
  if (typeof said !== "string" || !said.includes(NO_PASSWORD)) return undefined;
  const { user = "", host, port } = new pg.Client(connection);
  const server = host.startsWith("/") ? `the socket in ${host} (port ${port})` : `${host}:${port}`;
  return new StorageError(
    `PostgreSQL storage: ${doing}: the server at ${server} asked for the password of user ${user} and none was given; ` +
      `give it in the URL (postgres://${user}:PASSWORD@…, the password percent-encoded), as \`pool.password\` or in PGPASSWORD`,
    { user, host, port, reason: "no-password" },
    { cause: error },
  );
}

/** A server or connection failure as the core's typed error, with PostgreSQL's code and message. */
function storageError(error: unknown, doing: string): StorageError {
  if (error instanceof StorageError || error instanceof LeaseLostError) return error;
  const pgError = error as { code?: string; message?: string };
  const code = pgError.code;
  // A system call's failure (no server reached, a dropped socket) has an errno code (ENOENT, EPIPE), not a SQLSTATE.
  const errno = code !== undefined && sqlstateOf(error) === undefined;
  const label = code === undefined ? "" : errno ? ` (${code})` : ` (SQLSTATE ${code})`;
  const message = `PostgreSQL storage: ${doing}: ${pgError.message ?? String(error)}${label}`;
  // 53100: disk_full on the server.
  if (code === "53100") return new StorageFullError(message, { sqlstate: code });
  return new StorageError(message, code === undefined ? {} : errno ? { errno: code } : { sqlstate: code }, { cause: error });
}
