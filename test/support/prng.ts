/**
 * mulberry32: a small seeded PRNG, so fixtures, crash children and benchmarks build the
 * same bytes on every run with the same seed. Not a test file itself.
 *
 * @example
 * ```ts
 * const random = prng(42);
 * random(); // a number in [0, 1), the same sequence every time for seed 42
 * ```
 */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
