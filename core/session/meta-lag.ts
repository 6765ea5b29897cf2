/**
 * How far a held session's `meta.json` may lag behind its lines (docs/FORMAT.md
 * `meta.json`): the lines are the truth, so a lease holder writes `meta.json` only when it
 * is more than 1,024 commits or one second behind, at compaction and the like, and when the
 * handle closes. This keeps the count and the one-second timer; the commit path
 * (`commit-path.ts`) does the writes.
 *
 * @module
 */

/**
 * Commits a held handle may leave out of `meta.json` before it writes it. The second is the
 * bound a reader sees; this one only matters to a clock that stands still. At 64 (before), a
 * held commit paid for a replace of `meta.json` and its catalog line every 64th commit, and
 * the next fsync for their data (ext4 flushes a renamed file's data with the journal that
 * holds the rename): 10 % of its CPU with fsync off (docs/decisions.md).
 */
const MAX_LAG_COMMITS = 1024;
/** How long (ms) `meta.json` may stay behind before it is written. */
const MAX_LAG_MS = 1_000;

/** The commits not yet in `meta.json`, and since when. */
export class MetaLag {
  #commits = 0;
  #since: number | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;

  /** Whether `meta.json` is behind the lines. */
  get behind(): boolean {
    return this.#commits > 0;
  }

  /** Whether a catch-up is scheduled ({@linkcode MetaLag.schedule} then does nothing). */
  get scheduled(): boolean {
    return this.#timer !== undefined;
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

  /**
   * One second after the first lagging commit, `catchUp` writes `meta.json`, unless an
   * operation runs then (`busy`): it never takes the operation slot (a host's next operation
   * must not meet `SessionBusyError`), so it tries again later; the lines stay the truth either way.
   */
  schedule(catchUp: () => Promise<void>, busy: () => boolean): void {
    if (this.#timer !== undefined) return;
    const timer = setTimeout(() => {
      this.#timer = undefined;
      if (!this.behind) return;
      if (busy()) this.schedule(catchUp, busy);
      else catchUp().catch(() => this.schedule(catchUp, busy));
    }, MAX_LAG_MS);
    // A pending catch-up never keeps a Node process alive (close() writes meta.json anyway).
    (timer as { unref?: () => void }).unref?.();
    this.#timer = timer;
  }

  /** Stops a scheduled catch-up (one is being written now, or the lease ends). */
  cancel(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
