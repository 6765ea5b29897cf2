/**
 * Case 4: compaction against a raw sequential write of the same bytes.
 *
 * A session whose Active holds 1,000 messages of ~500 bytes (about a full 128k-token
 * context; written directly, not committed) is compacted through `openNodeSessions`
 * (worker, fsync on) with a summarizer that answers at once, so only sessionfold's own
 * work and I/O are timed: its lock, the new segment, `meta.json` and the new Active,
 * each durable. The baseline writes the same number of bytes (segment + Active +
 * meta.json as they are after the compaction) to one new file with one `write` and one
 * `fsync`. Each repetition uses a fresh session; the two alternate.
 *
 * A long-lived host compacts many sessions, so the row times compactions once the code is
 * warm: the first {@linkcode WARMUP} compactions of each store are not timed. With one untimed
 * compaction, as before, the timed ones were the 2nd to 8th of the process: V8 was still
 * compiling the compaction's code on its background threads, whose CPU time counted, and they
 * ran half-tiered code. The first compaction of the process (code never run before) is given
 * in the note as what a fresh process pays once.
 *
 * @module
 */
import { closeSync, fsync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, statSync, writeSync } from "node:fs";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { encodeJsonl, type MessageRecord, type SessionMeta, sessionPaths, type StoragePort, type Summarizer } from "../../../core/mod.ts";
import { openNodeSessions } from "../../../runtime-node/mod.ts";
import type { CaseContext } from "../lib/result.ts";
import { median } from "../lib/stats.ts";
import { BENCH_REF, syntheticMessage, syntheticText, timestampOf } from "../lib/synth.ts";

const ACTIVE_MESSAGES = 1000;
/**
 * Untimed compactions per store before the timed ones: in a probe of 40 compactions in a row, the CPU time per
 * compaction (all threads) fell from 6–19 ms in the first two to 3–10 ms up to the 10th and 2.2–3 ms from the 12th on,
 * once V8's background compilation had ended.
 */
const WARMUP = 12;
/** Text length giving ~500-byte records. */
const TEXT_CHARS = 330;

/** A summarizer that answers at once: only sessionfold's own work is timed. */
export const instantSummarizer: Summarizer = {
  summarize: async ({ messages }) => ({ text: `Summary through ${messages.at(-1)?.sequence}: ${syntheticText(7, 1500)}` }),
};

/** Writes a session whose Active holds `count` messages (no segments) under `root`. */
async function writeActiveSession(root: string, sessionId: string, count: number): Promise<void> {
  const ref = { ...BENCH_REF, sessionId };
  const paths = sessionPaths(ref);
  const records: MessageRecord[] = [];
  for (let s = 1; s <= count; s++) records.push(syntheticMessage(s, TEXT_CHARS));
  const active = encodeJsonl(records);
  const meta: SessionMeta = {
    schema_version: 1,
    session_id: sessionId,
    agent_id: ref.agentId,
    workspace_id: ref.workspaceId,
    created_at: timestampOf(0),
    updated_at: timestampOf(count),
    message_count: count,
    history_bytes: active.length,
    revision: count,
  };
  const put = async (path: string, bytes: Uint8Array) => {
    const file = join(root, ...path.split("/"));
    await mkdir(dirname(file), { recursive: true, mode: 0o700 });
    await writeFile(file, bytes, { mode: 0o600 });
  };
  await put(paths.active, active);
  await put(paths.meta, new TextEncoder().encode(`${JSON.stringify(meta, null, 2)}\n`));
}

/**
 * A compaction's writes as docs/FORMAT.md orders them, with raw system calls and no sessionfold code: `meta.json`, the
 * new segment and the new Active, each put in place (a rename over its name) and its folder fsynced before the next is
 * put in place. The contract orders names, not bytes: the three files are written to temp files and fsynced together
 * first (the folder the segment's new folder went into with them), as sessionfold's Node store does. The segment goes
 * into a new folder (`segments`), as in the first compaction of a session, which every timed compaction here is.
 */
