/** What machine and which versions a benchmark ran on. @module */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, statfsSync } from "node:fs";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));

export interface MachineInfo {
  readonly cpu: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly disk: string;
  /** How idle CPUs wait (cpuidle driver and halt polling); absent in runs saved before it was recorded. */
  readonly cpuIdle?: string;
  readonly node: string;
  readonly npm: string;
  readonly chromium: string;
  readonly packages: Record<string, string>;
  readonly loadAtStart: readonly number[];
}

function run(command: string, args: string[]): string {
  try {
    return execFileSync(command, args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"], timeout: 20_000 }).trim();
  } catch {
    return "unknown";
  }
}

function packageVersion(name: string): string {
  // The compared systems live in test/bench/node_modules (test/bench/package.json), the rest at the root.
  const file = [`${ROOT}/test/bench/node_modules/${name}/package.json`, `${ROOT}/node_modules/${name}/package.json`].find((f) => existsSync(f)) ?? "";
  return file ? (JSON.parse(readFileSync(file, "utf8")) as { version: string }).version : "not installed";
}

/** The filesystem and block device holding os.tmpdir() (where every benchmark writes). */
function diskOf(dir: string): string {
  let mount = { point: "", device: "", type: "" };
  for (const line of readFileSync("/proc/mounts", "utf8").split("\n")) {
    const [device, point, type] = line.split(" ");
    if (device && point && type && (dir === point || dir.startsWith(point.endsWith("/") ? point : `${point}/`)) && point.length >= mount.point.length) {
      mount = { point, device, type };
    }
  }
  const block = mount.device.replace(/^\/dev\//, "").replace(/\d+$/, "");
  const rotational = existsSync(`/sys/block/${block}/queue/rotational`) ? readFileSync(`/sys/block/${block}/queue/rotational`, "utf8").trim() : "";
  const kind = rotational ? `kernel flag rotational=${rotational}` : "rotational flag unknown";
  const fs = statfsSync(dir);
  const free = (fs.bavail * fs.bsize) / 2 ** 30;
  const total = (fs.blocks * fs.bsize) / 2 ** 30;
  return `${mount.device || "?"} (${mount.type || "?"}, ${kind}) mounted at ${mount.point || "?"}: ${total.toFixed(0)} GiB, ${free.toFixed(0)} GiB free`;
}

/**
 * How an idle CPU waits. Under a hypervisor a halted vCPU is woken through a VM exit, so
 * every hand-off between two threads that find each other asleep costs that exit.
 */
export function cpuIdleOf(): string {
  const read = (file: string) => (existsSync(file) ? readFileSync(file, "utf8").trim() : undefined);
  const driver = read("/sys/devices/system/cpu/cpuidle/current_driver");
  if (!driver) return "cpuidle driver unknown";
  const pollNs = read("/sys/module/haltpoll/parameters/guest_halt_poll_ns");
  const poll = pollNs === undefined ? "" : `, guest_halt_poll_ns=${pollNs}${pollNs === "0" ? " (an idle vCPU halts at once; waking it is a VM exit)" : ""}`;
  return `cpuidle driver ${driver}, governor ${
    read("/sys/devices/system/cpu/cpuidle/current_governor_ro") ?? read("/sys/devices/system/cpu/cpuidle/current_governor") ?? "unknown"
  }${poll}`;
}

export function machineInfo(): MachineInfo {
  const cpuList = cpus();
  const names = [
    "comlink",
    "idb-keyval",
    "zod",
    "vite",
    "playwright-core",
    "tsx",
    "@mariozechner/pi-coding-agent",
    "@langchain/langgraph-checkpoint-sqlite",
    "@langchain/langgraph-checkpoint",
    "@langchain/core",
    "better-sqlite3",
  ];
  const own = JSON.parse(readFileSync(`${ROOT}/package.json`, "utf8")) as { version: string };
  return {
    cpu: cpuList[0]?.model ?? "unknown",
    cores: cpuList.length,
    memoryGiB: totalmem() / 2 ** 30,
    disk: diskOf(tmpdir()),
    cpuIdle: cpuIdleOf(),
    node: process.version,
    npm: run("npm", ["--version"]),
    chromium: run(process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium", ["--version"]),
    packages: { sessionfold: own.version, ...Object.fromEntries(names.map((name) => [name, packageVersion(name)])) },
    loadAtStart: loadavg(),
  };
}
