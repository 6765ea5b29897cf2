/** Small statistics and formatting helpers of the benchmarks. @module */

/** The median of `values` (the mean of the two middle ones for an even count). */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** A number rounded to `digits` significant digits (keeps integers of any size whole). */
export function round(value: number, digits = 3): number {
  if (!Number.isFinite(value) || value === 0) return value;
  if (Math.abs(value) >= 10 ** digits) return Math.round(value);
  return Number(value.toPrecision(digits));
}

/** Runs `fn` `reps` times and returns every duration in ms. */
export async function timeEach(reps: number, fn: (rep: number) => Promise<void>): Promise<number[]> {
  const times: number[] = [];
  for (let rep = 0; rep < reps; rep++) {
    const t0 = performance.now();
    await fn(rep);
    times.push(performance.now() - t0);
  }
  return times;
}
