/**
 * Real crash tests of the Node runtime: a child process (fixtures/crash-child.ts) that
 * appends, runs agent turns (drafts streaming every ~5 ms, tool calls, cancellations) and
 * compacts through `openNodeSessions` (the storage worker, fsync on) is killed with SIGKILL
 * at seeded random moments, CRASH_RUNS times (default 200). Kills come in chains on one
 * store, so sessions recovered from one crash are crashed again.
 *
 * After each kill this process opens the store and checks: every session opens with no fatal
 * diagnostic (only truncated_tail / overlap_removed / stale_draft / meta_rebuilt may appear);
 * every message the child acknowledged over its fd-3 pipe is in the history exactly once;
 * sequences run 1..n; `message_count` is n; the revision is at least the last acknowledged
 * one. A `writer.lock` the dead child left is taken over by the next writer at once and
 * reported (`stale_lock_reclaimed`, naming the dead child's pid): no session ever needs a
 * manual unlock, and no lock of a live process is ever taken. One append in four carries a
 * 2–4 MB message and a quarter of the kills wait for such a write to start, so kills often land
 * inside writes, and the torn tails they leave must be recovered (how many is luck, so it is
 * only counted; the torn-write case below forces one: a child whose write is held open
 * half-way when it is killed). A live draft
 * is committed by `finishDraft()` (or by the next write, or left to the next child) with its
 * pending messages, never duplicating an acknowledged one. After a write the session reopens
 * with no diagnostic at all, and a raw read of its files (plain JSON.parse) agrees.
 *
 * Environment: CRASH_RUNS (kills), CRASH_SEED, CRASH_CONCURRENCY (children at once),
 * CRASH_TSX_RUNS (kills whose child runs from source through tsx; the rest use a bundle
 * built once, which starts several times faster), CRASH_KEEP=1 keeps the stores.
 */
import { statSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DiagnosticCode, type LiveDraft, type MessageRecord, NotFoundError, Session, type StaleLockReclaimed } from "../../core/mod.ts";
import { openNodeSessions } from "../../runtime-node/mod.ts";
import { linuxProcessStartTime } from "../../runtime-node/process-probe.ts";
import { prng } from "../support/prng.ts";
import { bundledLauncher, type ChildLauncher, fullHistory, pagedHistory, rawHistory, type Report, sleep, startChild, tsxLauncher } from "./process-support.ts";

const RUNS = Number(process.env["CRASH_RUNS"] ?? 200);
const SEED = Number(process.env["CRASH_SEED"] ?? 20261202);
const CONCURRENCY = Number(process.env["CRASH_CONCURRENCY"] ?? 3);
const TSX_RUNS = Number(process.env["CRASH_TSX_RUNS"] ?? 2);
const KEEP = process.env["CRASH_KEEP"] === "1";

/** Non-fatal diagnostics a crash may leave (docs/FORMAT.md recovery rules 1, 3, 4, 5). */
const ALLOWED: ReadonlySet<DiagnosticCode> = new Set(["truncated_tail", "overlap_removed", "stale_draft", "meta_rebuilt"]);

const stats = {
  kills: 0,
  acks: 0,
  idsChecked: 0,
  locksLeft: 0,
  locksReclaimed: 0,
  manualUnlocks: 0,
  bigWriteKills: 0,
  createdSessions: 0,
  adoptedSessions: 0,
  emptyFolders: 0,
  draftsSeen: 0,
  draftsFinished: 0,
  draftsByAppend: 0,
  draftsLeftToChild: 0,
  childRecoveredDrafts: 0,
  reopenedClean: 0,
  diagnostics: new Map<string, number>(),
  killedDuring: new Map<string, number>(),
};

let base: string;
let bundle: (ChildLauncher & { dispose(): Promise<void> }) | undefined;
let tsx: ChildLauncher;
let failed = false;
let killCounter = 0;

beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), "sessionfold-crash-"));
  bundle = await bundledLauncher("crash-child");
  tsx = tsxLauncher("crash-child");
}, 120_000);

afterAll(async () => {
  await bundle?.dispose();
  if (!failed && !KEEP) await rm(base, { recursive: true, force: true });
  else console.log(`crash stores kept in ${base}`);
});

/** What the test knows must be committed in one session: ids acknowledged so far (by children or by this process). */
interface Known {
  readonly ref: string;
  readonly acked: Set<string>;
  lastRevision: number;
}

const bump = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);

/** Sequences 1..n, ids unique, every acknowledged id present (so exactly once). */
function checkHistory(history: readonly MessageRecord[], known: Known, where: string): void {
  history.forEach((m, i) => {
    if (m.sequence !== i + 1) expect.fail(`${where}: sequence ${m.sequence} at position ${i + 1} (${history.map((h) => h.sequence).join(",")})`);
  });
  const counts = new Map<string, number>();
  for (const m of history) counts.set(m.message_id, (counts.get(m.message_id) ?? 0) + 1);
  const duplicates = [...counts].filter(([, n]) => n > 1);
  expect(duplicates, `${where}: duplicated message ids`).toEqual([]);
  const missing = [...known.acked].filter((id) => !counts.has(id));
  expect(missing, `${where}: acknowledged messages missing from the history (${history.length} messages)`).toEqual([]);
  stats.idsChecked += known.acked.size;
}

/** The ids finishing `draft` commits: its pending messages, then the draft itself when it has output. */
function draftIds(draft: LiveDraft): { pending: string[]; record: string | undefined } {
  const hasOutput = draft.record.parts.length > 0 || draft.record.usage !== undefined;
  return { pending: draft.pending.map((m) => m.message_id), record: hasOutput ? draft.record.message_id : undefined };
}

/**
 * A store on `root` whose dead-owner reclaims are checked as they happen: only the killed
 * child's lock may be taken over, and only once that pid no longer runs.
 */
async function checkedStore(root: string, childPid: number, worker: boolean, where: string) {
  const reclaimed: StaleLockReclaimed[] = [];
  const store = await openNodeSessions({
    root,
    worker,
    onStaleLockReclaimed: (event) => {
      reclaimed.push(event);
      stats.locksReclaimed += 1;
    },
  });
  const checkReclaimed = () => {
    for (const event of reclaimed.splice(0)) {
      expect(event.owner.pid, `${where}: a reclaimed lock's owner`).toBe(childPid);
      expect(linuxProcessStartTime(childPid), `${where}: the reclaimed lock's owner is gone`).toBeNull();
    }
  };
  return { store, reclaimed, checkReclaimed };
}

/** Takes the session's lock once (a no-op operation), so a lock the dead child left is taken over. */
async function takeOverLeftLock(session: Session, reclaimed: readonly StaleLockReclaimed[], where: string): Promise<void> {
  stats.locksLeft += 1;
  const before = reclaimed.length;
  const outcome = await session.mutate("after-kill", async () => undefined).catch((e: unknown) => e);
  if (outcome !== undefined) stats.manualUnlocks += 1;
  expect(outcome, `${where}: the dead child's lock was not taken over`).toBeUndefined();
  expect(reclaimed.length, `${where}: the take-over was reported`).toBe(before + 1);
}

/**
 * Spins (up to 200 ms) until `file` grows by part of a `bytes`-long append: the kill that
 * follows then lands inside the write. The page cache grows page by page, so a large write is
 * seen half-done.
 */
function waitUntilWriting(file: string, bytes: number): void {
  const size = () => statSync(file, { throwIfNoEntry: false })?.size ?? 0;
  const before = size();
  const deadline = performance.now() + 200;
  while (performance.now() < deadline) {
    const now = size();
    if (now > before && now < before + bytes) return;
  }
}

