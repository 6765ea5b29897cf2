/**
 * Many processes, one database: 4 Node processes commit to the same 25 sessions at once,
 * 50 commits each per session (5,000 acknowledged commits in all) with a compaction every 10
 * commits, released at the same moment. Every acknowledged message must be stored exactly
 * once, every refusal typed (`writer-locked`, `revision-conflict`), every history contiguous.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ChildLauncher, type RunningChild, startChild } from "../node/process-support.ts";
import { checkStore, createSessions, writerLauncher } from "./process-support.ts";
import { dropSchemas, freshSchema, POSTGRES_URL } from "./support.ts";

const PROCESSES = 4;
const SESSIONS = 25;
const COMMITS = 50;
const COMPACT_EVERY = 10;

let launcher: ChildLauncher & { dispose(): Promise<void> };
const schema = freshSchema("many");

beforeAll(async () => {
  if (POSTGRES_URL) launcher = await writerLauncher();
}, 120_000);

afterAll(async () => {
  await launcher?.dispose();
  if (POSTGRES_URL) await dropSchemas(schema);
});

describe.skipIf(!POSTGRES_URL)("many processes on one database", () => {
  it(`${PROCESSES} processes × ${SESSIONS} sessions × ${COMMITS} commits with compactions: every acknowledged message once, refusals typed`, async () => {
    const refs = Array.from({ length: SESSIONS }, (_, i) => `mp/w${i % 5}/s${i}`);
    await createSessions(schema, refs);
    const children: RunningChild[] = [];
    for (let p = 0; p < PROCESSES; p++) {
      children.push(startChild(launcher, [POSTGRES_URL, schema, `p${p}`, refs.join(","), String(COMMITS), String(COMPACT_EVERY)], "pipe"));
    }
    await Promise.all(children.map((child) => child.next("ready")));
    const started = performance.now();
    for (const child of children) child.process.stdin!.write("go\n");
    const ended = await Promise.all(children.map((child) => child.closed));
    const seconds = (performance.now() - started) / 1000;
    for (const [i, end] of ended.entries()) {
      expect(children[i]!.reports.filter((r) => r.type === "fatal"), `process ${i}: ${end.stderr.slice(-2000)}`).toEqual([]);
      expect(end.code, `process ${i} exit code`).toBe(0);
    }
    const reports = children.flatMap((child) => child.reports);
    const result = await checkStore(schema, refs, reports);
    expect(result.landed).toBe(PROCESSES * SESSIONS * COMMITS);
    expect(result.compactions).toBeGreaterThan(0);
    console.log(
      `many processes: ${result.landed} acknowledged commits in ${seconds.toFixed(1)} s (${(result.landed / seconds).toFixed(0)}/s), ` +
        `${result.compactions} compactions (${result.segments} segments), refusals ${JSON.stringify(result.refused)}`,
    );
  }, 300_000);
});
