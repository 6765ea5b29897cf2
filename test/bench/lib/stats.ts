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

/** The `p`-quantile of `values` (0 ≤ p ≤ 1), interpolated linearly between the sorted values. */
export function quantile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const at = p * (sorted.length - 1);
  const below = Math.floor(at);
  const above = Math.min(below + 1, sorted.length - 1);
  return sorted[below]! + (sorted[above]! - sorted[below]!) * (at - below);
}

/** The ratio of two figures measured batch by batch: the median of the per-batch ratios and their interquartile range. */
export interface PairedRatio {
  readonly ratio: number;
  readonly q1: number;
  readonly q3: number;
  readonly batches: number;
}

/**
 * `hi[i] / lo[i]` for every batch `i` that measured both (each batch measures every size once,
 * so drift in the machine's load between batches cancels), summarized by median and quartiles.
 */
export function pairedRatio(hi: readonly number[], lo: readonly number[]): PairedRatio {
  const ratios: number[] = [];
  for (let i = 0; i < Math.min(hi.length, lo.length); i++) ratios.push(hi[i]! / lo[i]!);
  return { ratio: median(ratios), q1: quantile(ratios, 0.25), q3: quantile(ratios, 0.75), batches: ratios.length };
}

/** `r` as "1.02 (IQR 0.97–1.08, 15 batches)". */
export function spreadText(r: PairedRatio): string {
  return `${r.ratio.toFixed(3)} (IQR ${r.q1.toFixed(3)}–${r.q3.toFixed(3)}, ${r.batches} batches)`;
}

/**
 * How many batches would put `limit` two standard errors away from a median of per-batch ratios
 * spread as `r`'s are: a median's standard error is about 1.2533 σ / √n, σ taken as the
 * interquartile range / 1.349 (as for a normal spread). `Infinity` when the median is `limit`.
 */
export function batchesToResolve(r: PairedRatio, limit: number): number {
  const sigma = (r.q3 - r.q1) / 1.349;
  return Math.ceil(((2 * 1.2533 * sigma) / Math.abs(r.ratio - limit)) ** 2);
}
