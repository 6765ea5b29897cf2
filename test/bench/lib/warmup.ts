/**
 * How many untimed commits a throughput row runs before its timed batches (cases 2 and 10): a row of commits per second
 * times the commit a long-lived process makes. V8 gives a function called once a commit its optimizing compiler only after
 * hundreds to thousands of calls, and each worker's isolate compiles the storage's code for itself: `node --trace-opt` over
 * 4,000 held commits through the storage worker shows the commit's functions on both threads (`planAppend`,
 * `applyFencedPlan`, the store's fenced append, `fsyncSync`, the line's encoding) optimized between the 500th and the
 * ~3,750th. After ten untimed commits, the held worker row timed its worker's 10th to 910th commits, that code not yet
 * optimized, at 1.4–2 times the CPU of a commit in a long-lived process (test/bench/notes.md, cases 2 and 10;
 * docs/decisions.md "The held worker row's warm-up"). 12,000 gave nothing more than 4,000.
 *
 * @module
 */

/** Untimed commits per variant (and per baseline that runs code of its own) before the timed batches. */
export const COMMIT_WARMUP = 4_000;

/** What a row's note says of its warm-up. */
export const WARMED_NOTE = `timed after ${COMMIT_WARMUP.toLocaleString("en-US")} untimed commits of its own`;
