/**
 * Case 13: sync (docs/SYNC.md) between a folder store and a sync server over a real loopback
 * HTTP server (`createSyncHandler` behind `serveFetchHandler`, a folder store behind it, fsync
 * on), each row beside its floor in the same run.
 *
 * - `sync.initial.n=1e5`: `syncStores` of a device holding one 10⁵-message session to an
 *   empty server, in MB/s of the session folder's bytes, against `fs.cp` of the same folder.
 * - `sync.incremental.flatness`: `syncStores` after one new message, on a session of 10⁶
 *   messages (quick: 10⁵) against one of 10², both already on the server; sizes round-robin.
 * - `sync.round-trip`: one push of one message (`httpRemote.push`, an `append` mutation)
 *   against the same bytes POSTed by the same `fetch` to a bare node:http server that reads
 *   the body and answers; batches alternating.
 *
 * @module
 */
import { cp, mkdir, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { execFileSync } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { type MessageRecord, Sessions, type StoragePort } from "../../../core/mod.ts";
import { createSyncHandler, httpRemote, type Mutation, STORE_OWNER, SYNC_PROTOCOL_VERSION, type SyncRemote, syncStores } from "../../../core/sync/mod.ts";
import { syncStatePath } from "../../../core/sync/sync-state.ts";
import { sessionPaths } from "../../../core/layout/paths.ts";
import { formatSegmentName } from "../../../core/layout/segments.ts";
import { NodeFileStorage, serveFetchHandler } from "../../../runtime-node/mod.ts";
import { buildSessionfold } from "../lib/fixtures.ts";
import type { CaseContext } from "../lib/result.ts";
import { median } from "../lib/stats.ts";
import { BENCH_SYSTEM } from "../lib/plain-jsonl.ts";
import { BENCH_REF, historyPlan, sizeLabel, syntheticMessage } from "../lib/synth.ts";
import { type StorageTimes, timedStorage } from "../lib/timed-storage.ts";
import { appendMessage } from "./append.ts";

const REF = `${BENCH_REF.agentId}/${BENCH_REF.workspaceId}/${BENCH_REF.sessionId}`;
const MB = 1024 * 1024;

/** The remote of the case: the global fetch, whose failures name the route and their cause (a failed run says why). */
function remoteAt(url: string) {
  return httpRemote({
    url,
    id: "bench",
    fetch: (input, init) =>
      fetch(input, init).catch((error: unknown) => {
        throw new Error(`${input}: ${String(error)} (${String((error as { cause?: unknown }).cause)})`);
      }),
  });
}

/** A sync server over a folder store on 127.0.0.1. */
async function syncServerAt(storage: StoragePort) {
  const loopback = await serveFetchHandler(createSyncHandler({ storage, authorize: () => STORE_OWNER, basePath: "/sync" }));
  return { url: `${loopback.url}/sync`, close: () => loopback.close() };
}

/** Every file under `dir`, as paths relative to it. */
async function filesUnder(dir: string, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(join(dir, prefix), { withFileTypes: true })) {
    const path = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) out.push(...(await filesUnder(dir, path)));
    else out.push(path);
  }
  return out;
}

export async function syncCase(ctx: CaseContext): Promise<void> {
  await initialSync(ctx);
  await incrementalFlatness(ctx);
  await roundTrip(ctx);
}

async function initialSync(ctx: CaseContext): Promise<void> {
  const n = 100_000;
  const deviceRoot = join(ctx.tmp, "initial-device");
  await buildSessionfold(deviceRoot, n);
  const sessionDir = join(deviceRoot, sessionPaths(BENCH_REF).dir);
  const files = await filesUnder(sessionDir);
  let bytes = 0;
  for (const file of files) bytes += (await stat(join(sessionDir, file))).size;
  const reps = ctx.quick ? 3 : 5;
  const syncMs: number[] = [];
  const copyMs: number[] = [];
  const durableMs: number[] = [];
  const device = new Sessions({ storage: new NodeFileStorage({ root: deviceRoot }) });
  for (let rep = 0; rep < reps; rep++) {
    const copyTo = join(ctx.tmp, `initial-copy-${rep}`);
    const c0 = performance.now();
    await cp(sessionDir, copyTo, { recursive: true });
    copyMs.push(performance.now() - c0);
    await rm(copyTo, { recursive: true, force: true });

    // What any durable receiver pays: each file written as the server's store writes one (temp, fsync, rename, folder fsync).
    const durableRoot = join(ctx.tmp, `initial-durable-${rep}`);
    const durable = new NodeFileStorage({ root: durableRoot });
    const d0 = performance.now();
    for (const file of files) await durable.replace(file, await readFile(join(sessionDir, file)));
    durableMs.push(performance.now() - d0);
    await rm(durableRoot, { recursive: true, force: true });

    const serverRoot = join(ctx.tmp, `initial-server-${rep}`);
    const server = await syncServerAt(new NodeFileStorage({ root: serverRoot }));
    await device.storage.remove("sync");
    const t0 = performance.now();
    const report = await syncStores({ local: device, remote: remoteAt(server.url) });
    syncMs.push(performance.now() - t0);
    await server.close();
    if (report.pushed !== n) throw new Error(`initial sync pushed ${report.pushed} messages; expected ${n}`);
    await rm(serverRoot, { recursive: true, force: true });
  }
  const value = bytes / MB / (median(syncMs) / 1000);
  const baseline = bytes / MB / (median(copyMs) / 1000);
  ctx.emit({
    case: 13,
    name: `sync.initial.n=${sizeLabel(n)}`,
    value,
    unit: "MB/s",
    baseline,
    baselineName: "fs.cp of the same session folder",
    ratio: value / baseline,
    ratioMeaning: "sync MB/s / copy MB/s",
    target: { op: ">=", limit: 0.25, text: "≥ 0.25" },
    runs: reps,
    note: `${(bytes / MB).toFixed(1)} MB in ${files.length} files; sync ${median(syncMs).toFixed(0)} ms, fs.cp ${
      median(copyMs).toFixed(0)
    } ms; the same files written durably one by one (temp, fsync, rename, folder fsync; no sessionfold code) ${
      median(durableMs).toFixed(0)
    } ms, which alone bounds the ratio at ${(median(copyMs) / median(durableMs)).toFixed(3)} (medians)`,
  });
}

