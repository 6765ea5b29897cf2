/**
 * A storage wrapper that times every call, for the breakdowns in the notes of the table:
 * where one commit or one open spends its time. Portable (the chromium page uses it too).
 *
 * @module
 */
import type { StoragePort } from "../../../core/mod.ts";

/** What {@linkcode TimedStorage.measure} found, every figure in ms per run. */
export interface StorageTimes {
  readonly totalMs: number;
  /** Time during which any storage call was pending. */
  readonly waitingMs: number;
  /** `totalMs - waitingMs`: the caller's own work (CPU, and waking up after each answer). */
  readonly outsideMs: number;
  /** Per call label (`append(active.jsonl)`), summed. */
  readonly calls: ReadonlyMap<string, number>;
}

/** A timed view of a storage and what it measured since the last {@linkcode TimedStorage.clear}. */
export interface TimedStorage {
  readonly storage: StoragePort;
  /** Forgets what was measured (after warm-up). */
  clear(): void;
  /**
   * `"<total> ms = <waiting> ms waiting on storage (…each call…) + <rest> ms outside storage"`,
   * every figure per run. Calls may overlap (an open reads its files at once), so each call
   * is timed from call to answer, and "waiting" is the time during which any call was pending.
   */
  describe(totalMs: number, runs: number): string;
  /** The figures {@linkcode TimedStorage.describe} prints, per run. */
  measure(totalMs: number, runs: number): StorageTimes;
}

/**
 * Wraps `inner` so that the time of every call is summed per method and file name. `byCalls`: a commit plan runs by the
 * port's calls (each timed), not by `inner.applyCommitPlan` (one call, where a store runs its plans itself without a hop).
 */
export function timedStorage(inner: StoragePort, byCalls = false): TimedStorage {
  const spent = new Map<string, number>();
  let pending = 0;
  let since = 0;
  let waiting = 0;
  const storage = new Proxy(inner, {
    get(target, prop) {
      // A store's own plan runner would call its methods past this proxy: with `byCalls`, plans run by calls through it, each timed.
      if (byCalls && prop === "applyCommitPlan") return undefined;
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        const label = `${String(prop)}(${nameOf(args[0])})`;
        const t0 = performance.now();
        if (pending++ === 0) since = t0;
        const done = () => {
          const t1 = performance.now();
          spent.set(label, (spent.get(label) ?? 0) + t1 - t0);
          if (--pending === 0) waiting += t1 - since;
        };
        const result = (value as (...a: unknown[]) => unknown).apply(
          target,
          args,
        );
        if (result instanceof Promise) return result.finally(done);
        done();
        return result;
      };
    },
  });
  return {
    storage,
    clear() {
      spent.clear();
      waiting = 0;
    },
    measure(totalMs, runs) {
      const waitingMs = waiting / runs;
      return {
        totalMs,
        waitingMs,
        outsideMs: totalMs - waitingMs,
        calls: new Map([...spent].map(([label, ms]) => [label, ms / runs])),
      };
    },
    describe(totalMs, runs) {
      const times = this.measure(totalMs, runs);
      const calls = [...times.calls].map(([label, ms]) => `${label} ${ms.toFixed(2)}`).join(", ");
      return `${totalMs.toFixed(2)} ms = ${times.waitingMs.toFixed(2)} ms waiting on storage (${calls}) + ${times.outsideMs.toFixed(2)} ms outside storage`;
    },
  };
}

/** A call's first argument as a breakdown names it: a key's last segment; for a `readMany`, each request's. */
function nameOf(arg: unknown): string {
  if (Array.isArray(arg)) {
    return arg.map((
      request: { path?: string; lastIn?: string },
    ) => (request.path !== undefined ? nameOf(request.path) : `last in ${nameOf(request.lastIn)}`)).join(" + ");
  }
  return String(arg).split("/").at(-1) ?? "";
}
