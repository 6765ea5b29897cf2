import { asSessionfoldError, LimitExceededError } from "../errors.ts";
import { formatBytes, MAX_LINE_BYTES } from "../storage/limits.ts";

/**
 * The largest draft written: the line limit less room for what a commit adds to the message
 * (its status, sequence, revision). A larger draft is not written (the last one stays), so a
 * recovered draft always commits within the line limit (docs/FORMAT.md "Limits").
 */
const MAX_DRAFT_BYTES = MAX_LINE_BYTES - 4096;

/** How draft writes are coalesced while a reply streams. */
export interface DraftFlushOptions {
  /** At most one write per this many milliseconds (default 100). */
  readonly intervalMs?: number;
  /** Write sooner once this many new bytes of content arrived (default 32 KiB). */
  readonly maxPendingBytes?: number;
}

/**
 * Persists the streaming draft in the background, coalescing updates by time and
 * size, so the stream never waits for storage. At most one write is in flight and
 * the newest snapshot always wins; `flush()` waits until the newest one is stored.
 */
export class DraftFlusher {
  readonly #write: (bytes: Uint8Array) => Promise<void>;
  readonly #snapshot: () => Uint8Array;
  readonly #intervalMs: number;
  readonly #maxPendingBytes: number;
  readonly #clock: () => number;
  #dirty = false;
  #pendingBytes = 0;
  #lastWrite = Number.NEGATIVE_INFINITY;
  #inFlight: Promise<void> | undefined;
  #timer: unknown;
  #error: unknown;
  #closed = false;
  /** Completed writes, for tests and benchmarks. */
  writes = 0;

  constructor(
    write: (bytes: Uint8Array) => Promise<void>,
    snapshot: () => Uint8Array,
    options: DraftFlushOptions = {},
    clock: () => number = Date.now,
  ) {
    this.#write = write;
    this.#snapshot = snapshot;
    this.#intervalMs = options.intervalMs ?? 100;
    this.#maxPendingBytes = options.maxPendingBytes ?? 32 * 1024;
    this.#clock = clock;
  }

  /** Notes that the draft changed by about `bytes` bytes; never waits. */
  changed(bytes = 1): void {
    if (this.#closed) return;
    this.#dirty = true;
    this.#pendingBytes += bytes;
    this.#schedule();
  }

  /**
   * Waits until the newest snapshot is stored.
   *
   * @throws {SessionfoldError} the first error a background write met.
   */
  async flush(): Promise<void> {
    this.#cancelTimer();
    while (this.#inFlight || this.#dirty) {
      if (this.#inFlight) await this.#inFlight;
      else this.#start();
    }
    if (this.#error !== undefined) throw asSessionfoldError(this.#error, "writing the draft failed");
  }

  /** Stops writing; waits for a write in flight (so a later removal is not overtaken). */
  async close(): Promise<void> {
    this.#closed = true;
    this.#dirty = false;
    this.#cancelTimer();
    if (this.#inFlight) await this.#inFlight;
  }

  #schedule(): void {
    if (this.#inFlight || this.#error !== undefined) return;
    const wait = this.#lastWrite + this.#intervalMs - this.#clock();
    if (wait <= 0 || this.#pendingBytes >= this.#maxPendingBytes) {
      this.#cancelTimer();
      this.#start();
    } else if (this.#timer === undefined) {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        if (this.#dirty && !this.#inFlight) this.#start();
      }, wait);
    }
  }

  #start(): void {
    this.#dirty = false;
    this.#pendingBytes = 0;
    this.#lastWrite = this.#clock();
    const bytes = this.#snapshot();
    if (bytes.length > MAX_DRAFT_BYTES) {
      this.#error ??= new LimitExceededError(
        `the reply being streamed is ${formatBytes(bytes.length)}, over the line limit of ${
          formatBytes(MAX_LINE_BYTES)
        } (MAX_LINE_BYTES) a committed message must fit in; the draft keeps what was written before`,
        { limit: "MAX_LINE_BYTES", max: MAX_LINE_BYTES, found: bytes.length, file: "messages/assistant_message.json" },
      );
      return;
    }
    this.#inFlight = this.#write(bytes).then(
      () => {
        this.writes += 1;
      },
      (error: unknown) => {
        this.#error ??= error;
      },
    ).finally(() => {
      this.#inFlight = undefined;
      if (this.#dirty && !this.#closed && this.#error === undefined) this.#schedule();
    });
  }

  #cancelTimer(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer as Parameters<typeof clearTimeout>[0]);
    this.#timer = undefined;
  }
}