/**
 * A device and a server that both hold the same synthetic session of `n` messages, and the
 * device's sync state saying so (what an earlier sync would have left), warmed by one sync.
 */
async function agreedPair(ctx: CaseContext, n: number) {
  const deviceRoot = join(ctx.tmp, `flat-${n}-device`);
  const serverRoot = join(ctx.tmp, `flat-${n}-server`);
  await buildSessionfold(deviceRoot, n);
  await buildSessionfold(serverRoot, n);
  const server = await syncServerAt(new NodeFileStorage({ root: serverRoot }));
  const remote = remoteAt(server.url);
  const state = {
    client_id: `bench-flat-${n}`,
    next_number: 1,
    pending: [],
    sessions: {
      [REF]: {
        last_sequence: n,
        last_message_id: syntheticMessage(n).message_id,
        labels: { title: `synthetic ${n}` },
        instruction: BENCH_SYSTEM,
        place: "live",
        segments: { count: historyPlan(n).segments.length, last: historyPlan(n).segments.map(formatSegmentName).at(-1) ?? null },
      },
    },
  };
  await mkdir(join(deviceRoot, "sync/remotes"), { recursive: true });
  await writeFile(join(deviceRoot, syncStatePath(remote.id)), JSON.stringify(state));
  const device = new Sessions({ storage: new NodeFileStorage({ root: deviceRoot }) });
  const warm = await syncStores({ local: device, remote });
  if (warm.pushed !== 0 || warm.pulled !== 0 || warm.conflicts.length > 0) {
    throw new Error(`the agreed pair of ${n} was not in agreement: ${JSON.stringify(warm)}`);
  }
  return { n, device, remote, close: server.close };
}

async function incrementalFlatness(ctx: CaseContext): Promise<void> {
  const big = ctx.quick ? 100_000 : 1_000_000;
  const pairs = [await agreedPair(ctx, 100), await agreedPair(ctx, big)];
  // The built histories written back first, so that their writeback does not fall on the syncs' fsyncs.
  execFileSync("sync");
  const reps = ctx.quick ? 15 : 21;
  const times = new Map<number, number[]>(pairs.map((p) => [p.n, []]));
  const cpu = new Map<number, number[]>(pairs.map((p) => [p.n, []]));
  for (let rep = -2; rep < reps; rep++) {
    for (const pair of pairs) {
      const session = await pair.device.open(REF);
      await session.append(appendMessage(rep));
      await session.close();
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      const report = await syncStores({ local: pair.device, remote: pair.remote });
      const ms = performance.now() - t0;
      const used = process.cpuUsage(c0);
      if (report.pushed !== 1) throw new Error(`incremental sync of ${pair.n} pushed ${report.pushed}; expected 1`);
      if (rep >= 0) {
        times.get(pair.n)!.push(ms);
        cpu.get(pair.n)!.push((used.user + used.system) / 1000);
      }
    }
  }
  for (const pair of pairs) await pair.close();
  const [small, large] = pairs.map((p) => median(times.get(p.n)!));
  const [smallCpu, largeCpu] = pairs.map((p) => median(cpu.get(p.n)!));
  ctx.emit({
    case: 13,
    name: "sync.incremental.flatness",
    value: large!,
    unit: "ms",
    baseline: small!,
    baselineName: "the same sync on a session of 10²",
    ratio: large! / small!,
    ratioMeaning: `n=${sizeLabel(big)} / n=1e2`,
    target: { op: "<=", limit: 1.2, text: "≤ 1.2 (flat)" },
    runs: reps,
    note: `one new message: ${large!.toFixed(2)} ms at ${sizeLabel(big)}, ${
      small!.toFixed(2)
    } ms at 1e2; CPU time of the process (device and server) per sync ${largeCpu!.toFixed(1)} against ${smallCpu!.toFixed(1)} ms (${
      (largeCpu! / smallCpu!).toFixed(2)
    }), which the machine's load moves less than wall time (medians, sizes round-robin)`,
  });
}