async function formatCompaction(dir: string, files: readonly Uint8Array[], rep: number): Promise<void> {
  const segments = join(dir, `segments-${rep}`);
  mkdirSync(segments, { mode: 0o700 });
  const folders = [dir, segments, dir];
  const staged = files.map((bytes, i) => {
    const temp = join(folders[i]!, `.tmp-${i}`);
    const fd = openSync(temp, "w", 0o600);
    for (let done = 0; done < bytes.length;) done += writeSync(fd, bytes, done);
    return { temp, fd };
  });
  const folder = openSync(dir, "r");
  await Promise.all([...staged.map(({ fd }) => fd), folder].map((fd) => new Promise<void>((done, fail) => fsync(fd, (e) => e ? fail(e) : done()))));
  closeSync(folder);
  staged.forEach(({ temp, fd }, i) => {
    closeSync(fd);
    renameSync(temp, join(folders[i]!, `file-${i}`));
    syncFolder(folders[i]!);
  });
}

function syncFolder(dir: string): void {
  const folder = openSync(dir, "r");
  fsyncSync(folder);
  closeSync(folder);
}

/** When each commit plan a store's sessions sent went to its worker and when its answer came back (`performance.now()`). */
interface TimedPlan {
  readonly sent: number;
  done: number;
}

/**
 * Times every commit plan `storage` applies, from outside: a compaction sends two (the lock with the revision check, then
 * its writes with the lock's release), so the wall time between them is the host's own work. Returns the list it fills.
 */
function timePlans(storage: StoragePort): TimedPlan[] {
  const plans: TimedPlan[] = [];
  const apply = storage.applyCommitPlan?.bind(storage);
  if (!apply) throw new Error("case 4: the store applies no commit plans");
  storage.applyCommitPlan = async (plan) => {
    const timed = { sent: performance.now(), done: 0 };
    plans.push(timed);
    const result = await apply(plan);
    timed.done = performance.now();
    return result;
  };
  return plans;
}