/** After a kill: open, check, take a leftover lock over, settle a draft, write, reopen clean. */
async function verifyAfterKill(root: string, known: Known, childPid: number, last: boolean, random: () => number, where: string): Promise<void> {
  const { store, reclaimed, checkReclaimed } = await checkedStore(root, childPid, random() < 0.1, where);
  try {
    const session = await store.sessions.open(known.ref);
    const fatal = session.diagnostics.filter((d) => d.fatal);
    expect(fatal, `${where}: fatal diagnostics`).toEqual([]);
    for (const d of session.diagnostics) {
      bump(stats.diagnostics, d.code);
      if (!ALLOWED.has(d.code)) expect.fail(`${where}: unexpected diagnostic ${d.code}: ${d.message}`);
    }
    const history = await fullHistory(session);
    checkHistory(history, known, `${where} (after kill)`);
    expect(session.meta.message_count, `${where}: message_count`).toBe(history.length);
    expect(session.revision, `${where}: revision vs last acknowledged`).toBeGreaterThanOrEqual(known.lastRevision);

    // A lock the dead child left: taken over at once, never by hand.
    const lockFile = join(root, session.paths.lock);
    const locked = (await readFile(lockFile).catch(() => undefined)) !== undefined;
    if (locked) await takeOverLeftLock(session, reclaimed, where);
    checkReclaimed();

    let draft = session.draft;
    let wrote = false;
    if (draft) {
      stats.draftsSeen += 1;
      const committedAlready = draftIds(draft);
      for (const id of [...committedAlready.pending, committedAlready.record]) {
        if (id !== undefined) expect(known.acked.has(id), `${where}: a live draft holds acknowledged message ${id}`).toBe(false);
      }
      if (last || random() < 0.5) {
        const { pending, record } = draftIds(draft);
        const result = await session.finishDraft();
        expect(result?.sequences.length, `${where}: finishDraft commits pending + draft`).toBe(pending.length + (record ? 1 : 0));
        const after = await fullHistory(session);
        const stopped = after.find((m) => m.message_id === record);
        if (record) expect(stopped?.status, `${where}: finished draft`).toBe("stopped");
        for (const id of [...pending, ...(record ? [record] : [])]) known.acked.add(id);
        known.lastRevision = result!.revision;
        checkHistory(after, known, `${where} (after finishDraft)`);
        stats.draftsFinished += 1;
        draft = undefined;
        wrote = true;
      }
    }
    // Mostly write now (the lock removed, the repairs applied); sometimes leave the draft and the
    // postponed repairs to the next child, so recovery of a recovered session is exercised too.
    if (wrote || last || random() < (locked ? 0.7 : 0.5)) {
      const pendingDraft = draft && draftIds(draft);
      const probe = `probe_${childPid}`;
      const result = await session.append({ role: "user", parts: [{ type: "text", text: `after the kill of ${childPid}` }], message_id: probe });
      known.acked.add(probe);
      if (pendingDraft) {
        // append() finished the draft in its own batch, before the probe.
        for (const id of [...pendingDraft.pending, ...(pendingDraft.record ? [pendingDraft.record] : [])]) known.acked.add(id);
        stats.draftsByAppend += 1;
      }
      known.lastRevision = result.revision;
      wrote = true;
    } else if (draft) {
      stats.draftsLeftToChild += 1;
    }
    if (!wrote) return;

    // The write applied every postponed repair: the session reopens with no diagnostic at all.
    const again = await store.sessions.open(known.ref);
    expect(again.diagnostics, `${where}: diagnostics after a write`).toEqual([]);
    expect(again.draft, `${where}: draft after a write`).toBeUndefined();
    const clean = await fullHistory(again);
    checkHistory(clean, known, `${where} (reopened)`);
    expect(again.meta.message_count).toBe(clean.length);
    expect(again.revision).toBe(known.lastRevision);
    expect((await pagedHistory(again)).map((m) => m.message_id), `${where}: paged history`).toEqual(clean.map((m) => m.message_id));
    const raw = await rawHistory(join(root, again.paths.dir));
    expect(raw.problems, `${where}: raw read`).toEqual([]);
    expect(raw.messages.map((m) => m.sequence), `${where}: raw sequences`).toEqual(clean.map((m) => m.sequence));
    expect(raw.messages.map((m) => m.message_id), `${where}: raw ids`).toEqual(clean.map((m) => m.message_id));
    stats.reopenedClean += 1;
  } finally {
    await store.close();
  }
}