/** A node:http server that reads each body whole and answers a fixed small JSON: the floor of any HTTP push. */
async function bareServer() {
  const server = createServer((req, res) => {
    req.on("data", () => {});
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ v: SYNC_PROTOCOL_VERSION, results: [] }));
    });
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise<void>((done) => server.close(() => done())) };
}

async function roundTrip(ctx: CaseContext): Promise<void> {
  const timed = timedStorage(new NodeFileStorage({ root: join(ctx.tmp, "rt-server") }), true);
  const server = await syncServerAt(timed.storage);
  const bare = await bareServer();
  const remote: SyncRemote = remoteAt(server.url);
  let number = 0;
  let sequence = 0;
  const message = (seq: number): MessageRecord => ({ ...syntheticMessage(seq), revision: seq });
  const pushOne = async () => {
    sequence++;
    const mutation: Mutation = sequence === 1
      ? {
        number: ++number,
        op: "create",
        ref: REF,
        meta: {
          schema_version: 1,
          ...{ session_id: BENCH_REF.sessionId, agent_id: BENCH_REF.agentId, workspace_id: BENCH_REF.workspaceId },
          created_at: message(1).created_at,
          updated_at: message(1).created_at,
          message_count: 0,
          history_bytes: 0,
          revision: 1,
        },
        instruction: null,
        segments: [],
        messages: [message(1)],
      }
      : {
        number: ++number,
        op: "append",
        ref: REF,
        base_sequence: sequence - 1,
        base_message_id: message(sequence - 1).message_id,
        messages: [message(sequence)],
      };
    const outcome = await remote.push({ v: SYNC_PROTOCOL_VERSION, client_id: "bench-rt", mutations: [mutation] });
    if (outcome.results[0]?.status !== "applied") throw new Error(`push ${number}: ${JSON.stringify(outcome)}`);
  };
  const bodyOf = (seq: number) =>
    JSON.stringify({
      v: SYNC_PROTOCOL_VERSION,
      client_id: "bench-rt",
      mutations: [{ number: seq, op: "append", ref: REF, base_sequence: seq - 1, base_message_id: message(seq - 1).message_id, messages: [message(seq)] }],
    });
  const postBare = async (seq: number) => {
    const response = await fetch(`${bare.url}/sync/push`, { method: "POST", headers: { "content-type": "application/json" }, body: bodyOf(seq) });
    await response.text();
  };
  await pushOne();
  const batches = ctx.quick ? 10 : 20;
  const perBatch = ctx.quick ? 20 : 50;
  const pushMs: number[] = [];
  const floorMs: number[] = [];
  let pushTotal = 0;
  for (let batch = -1; batch < batches; batch++) {
    if (batch === 0) timed.clear();
    const f0 = performance.now();
    for (let i = 0; i < perBatch; i++) await postBare(sequence + 2 + i);
    const floor = (performance.now() - f0) / perBatch;
    const p0 = performance.now();
    for (let i = 0; i < perBatch; i++) await pushOne();
    const push = performance.now() - p0;
    if (batch >= 0) {
      floorMs.push(floor);
      pushMs.push(push / perBatch);
      pushTotal += push;
    }
  }
  await server.close();
  await bare.close();
  const value = median(pushMs);
  const baseline = median(floorMs);
  const runs = batches * perBatch;
  ctx.emit({
    case: 13,
    name: "sync.round-trip",
    value,
    unit: "ms",
    baseline,
    baselineName: "the same body POSTed to a bare node:http server that reads it and answers",
    ratio: value / baseline,
    ratioMeaning: "push / bare POST",
    target: { op: "<=", limit: 3, text: "≤ 3" },
    runs: batches,
    note: `one push to a session whose Active grows to ${sequence} messages over the run (appended through the server's kept handle): ${
      breakdown(timed.measure(pushTotal / runs, runs))
    }; the bare POST plus that storage time alone bound the ratio at ${((baseline + timed.measure(pushTotal / runs, runs).waitingMs) / baseline).toFixed(2)}`,
  });
}

/** A timed storage's figures, per call kind (log entries by number summed as one). */
function breakdown(times: StorageTimes): string {
  const calls = new Map<string, number>();
  for (const [label, ms] of times.calls) {
    const kind = label.replace(/\d{10,}/g, "#");
    calls.set(kind, (calls.get(kind) ?? 0) + ms);
  }
  const list = [...calls].sort((a, b) => b[1] - a[1]).map(([label, ms]) => `${label} ${ms.toFixed(2)}`).join(", ");
  return `${times.totalMs.toFixed(2)} ms = ${times.waitingMs.toFixed(2)} ms waiting on the server's storage (${list}) + ${
    times.outsideMs.toFixed(2)
  } ms outside it (HTTP both ways, JSON, checks, the client)`;
}