export async function compactCase(ctx: CaseContext): Promise<void> {
  const reps = ctx.quick ? 3 : 7;
  const root = join(ctx.tmp, "store");
  const store = await openNodeSessions({ root });
  const plans = timePlans(store.storage);
  /** The timed compactions' phases: the lock plan's round trip, the host's work between the plans, the close plan's round trip. */
  const lockMs: number[] = [];
  const hostMs: number[] = [];
  const closeMs: number[] = [];
  // The same compaction with fsync off: what is CPU and system calls rather than waiting for the disk.
  const volatileRoot = join(ctx.tmp, "volatile");
  const volatile = await openNodeSessions({ root: volatileRoot, fsync: false });
  const volatileMs: number[] = [];
  const compactMs: number[] = [];
  /** The same compactions' CPU time (user + system, every thread of the process: host, worker, GC), and its system part. */
  const cpuMs: number[] = [];
  const systemMs: number[] = [];
  const rawMs: number[] = [];
  const contractMs: number[] = [];
  const contractDir = join(ctx.tmp, "format-contract");
  mkdirSync(contractDir, { recursive: true });
  let bytes = 0;
  let firstMs = 0;
  try {
    for (let rep = -WARMUP; rep < reps; rep++) {
      const sessionId = `c${rep + 1}`;
      await writeActiveSession(root, sessionId, ACTIVE_MESSAGES);
      const session = await store.sessions.open({ ...BENCH_REF, sessionId });
      plans.length = 0;
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      const outcome = await session.compact({ summarizer: instantSummarizer });
      const elapsed = performance.now() - t0;
      const used = process.cpuUsage(cpu0);
      const [lock, close] = plans;
      if (plans.length !== 2 || !lock || !close) throw new Error(`case 4: a compaction sent ${plans.length} commit plans, not 2`);
      if (rep === -WARMUP) firstMs = elapsed;
      if (outcome.segment === null) throw new Error("case 4: nothing was compacted");
      const paths = session.paths;
      const file = (path: string) => join(root, ...path.split("/"));
      bytes = statSync(file(paths.segment(outcome.segment))).size + statSync(file(paths.active)).size + statSync(file(paths.meta)).size;
      // The raw write of the same bytes, right after, on the same disk.
      const payload = new Uint8Array(bytes).fill(0x61);
      const raw = join(ctx.tmp, `raw-${rep + 1}.bin`);
      const r0 = performance.now();
      const fd = openSync(raw, "w", 0o600);
      for (let done = 0; done < payload.length;) done += writeSync(fd, payload, done);
      fsyncSync(fd);
      closeSync(fd);
      const rawElapsed = performance.now() - r0;
      if (rep >= 0) {
        compactMs.push(elapsed);
        cpuMs.push((used.user + used.system) / 1000);
        systemMs.push(used.system / 1000);
        rawMs.push(rawElapsed);
        lockMs.push(lock.done - lock.sent);
        hostMs.push(close.sent - lock.done + (lock.sent - t0));
        closeMs.push(close.done - close.sent);
      }
      await rm(raw, { force: true });
      const files = [paths.meta, paths.segment(outcome.segment), paths.active].map((path) => readFileSync(file(path)));
      const c0 = performance.now();
      await formatCompaction(contractDir, files, rep + WARMUP);
      if (rep >= 0) contractMs.push(performance.now() - c0);
      await store.sessions.delete({ ...BENCH_REF, sessionId });
      await writeActiveSession(volatileRoot, sessionId, ACTIVE_MESSAGES);
      const other = await volatile.sessions.open({ ...BENCH_REF, sessionId });
      const v0 = performance.now();
      await other.compact({ summarizer: instantSummarizer });
      if (rep >= 0) volatileMs.push(performance.now() - v0);
      await volatile.sessions.delete({ ...BENCH_REF, sessionId });
    }
  } finally {
    await store.close();
    await volatile.close();
  }
  const value = median(compactMs);
  const base = median(rawMs);
  const mb = bytes / (1024 * 1024);
  const contract = median(contractMs);
  const fsyncOff = median(volatileMs);
  const cpu = median(cpuMs);
  const [lock, host, close] = [median(lockMs), median(hostMs), median(closeMs)];
  ctx.log(
    `case 4: compaction ${value.toFixed(2)} ms, raw write ${base.toFixed(2)} ms, FORMAT's three durable replaces ${contract.toFixed(2)} ms, ${bytes} bytes`,
  );
  ctx.emit({
    case: 4,
    name: `compact.active=${ACTIVE_MESSAGES}`,
    value: mb / (value / 1000),
    unit: "MB/s",
    baseline: mb / (base / 1000),
    baselineName: "one write + fsync of the same bytes to a new file (MB/s)",
    ratio: base / value,
    ratioMeaning: "value / baseline (fraction of raw write speed)",
    target: { op: ">=", limit: 0.3, text: "≥ 0.3 of raw write speed" },
    runs: reps,
    note:
      `${value.toFixed(2)} ms per compaction, of which ${cpu.toFixed(2)} ms CPU (user + system time of the process, all threads, same compactions; system ${
        median(systemMs).toFixed(2)
      } ms; ${fsyncOff.toFixed(2)} ms with fsync off) vs ${base.toFixed(2)} ms raw for ${
        (bytes / 1024).toFixed(0)
      } KiB (segment + Active + meta.json); summarizer answers at once; after ${WARMUP} untimed compactions per store (the process's first took ${
        firstMs.toFixed(2)
      } ms); ` +
      `phases (medians, each plan timed from the host): the lock plan's round trip ${
        lock.toFixed(2)
      } ms (lock + revision check, the summary being made under the lock; ` +
      `the host prepares the rest meanwhile), the host's work between the plans ${host.toFixed(2)} ms, the close plan's round trip ${
        close.toFixed(2)
      } ms (the new Active and the segment's lines written and flushed before it, while the lock's plan and the summary run: docs/FORMAT.md "Compaction"); ` +
      `FORMAT's file operations in one go with raw calls, nothing overlapped (compact.format-contract): ${contract.toFixed(2)} ms, base / contract = ${
        (base / contract).toFixed(2)
      }; bound: the close plan alone, with no lock plan and no host work: base / close = ${(base / close).toFixed(2)}`,
  });
  ctx.emit({
    case: 4,
    name: "compact.format-contract",
    value: mb / (contract / 1000),
    unit: "MB/s",
    baseline: mb / (base / 1000),
    baselineName: "one write + fsync of the same bytes to a new file (MB/s)",
    ratio: base / contract,
    ratioMeaning: "value / baseline (fraction of raw write speed)",
    runs: reps,
    note:
      `not sessionfold: the same three files written as docs/FORMAT.md requires with raw system calls (each a temp file, the three fsynced together with the folder the segment's new folder went into, as in a session's first compaction; then meta.json, segment, Active renamed into place in that order, each followed by its folder's fsync): ${
        contract.toFixed(2)
      } ms, the contract's operations done in one go (a compaction that stages has written and flushed its new Active before its close plan)`,
  });
}