/**
 * A session the child was creating when it died (not acknowledged): it is either an empty
 * folder that is not a session (`NotFoundError`; returns `undefined`), or a session that
 * opens without a fatal diagnostic and, once a leftover lock is removed, takes a write and
 * reopens clean. From then on its whole history is known.
 */
async function adoptUnacknowledged(root: string, ref: string, childPid: number, where: string): Promise<Known | undefined> {
  const { store, reclaimed, checkReclaimed } = await checkedStore(root, childPid, false, where);
  try {
    const opened = await store.sessions.open(ref).catch((e: unknown) => e);
    if (opened instanceof NotFoundError) {
      stats.emptyFolders += 1;
      return undefined;
    }
    expect(opened, `${where}: open of an unacknowledged session`).toBeInstanceOf(Session);
    const session = opened as Session;
    expect(session.diagnostics.filter((d) => d.fatal), `${where}: fatal diagnostics`).toEqual([]);
    const lockFile = join(root, session.paths.lock);
    if (await readFile(lockFile).catch(() => undefined)) await takeOverLeftLock(session, reclaimed, where);
    checkReclaimed();
    const result = await session.append({ role: "user", parts: [{ type: "text", text: `adopted after the kill of ${childPid}` }] });
    const again = await store.sessions.open(ref);
    expect(again.diagnostics, `${where}: diagnostics after a write`).toEqual([]);
    const history = await fullHistory(again);
    const known: Known = { ref, acked: new Set(history.map((m) => m.message_id)), lastRevision: result.revision };
    checkHistory(history, known, where);
    stats.adoptedSessions += 1;
    return known;
  } finally {
    await store.close();
  }
}

interface Chain {
  readonly index: number;
  readonly kills: number;
  readonly sessions: number;
  readonly seed: number;
}

function planChains(): Chain[] {
  const random = prng(SEED);
  const chains: Chain[] = [];
  for (let total = 0; total < RUNS;) {
    const kills = Math.min(1 + Math.floor(random() * 6), RUNS - total);
    chains.push({ index: chains.length, kills, sessions: random() < 0.3 ? 2 : 1, seed: Math.floor(random() * 2 ** 31) });
    total += kills;
  }
  return chains;
}

