/**
 * A host's callable raced with the run's signal: a provider, a tool or a summarizer that
 * ignores the signal must not hold a cancelled run or compaction (and the session it holds)
 * for ever. Cancellation stays cooperative for the callable (its own work may go on); the
 * caller stops waiting for it.
 *
 * @module
 */

/**
 * `work`, or `signal`'s reason as a rejection as soon as the signal is aborted, whichever
 * comes first. A rejection of `work` after the abort is handled here, so the runtime never
 * reports it as unhandled.
 *
 * @example
 * ```ts
 * const controller = new AbortController();
 * const pending = untilAborted(new Promise<never>(() => {}), controller.signal);
 * controller.abort();
 * await pending.catch((reason) => reason); // controller.signal.reason
 * ```
 */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    work.then(undefined, () => undefined);
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}
