/**
 * The turns of the sync schedulers of one local store in this context (docs/SYNC.md
 * "Background sync in the browser"): a store runs one sync at a time whatever its remote
 * (`sync/run.lock`), so a scheduler whose store is syncing with another remote waits for that
 * run to end, rather than fail on the lock and back off. Runs of other contexts (another tab,
 * another process) still find the lock held; the browser runtime queues its tabs with a Web Lock.
 *
 * @module
 */

/** What an exclusive section gives: the body's value, or that it did not run. */
export type Ran<T> = { ran: true; value: T } | { ran: false };

/** The end of the last turn taken on each store (a chain: each turn ends after the one before it). */
const lastTurns = new WeakMap<object, Promise<void>>();

/**
 * Runs `body` once every turn taken on `store` before this one has ended; gives `{ ran: false }`
 * without running it when `signal` aborts first. Turns are taken in the order of the calls.
 *
 * @example
 * ```ts
 * const store = {};
 * const stop = new AbortController();
 * const first = inTurn(store, stop.signal, async () => ({ ran: true as const, value: "first" }));
 * const second = inTurn(store, stop.signal, async () => ({ ran: true as const, value: "second, after the first" }));
 * console.log(await first, await second);
 * ```
 */
export async function inTurn<T>(store: object, signal: AbortSignal, body: () => Promise<Ran<T>>): Promise<Ran<T>> {
  const before = lastTurns.get(store);
  let end!: () => void;
  const ended = new Promise<void>((resolve) => (end = resolve));
  const turn = before ? before.then(() => ended) : ended;
  lastTurns.set(store, turn);
  try {
    if (before && !(await reached(before, signal))) return { ran: false };
    return signal.aborted ? { ran: false } : await body();
  } finally {
    // A turn given up while waiting still ends only after the one before it: `turn` waits for both.
    end();
    if (lastTurns.get(store) === turn) lastTurns.delete(store);
  }
}

/** Whether `before` ended before `signal` aborted (the abort listener is removed either way, so none piles up). */
function reached(before: Promise<void>, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const abandon = () => resolve(false);
    signal.addEventListener("abort", abandon, { once: true });
    void before.then(() => {
      signal.removeEventListener("abort", abandon);
      resolve(true);
    });
  });
}