async function runChain(chain: Chain): Promise<void> {
  const random = prng(chain.seed);
  const root = await mkdtemp(join(base, `chain-${chain.index}-`));
  const refs = Array.from({ length: chain.sessions }, (_, i) => `crash/ws/s${i + 1}`);
  const setup = await openNodeSessions({ root, worker: false });
  for (const ref of refs) {
    const [agentId, workspaceId, sessionId] = ref.split("/") as [string, string, string];
    await setup.sessions.create({ agentId, workspaceId, sessionId, title: `crash chain ${chain.index}` });
  }
  await setup.close();
  const known = new Map<string, Known>(refs.map((ref) => [ref, { ref, acked: new Set<string>(), lastRevision: 0 }]));
  /** Folders a create left before its meta.json appeared: not sessions. */
  const empty = new Set<string>();

  for (let k = 0; k < chain.kills; k++) {
    const childSeed = (chain.seed + k * 7919) >>> 0;
    const where = `seed ${SEED} chain ${chain.index} kill ${k + 1}/${chain.kills} (child seed ${childSeed}, root ${root})`;
    const launcher = killCounter++ < TSX_RUNS || !bundle ? tsx : bundle;
    const child = startChild(launcher, [root, String(childSeed), refs.join(",")]);
    const ready = await child.next("ready");
    if (typeof ready["drafts"] === "number") stats.childRecoveredDrafts += ready["drafts"];
    const mode = random();
    if (mode < 0.25) {
      // Into a 2–4 MB append: its write takes milliseconds, so the kill often tears it.
      const big = await Promise.race([child.next("big-write").then((r) => r, () => undefined), sleep(4_000).then(() => undefined)]);
      if (big) {
        stats.bigWriteKills += 1;
        const [agentId, workspaceId, sessionId] = (big["ref"] as string).split("/") as [string, string, string];
        waitUntilWriting(join(root, "agents", agentId, "workspaces", workspaceId, "sessions", sessionId, "messages", "active.jsonl"), big["bytes"] as number);
      }
    } else if (mode < 0.5) {
      const acks = 1 + Math.floor(random() * 6);
      await Promise.race([child.next("ack", acks).catch(() => undefined), sleep(4_000)]);
      await sleep(Math.floor(random() * 15));
    } else {
      await sleep(Math.floor(random() * 400));
    }
    child.process.kill("SIGKILL");
    const end = await child.closed;
    const fatal = child.reports.find((r) => r.type === "fatal");
    expect(fatal, `${where}: the child failed on its own`).toBeUndefined();
    expect(end.signal, `${where}: exit (stderr: ${end.stderr.slice(-1000)})`).toBe("SIGKILL");
    stats.kills += 1;

    const open = new Map<string, Report>();
    for (const report of child.reports) {
      if (report.type === "begin") open.set(report["ref"] as string, report);
      if (report.type !== "ack") continue;
      open.delete((report["from"] ?? report["ref"]) as string);
      stats.acks += 1;
      let state = known.get(report["ref"] as string);
      if (!state) {
        expect(report["op"], `${where}: an acknowledgement for an unknown session`).toBe("create");
        state = { ref: report["ref"] as string, acked: new Set<string>(), lastRevision: 0 };
        known.set(state.ref, state);
        stats.createdSessions += 1;
      }
      for (const id of report["ids"] as string[]) {
        expect(state.acked.has(id), `${where}: message ${id} acknowledged twice`).toBe(false);
        state.acked.add(id);
      }
      const revision = report["revision"] as number;
      expect(revision, `${where}: acknowledged revisions never go back`).toBeGreaterThanOrEqual(state.lastRevision);
      state.lastRevision = revision;
    }
    for (const report of open.values()) bump(stats.killedDuring, report["op"] as string);

    for (const state of known.values()) await verifyAfterKill(root, state, child.pid, k === chain.kills - 1, random, `${where} ${state.ref}`);
    // Sessions the child created but did not acknowledge: none may be left unopenable.
    const sessionsDir = join(root, "agents", "crash", "workspaces", "ws", "sessions");
    for (const name of await readdir(sessionsDir)) {
      const ref = `crash/ws/${name}`;
      if (name.startsWith(".") || known.has(ref) || empty.has(ref)) continue;
      const adopted = await adoptUnacknowledged(root, ref, child.pid, `${where} ${ref}`);
      if (adopted) known.set(ref, adopted);
      else empty.add(ref);
    }
  }
  if (!KEEP) await rm(root, { recursive: true, force: true });
}

