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
  /**
   * The PID namespace whose numbering `pid` is in (Linux: `readlink /proc/self/ns/pid`, for
   * example `pid:[4026531836]`); absent where the platform cannot tell. A pid means nothing
   * outside its namespace: a container's pid 1 is not the host's.
   */
  readonly pidNamespace?: string;
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
 * boot and PID namespace (same `hostname`, `boot_id` and `pid_namespace` as `me`), and its
 * `pid` is not running, or runs but started more than 2 s away from `process_started_at` (a
 * reused pid). Anything the probe cannot prove (no probe, no `boot_id`, another host, another
 * PID namespace or none recorded, an unknown start) is `false`: the lock is honoured. A pid
 * of another namespace (a container sharing the host's name and boot) names another process
 * here, so its liveness cannot be judged from this side.
 *
 * @example
 * ```ts
 * import type { LockOwner } from "sessionfold";
 * const me = { pid: 2, hostname: "h", runtime: "node", bootId: "b1", pidNamespace: "pid:[4026531836]" };
 * const lock: LockOwner = { pid: 1, hostname: "h", runtime: "node", operation: "append", created_at: "2026-01-01T00:00:00.000Z", boot_id: "b1", pid_namespace: "pid:[4026531836]" };
 * isDeadOwner(lock, me, { processStartTime: () => null }); // true: pid 1 is not running
 * ```
 */
export function isDeadOwner(owner: LockOwner, me: WriterIdentity, probe: OwnerProbe | undefined): boolean {
  if (!probe || me.bootId === undefined || me.pidNamespace === undefined) return false;
  if (owner["boot_id"] !== me.bootId || owner.hostname !== me.hostname) return false;
  // A lock without the field (written before it existed) cannot be placed in a namespace either.
  if (owner["pid_namespace"] !== me.pidNamespace) return false;
  if (!Number.isSafeInteger(owner.pid) || owner.pid <= 0) return false;
  const started = probe.processStartTime(owner.pid);
  if (started === null) return true;
  if (started === undefined) return false;
  const recorded = typeof owner["process_started_at"] === "string" ? Date.parse(owner["process_started_at"]) : Number.NaN;
  // A running pid without a recorded start cannot be told from its owner: honoured.
  return Number.isFinite(recorded) && Math.abs(started - recorded) > SAME_PROCESS_MS;
}
