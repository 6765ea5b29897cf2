/**
 * Case 2 (durable append throughput against the disk's floor) and case 5 (the worker hop).
 *
 * - sessionfold: `Session.append` of one ~500-byte message, each a durable commit, through
 *   `openNodeSessions` with its worker thread, and without it (`worker: false`: the same
 *   `NodeFileStorage` on the host thread).
 * - floor: the same bytes (a user's and an assistant's line in turn, as the commits write
 *   them) appended to a file in the same folder with `writeSync` + `fsyncSync`, one line per fsync.
 * - the contract's own operations with raw system calls and no sessionfold code, per operation
 *   (`append.format-contract`) and held (`append.held-contract`): the ceilings of the rows.
 * - case 5 compares the same commits with and without the worker, with fsync (what hosts
 *   run) and without it (`fsync: false`, which leaves the hop and the CPU work alone).
 *
 * The variants alternate in short batches, so load on the shared machine falls on all of
 * them alike; each figure is the median of the batches.
 *
 * @module
 */
import { randomUUID } from "node:crypto";
import { closeSync, fsyncSync, lstatSync, mkdirSync, openSync, readFileSync, readSync, renameSync, unlinkSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { type NewMessage, type Session, Sessions } from "../../../core/mod.ts";
import { NodeFileStorage, type NodeSessions, openNodeSessions } from "../../../runtime-node/mod.ts";
import { cpuIdleOf } from "../lib/machine.ts";
import type { CaseContext } from "../lib/result.ts";
import { type StorageTimes, timedStorage } from "../lib/timed-storage.ts";
import { median } from "../lib/stats.ts";
import { syntheticText } from "../lib/synth.ts";
import { COMMIT_WARMUP, WARMED_NOTE } from "../lib/warmup.ts";

/** A ~500-byte message (as committed: a line of 550–600 bytes). */
export function appendMessage(i: number): NewMessage {
  return i % 2 === 0 ? { role: "user", parts: [{ type: "text", text: syntheticText(i, 340) }] } : {
    role: "assistant",
    parts: [{ type: "text", text: syntheticText(i, 220) }],
    usage: { input_tokens: 1200, output_tokens: 60, total_tokens: 1260 },
    provider: { provider: "openai", api: "responses", model: "gpt-5" },
  };
}

interface Variant {
  readonly name: string;
  readonly store: NodeSessions;
  readonly session: Session;
  readonly batches: number[];
  /** Process CPU time (user + system, every thread) per commit of each batch, ms. */
  readonly cpu: number[];
}

async function variant(root: string, name: string, worker: boolean, fsync: boolean, hold = false): Promise<Variant> {
  const store = await openNodeSessions({ root: join(root, name), worker, fsync });
  const session = await store.sessions.create({ agentId: "bench", workspaceId: "w1", sessionId: "append" }, { hold });
  return { name, store, session, batches: [], cpu: [] };
}

/**
 * One commit as docs/FORMAT.md lays it out, done with raw system calls and no sessionfold code:
 * create `writer.lock` (`open(…, "wx")`), read `meta.json` (the revision check), append the
 * line and fsync it, replace `meta.json` (temp file + rename, not flushed), read and remove
 * the lock. What any implementation of the contract pays on this disk.
 */
function formatCommit(dir: string, line: Uint8Array, meta: Uint8Array, owner: Uint8Array): void {
  const lock = join(dir, "writer.lock");
  const fd = openSync(lock, "wx", 0o600);
  writeSync(fd, owner);
  closeSync(fd);
  readFileSync(join(dir, "meta.json"));
  const active = openSync(join(dir, "active.jsonl"), "a", 0o600);
  writeSync(active, line);
  fsyncSync(active);
  closeSync(active);
  writeFileSync(join(dir, ".tmp-meta"), meta, { mode: 0o600 });
  renameSync(join(dir, ".tmp-meta"), join(dir, "meta.json"));
  readFileSync(lock);
  unlinkSync(lock);
}

/** A lease held with raw system calls ({@linkcode heldContractCommit}): the kept handles and what the fence compares. */
interface RawLease {
  readonly lock: string;
  readonly lockFd: number;
  readonly dev: number;
  readonly ino: number;
  readonly lockId: Uint8Array;
  readonly scratch: Uint8Array;
  readonly active: number;
  sequence: number;
}

/** Takes a raw lease in `dir` (a session's depth below the bench's folder, as the lstat's path walk is part of the fence). */
function rawLease(dir: string, owner: Uint8Array, lockId: string): RawLease {
  mkdirSync(dir, { recursive: true });
  const lock = join(dir, "writer.lock");
  writeFileSync(lock, owner, { mode: 0o600 });
  const lockFd = openSync(lock, "r");
  const { dev, ino } = lstatSync(lock);
  const active = openSync(join(dir, "active.jsonl"), "a", 0o600);
  return { lock, lockFd, dev, ino, lockId: new TextEncoder().encode(lockId), scratch: new Uint8Array(4096), active, sequence: 0 };
}

const lineEncoder = new TextEncoder();

/**
 * One held commit as docs/FORMAT.md lays it out ("Fencing", "What a lease costs per commit"), with raw system calls and no
 * sessionfold code: the fence (one `lstat` of `writer.lock`'s path, the same device and inode as the kept handle, one read
 * through that handle, its `lock_id` found in the bytes), the message's line (the fields every line carries, parts
 * numbered, `JSON.stringify` and UTF-8), then `write` + `fsync` through the kept `active.jsonl`. What any implementation
 * of a lease in Node pays per commit on this disk, before code of its own (no input checks, no state, no promise).
 */
function heldContractCommit(lease: RawLease, message: NewMessage): void {
  const info = lstatSync(lease.lock);
  if (!info.isFile() || info.dev !== lease.dev || info.ino !== lease.ino) throw new Error(`${lease.lock}: not the lock this lease holds`);
  const read = readSync(lease.lockFd, lease.scratch, 0, lease.scratch.length, 0);
  if (Buffer.from(lease.scratch.buffer, 0, read).indexOf(lease.lockId) < 0) throw new Error(`${lease.lock}: lease lost`);
  writeSync(lease.active, messageLine(++lease.sequence, message));
  fsyncSync(lease.active);
}

/**
 * A message's line as a commit writes it (the fields every line carries, parts numbered, the line revision last), made with
 * a spread and `JSON.stringify`: the held contract's line, and the floor's bytes (a user's and an assistant's line in turn,
 * as the commits write them).
 */
function messageLine(sequence: number, message: NewMessage): Uint8Array {
  const { role, parts, ...rest } = message;
  const record = {
    record_type: "message",
    sequence,
    message_id: `m_${randomUUID().replaceAll("-", "")}`,
    role,
    created_at: new Date().toISOString(),
    ...(role === "assistant" ? { status: "completed" } : {}),
    parts: parts.map((part, k) => ({ sequence: k + 1, ...part })),
    ...rest,
    revision: sequence,
  };
  return lineEncoder.encode(`${JSON.stringify(record)}\n`);
}

/**
 * Where the time of one durable commit goes, storage call by storage call (host thread,
 * fsync on): at least `commits` commits, and as many more as `spanMs` takes. `hold`: in a
 * lease (open with `{ hold: true }`), `meta.json` then written at most every 1,024th commit
 * or once a second, so a held breakdown spans more than a second.
 */
async function commitBreakdown(
  root: string,
  commits: number,
  hold = false,
  spanMs = 0,
): Promise<{ text: string; times: StorageTimes; commits: number }> {
  const timed = timedStorage(new NodeFileStorage({ root }), true);
  const sessions = new Sessions({ storage: timed.storage });
  const session = await sessions.create({ agentId: "bench", workspaceId: "w1", sessionId: "breakdown" }, { hold });
  try {
    for (let i = 0; i < 10; i++) await session.append(appendMessage(i));
    timed.clear();
    let totalMs = 0;
    let done = 0;
    const start = performance.now();
    // Each commit timed alone: making its message is no part of it.
    while (done < commits || performance.now() - start < spanMs) {
      const message = appendMessage(done);
      const t0 = performance.now();
      await session.append(message);
      totalMs += performance.now() - t0;
      done += 1;
    }
    const perCommit = totalMs / done;
    return { text: `per commit ${timed.describe(perCommit, done)}`, times: timed.measure(perCommit, done), commits: done };
  } finally {
    await session.close();
  }
}

/** Process CPU time (user + system, every thread) since `since`, per one of `ops` operations, in ms. */
function cpuPerOp(since: NodeJS.CpuUsage, ops: number): number {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1000 / ops;
}

/** `floor / (floor + extraMs)` as arithmetic a reader can check: "0.343 / (0.343 + 0.120) = 0.74". */
function boundText(floorMs: number, extraMs: number): string {
  return `${floorMs.toFixed(3)} / (${floorMs.toFixed(3)} + ${extraMs.toFixed(3)}) = ${(floorMs / (floorMs + extraMs)).toFixed(2)}`;
}

/** The held commit's breakdown and the bound it implies (see the row's note). */
function heldBoundNote(floorMs: number, held: StorageTimes): string {
  const ms = (label: string) => held.calls.get(label) ?? 0;
  const append = ms("append(active.jsonl)");
  const meta = ms("replace(meta.json)");
  // The lease's fence (docs/FORMAT.md "Fencing"): writer.lock read before each commit's writes.
  const fence = ms("readTail(writer.lock)");
  const named = ["append(active.jsonl)", "replace(meta.json)", "readTail(writer.lock)"];
  const others = [...held.calls].filter(([label]) => !named.includes(label));
  const rest = others.length > 0 ? `, ${others.map(([label, v]) => `${label} ${v.toFixed(3)}`).join(", ")}` : "";
  return (
    `breakdown (same run, ${held.totalMs.toFixed(3)} ms per held commit): append (write + fsync) ${append.toFixed(3)} ms + the fence's readTail(writer.lock) ${
      fence.toFixed(3)
    } ms + replace(meta.json) ${meta.toFixed(3)} ms (every 1,024th commit or once a second, spread)${rest} ` +
    `+ ${held.outsideMs.toFixed(3)} ms outside storage (the core's CPU, and the thread waking after each fsync; the breakdown runs each plan by its calls, ` +
    `each timed, where the row's commits run the fence and the append as one synchronous call of the store, so this is an upper bound); ` +
    `even with every storage call at the floor, the time outside storage bounds the ratio at floor / (floor + outside) = ${boundText(floorMs, held.outsideMs)}`
  );
}

export async function appendCase(ctx: CaseContext): Promise<void> {
  const batch = ctx.quick ? 40 : 100;
  const rounds = ctx.quick ? 5 : 9;
  const durable = [await variant(ctx.tmp, "worker", true, true), await variant(ctx.tmp, "host", false, true)];
  const volatile = [await variant(ctx.tmp, "worker-nofsync", true, false), await variant(ctx.tmp, "host-nofsync", false, false)];
  // A lease: the lock taken once, each commit its append (meta.json at most 1,024 commits or 1 s behind).
  const held = [await variant(ctx.tmp, "held-worker", true, true, true), await variant(ctx.tmp, "held-host", false, true, true)];
  const all = [...durable, ...volatile, ...held];
  // The floor writes the bytes the commits write: a user's line and an assistant's in turn, numbered as the commits' are.
  const lines = [messageLine(1_000, appendMessage(0)), messageLine(1_001, appendMessage(1))] as const;
  const floorFile = join(ctx.tmp, "floor.jsonl");
  const fd = openSync(floorFile, "a", 0o600);
  const floorBatches: number[] = [];
  const floorCpu: number[] = [];
  const formatDir = join(ctx.tmp, "format-floor");
  mkdirSync(formatDir, { recursive: true });
  const meta = new TextEncoder().encode(
    `${JSON.stringify({ ...durable[0]!.session.meta, revision: 1_000_000, message_count: 1_000_000, history_bytes: 1_000_000_000 }, null, 2)}\n`,
  );
  const owner = new TextEncoder().encode(
    `${
      JSON.stringify(
        { pid: process.pid, hostname: "bench", runtime: "node", operation: "append", created_at: new Date().toISOString(), lock_id: "lock_0123456789abcdef" },
        null,
        2,
      )
    }\n`,
  );
  writeFileSync(join(formatDir, "meta.json"), meta);
  const formatBatches: number[] = [];
  const rawHeld = rawLease(join(ctx.tmp, "held-contract", "agents", "bench", "workspaces", "w1", "sessions", "append"), owner, "lock_0123456789abcdef");
  const heldContractBatches: number[] = [];
  let i = 0;
  try {
    // Warm-up: JIT, the worker's first calls, the files' first blocks; every variant, the floor and both raw contracts
    // until their code is optimized (lib/warmup.ts).
    for (const v of all) for (let k = 0; k < COMMIT_WARMUP; k++) await v.session.append(appendMessage(i++));
    for (let k = 0; k < COMMIT_WARMUP; k++) (writeSync(fd, lines[k & 1]!), fsyncSync(fd));
    for (let k = 0; k < COMMIT_WARMUP; k++) formatCommit(formatDir, lines[k & 1]!, meta, owner);
    for (let k = 0; k < COMMIT_WARMUP; k++) heldContractCommit(rawHeld, appendMessage(i++));
    for (let round = 0; round < rounds; round++) {
      let cpu0 = process.cpuUsage();
      let t0 = performance.now();
      for (let k = 0; k < batch; k++) {
        writeSync(fd, lines[k & 1]!);
        fsyncSync(fd);
      }
      floorBatches.push((performance.now() - t0) / batch);
      floorCpu.push(cpuPerOp(cpu0, batch));
      t0 = performance.now();
      for (let k = 0; k < batch; k++) formatCommit(formatDir, lines[k & 1]!, meta, owner);
      formatBatches.push((performance.now() - t0) / batch);
      // The held contract's messages are made before the clock starts, as the held rows' are.
      const rawMessages = Array.from({ length: batch }, () => appendMessage(i++));
      t0 = performance.now();
      for (const message of rawMessages) heldContractCommit(rawHeld, message);
      heldContractBatches.push((performance.now() - t0) / batch);
      for (const v of all) {
        // The messages are made before the clock starts: the floor's line is made once, outside it too.
        const messages = Array.from({ length: batch }, () => appendMessage(i++));
        cpu0 = process.cpuUsage();
        t0 = performance.now();
        for (const message of messages) await v.session.append(message);
        v.batches.push((performance.now() - t0) / batch);
        v.cpu.push(cpuPerOp(cpu0, batch));
      }
    }
  } finally {
    closeSync(fd);
    closeSync(rawHeld.lockFd);
    closeSync(rawHeld.active);
    for (const v of all) {
      await v.session.close();
      await v.store.close();
    }
  }
  const floorMs = median(floorBatches);
  const breakdown = (await commitBreakdown(join(ctx.tmp, "breakdown"), batch)).text;
  ctx.log(`case 2: ${breakdown}`);
  // The held breakdown spans more than a second, so meta.json's lazy replace (once a second at this rate) falls inside it.
  const heldRun = await commitBreakdown(join(ctx.tmp, "breakdown-held"), ctx.quick ? 320 : 640, true, ctx.quick ? 1_200 : 2_400);
  const heldBreakdown = heldRun.times;
  ctx.log(`case 2: held ${heldBoundNote(floorMs, heldBreakdown)}`);
  ctx.log(`case 2: floor ${floorMs.toFixed(3)} ms/line; ${all.map((v) => `${v.name} ${median(v.batches).toFixed(3)} ms`).join(", ")}`);
  ctx.log(
    `case 2: CPU per commit (every thread): floor ${median(floorCpu).toFixed(3)} ms; ${all.map((v) => `${v.name} ${median(v.cpu).toFixed(3)} ms`).join(", ")}`,
  );
  const runs = rounds * batch;
  const [worker, host] = durable.map((v) => median(v.batches)) as [number, number];
  const [workerFast, hostFast] = volatile.map((v) => median(v.batches)) as [number, number];
  const [heldWorker, heldHost] = held.map((v) => median(v.batches)) as [number, number];
  const formatMs = median(formatBatches);
  const heldContractMs = median(heldContractBatches);
  // The ceiling of any held commit here: the lease's own operations in raw Node (same batches as the floor).
  const heldCeiling = (
    target: number,
  ) =>
    `; docs/FORMAT.md's own operations of a held commit with raw Node calls and no sessionfold code (append.held-contract): ${heldContractMs.toFixed(3)} ms = ${
      (floorMs / heldContractMs).toFixed(2)
    } of the floor${floorMs / heldContractMs < target ? `, below the target of ${target}` : ""}`;
  // What a commit costs in CPU beyond the floor's own write + fsync (same batches): a bound found by measuring, not assumed.
  const floorCpuMs = median(floorCpu);
  const cpuNote = (v: Variant) => {
    const extra = Math.max(0, median(v.cpu) - floorCpuMs);
    return `CPU per commit (user + system, every thread, same batches): ${median(v.cpu).toFixed(3)} ms against the floor's ${
      floorCpuMs.toFixed(3)
    } ms; that extra CPU alone bounds the ratio at ${boundText(floorMs, extra)}`;
  };
  // Measured before the rows: the held worker's note needs the least hop any worker adds.
  const echoCount = ctx.quick ? 500 : 2000;
  const echoMs = await echoRoundTrip(echoCount, 0);
  const waitedEchoMs = await echoRoundTrip(echoCount, host);
  // The held worker's bound: the same echo, the worker working as long as one held commit.
  const heldEchoMs = await echoRoundTrip(echoCount, heldHost);
  const formatRatio = floorMs / formatMs;
  const ceilingNote = (
    target: number,
  ) => (formatRatio < target ? ` (the ceiling of any per-operation commit here: ${formatRatio.toFixed(2)}, below the target of ${target})` : "");
  const floorOnly = `floor: ${floorMs.toFixed(3)} ms per write + fsync of a commit's line (${lines[0].length} and ${lines[1].length} bytes in turn)`;
  const floorNote =
    `${floorOnly}; docs/FORMAT.md's own file operations of a per-operation commit, with raw system calls and no sessionfold code (append.format-contract): ${
      formatMs.toFixed(3)
    } ms = ${(floorMs / formatMs).toFixed(2)} of the floor`;
  ctx.emit({
    case: 2,
    name: "append.durable.worker",
    value: 1000 / worker,
    unit: "commits/s",
    baseline: 1000 / floorMs,
    baselineName: "write + fsync of the same bytes (lines/s)",
    ratio: floorMs / worker,
    ratioMeaning: "value / baseline (fraction of the floor)",
    target: { op: ">=", limit: 0.8, text: "≥ 0.8 of the floor" },
    runs,
    note: `${worker.toFixed(3)} ms per commit, ${WARMED_NOTE}; ${floorNote}${ceilingNote(0.8)}`,
  });
  ctx.emit({
    case: 2,
    name: "append.durable.held",
    value: 1000 / heldHost,
    unit: "commits/s",
    baseline: 1000 / floorMs,
    baselineName: "write + fsync of the same bytes (lines/s)",
    ratio: floorMs / heldHost,
    ratioMeaning: "value / baseline (fraction of the floor)",
    target: { op: ">=", limit: 0.8, text: "≥ 0.8 of the floor" },
    runs,
    note: `${
      heldHost.toFixed(3)
    } ms per commit; a lease (open with { hold: true }), host thread, active.jsonl and writer.lock kept open, ${WARMED_NOTE}; ${floorOnly}${
      heldCeiling(0.8)
    }; ${heldBoundNote(floorMs, heldBreakdown)}; ${cpuNote(held[1]!)}`,
  });
  // The lease's fence beside the held commit it is part of (docs/FORMAT.md "Fencing"): held minus this is the unfenced commit.
  const fenceMs = heldBreakdown.calls.get("readTail(writer.lock)") ?? 0;
  ctx.emit({
    case: 2,
    name: "append.durable.held.fence",
    value: fenceMs,
    unit: "ms/commit",
    baseline: heldBreakdown.totalMs,
    baselineName: "the held commit it is part of (same run, host thread, fsync on)",
    ratio: fenceMs / heldBreakdown.totalMs,
    ratioMeaning: "value / baseline (the fence's share of a held commit)",
    runs: heldRun.commits,
    note: `the tail read of writer.lock that checks the lease's lock_id before each held commit's append; without it a held commit would take about ${
      (heldBreakdown.totalMs - fenceMs).toFixed(3)
    } ms here (its JSON parse, a few hundred bytes, is in the time outside storage)`,
  });
  ctx.emit({
    case: 2,
    name: "append.durable.held.worker",
    value: 1000 / heldWorker,
    unit: "commits/s",
    baseline: 1000 / floorMs,
    baselineName: "write + fsync of the same bytes (lines/s)",
    ratio: floorMs / heldWorker,
    ratioMeaning: "value / baseline (fraction of the floor)",
    target: { op: ">=", limit: 0.6, text: "≥ 0.6 of the floor" },
    runs,
    note:
      `${
        heldWorker.toFixed(3)
      } ms per commit; a lease through the storage worker (one message each way per commit), ${WARMED_NOTE}, as a long-lived process runs them (the commit's code optimized on both threads); bound: the held host commit (${
        heldHost.toFixed(3)
      } ms, append.durable.held) plus the least any worker adds here ` +
      `(a bare worker_threads echo whose worker first works as long as one held commit, so both threads idle as they do around a commit: ${
        (heldEchoMs * 1000).toFixed(0)
      } µs): floor / (held host + echo) = ${floorMs.toFixed(3)} / (${heldHost.toFixed(3)} + ${heldEchoMs.toFixed(3)}) = ${
        (floorMs / (heldHost + heldEchoMs)).toFixed(2)
      }${heldCeiling(0.6)}; ${cpuNote(held[0]!)}`,
  });
  ctx.emit({
    case: 2,
    name: "append.durable.no-worker",
    value: 1000 / host,
    unit: "commits/s",
    baseline: 1000 / floorMs,
    baselineName: "write + fsync of the same bytes (lines/s)",
    ratio: floorMs / host,
    ratioMeaning: "value / baseline (fraction of the floor)",
    target: { op: ">=", limit: 0.4, text: "≥ 0.4 of the floor (a lock per operation)" },
    runs,
    note: `${host.toFixed(3)} ms per commit, ${WARMED_NOTE}; ${floorNote}${ceilingNote(0.4)}; ${breakdown}`,
  });
  ctx.emit({
    case: 2,
    name: "append.format-contract",
    value: 1000 / formatMs,
    unit: "commits/s",
    baseline: 1000 / floorMs,
    baselineName: "write + fsync of the same bytes (lines/s)",
    ratio: floorMs / formatMs,
    ratioMeaning: "value / baseline (fraction of the floor)",
    runs,
    note:
      "not sessionfold: docs/FORMAT.md's file operations of one commit (lock create, meta read, append + fsync, meta temp + rename, lock read + remove) with raw system calls, what any implementation of the contract pays here",
  });
  ctx.emit({
    case: 2,
    name: "append.held-contract",
    value: 1000 / heldContractMs,
    unit: "commits/s",
    baseline: 1000 / floorMs,
    baselineName: "write + fsync of the same bytes (lines/s)",
    ratio: floorMs / heldContractMs,
    ratioMeaning: "value / baseline (fraction of the floor)",
    runs,
    note:
      "not sessionfold: docs/FORMAT.md's operations of one held commit (the fence: lstat of writer.lock, the same file as the kept handle, a read through it, its lock_id found; the message's line: JSON.stringify + UTF-8; write + fsync through the kept active.jsonl) with raw Node calls, what any implementation of a lease in Node pays here (timed after the same untimed commits as the held rows)",
  });
  ctx.emit({
    case: 5,
    name: "worker-hop.commit",
    value: worker,
    unit: "ms/commit",
    baseline: host,
    baselineName: "the same commit on the host thread (NodeFileStorage, fsync on)",
    ratio: worker / host,
    ratioMeaning: "value / baseline",
    target: { op: "<=", limit: 1.1, text: "≤ 1.10 (≤ 10% overhead)" },
    runs,
    note: `each side ${WARMED_NOTE}`,
  });
  ctx.emit({
    case: 5,
    name: "worker-hop.commit.no-fsync",
    value: workerFast,
    unit: "ms/commit",
    baseline: hostFast,
    baselineName: "the same commit on the host thread, fsync off (the hop and CPU alone)",
    ratio: workerFast / hostFast,
    ratioMeaning: "value / baseline",
    runs,
    note: `${((workerFast - hostFast) * 1000).toFixed(0)} µs of hop per commit`,
  });
  ctx.emit({
    case: 5,
    name: "worker-hop.echo",
    value: echoMs * 1000,
    unit: "µs/round trip",
    baseline: host * 1000,
    baselineName: "one durable commit on the host thread (µs)",
    ratio: (host + echoMs) / host,
    ratioMeaning: "(commit + one bare round trip) / commit",
    runs: echoCount,
    note: "not sessionfold: a bare worker_threads postMessage echo (no Comlink, no work), back to back, so neither thread sleeps between messages",
  });
  ctx.emit({
    case: 5,
    name: "worker-hop.echo.after-commit-wait",
    value: waitedEchoMs * 1000,
    unit: "µs/round trip",
    baseline: host * 1000,
    baselineName: "one durable commit on the host thread (µs)",
    ratio: (host + waitedEchoMs) / host,
    ratioMeaning: "(commit + one bare round trip) / commit: the least any worker design adds here",
    runs: echoCount,
    note: `not sessionfold: the same echo, but the worker answers after working as long as one host commit (${
      (host * 1000).toFixed(0)
    } µs, not counted), so the host thread idles as it does while a commit runs; ${cpuIdleOf()}`,
  });
}

/**
 * Median milliseconds that a bare `postMessage` round trip to a worker thread adds, when the
 * worker first works `workMs` (a busy loop, not counted) before it answers.
 */
async function echoRoundTrip(count: number, workMs: number): Promise<number> {
  const worker = new Worker(
    `const { parentPort } = require("node:worker_threads");
    parentPort.on("message", (m) => { const end = performance.now() + m.workMs; while (performance.now() < end); parentPort.postMessage(m); });`,
    { eval: true },
  );
  const once = () => new Promise<void>((resolve) => (worker.once("message", () => resolve()), worker.postMessage({ workMs, path: "meta.json" })));
  try {
    for (let k = 0; k < 100; k++) await once();
    const times: number[] = [];
    for (let k = 0; k < count; k++) {
      const t0 = performance.now();
      await once();
      times.push(performance.now() - t0 - workMs);
    }
    return median(times);
  } finally {
    await worker.terminate();
  }
}
