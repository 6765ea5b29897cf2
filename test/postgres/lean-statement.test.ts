/**
 * A commit's statement sent lean (runtime-postgres/lean-statement.ts): Bind, Execute and Sync
 * without `pg`'s Describe, the answer the first field of the first row. It gives what `pg`'s own
 * query gives for the same statement (any ArrayBuffer view sent as its bytes, as `pg` sends it), prepares a name once per connection in `pg`'s own record
 * (so a `pg` query of the same name on that connection runs without parsing it again), and ends
 * as any query of the client does: a server error rejects with its SQLSTATE and leaves the
 * connection usable, the client's `query_timeout` rejects it (kept by one timer per connection,
 * not one per statement; a statement timed out before it was sent never runs), and a backend
 * ended while it waits rejects it instead of hanging. Every wait is on the server's own state (an advisory lock another
 * connection holds, seen in `pg_stat_activity`), never on a delay.
 */
import pg from "pg";
import { describe, expect, it, vi } from "vitest";
import { firstValue } from "../../runtime-postgres/lean-statement.ts";
import { until } from "../support/until.ts";
import { POSTGRES_URL } from "./support.ts";

/** Runs `body` with a connected client of `config`'s settings, ended afterwards. */
async function withClient<T>(config: pg.ClientConfig, body: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: POSTGRES_URL, ...config });
  client.on("error", () => undefined);
  await client.connect();
  try {
    return await body(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** A lock key of this test file's own, so that no other test waits on it. */
const LOCK = "7321498011";

describe.skipIf(!POSTGRES_URL)("a statement sent lean", () => {
  it("answers what pg's own query answers, parameters mapped as pg maps them, and prepares its name once per connection", async () => {
    await withClient({}, async (client) => {
      const statement = {
        name: "lean_echo",
        text: "SELECT concat_ws('|', $1::text, $2::int + 1, $3::boolean, encode($4::bytea, 'hex'), coalesce($5::text, 'null')) AS answer",
      };
      const values = ["one", 41, true, Buffer.from([0, 255, 10]), null];
      const parsed: string[] = [];
      const connection = (client as unknown as { connection: { parse(config: { name: string }): void } }).connection;
      const parse = connection.parse.bind(connection);
      connection.parse = (config) => {
        parsed.push(config.name);
        parse(config);
      };
      expect(await firstValue(client, statement, values)).toBe("one|42|t|00ff0a|null");
      expect(await firstValue(client, statement, ["two", 1, false, Buffer.alloc(0), "x"])).toBe("two|2|f||x");
      // Text of several bytes a character and values far larger than pg's own 256-byte writer: lengths in bytes, nothing cut.
      const wide = "é✓𝄞".repeat(400);
      const bytes = Buffer.alloc(5_000, 0xab);
      expect(await firstValue(client, statement, [wide, -7, true, bytes, wide])).toBe(`${wide}|-6|t|${"ab".repeat(5_000)}|${wide}`);
      // pg's own query of the same name and text on this connection: prepared already, not parsed again (42P05 otherwise).
      const own = await client.query<{ answer: string }>({ ...statement, values });
      expect(own.rows[0]!.answer).toBe("one|42|t|00ff0a|null");
      expect(parsed).toEqual(["lean_echo"]);
      // Any ArrayBuffer view goes as its bytes, in binary, as pg sends the Buffer it makes of one: a commit's Uint8Array, a view
      // into a larger buffer (its own bytes only), another element type (its bytes as they lie in memory).
      const larger = new Uint8Array([9, 0, 255, 10, 9]);
      const views = [new Uint8Array([0, 255, 10]), larger.subarray(1, 4), new Uint16Array(new Uint8Array([0, 255, 10, 1]).buffer)];
      for (const view of views) {
        const viewValues = ["one", 41, true, view, null];
        const ownAnswer = (await client.query<{ answer: string }>({ text: statement.text, values: viewValues })).rows[0]!.answer;
        expect(await firstValue(client, statement, viewValues)).toBe(ownAnswer);
      }
      expect(await firstValue(client, { name: "lean_null", text: "SELECT NULL::text" }, [])).toBeNull();
      expect(await firstValue(client, { name: "lean_none", text: "SELECT 1 WHERE false" }, [])).toBeNull();
    });
    // pg's pipeline mode refuses a submittable: the same answers through pg's own query.
    await withClient({ pipeline: true } as pg.ClientConfig, async (client) => {
      const statement = { name: "lean_echo", text: "SELECT concat_ws('|', $1::text, $2::int + 1, encode($3::bytea, 'hex')) AS answer" };
      expect(await firstValue(client, statement, ["one", 41, Buffer.from([0, 255])])).toBe("one|42|00ff");
      expect(await firstValue(client, { name: "lean_int", text: "SELECT 7" }, [])).toBe("7");
      expect(await firstValue(client, { name: "lean_null", text: "SELECT NULL::text" }, [])).toBeNull();
    });
    // A pg whose connection keeps no record of prepared names (the record is not in its types): pg's own query.
    await withClient({}, async (client) => {
      const connection = (client as unknown as { connection: { submittedNamedStatements?: unknown } }).connection;
      const record = connection.submittedNamedStatements;
      const query = client.query.bind(client) as (config: unknown) => Promise<unknown>;
      const sent: unknown[] = [];
      connection.submittedNamedStatements = undefined;
      (client as unknown as { query: (config: unknown) => Promise<unknown> }).query = (config) => {
        sent.push(config);
        connection.submittedNamedStatements = record; // this pg's own query reads it
        return query(config);
      };
      expect(await firstValue(client, { name: "lean_int", text: "SELECT 7" }, [])).toBe("7");
      expect(sent).toMatchObject([{ name: "lean_int", rowMode: "array" }]);
    });
  });

  it("rejects with the server's error (its SQLSTATE), and the connection takes the next statement", async () => {
    await withClient({}, async (client) => {
      const error = await firstValue(client, { name: "lean_fails", text: "SELECT 1 / $1::int" }, [0]).catch((e: unknown) => e);
      expect((error as { code?: string }).code).toBe("22012");
      expect(await firstValue(client, { name: "lean_fails", text: "SELECT 1 / $1::int" }, [1])).toBe("1");
      // A name whose Parse failed is not recorded as prepared: sent again, it is parsed again (the same
      // syntax error, not 26000 for a statement that does not exist).
      for (let attempt = 0; attempt < 2; attempt++) {
        const unparsable = await firstValue(client, { name: "lean_typo", text: "SELEC 1" }, []).catch((e: unknown) => e);
        expect((unparsable as { code?: string }).code).toBe("42601");
      }
      expect(await client.query("SELECT 2 AS two")).toMatchObject({ rows: [{ two: 2 }] });
    });
  });

  it("keeps the client's query_timeout with one timer, and a statement that times out still queued is never sent", async () => {
    await withClient({ query_timeout: 60_000 }, async (client) => {
      const timers = vi.spyOn(globalThis, "setTimeout");
      try {
        for (let k = 0; k < 20; k++) expect(await firstValue(client, { name: "lean_one", text: "SELECT $1::int + 1" }, [k])).toBe(String(k + 1));
        expect(timers.mock.calls.length).toBeLessThanOrEqual(1);
      } finally {
        timers.mockRestore();
      }
    });
    await withClient({}, async (holder) => {
      await holder.query("SELECT pg_advisory_lock($1)", [LOCK]);
      await withClient({ query_timeout: 200, application_name: "lean_statement_queued" }, async (client) => {
        const waits = firstValue(client, { name: "lean_waits", text: "SELECT pg_advisory_lock($1)::text" }, [LOCK]).catch((e: unknown) => e);
        const queued = firstValue(client, { name: "lean_marks", text: "SELECT set_config('lean.ran', 'yes', false)" }, []).catch((e: unknown) => e);
        expect(((await waits) as Error).message).toBe("Query read timeout");
        expect(((await queued) as Error).message).toBe("Query read timeout");
        // The first statement ends once the lock is free; the one behind it was taken out of the queue, so it never ran.
        await holder.query("SELECT pg_advisory_unlock($1)", [LOCK]);
        const ran = await client.query<{ ran: string | null }>("SELECT current_setting('lean.ran', true) AS ran");
        expect(ran.rows[0]!.ran ?? "").toBe("");
      });
    });
  });

  it("rejects once the client's query_timeout passes, and when its backend is ended while it waits", async () => {
    await withClient({}, async (holder) => {
      await holder.query("SELECT pg_advisory_lock($1)", [LOCK]);
      await withClient({ query_timeout: 200 }, async (client) => {
        const error = await firstValue(client, { name: "lean_waits", text: "SELECT pg_advisory_lock($1)::text" }, [LOCK]).catch((e: unknown) => e);
        expect((error as Error).message).toBe("Query read timeout");
      });
      await withClient({ application_name: "lean_statement_ended" }, async (client) => {
        const waiting = firstValue(client, { name: "lean_waits", text: "SELECT pg_advisory_lock($1)::text" }, [LOCK]).catch((e: unknown) => e);
        await withClient({}, async (admin) => {
          await until("the statement to wait on the advisory lock", async () => {
            const found = await admin.query("SELECT 1 FROM pg_stat_activity WHERE application_name = 'lean_statement_ended' AND wait_event_type = 'Lock'");
            return found.rows.length > 0;
          });
          await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'lean_statement_ended'");
        });
        const error = await waiting;
        expect(error).toBeInstanceOf(Error);
        await expect(client.query("SELECT 1")).rejects.toBeInstanceOf(Error);
      });
      await holder.query("SELECT pg_advisory_unlock($1)", [LOCK]);
    });
  });
});
