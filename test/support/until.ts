/**
 * Waits on a condition, never on a delay: `probe` is asked again every 50 ms until it holds,
 * and the wait fails naming what it waited for once `timeoutMs` has passed (a deadline for a
 * broken run, not a guess at how long the event takes). Not a test file itself.
 *
 * @example
 * ```ts
 * const file = await until("the draft to be written", () => existsSync(draft) && readFileSync(draft, "utf8"));
 * ```
 */
export async function until<T>(what: string, probe: () => Promise<T> | T, timeoutMs = 15_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
