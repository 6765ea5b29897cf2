/**
 * What Linux tells about this host's processes, for dead-owner reclaim (docs/FORMAT.md
 * `writer.lock`): this boot's id, this process's PID namespace and when a process started,
 * all from `/proc`. Elsewhere (macOS, Windows) there is no boot id to stamp and no start time
 * to compare, so locks are never taken over there: a pid alone cannot prove its owner dead.
 *
 * @module
 */
import { readFileSync, readlinkSync } from "node:fs";
import type { OwnerProbe } from "../core/mod.ts";

/** Clock ticks per second of `/proc/<pid>/stat` start times: the kernel's USER_HZ, 100 on every Linux ABI. */
const USER_HZ = 100;

/** This boot's id, or `undefined` where the platform has none (not Linux, or `/proc` unreadable). */
export function linuxBootId(): string | undefined {
  try {
    const id = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
    return /^[0-9a-f-]{36}$/.test(id) ? id : undefined;
  } catch {
    return undefined;
  }
}

/**
 * This process's PID namespace (`pid:[4026531836]`), or `undefined` when it cannot be told
 * or `/proc` shows another namespace's processes (a container that shares the host's
 * `/proc`: `/proc/self` is then not `process.pid`, and every pid read there would be another
 * namespace's). Without it no lock is taken over: a pid is only meaningful in its namespace.
 */
export function linuxPidNamespace(): string | undefined {
  try {
    if (readlinkSync("/proc/self") !== String(process.pid)) return undefined;
    const namespace = readlinkSync("/proc/self/ns/pid");
    return /^pid:\[\d+\]$/.test(namespace) ? namespace : undefined;
  } catch {
    return undefined;
  }
}

let bootSeconds: number | undefined;

/** The boot time in seconds since the epoch (`btime` of `/proc/stat`), read once. */
function bootTime(): number | undefined {
  if (bootSeconds !== undefined) return bootSeconds;
  try {
    const line = readFileSync("/proc/stat", "utf8").split("\n").find((l) => l.startsWith("btime "));
    const value = line ? Number(line.slice(6).trim()) : Number.NaN;
    if (Number.isSafeInteger(value) && value > 0) bootSeconds = value;
  } catch {
    // Not Linux: no boot time, so no start times.
  }
  return bootSeconds;
}

/**
 * When `pid` started (ms since the epoch) by `/proc/<pid>/stat`, `null` when it does not
 * run (no such entry, or a zombie), `undefined` when `/proc` cannot tell.
 */
export function linuxProcessStartTime(pid: number): number | null | undefined {
  const boot = bootTime();
  if (boot === undefined) return undefined;
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ENOENT" ? null : undefined;
  }
  // The command name in field 2 may hold spaces and parentheses: the fields after it start past the last ")".
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  if (fields[0] === "Z" || fields[0] === "X") return null;
  const ticks = Number(fields[19]);
  return Number.isSafeInteger(ticks) ? boot * 1000 + (ticks * 1000) / USER_HZ : undefined;
}

/** The probe a Node host gives its registry: Linux's `/proc`, or none where there is no boot id or `/proc` is another PID namespace's. */
export function nodeOwnerProbe(): OwnerProbe | undefined {
  return linuxBootId() !== undefined && linuxPidNamespace() !== undefined && bootTime() !== undefined ? { processStartTime: linuxProcessStartTime } : undefined;
}
