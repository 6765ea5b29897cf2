import { createHash } from "node:crypto";
import pg from "pg";
import {
  assertStoragePath,
  runCommitPlan,
  StorageError,
  StorageFullError,
  type CommitPlan,
  type CommitPlanResult,
  type FileTail,
  type StoragePort,
} from "../core/mod.ts";
import { migrate, quoteIdent } from "./schema.ts";

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
  /** Further `pg` pool settings (ssl, passwords, timeouts), passed as they are. */
  readonly pool?: pg.PoolConfig;
}

type Row = Record<string, unknown>;

/**
 * A {@linkcode StoragePort} over PostgreSQL: the paths of docs/FORMAT.md are keys of a table,
 * a file is the chunks it was appended in (an append is one new row, `readTail` reads only
 * the newest), `replace`, `move` and `remove` are single transactions, writer ownership is a
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
  readonly #pool: pg.Pool;
  readonly #lockPool: pg.Pool;
  /** Locks this handle holds, each on its own connection (checked out of `#lockPool`). */
  readonly #held = new Map<string, pg.PoolClient>();
  /** Per path, the last write issued: writes to one path run in the order they were issued. */
  readonly #queues = new Map<string, Promise<unknown>>();
  #ready: Promise<void> | undefined;
  #closed = false;

  constructor(options: PostgresStorageOptions = {}) {
    this.#schema = options.schema ?? "sessionfold";
    if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(this.#schema)) {
      throw new StorageError(`PostgreSQL schema name ${JSON.stringify(this.#schema)} is not a plain identifier (letters, digits, _)`, { schema: this.#schema });
    }
    this.#s = quoteIdent(this.#schema);
    const base: pg.PoolConfig = { ...(options.connectionString ? { connectionString: options.connectionString } : {}), ...options.pool };
    // An idle pool must not keep a process alive that has nothing else to do.
    this.#pool = new pg.Pool({ max: options.maxConnections ?? 10, allowExitOnIdle: true, ...base });
    this.#lockPool = new pg.Pool({ max: options.maxLockConnections ?? 64, allowExitOnIdle: true, ...base });
    // A connection that drops while idle is the pool's to replace, not the process's crash.
    this.#pool.on("error", () => undefined);
    this.#lockPool.on("error", () => undefined);
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
    try {
      const result = await this.#pool.query("SELECT to_regclass($1) IS NOT NULL AS found", [`${this.#s}.schema_version`]);
      return result.rows[0]!.found === true;
    } catch (error) {
      throw storageError(error, `looking for schema ${this.#schema}`);
    }
  }

  async read(path: string): Promise<Uint8Array | undefined> {
    assertStoragePath(path);
    const rows = await this.#query(
      `SELECT c.bytes FROM ${this.#s}.entries e LEFT JOIN ${this.#s}.chunks c ON c.file_id = e.file_id
       WHERE e.path = $1 AND e.file_id IS NOT NULL ORDER BY c.end_offset`,
      [path],
    );
    if (rows.length === 0) return undefined;
    return concat(rows.map((row) => row.bytes as Buffer | null).filter((bytes): bytes is Buffer => bytes !== null));
  }

  async readTail(path: string, maxBytes: number): Promise<FileTail | undefined> {
    assertStoragePath(path);
    const wanted = Math.max(0, Math.floor(maxBytes));
    // The chunk the tail starts in is cut on the server: only the tail's bytes travel.
    const rows = await this.#query(
      `SELECT e.size, CASE WHEN c.end_offset - length(c.bytes) < e.size - $2
                THEN substring(c.bytes FROM (e.size - $2 - (c.end_offset - length(c.bytes)) + 1)::int)
                ELSE c.bytes END AS bytes
       FROM ${this.#s}.entries e
       LEFT JOIN ${this.#s}.chunks c ON c.file_id = e.file_id AND c.end_offset > e.size - $2
       WHERE e.path = $1 AND e.file_id IS NOT NULL ORDER BY c.end_offset`,
      [path, wanted],
    );
    if (rows.length === 0) return undefined;
    const size = Number(rows[0]!.size);
    return { bytes: concat(rows.map((row) => row.bytes as Buffer | null).filter((bytes): bytes is Buffer => bytes !== null)), size };
  }

  async list(dir: string): Promise<string[]> {
    assertStoragePath(dir, true);
    const rows = await this.#query(`SELECT name FROM ${this.#s}.entries WHERE parent = $1`, [dir]);
    // Sorted by UTF-16 code unit like every backend (the index's byte order differs above U+FFFF).
    return rows.map((row) => row.name as string).sort();
  }

  async replace(path: string, bytes: Uint8Array): Promise<void> {
    assertStoragePath(path);
    const copy = Buffer.from(bytes);
    await this.#inOrder(path, () => this.#query(`SELECT ${this.#s}.replace($1, $2)`, [path, copy]));
  }

  async append(path: string, bytes: Uint8Array): Promise<void> {
    assertStoragePath(path);
    const copy = Buffer.from(bytes);
    await this.#inOrder(path, () => this.#query(`SELECT ${this.#s}.append($1, $2)`, [path, copy]));
  }

  async createExclusive(path: string, bytes: Uint8Array): Promise<boolean> {
    assertStoragePath(path);
    const copy = Buffer.from(bytes);
    const rows = await this.#inOrder(path, () => this.#query(`SELECT ${this.#s}.create_exclusive($1, $2) AS created`, [path, copy]));
    return rows[0]!.created === true;
  }

  async truncate(path: string, length: number): Promise<void> {
    assertStoragePath(path);
    await this.#inOrder(path, () => this.#query(`SELECT ${this.#s}.truncate($1, $2)`, [path, Math.max(0, Math.floor(length))]));
  }

  async remove(path: string): Promise<void> {
    assertStoragePath(path);
    await this.#inOrder(path, () => this.#query(`SELECT ${this.#s}.remove($1)`, [path]));
  }

  async move(from: string, to: string): Promise<boolean> {
    assertStoragePath(from);
    assertStoragePath(to);
    const rows = await this.#query(`SELECT ${this.#s}.move($1, $2) AS moved`, [from, to]);
    return rows[0]!.moved === true;
  }

  /**
   * Takes the advisory lock of `name` on a connection of its own, which this handle keeps
   * until {@linkcode PostgresStorage.releaseLock}: if the process dies, the server ends the
   * connection and the lock with it. Resolves `false` at once when anyone else (another
   * process, host or handle) holds it.
   */
  async acquireLock(name: string): Promise<boolean> {
    assertStoragePath(name);
    await this.#ensureReady();
    if (this.#held.has(name)) return false;
    const client = await this.#connect(this.#lockPool);
    try {
      const result = await client.query<{ taken: boolean }>("SELECT pg_try_advisory_lock($1) AS taken", [this.#lockKey(name)]);
      if (result.rows[0]!.taken && !this.#held.has(name)) {
        this.#held.set(name, client);
        return true;
      }
      if (result.rows[0]!.taken) await client.query("SELECT pg_advisory_unlock($1)", [this.#lockKey(name)]);
      client.release();
      return false;
    } catch (error) {
      client.release(true);
      throw storageError(error, `taking the lock ${name}`);
    }
  }

  async releaseLock(name: string): Promise<void> {
    const client = this.#held.get(name);
    if (!client) return;
    this.#held.delete(name);
    try {
      await client.query("SELECT pg_advisory_unlock($1)", [this.#lockKey(name)]);
      client.release();
    } catch {
      // Ending the connection frees the lock as surely as unlocking it.
      client.release(true);
    }
  }

  /**
   * A whole commit plan as one statement on the server: lock, revision check, writes,
   * release, in one transaction (so a failed write leaves nothing of the plan). A plan
   * that holds its lock leaves it on the connection that ran it.
   */
  async runCommitPlan(plan: CommitPlan): Promise<CommitPlanResult> {
    await this.#ensureReady();
    for (const write of plan.writes) assertStoragePath(write.path);
    if (plan.lock && this.#held.has(plan.lock.path)) return { outcome: "locked" };
    // A plan under a lock this handle holds runs on that lock's connection; one that takes a
    // lock to hold gets a connection of its own; any other runs on the shared pool.
    const holder = plan.release ? this.#held.get(plan.release.path) : undefined;
    const client = holder ?? (await this.#connect(plan.lock && plan.hold ? this.#lockPool : this.#pool));
    const parameters = [
      plan.lock ? this.#lockKey(plan.lock.path) : null,
      Boolean(plan.hold),
      plan.lock?.path ?? null,
      plan.lock ? Buffer.from(plan.lock.bytes) : null,
      plan.expect?.path ?? null,
      plan.expect?.revision ?? null,
      plan.writes.map((write) => write.op),
      plan.writes.map((write) => write.path),
      plan.writes.map((write) => Buffer.from(write.bytes)),
      plan.release ? this.#lockKey(plan.release.path) : null,
      plan.release?.path ?? null,
      plan.release?.lockId ?? null,
    ];
    let outcome: string;
    try {
      const result = await client.query<{ outcome: string }>(
        `SELECT ${this.#s}.run_plan($1, $2, $3, $4, $5, $6, $7::text[], $8::text[], $9::bytea[], $10, $11, $12) AS outcome`,
        parameters,
      );
      outcome = result.rows[0]!.outcome;
    } catch (error) {
      // A session lock the failed plan may have taken or still holds goes with its connection.
      if (holder) this.#held.delete(plan.release!.path);
      client.release(Boolean(holder) || Boolean(plan.lock && plan.hold));
      throw storageError(error, "running a commit plan");
    }
    if (holder) this.#held.delete(plan.release!.path);
    if (outcome === "committed" && plan.lock && plan.hold) this.#held.set(plan.lock.path, client);
    else client.release();
    if (outcome === "committed") return { outcome: "committed" };
    if (outcome === "locked") return { outcome: "locked" };
    if (outcome.startsWith("conflict:")) {
      const revision = outcome.slice("conflict:".length);
      return { outcome: "conflict", revision: revision === "null" ? null : Number(revision) };
    }
    // 'check': meta.json is not a document the server can read; the core's own steps
    // (over this port's methods) read it and say what is wrong with it.
    return runCommitPlan(this, plan);
  }

  /** Ends every connection; locks this handle holds are freed by the server. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const client of this.#held.values()) client.release(true);
    this.#held.clear();
    await Promise.all([this.#pool.end(), this.#lockPool.end()]);
  }

  /** Creates or migrates the schema once per handle, before the first statement. */
  #ensureReady(): Promise<void> {
    this.#ready ??= (async () => {
      const client = await this.#connect(this.#pool);
      try {
        await migrate(client, this.#schema, this.#lockKey("\0migrate"));
        client.release();
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

  async #query(text: string, values: unknown[]): Promise<Row[]> {
    await this.#ensureReady();
    try {
      return (await this.#pool.query(text, values)).rows as Row[];
    } catch (error) {
      throw storageError(error, `${text.split("(")[0]!.trim()} on ${String(values[0])}`);
    }
  }

  async #connect(pool: pg.Pool): Promise<pg.PoolClient> {
    if (this.#closed) throw new StorageError("this PostgresStorage is closed", { schema: this.#schema });
    try {
      return await pool.connect();
    } catch (error) {
      throw storageError(error, "connecting to PostgreSQL");
    }
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

  /** The advisory lock number of a name in this store: 64 bits of SHA-256 over schema and name. */
  #lockKey(name: string): string {
    const digest = createHash("sha256").update(`${this.#schema}\0${name}`).digest();
    return digest.readBigInt64BE(0).toString();
  }
}

/** One plain Uint8Array of the chunks, in order (a fresh copy, never a view of a pooled Buffer). */
function concat(chunks: readonly Uint8Array[]): Uint8Array {
  return new Uint8Array(Buffer.concat(chunks));
}

/** A server or connection failure as the core's typed error, with PostgreSQL's code and message. */
function storageError(error: unknown, doing: string): StorageError {
  if (error instanceof StorageError) return error;
  const pgError = error as { code?: string; message?: string };
  const code = pgError.code;
  const message = `PostgreSQL storage: ${doing}: ${pgError.message ?? String(error)}${code ? ` (SQLSTATE ${code})` : ""}`;
  // 53100: disk_full on the server.
  if (code === "53100") return new StorageFullError(message, { sqlstate: code });
  return new StorageError(message, code ? { sqlstate: code } : {}, { cause: error });
}
