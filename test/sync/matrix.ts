/**
 * Collects the conformance suite's counts per case and pair into `SESSIONFOLD_SYNC_MATRIX`
 * (a JSON-lines file) when that variable names one, for the report's matrix.
 */
import { appendFileSync } from "node:fs";
import type { SyncCaseCounts } from "../../testing/sync-conformance.ts";

export function recordCase(pair: string): (name: string, counts: SyncCaseCounts) => void {
  return (name, counts) => {
    const file = process.env.SESSIONFOLD_SYNC_MATRIX;
    if (file) appendFileSync(file, `${JSON.stringify({ pair, case: name, ...counts })}\n`);
  };
}
