/**
 * Shared memory a worker's client lends to the bytes it stages (`StoragePort.stageLines`), reused from one compaction
 * to the next: a fresh buffer per staged file cost the host its zeroing and page faults and the worker its unmapping,
 * each time (docs/decisions.md "A compaction's CPU: its staged files joined into reused memory").
 *
 * @module
 */

/** Buffers kept at most: a compaction stages two files, so two compactions under way at once find theirs free. */
const MAX_BUFFERS = 4;
/** Larger files get a buffer of their own, as before: a pool never keeps a huge Active's memory for good. */
const MAX_POOLED_BYTES = 4 * 1024 * 1024;
/** A buffer is made with this much room, so that a file a little larger than the last fits it again. */
const GROWTH = 1.25;

/** One buffer, and the post after which the worker has read what it carries (`Infinity` while lent, `-1` when free). */
interface PooledBuffer {
  readonly memory: SharedArrayBuffer;
  heldUntil: number;
}

/**
 * Buffers of shared memory for staged bytes, numbered by the client's posts. A buffer lent for a stage is posted with
 * it ({@linkcode StagingPool.posted}) and is free again once the worker answered any call posted after that stage
 * ({@linkcode StagingPool.answered}): a worker handles its messages in order, and its store has read a stage's bytes
 * by the time that call returns (the Node store writes them at once), so no answer can come before it.
 *
 * @example
 * ```ts
 * const pool = new StagingPool();
 * const bytes = pool.lend(300_000)!; // a view of shared memory, to fill and post
 * pool.posted(bytes, 7); // the stage went out as post 7
 * pool.answered(8); // an answer to post 8: the buffer may be lent again
 * ```
 */
export class StagingPool {
  readonly #buffers: PooledBuffer[] = [];

  /**
   * A view of `size` bytes of a free buffer (grown, or a new one made, when none fits), held until
   * {@linkcode StagingPool.posted}; `undefined` when `size` is too large to pool, every buffer is held, or the
   * platform has no shared memory (then the caller allocates its own, as before).
   */
  lend(size: number): Uint8Array | undefined {
    if (size > MAX_POOLED_BYTES || typeof SharedArrayBuffer !== "function") return undefined;
    let free: PooledBuffer | undefined;
    for (const buffer of this.#buffers) {
      if (buffer.heldUntil !== -1) continue;
      if (buffer.memory.byteLength >= size) return this.#hold(buffer, size);
      free ??= buffer;
    }
    const made = { memory: new SharedArrayBuffer(Math.min(MAX_POOLED_BYTES, Math.ceil(size * GROWTH))), heldUntil: -1 };
    if (free) this.#buffers[this.#buffers.indexOf(free)] = made; // too small: replaced by a larger one
    else if (this.#buffers.length < MAX_BUFFERS) this.#buffers.push(made);
    else return undefined;
    return this.#hold(made, size);
  }

  /** `bytes` (lent by {@linkcode StagingPool.lend}) went to the worker as post `post`: its buffer is free after an answer to a later post. */
  posted(bytes: Uint8Array, post: number): void {
    const buffer = this.#buffers.find(({ memory }) => memory === bytes.buffer);
    if (buffer) buffer.heldUntil = post;
  }

  /** The worker answered post `post`: every buffer posted before it is free. */
  answered(post: number): void {
    for (const buffer of this.#buffers) if (buffer.heldUntil < post) buffer.heldUntil = -1;
  }

  #hold(buffer: PooledBuffer, size: number): Uint8Array {
    buffer.heldUntil = Infinity;
    return new Uint8Array(buffer.memory, 0, size);
  }
}
