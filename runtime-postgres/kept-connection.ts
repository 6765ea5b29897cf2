/**
 * One connection of a pool kept out of it between the commits that run on the pool
 * (docs/decisions.md "PostgreSQL's per-operation commit: the client's own work"): a commit
 * takes it instead of checking one out and back in, which costs `pg-pool` three timers (the
 * checkout's timeout, the query's is `pg`'s own, the idle timeout at release), a tick and a
 * promise each time. It goes back to the pool after a second without a commit (where the
 * pool's own idle timeout then applies), at once when it ends or fails, and at close. While
 * kept and idle it keeps no process alive (unreferenced, as the pool leaves its idle
 * connections with `allowExitOnIdle`). A commit that finds it in use (another commit of the
 * same handle at the same time) checks one out of the pool as before. It never makes anyone
 * wait: it goes back at once when the pool has callers waiting, or before a statement would
 * find the pool full (no idle connection and no more allowed; `maxConnections: 1`).
 *
 * @module
 */
import type pg from "pg";

/** How long the kept connection may go without a commit before it goes back to the pool. */
const KEPT_IDLE_MS = 1_000;

/**
 * The connection a {@linkcode PostgresStorage} keeps for its commits on the shared pool (see the module doc).
 *
 * @example
 * ```ts
 * import pg from "pg";
 *
 * const pool = new pg.Pool({ allowExitOnIdle: true });
 * const kept = new KeptConnection(pool);
 * const client = kept.take() ?? (await pool.connect());
 * await client.query("SELECT 1");
 * kept.put(client); // the next commit takes it
 * kept.close();
 * await pool.end();
 * ```
 */
export class KeptConnection {
  readonly #pool: pg.Pool;
  /** The kept connection while no commit uses it. */
  #idle: pg.PoolClient | undefined;
  /** The kept connection, idle or in use: its end is watched while it is kept. */
  #kept: pg.PoolClient | undefined;
  #lastUse = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;
  /** The kept connection ended or failed while idle (a restart, a terminated backend): dropped, so no commit meets it. */
  readonly #onEnd = (): void => {
    const client = this.#idle;
    if (!client || client !== this.#kept) return;
    this.#idle = undefined;
    this.#forget(client);
    client.release(true);
  };

  constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  /** The kept connection for one commit, or `undefined` (none kept, or in use): check one out of the pool then. */
  take(): pg.PoolClient | undefined {
    const client = this.#idle;
    if (!client) return undefined;
    this.#idle = undefined;
    if (!usable(client)) {
      this.#forget(client);
      client.release(true);
      return undefined;
    }
    (client as Referable).ref();
    return client;
  }

  /** After a commit that left `client` usable (taken here or checked out of the pool): kept for the next one, or back to the pool. */
  put(client: pg.PoolClient): void {
    if (this.#closed || this.#idle || (this.#kept !== undefined && this.#kept !== client) || !usable(client) || this.#pool.waitingCount > 0) {
      if (client === this.#kept) this.#forget(client);
      client.release();
      return;
    }
    if (!this.#kept) {
      this.#kept = client;
      client.on("error", this.#onEnd);
      client.on("end", this.#onEnd);
    }
    (client as Referable).unref();
    this.#idle = client;
    this.#lastUse = Date.now();
    // One timer per second at most, not one per commit.
    this.#timer ??= this.#expireIn(KEPT_IDLE_MS);
  }

  /**
   * Before a statement takes a connection of the pool: the idle kept connection goes back to
   * it when the pool has none idle and may open no more, so the statement does not wait on it.
   */
  spare(): void {
    const client = this.#idle;
    if (!client || this.#pool.idleCount > 0 || this.#pool.totalCount < maxOf(this.#pool)) return;
    this.#idle = undefined;
    this.#forget(client);
    client.release();
  }

  /** After a commit on `client` failed: back to the pool, ended with `destroy` (its connection is lost). */
  discard(client: pg.PoolClient, destroy: boolean): void {
    if (client === this.#kept) this.#forget(client);
    client.release(destroy);
  }

  /** Gives the kept connection back for good (the pool is about to end); one in use goes back when its commit ends. */
  close(): void {
    this.#closed = true;
    const client = this.#idle;
    this.#idle = undefined;
    if (client) {
      this.#forget(client);
      client.release();
    }
  }

  #forget(client: pg.PoolClient): void {
    client.off("error", this.#onEnd);
    client.off("end", this.#onEnd);
    this.#kept = undefined;
  }

  #expireIn(ms: number): ReturnType<typeof setTimeout> {
    const timer = setTimeout(() => {
      this.#timer = undefined;
      if (!this.#kept) return;
      const idleFor = Date.now() - this.#lastUse;
      const client = this.#idle;
      if (client && idleFor >= KEPT_IDLE_MS) {
        this.#idle = undefined;
        this.#forget(client);
        client.release();
        return;
      }
      // Idle for less than a second, or in use (a commit's own timeouts watch it): looked at again later.
      this.#timer = this.#expireIn(client ? KEPT_IDLE_MS - idleFor : KEPT_IDLE_MS);
    }, ms);
    timer.unref();
    return timer;
  }
}

/** The most connections `pool` opens (`pg-pool`'s `max`, 10 unless set). */
function maxOf(pool: pg.Pool): number {
  return (pool as unknown as { options?: { max?: number } }).options?.max ?? 10;
}

/** `pg`'s `Client#ref` and `unref` (what `pg-pool` calls for `allowExitOnIdle`; not in its types): whether the socket keeps the process alive. */
type Referable = pg.PoolClient & { ref(): void; unref(): void };

/** Whether `client` can still take a statement (what `pg-pool` checks at release; `pg` has no public flag for it). */
function usable(client: pg.PoolClient): boolean {
  const state = client as unknown as { _queryable?: boolean; _ending?: boolean };
  return state._queryable !== false && state._ending !== true;
}
