/**
 * How many untimed operations a row of a long-lived process runs before its timed ones. Commits (cases 2 and 10): a
 * row of commits per second times the commit a long-lived process makes. V8 gives a function called once a commit its
 * optimizing compiler only after hundreds to thousands of calls, and each worker's isolate compiles the storage's code
 * for itself: `node --trace-opt` over 4,000 held commits through the storage worker shows the commit's functions on both
 * threads (`planAppend`, `applyFencedPlan`, the store's fenced append, `fsyncSync`, the line's encoding) optimized
 * between the 500th and the ~3,750th. After ten untimed commits, the held worker row timed its worker's 10th to 910th
 * commits, that code not yet optimized, at 1.4–2 times the CPU of a commit in a long-lived process
 * (test/bench/notes.md, cases 2 and 10; docs/decisions.md "The held worker row's warm-up"). 12,000 gave nothing more
 * than 4,000.
 *
 * The same for the warm open (case 1, `open.node.warm`): a long-lived host's open + compose, after
 * {@linkcode OPEN_WARMUP} untimed opens of its process. `node --trace-opt` over 2,000 opens of the 10² tree through the
 * worker shows the per-line functions optimized within the first ~200 opens, the worker's per-call ones (`readMany`,
 * the boundary's checks, the reads) by ~750, and those the open runs once (`readSessionState`, `SessionView`,
 * `CommitPath`, the ref's and the options' checks) between ~950 and ~1,700 (docs/decisions.md "The warm open's row
 * times a long-lived host").
 *
 * @module
 */

/** Untimed commits per variant (and per baseline that runs code of its own) before the timed batches. */
export const COMMIT_WARMUP = 4_000;

/** What a row's note says of its warm-up. */
export const WARMED_NOTE = `timed after ${COMMIT_WARMUP.toLocaleString("en-US")} untimed commits of its own`;

/** Untimed opens + composes of each warm `open.node` process (sessionfold, plain JSONL, the worker floor) before its timed ones. */
export const OPEN_WARMUP = 2_000;
