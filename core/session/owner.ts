import type { LockOwner } from "../errors.ts";

/** Who writes: stamped into `writer.lock` so a blocked writer can say who holds the session. */
export interface WriterIdentity {
  /** Process id (Node), or 0 where there is none. */
  readonly pid: number;
  /** Host name, or a page/tab label in a browser. */
  readonly hostname: string;
  /** `node`, `browser`, `deno`, `bun` or `memory`. */
  readonly runtime: string;
  /** This boot of the host (Linux `/proc/sys/kernel/random/boot_id`); absent where the platform has none. */
  readonly bootId?: string;
  /** When this process started (ISO-8601), as {@linkcode OwnerProbe.processStartTime} reports it. */
  readonly processStartedAt?: string;
}

/** The identity used when a runtime supplies none. */
export const ANONYMOUS_WRITER: WriterIdentity = { pid: 0, hostname: "unknown", runtime: "memory" };

/**
 * What the platform can tell about a process of this host and boot, for dead-owner reclaim
 * (docs/FORMAT.md `writer.lock`). A runtime that cannot answer gives none, and then no lock
 * is ever taken over.
 */
export interface OwnerProbe {
  /**
   * When process `pid` started, in milliseconds since the epoch; `null` when no such process
   * runs (or it has exited and waits to be reaped); `undefined` when this platform cannot tell.
   */
  processStartTime(pid: number): number | null | undefined;
}

/** How far a running pid's start may be from the lock's `process_started_at` and still be its owner. */
const SAME_PROCESS_MS = 2_000;

/**
 * `true` only when `owner` provably belongs to a dead writer: written on this host in this
 * boot (same `hostname` and `boot_id` as `me`), and its `pid` is not running, or runs but
 * started more than 2 s away from `process_started_at` (a reused pid). Anything the probe
 * cannot prove (no probe, no `boot_id`, another host, an unknown start) is `false`: the
 * lock is honoured.
 *
 * @example
 * ```ts
 * import type { LockOwner } from "sessionfold";
 * import { isDeadOwner } from "sessionfold/internal";
 * const me = { pid: 2, hostname: "h", runtime: "node", bootId: "b1" };
 * const lock: LockOwner = { pid: 1, hostname: "h", runtime: "node", operation: "append", created_at: "2026-01-01T00:00:00.000Z", boot_id: "b1" };
 * isDeadOwner(lock, me, { processStartTime: () => null }); // true: pid 1 is not running
 * ```
 */
export function isDeadOwner(owner: LockOwner, me: WriterIdentity, probe: OwnerProbe | undefined): boolean {
  if (!probe || me.bootId === undefined) return false;
  if (owner["boot_id"] !== me.bootId || owner.hostname !== me.hostname) return false;
  if (!Number.isSafeInteger(owner.pid) || owner.pid <= 0) return false;
  const started = probe.processStartTime(owner.pid);
  if (started === null) return true;
  if (started === undefined) return false;
  const recorded = typeof owner["process_started_at"] === "string" ? Date.parse(owner["process_started_at"]) : Number.NaN;
  // A running pid without a recorded start cannot be told from its owner: honoured.
  return Number.isFinite(recorded) && Math.abs(started - recorded) > SAME_PROCESS_MS;
}
