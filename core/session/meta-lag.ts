/**
 * How far a held session's `meta.json` may lag behind its lines (docs/FORMAT.md
 * `meta.json`): the lines are the truth, so a lease holder writes `meta.json` only when it
 * is more than 64 commits or one second behind, at compaction and the like, and when the
 * handle closes. This keeps the count; the transaction does the writes.
 *
 * @module
 */

/** Commits a held handle may leave out of `meta.json` before it writes it. */
export const MAX_LAG_COMMITS = 64;
/** How long (ms) `meta.json` may stay behind before it is written. */
export const MAX_LAG_MS = 1_000;

/** The commits not yet in `meta.json`, and since when. */
export class MetaLag {
  #commits = 0;
  #since: number | undefined;

  /** Whether `meta.json` is behind the lines. */
  get behind(): boolean {
    return this.#commits > 0;
  }

  /** When the first commit not in `meta.json` was made (ms), if any. */
  get since(): number | undefined {
    return this.#since;
  }

  /** Whether a commit at `now` must write `meta.json` too (it would be too far behind otherwise). */
  due(now: number): boolean {
    return this.#commits + 1 > MAX_LAG_COMMITS || (this.#since !== undefined && now - this.#since >= MAX_LAG_MS);
  }

  /** A commit at `now` that left `meta.json` behind. */
  add(now: number): void {
    this.#commits += 1;
    this.#since ??= now;
  }

  /** `meta.json` now holds every commit. */
  clear(): void {
    this.#commits = 0;
    this.#since = undefined;
  }
}
