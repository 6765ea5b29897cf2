/**
 * Case 10's contract bound (`postgres.commit-contract`): what docs/POSTGRES.md requires of one
 * per-operation commit, with raw SQL through a bare `pg` client and no sessionfold code, as
 * `append.format-contract` does for files with raw system calls.
 *
 * The store is the layout of docs/POSTGRES.md "Tables", created here by its own DDL: `entries`
 * (one row per file, its size, the revision column and the catalog's columns, with the
 * `(parent, name)` index and the catalog's index on `meta.json` rows) and `chunks` (a file's
 * appended chunks by end offset). One commit is, in one transaction and one round trip: the
 * session's transaction-level advisory lock taken (a statement of its own, so the next one's
 * snapshot sees the last holder's commit), then one statement that checks `meta.json`'s revision
 * column and the absence of a `writer.lock` record, moves the lines' row and inserts their chunk,
 * and updates `meta.json`'s row (its size, revision and catalog columns) and its one chunk.
 * Both statements are prepared once and sent pipelined (Bind and Execute for each, one Sync),
 * so they run as one implicit transaction, committed at the Sync: no function call, no PL/pgSQL,
 * no statement the contract does not need.
 *
 * @module
 */
import { createRequire } from "node:module";
import pg from "pg";

/** `pg`'s own mapping of a parameter to what it sends (what `Client#query` applies). */
const { prepareValue } = createRequire(import.meta.url)("pg/lib/utils.js") as { prepareValue: (value: unknown) => unknown };

/** What one commit writes, as the adapter's `run_append` statement was given it (`PostgresStorage`'s parameters, in order). */
export interface ContractCommit {
  /** The lock's advisory key (decimal) and path, `meta.json`'s path and the revision expected. */
  readonly lockKey: string;
  readonly lockPath: string;
  readonly metaPath: string;
  readonly expectRevision: number;
  /** The lines' file and bytes, `meta.json`'s new bytes, revision, listing (JSON) and `updated_at`. */
  readonly linesPath: string;
  readonly lines: Buffer;
  readonly meta: Buffer;
  readonly metaRevision: number;
  readonly listing: string | null;
  readonly listedAt: string | null;
}

/** The commit of `run_append`'s parameters (lock key, lock path, meta path, expected revision, lines path, lines, meta, its revision, listing, updated_at). */
export function contractCommitOf(values: readonly unknown[]): ContractCommit {
  const [lockKey, lockPath, metaPath, , linesPath, lines, meta, metaRevision, listing, listedAt] = values as [
    string,
    string,
    string,
    number,
    string,
    Buffer,
    Buffer,
    number,
    string | null,
    string | null,
  ];
  return { lockKey, lockPath, metaPath, expectRevision: metaRevision - 1, linesPath, lines, meta, metaRevision, listing, listedAt };
}

/**
 * A bare client that commits `commit` again at each call with the contract's statements, in the
 * schema `schema` (created anew here), as the session's next commit would: each expects the
 * revision the one before it wrote, writes the next, and moves `updated_at` on by a millisecond
 * (a key of the catalog's index, so `meta.json`'s row update is never HOT, as a real commit's is not).
 */
