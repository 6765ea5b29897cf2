/**
 * The conformance suite's counts per case and pair: a summary logged once per pair after
 * its cases ran (console.info), and a JSON-lines file when `SESSIONFOLD_SYNC_MATRIX` names
 * one, for a report's matrix.
 */
import { appendFileSync } from "node:fs";
import { afterAll } from "vitest";
import type { SyncCaseCounts } from "../../testing/sync-conformance.ts";

export function recordCase(pair: string): (name: string, counts: SyncCaseCounts) => void {
  const rows: string[] = [];
  const total = { cases: 0, acknowledged: 0, found: 0, forked: 0, faults: 0 };
  afterAll(() => {
    if (total.cases === 0) return;
    console.info(
      `sync matrix, ${pair}: ${total.cases} cases, ${total.acknowledged} messages acknowledged, ${total.found} found, ${total.forked} in forks, ${total.faults} requests met a fault\n${
        rows.join("\n")
      }`,
    );
  });
  return (name, counts) => {
    total.cases++;
    for (const key of ["acknowledged", "found", "forked", "faults"] as const) total[key] += counts[key];
    rows.push(`  ${counts.acknowledged} acknowledged / ${counts.found} found / ${counts.forked} forked / ${counts.faults} faults  ${name}`);
    const file = process.env.SESSIONFOLD_SYNC_MATRIX;
    if (file) appendFileSync(file, `${JSON.stringify({ pair, case: name, ...counts })}\n`);
  };
}