describe("Node runtime: SIGKILL at random moments", () => {
  it(`${RUNS} kills of a child that appends, runs, streams drafts and compacts lose no acknowledged message`, async () => {
    const started = performance.now();
    const chains = planChains();
    let next = 0;
    try {
      await Promise.all(
        Array.from({ length: Math.max(1, CONCURRENCY) }, async () => {
          while (next < chains.length) await runChain(chains[next++]!);
        }),
      );
    } catch (error) {
      failed = true;
      throw error;
    }
    expect(stats.kills).toBe(RUNS);
    expect(stats.manualUnlocks, "sessions that needed a manual unlock").toBe(0);
    const fmt = (map: Map<string, number>) => [...map].sort().map(([k, v]) => `${k}=${v}`).join(" ");
    console.log(
      `crash: ${stats.kills} kills (${chains.length} chains, seed ${SEED}, ${bundle?.kind ?? "tsx"}) in ${
        ((performance.now() - started) / 1000).toFixed(1)
      } s; ` +
        `${stats.acks} acks, ${stats.idsChecked} acknowledged ids checked; locks left ${stats.locksLeft}, taken over ${stats.locksReclaimed}, manual unlocks needed ${stats.manualUnlocks}; ` +
        `kills into a big write ${stats.bigWriteKills}, torn tails recovered ${
          stats.diagnostics.get("truncated_tail") ?? 0
        }; sessions created ${stats.createdSessions} (unacknowledged but opened clean ${stats.adoptedSessions}, empty folders ${stats.emptyFolders}); ` +
        `drafts seen ${stats.draftsSeen} (finishDraft ${stats.draftsFinished}, by append ${stats.draftsByAppend}, left to the child ${stats.draftsLeftToChild}, child saw ${stats.childRecoveredDrafts}); ` +
        `reopened clean ${stats.reopenedClean}; diagnostics: ${fmt(stats.diagnostics)}; killed during: ${fmt(stats.killedDuring)}`,
    );
  }, 1_200_000);
});

describe("Node runtime: SIGKILL inside a write", () => {
  it("tears the line being written; the next open recovers the torn tail and keeps every acknowledged message", async () => {
    const root = await mkdtemp(join(base, "torn-"));
    const ref = "crash/ws/torn";
    const setup = await openNodeSessions({ root, worker: false });
    await setup.sessions.create({ agentId: "crash", workspaceId: "ws", sessionId: "torn" });
    await setup.close();

    const launcher = await bundledLauncher("torn-child");
    try {
      const child = startChild(launcher, [root, ref]);
      const ack = await child.next("ack");
      const torn = await child.next("torn");
      // The file now ends inside the line the child is writing: the kill lands there, every time.
      const file = join(root, torn["path"] as string);
      const before = await readFile(file);
      expect(before.at(-1), "active.jsonl ends inside a line").not.toBe(0x0a);
      expect(torn["written"]).toBeLessThan(torn["total"] as number);
      child.process.kill("SIGKILL");
      const end = await child.closed;
      expect(end.signal, `exit (stderr: ${end.stderr.slice(-1000)})`).toBe("SIGKILL");

      const { store, reclaimed, checkReclaimed } = await checkedStore(root, child.pid, true, "torn");
      try {
        const session = await store.sessions.open(ref);
        expect(session.diagnostics.map((d) => [d.code, d.fatal])).toEqual([["truncated_tail", false]]);
        expect((await fullHistory(session)).map((m) => m.message_id)).toEqual(ack["ids"]);
        expect(session.revision).toBe(ack["revision"]);
        // The dead child's lock is taken over by the next write, which also cuts the torn tail off.
        await session.append({ role: "user", parts: [{ type: "text", text: "after the kill" }], message_id: "after_kill" });
        expect(reclaimed.map((e) => e.owner.pid)).toEqual([child.pid]);
        checkReclaimed();
        const again = await store.sessions.open(ref);
        expect(again.diagnostics).toEqual([]);
        const history = await fullHistory(again);
        expect(history.map((m) => m.message_id)).toEqual(["acked_message", "after_kill"]);
        const raw = await rawHistory(join(root, again.paths.dir));
        expect(raw.problems).toEqual([]);
        expect(raw.messages.map((m) => m.message_id)).toEqual(["acked_message", "after_kill"]);
      } finally {
        await store.close();
      }
    } finally {
      await launcher.dispose();
    }
  }, 120_000);
});