export async function commitContract(
  url: string,
  schema: string,
  commit: ContractCommit,
): Promise<{ commit(): Promise<void>; pid: number; end(): Promise<void> }> {
  const client = new pg.Client({ connectionString: url, application_name: "commit_contract" });
  await client.connect();
  const s = `"${schema}"`;
  // The folder of sessions of a meta.json's parent (the catalog index's first key), written out.
  const folderOf = (column: string) => `(CASE WHEN strpos(${column}, '/') = 0 THEN '' ELSE regexp_replace(${column}, '/[^/]*$', '') END)`;
  await client.query(`DROP SCHEMA IF EXISTS ${s} CASCADE; CREATE SCHEMA ${s};
CREATE TABLE ${s}.entries (
  path text COLLATE "C" PRIMARY KEY, parent text COLLATE "C" NOT NULL, name text COLLATE "C" NOT NULL,
  file_id bigint, size bigint NOT NULL DEFAULT 0, revision bigint, listing text, listed_at text COLLATE "C");
CREATE INDEX ON ${s}.entries (parent, name);
CREATE INDEX ON ${s}.entries (${folderOf("parent")}, listed_at DESC, parent) WHERE name = 'meta.json';
CREATE TABLE ${s}.chunks (file_id bigint NOT NULL, end_offset bigint NOT NULL, bytes bytea NOT NULL, PRIMARY KEY (file_id, end_offset));`);
  const row = (path: string, fileId: number, size: number, revision: number | null, listing: string | null, listedAt: string | null) =>
    client.query(`INSERT INTO ${s}.entries VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, [
      path,
      path.slice(0, path.lastIndexOf("/")),
      path.slice(path.lastIndexOf("/") + 1),
      fileId,
      size,
      revision,
      listing,
      listedAt,
    ]);
  await row(commit.linesPath, 1, 0, null, null, null);
  await row(commit.metaPath, 2, commit.meta.length, commit.expectRevision, commit.listing, commit.listedAt);
  let revision = commit.expectRevision;
  const startedAt = Date.parse(commit.listedAt ?? "2026-01-01T00:00:00.000Z");
  await client.query(`INSERT INTO ${s}.chunks VALUES (2, $1, $2)`, [commit.meta.length, commit.meta]);
  const lock = {
    name: "contract_lock",
    // A lock held by another session aborts the transaction (a division by zero the planner cannot fold): nothing is written.
    text: "SELECT CASE WHEN pg_try_advisory_xact_lock($1::bigint) THEN true ELSE 1 / (pg_backend_pid() - pg_backend_pid()) > 0 END",
    values: [commit.lockKey],
  };
  const write = {
    name: "contract_write",
    text: `WITH m AS (
  SELECT file_id, size FROM ${s}.entries
  WHERE path = $2::text AND file_id IS NOT NULL AND revision = $3::bigint AND NOT EXISTS (SELECT 1 FROM ${s}.entries WHERE path = $1::text)),
moved AS (
  UPDATE ${s}.entries SET size = size + length($5::bytea), revision = NULL, listing = NULL, listed_at = NULL
  WHERE path = $4::text AND file_id IS NOT NULL AND EXISTS (SELECT 1 FROM m) RETURNING file_id, size),
added AS (INSERT INTO ${s}.chunks SELECT file_id, size, $5::bytea FROM moved RETURNING 1),
kept AS (
  UPDATE ${s}.entries SET size = length($6::bytea), revision = $7::bigint, listing = $8::text, listed_at = $9::text
  WHERE path = $2::text AND file_id = (SELECT file_id FROM m) AND EXISTS (SELECT 1 FROM added) RETURNING file_id),
rewritten AS (
  UPDATE ${s}.chunks SET end_offset = length($6::bytea), bytes = $6::bytea
  WHERE file_id = (SELECT file_id FROM kept) AND end_offset = (SELECT size FROM m) RETURNING 1)
SELECT EXISTS (SELECT 1 FROM rewritten) AS written`,
  };
  /** The write's parameters; the expected and written revisions and `updated_at` (2, 6, 8) change at each commit. */
  const values: unknown[] = [commit.lockPath, commit.metaPath, 0, commit.linesPath, commit.lines, commit.meta, 0, commit.listing, null];
  const pid = (await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
  const parsed = new Set<string>();
  return {
    pid,
    async commit() {
      values[2] = revision;
      values[6] = ++revision;
      values[8] = new Date(startedAt + revision).toISOString();
      const pipeline = new Pipeline([lock, { ...write, values }], parsed);
      void client.query(pipeline as unknown as pg.QueryConfig);
      const rows = await pipeline.done;
      if (rows[1]?.[0] !== "t") throw new Error(`the contract's commit wrote nothing (${JSON.stringify(rows)})`);
    },
    end: () => client.end(),
  };
}

/** The wire connection's calls a submitted query makes (`pg`'s `Connection`, not in its types). */
interface WireConnection {
  readonly stream: { cork?(): void; uncork?(): void };
  parse(config: { name: string; text: string; types: unknown[] }): void;
  bind(config: { statement: string; values: readonly unknown[]; valueMapper: (value: unknown) => unknown }): void;
  execute(config: { portal: string; rows: number }): void;
  sync(): void;
}

/**
 * Named statements sent pipelined (Parse once per connection, then Bind and Execute each, one
 * Sync): one implicit transaction, one round trip. A `pg` submittable (what `pg-cursor` is):
 * `Client#query` hands it the connection and the backend's answers.
 */
class Pipeline {
  readonly done: Promise<unknown[][]>;
  readonly #steps: readonly { name: string; text: string; values: readonly unknown[] }[];
  readonly #parsed: Set<string>;
  readonly #rows: unknown[][] = [];
  #error: unknown;
  #settle!: { resolve(rows: unknown[][]): void; reject(error: unknown): void };

  constructor(steps: readonly { name: string; text: string; values: readonly unknown[] }[], parsed: Set<string>) {
    this.#steps = steps;
    this.#parsed = parsed;
    this.done = new Promise((resolve, reject) => (this.#settle = { resolve, reject }));
  }

  submit(connection: WireConnection): void {
    connection.stream.cork?.();
    for (const step of this.#steps) {
      if (!this.#parsed.has(step.name)) {
        connection.parse({ name: step.name, text: step.text, types: [] });
        this.#parsed.add(step.name);
      }
      connection.bind({ statement: step.name, values: step.values, valueMapper: prepareValue });
      connection.execute({ portal: "", rows: 0 });
    }
    connection.sync();
    connection.stream.uncork?.();
  }

  handleDataRow(message: { fields: unknown[] }): void {
    this.#rows.push(message.fields);
  }

  handleError(error: unknown): void {
    this.#error = error;
  }

  handleReadyForQuery(): void {
    if (this.#error) this.#settle.reject(this.#error);
    else this.#settle.resolve(this.#rows);
  }

  handleRowDescription(): void {}
  handleCommandComplete(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
}
