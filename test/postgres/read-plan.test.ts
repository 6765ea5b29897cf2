/**
 * The statement a batch of reads goes as on PostgreSQL keeps its generic plan
 * (`runtime-postgres/read-statement.ts`): after five runs a prepared statement keeps the plan
 * made without its parameters only if that plan's estimated cost is below the custom plans'
 * plus an allowance for planning them, so a custom plan that looks cheaper (the arrays'
 * elements counted from the values) has the server plan the statement again at every open.
 * The store holds enough files that the lookups cost more than that allowance (tables of a
 * few pages, analyzed), as a session of 10⁵ messages did in bench case 10.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ReadRequest } from "../../core/mod.ts";
import { PostgresStorage } from "../../runtime-postgres/mod.ts";
import { readStatement, readValues } from "../../runtime-postgres/read-statement.ts";
import { quoteIdent } from "../../runtime-postgres/schema.ts";
import { dropSchemas, freshSchema, POSTGRES_URL, withClient } from "./support.ts";

const SESSION = "agents/a1/workspaces/w1/sessions/s1";
const SEGMENTS = 400;
const schema = freshSchema("readplan");
const statement = readStatement(schema);

/** An open's reads (core/session: meta.json, active.jsonl, the draft, instruction.md, the newest segment's tail). */
const OPEN: ReadRequest[] = [
  { path: `${SESSION}/meta.json` },
  { path: `${SESSION}/messages/active.jsonl` },
  { path: `${SESSION}/messages/assistant_message.json` },
  { path: `${SESSION}/instruction.md` },
  { lastIn: `${SESSION}/messages/segments`, tailBytes: 16_384 },
];
const segment = (i: number) => `${SESSION}/messages/segments/${String(i).padStart(6, "0")}.jsonl`;
/** Batches of one read, an open's five, and forty. */
const BATCHES: [string, ReadRequest[]][] = [
  ["one read", [{ path: segment(7) }]],
  ["an open's five reads", OPEN],
  ["forty reads", Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? { path: segment(i * 3), tailBytes: 100 } : { path: segment(i * 3) }))],
];

beforeAll(async () => {
  if (!POSTGRES_URL) return;
  const storage = new PostgresStorage({ connectionString: POSTGRES_URL, schema });
  const line = new TextEncoder().encode(`${JSON.stringify({ role: "user", content: "x".repeat(200) })}\n`);
  try {
    await storage.replace(`${SESSION}/meta.json`, new TextEncoder().encode('{"revision":1}'));
    await storage.append(`${SESSION}/messages/active.jsonl`, line);
    for (let i = 0; i < SEGMENTS; i++) await storage.replace(segment(i), line);
  } finally {
    await storage.close();
  }
  // The statistics a running server keeps (autovacuum's analyze).
  await withClient((client) => client.query(`ANALYZE ${quoteIdent(schema)}.entries, ${quoteIdent(schema)}.chunks`));
});

afterAll(async () => {
  if (POSTGRES_URL) await dropSchemas(schema);
});

/** The estimated total cost of the statement's plan for `requests` under the plan cache mode `mode`. */
async function costOf(client: pg.Client, mode: "force_generic_plan" | "force_custom_plan", requests: ReadRequest[]): Promise<number> {
  const values = readValues(requests, 1024 * 1024);
  // The parameters as the server writes them, for EXECUTE's literals.
  const literals = await client.query<{ a: string; b: string; c: string }>(
    "SELECT $1::text[]::text AS a, $2::bigint[]::text AS b, $3::boolean[]::text AS c",
    values.slice(0, 3),
  );
  const { a, b, c } = literals.rows[0]!;
  await client.query(`SET plan_cache_mode = ${mode}`);
  const explained = await client.query(
    `EXPLAIN (FORMAT JSON) EXECUTE "${statement.name}"(${[a, b, c].map((text) => client.escapeLiteral(text)).join(", ")}, ${values[3]})`,
  );
  return (explained.rows[0] as { "QUERY PLAN": [{ Plan: { "Total Cost": number } }] })["QUERY PLAN"][0].Plan["Total Cost"];
}

describe.skipIf(!POSTGRES_URL)("the statement of a batch of reads on PostgreSQL", () => {
  for (const [what, requests] of BATCHES) {
    it(`${what}: a custom plan costs what the generic plan costs (nothing in the plan depends on the batch)`, async () => {
      await withClient(async (client) => {
        await client.query(`PREPARE "${statement.name}" AS ${statement.text}`);
        const generic = await costOf(client, "force_generic_plan", requests);
        const custom = await costOf(client, "force_custom_plan", requests);
        expect(custom).toBe(generic);
      });
    });
  }

  it("an open's reads sent eight times on one connection: five custom plans, then the generic plan kept", async () => {
    await withClient(async (client) => {
      for (let run = 0; run < 8; run++) {
        const { rows } = await client.query({ ...statement, values: readValues(OPEN, 1024 * 1024) });
        // meta.json, active.jsonl and the newest segment's tail (the draft and instruction.md do not exist).
        expect(rows.map((row) => row.path)).toEqual([`${SESSION}/meta.json`, `${SESSION}/messages/active.jsonl`, segment(SEGMENTS - 1)]);
      }
      const plans = await client.query<{ generic_plans: string; custom_plans: string }>(
        "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = $1",
        [statement.name],
      );
      expect(plans.rows).toEqual([{ generic_plans: "3", custom_plans: "5" }]);
    });
  });
});
