/** The row every benchmark case produces, and how rows are printed. @module */
import { round } from "./stats.ts";

/** A target on a row's `ratio` (or, for `"value"`, on its value). */
export interface Target {
  /** What is compared: the ratio (default) or the value. */
  readonly on?: "ratio" | "value";
  readonly op: "<=" | ">=";
  readonly limit: number;
  /** How the target reads in the report, e.g. "≤ 1.2 (flat)". */
  readonly text: string;
}

/** One measured figure next to its baseline. */
export interface BenchRow {
  /** Case number (1–8: the benchmark issue; 9: the installed package). */
  readonly case: number;
  /** Stable name; sizes are part of it (`n=1e6`). */
  readonly name: string;
  readonly value: number | null;
  readonly unit: string;
  readonly baseline: number | null;
  /** What the baseline is. */
  readonly baselineName: string;
  /** The figure the target is about (see each case); `null` when not measured. */
  readonly ratio: number | null;
  /** What the ratio means, e.g. "value / baseline". */
  readonly ratioMeaning: string;
  readonly target?: Target;
  /** Runs the median was taken over. */
  readonly runs?: number;
  /** Anything a reader must know about this figure (a failure, a bound, a definition). */
  readonly note?: string;
}

/** `true`/`false` when the row has a target and a figure, else `null`. */
export function targetMet(row: BenchRow): boolean | null {
  const target = row.target;
  if (!target) return null;
  const figure = target.on === "value" ? row.value : row.ratio;
  if (figure === null || !Number.isFinite(figure)) return null;
  return target.op === "<=" ? figure <= target.limit : figure >= target.limit;
}

/** The one-line JSON form of `npm run bench -- --json`. */
export function jsonLine(row: BenchRow, mode: "quick" | "full"): string {
  const met = targetMet(row);
  return JSON.stringify({
    name: row.name,
    value: row.value === null ? null : round(row.value, 4),
    unit: row.unit,
    baseline: row.baseline === null ? null : round(row.baseline, 4),
    ratio: row.ratio === null ? null : round(row.ratio, 4),
    mode,
    case: row.case,
    ...(row.target ? { target: row.target.text, met } : {}),
    ...(row.runs !== undefined ? { runs: row.runs } : {}),
    ...(row.note ? { note: row.note } : {}),
  });
}

/** Options every case receives. */
export interface CaseContext {
  readonly quick: boolean;
  /** A fresh folder under os.tmpdir() for this case; removed by the runner afterwards. */
  readonly tmp: string;
  /** Progress to stderr (never stdout: `--json` owns it). */
  readonly log: (message: string) => void;
  /** Emits a row as soon as it is measured. */
  readonly emit: (row: BenchRow) => void;
}
