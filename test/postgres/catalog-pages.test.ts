/**
 * A page of a listing on PostgreSQL reads that page's rows and no others, whatever plan the
 * server picks for the prepared statement (docs/POSTGRES.md "Tables"): after five runs a
 * prepared statement may get a generic plan, made without its parameters, so the statements
 * of `runtime-postgres/catalog-statement.ts` are checked with the plan forced either way. The
 * folder holds rows a page must step over if its index scan is not bounded by the page: a
 * `meta.json` without `updated_at` (first in the index's order) and ties at the cursor.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CatalogListing, CatalogPage } from "../../core/mod.ts";
import { catalogStatement } from "../../runtime-postgres/catalog-statement.ts";
import { PostgresStorage } from "../../runtime-postgres/mod.ts";
import { dropSchemas, freshSchema, POSTGRES_URL } from "./support.ts";

const DIR = "agents/a1/workspaces/w1/sessions";
const SESSIONS = 120;
const UNDATED = 30;
const LIMIT = 10;
const schema = freshSchema("pages");

/** Session `s<i>`'s updated_at: every third one shares its time with the two before it (ties). */
const updatedAt = (i: number) => new Date(Date.UTC(2026, 0, 1) + Math.floor(i / 3) * 60_000).toISOString();
const meta = (i: number) =>
  new TextEncoder().encode(JSON.stringify({
    schema_version: 1,
    session_id: `s${String(i).padStart(3, "0")}`,
    agent_id: "a1",
    workspace_id: "w1",
    created_at: updatedAt(0),
    updated_at: updatedAt(i),
    message_count: 0,
    history_bytes: 0,
    revision: 1,
  }));

/** Every dated session in the listing's order: `updated_at` newest first, then by name. */
const expected = Array.from({ length: SESSIONS }, (_, i) => ({ name: `s${String(i).padStart(3, "0")}`, at: updatedAt(i) }))
  .sort((a, b) => (a.at === b.at ? (a.name < b.name ? -1 : 1) : a.at > b.at ? -1 : 1));

beforeAll(async () => {
  if (!POSTGRES_URL) return;
  const storage = new PostgresStorage({ connectionString: POSTGRES_URL, schema });
  try {
    for (let i = 0; i < SESSIONS; i++) await storage.replace(`${DIR}/${expected[i]!.name}/meta.json`, meta(Number(expected[i]!.name.slice(1))));
    for (let i = 0; i < UNDATED; i++) await storage.replace(`${DIR}/u${i}/meta.json`, new TextEncoder().encode(`{"revision":${i}}`));
  } finally {
    await storage.close();
  }
});

afterAll(async () => {
  if (POSTGRES_URL) await dropSchemas(schema);
});

/** A scan node of a JSON plan and the nodes below it. */
interface PlanNode {
  readonly "Node Type": string;
  readonly "Index Name"?: string;
  readonly "Index Cond"?: string;
  readonly "Actual Rows": number;
  readonly "Rows Removed by Filter"?: number;
  readonly Plans?: PlanNode[];
}

function scanOf(node: PlanNode): PlanNode | undefined {
  if (node["Index Name"] === "entries_by_activity" || node["Node Type"] === "Seq Scan") return node;
  for (const child of node.Plans ?? []) {
    const found = scanOf(child);
    if (found) return found;
  }
  return undefined;
}

/** The scan of the catalog statement for `page`, run with `EXPLAIN ANALYZE` under the plan cache mode `mode`. */
async function scanFor(mode: "force_generic_plan" | "force_custom_plan", page: CatalogPage): Promise<PlanNode> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    const { text, values } = catalogStatement(schema, DIR, page);
    await client.query(`SET plan_cache_mode = ${mode}`);
    await client.query(`PREPARE listing AS ${text}`);
    const literals = values.map((value) => (typeof value === "number" ? String(value) : client.escapeLiteral(String(value))));
    const result = await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE listing(${literals.join(", ")})`);
    const plan = (result.rows[0] as { "QUERY PLAN": [{ Plan: PlanNode }] })["QUERY PLAN"][0].Plan;
    const scan = scanOf(plan);
    if (!scan) throw new Error(`no scan in ${JSON.stringify(plan)}`);
    return scan;
  } finally {
    await client.end();
  }
}

describe.skipIf(!POSTGRES_URL)("a page of a listing on PostgreSQL", () => {
  // The cursor: the middle one of three sessions that share their updated_at; the scan starts
  // at their time, so it steps over the cursor and the one before it.
  const cursor = expected[61]!;
  const pages: [string, CatalogPage, number][] = [
    ["the first page", { limit: LIMIT }, 0],
    ["a page after a cursor among ties", { limit: LIMIT, after: { updatedAt: cursor.at, name: cursor.name } }, 2],
  ];

  for (const mode of ["force_generic_plan", "force_custom_plan"] as const) {
    for (const [what, page, ties] of pages) {
      it(`${what} (${mode}): an index scan bounded by the page, reading its rows and at most the cursor's ties before it`, async () => {
        const scan = await scanFor(mode, page);
        expect(scan["Index Name"]).toBe("entries_by_activity");
        expect(scan["Index Cond"]).toContain("listed_at");
        expect(scan["Actual Rows"]).toBe(LIMIT);
        expect(scan["Rows Removed by Filter"] ?? 0).toBeLessThanOrEqual(ties);
      });
    }

    it(`every page in order through PostgresStorage (${mode}): each dated session once, the undated ones in a whole listing only`, async () => {
      const storage = new PostgresStorage({ connectionString: POSTGRES_URL, schema, pool: { options: `-c plan_cache_mode=${mode}` } });
      try {
        const listed: string[] = [];
        let after: CatalogPage["after"];
        for (;;) {
          const found: CatalogListing = (await storage.readCatalog(DIR, { limit: LIMIT, ...(after ? { after } : {}) }))!;
          expect(found.paged).toBe(true);
          listed.push(...found.entries.map((entry) => entry.name));
          const last = found.entries.at(-1);
          if (found.entries.length < LIMIT || !last) break;
          after = { updatedAt: (last.meta as { updated_at: string }).updated_at, name: last.name };
        }
        expect(listed).toEqual(expected.map((session) => session.name));
        const whole = (await storage.readCatalog(DIR))!;
        expect(whole.entries).toHaveLength(SESSIONS + UNDATED);
        expect(whole.paged).toBeUndefined();
      } finally {
        await storage.close();
      }
    });
  }
});
