/**
 * Crash points: every mutating storage operation of append (single and batch),
 * compaction, reset, draft finish, fork and archive is made the point where the process
 * dies (testing/faulty-storage.ts), and crashing appends also land torn prefixes of
 * several lengths, line boundaries inside a batch included. The next process must
 * find a session that opens without a fatal diagnostic, keeps every committed message
 * exactly once, holds all or none of the crashing operation's messages, and accepts
 * a further append (after an explicit unlock when the crash left the writer.lock).
 */
import { describe, expect, test } from "vitest";
import {
  InvalidInputError,
  MemoryStorage,
  type MessageRecord,
  NotFoundError,
  sessionPaths,
  type Sessions,
  type StoragePort,
  WriterLockedError,
} from "../../core/mod.ts";
import type { Session } from "../../core/session/session.ts";
import { FaultyStorage, SimulatedCrashError } from "../../testing/faulty-storage.ts";
import {
  fullHistory,
  IDENTITY,
  line,
  lines,
  msg,
  MUTATING,
  P,
  readText,
  RecordingStorage,
  REF,
  registry,
  restoreStorage,
  snapshot,
} from "../support/session.ts";
import { assistant, draftText, expectMetaConsistent, msgs, summarizer, user, writeSession } from "./support.ts";

const S2 = { ...REF, sessionId: "s2" };
const P2 = sessionPaths(S2);
const ARCHIVED = sessionPaths(REF, "archived");
const LIVE_SESSIONS = "agents/a1/workspaces/w1/sessions";

// ---------------------------------------------------------------------------
// Base states the scenarios start from (some with repairs pending, so that the
// repairs themselves are crashed too).
// ---------------------------------------------------------------------------

interface Base {
  readonly name: string;
  readonly liveDraft?: boolean;
  write(storage: StoragePort): Promise<void>;
}

const SEGS: [number, number][] = [[1, 2], [3, 4]];
const BASES: Base[] = [
  { name: "clean", write: async (s) => void (await writeSession(s, { segments: SEGS, active: msgs(5, 10), instruction: "sys", revision: 14 })) },
  {
    name: "torn tail",
    write: async (s) =>
      void (await writeSession(s, { segments: SEGS, active: msgs(5, 10), activeSuffix: line(msg(11)).slice(0, 40), meta: { history_bytes: 0 } }).then(
        fixBytes(s, 40),
      )),
  },
  {
    name: "missing newline",
    write: async (s) => void (await writeSession(s, { segments: SEGS, activeText: lines(msgs(5, 10)).slice(0, -1), meta: { message_count: 10 } })),
  },
  {
    name: "incomplete batch",
    write: async (s) =>
      void (await writeSession(s, { segments: SEGS, active: msgs(5, 10), activeSuffix: lines([{ ...msg(11), batch_size: 3 }, msg(12)]) }).then(
        fixBytes(s, byteLen(lines([{ ...msg(11), batch_size: 3 }, msg(12)]))),
      )),
  },
  { name: "overlap", write: async (s) => void (await writeSession(s, { segments: [[1, 2], [3, 6]], active: msgs(3, 10), meta: { message_count: 10 } })) },
  {
    name: "stale draft",
    write: async (s) => void (await writeSession(s, { segments: SEGS, active: msgs(5, 10), draft: draftText(10, { id: "m_10", pendingIds: [] }) })),
  },
  { name: "missing meta", write: async (s) => void (await writeSession(s, { segments: SEGS, active: msgs(5, 10), instruction: "sys", meta: null })) },
  { name: "live draft", liveDraft: true, write: async (s) => void (await writeSession(s, { segments: SEGS, active: msgs(5, 10), draft: draftText(12) })) },
];

function byteLen(text: string): number {
  return new TextEncoder().encode(text).length;
}

/** Makes meta.json's history_bytes leave out `extra` uncommitted bytes at Active's end (what a crash mid-append leaves). */
function fixBytes(storage: StoragePort, extra: number) {
  return async () => {
    const meta = JSON.parse((await readText(storage, P.meta))!) as Record<string, number>;
    let total = 0;
    for (const name of await storage.list(P.segmentsDir)) total += (await storage.read(`${P.segmentsDir}/${name}`))!.length;
    meta["history_bytes"] = total + (await storage.read(P.active))!.length - extra;
    await storage.replace(P.meta, new TextEncoder().encode(`${JSON.stringify(meta, null, 2)}\n`));
  };
}

// ---------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------

type Kind = "append" | "compact" | "reset" | "finish-draft" | "fork" | "archive";

interface Scenario {
  /** The `operation` its `writer.lock` names (default: `kind`). */
  readonly lockOperation?: string;
  readonly kind: Kind;
  /** Ids of the messages the operation itself brings (all or none must survive). */
  readonly ids: readonly string[];
  run(sessions: Sessions): Promise<unknown>;
}

const SCENARIOS: Record<string, Scenario> = {
  "append one": { kind: "append", ids: ["m_new"], run: async (s) => (await s.open(REF)).append(user("the new question", "m_new")) },
  "append batch": {
    kind: "append",
    ids: ["m_b1", "m_b2", "m_b3"],
    run: async (s) => (await s.open(REF)).append([user("first of three", "m_b1"), assistant("second of three", "m_b2"), user("third of three", "m_b3")]),
  },
  compact: {
    kind: "compact",
    ids: [],
    run: async (s) => (await s.open(REF)).compact({ summarizer: summarizer((r) => ({ text: `${r.previousSummary ?? ""} +${r.messages.length}` })) }),
  },
  reset: { kind: "reset", ids: [], run: async (s) => (await s.open(REF)).reset() },
  // A lease: the lock taken once at open, the commit without lock or revision read, the lock given back at close.
  "held append batch": {
    kind: "append",
    lockOperation: "lease",
    ids: ["m_h1", "m_h2"],
    run: async (s) => {
      const held = await s.open(REF, { hold: true });
      await held.append([user("held first", "m_h1"), assistant("held second", "m_h2")]);
      await held.close();
    },
  },
  "held compact": {
    kind: "compact",
    lockOperation: "lease",
    ids: [],
    run: async (s) => {
      const held = await s.open(REF, { hold: true });
      await held.compact({ summarizer: summarizer((r) => ({ text: `${r.previousSummary ?? ""} +${r.messages.length}` })) });
      await held.close();
    },
  },
  "finish draft": { kind: "finish-draft", ids: [], run: async (s) => (await s.open(REF)).finishDraft() },
  fork: { kind: "fork", ids: [], run: (s) => s.fork(REF, "s2") },
  archive: { kind: "archive", ids: [], run: (s) => s.archive(REF) },
};

/** Byte lengths of a torn append: around every line boundary, and spread over the bytes. */
function tornLengths(bytes: Uint8Array): number[] {
  const out = new Set<number>([0, 1, bytes.length - 1, bytes.length]);
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i] === 0x0a) { for (const d of [0, 1, 2]) out.add(i + d); // line without its newline, with it, and one byte of the next
     }
  }
  for (let j = 1; j < 12; j++) out.add(Math.floor((bytes.length * j) / 12));
  return [...out].filter((n) => n >= 0 && n <= bytes.length).sort((a, b) => a - b);
}

interface Before {
  ids: string[];
  revision: number;
  segments: number;
  draftIds: string[];
  instruction: string | undefined;
}

async function describeBase(storage: StoragePort): Promise<Before> {
  const session = await registry(storage).open(REF);
  expect(session.diagnostics.filter((d) => d.fatal)).toEqual([]);
  return {
    ids: (await fullHistory(session)).map((m) => m.message_id),
    revision: session.revision,
    segments: (await session.segments()).length,
    draftIds: draftIdsOf(session),
    instruction: await readText(storage, P.instruction),
  };
}

/** The ids a live draft commits when finished (pending messages, then the draft if it has output). */
function draftIdsOf(session: Session): string[] {
  const draft = session.draft;
  if (!draft) return [];
  return [...draft.pending.map((m) => m.message_id), ...(draft.record.parts.length > 0 ? [draft.record.message_id] : [])];
}

let totalCrashPoints = 0;

async function runCrashPoints(base: Base, scenarioName: string): Promise<number> {
  const scenario = SCENARIOS[scenarioName]!;
  const original = new MemoryStorage();
  await base.write(original);
  const before = await describeBase(original);
  const files = await snapshot(original);
  // The operation's own messages: a live draft is committed together with an append.
  const opIds = scenario.kind === "append" ? [...before.draftIds, ...scenario.ids] : scenario.kind === "finish-draft" ? before.draftIds : [];

  // An uncrashed run, recorded, to number the mutating operations and capture the appends' bytes.
  const recorder = new RecordingStorage(await restoreStorage(files));
  await scenario.run(registry(recorder));
  const mutations = recorder.calls.filter((c) => MUTATING.has(c.op));
  await checkRecovered(recorder.inner, scenario, before, opIds, `${base.name} / ${scenarioName} / no crash`, { expectDone: true });

  let points = 0;
  for (const [index, call] of mutations.entries()) {
    const k = index + 1;
    const torn = call.op === "append" ? tornLengths(call.bytes!) : [0];
    for (const tornBytes of torn) {
      const label = `${base.name} / ${scenarioName} / crash at ${k} (${call.op} ${call.path.replace(`${P.dir}/`, "")}${
        call.op === "append" ? `, ${tornBytes} of ${call.bytes!.length} bytes` : ""
      })`;
      const faulty = new FaultyStorage(await restoreStorage(files), { crashAt: k, tornBytes });
      let error: unknown;
      try {
        await scenario.run(registry(faulty));
      } catch (thrown) {
        error = thrown;
      }
      // Only the final release of the lock is swallowed (the operation had completed).
      if (error === undefined) expect(k === mutations.length && call.op === "remove" && call.path.endsWith("writer.lock"), label).toBe(true);
      else expect(error, label).toBeInstanceOf(SimulatedCrashError);
      expect(faulty.crash?.operation.name, label).toBe(call.op);
      const disk = await faulty.revive();
      // A resolved operation was acknowledged to its caller: it must be committed, whatever the crash left.
      await checkRecovered(disk, scenario, before, opIds, label, { acknowledged: error === undefined });
      points += 1;
    }
  }
  totalCrashPoints += points;
  return points;
}

/**
 * What a check demands beyond recovery: `expectDone` for the uncrashed run (committed and no
 * lock left), `acknowledged` for a crashed run whose operation still resolved (committed; only
 * the final lock release was lost).
 */
interface RecoveryExpectation {
  readonly expectDone?: boolean;
  readonly acknowledged?: boolean;
}

/** What the next process must find after the crash (or after the uncrashed run). */
async function checkRecovered(
  disk: StoragePort,
  scenario: Scenario,
  before: Before,
  opIds: readonly string[],
  label: string,
  options: RecoveryExpectation,
): Promise<void> {
  const sessions = registry(disk);
  const done = options.expectDone === true || options.acknowledged === true;
  const liveExists = (await disk.list(P.dir)).length > 0;
  const archivedExists = (await disk.list(ARCHIVED.dir)).length > 0;
  expect([liveExists, archivedExists].filter(Boolean), `${label}: the session is in exactly one place`).toHaveLength(1);
  if (scenario.kind !== "archive") expect(archivedExists, `${label}: only archive moves the session`).toBe(false);
  if (done && scenario.kind === "archive") expect(archivedExists, `${label}: an acknowledged archive moved the session`).toBe(true);

  const session = await sessions.open(REF, { archived: archivedExists });
  expect(session.diagnostics.filter((d) => d.fatal), `${label}: fatal diagnostics`).toEqual([]);
  expect(session.revision, `${label}: revision never goes backwards`).toBeGreaterThanOrEqual(before.revision);
  const history = await fullHistory(session);
  const ids = history.map((m) => m.message_id);
  expect(history.map((m) => m.sequence), `${label}: contiguous sequences`).toEqual(history.map((_, i) => i + 1));
  expect(new Set(ids).size, `${label}: no message twice`).toBe(ids.length);
  const committed = ids.length > before.ids.length;
  expect(ids, `${label}: all or none of the operation's messages`).toEqual(committed ? [...before.ids, ...opIds] : before.ids);
  if (done) expect(committed, `${label}: an acknowledged operation is committed`).toBe(opIds.length > 0);
  if (opIds.length > 0 && committed) expect(session.draft, `${label}: a committed draft is gone`).toBeUndefined();
  if (!committed && before.draftIds.length > 0) expect(draftIdsOf(session), `${label}: the uncommitted draft is retained`).toEqual(before.draftIds);
  if (scenario.kind === "compact" || scenario.kind === "reset") {
    expect([before.segments, before.segments + 1], `${label}: zero or one new segment`).toContain((await session.segments()).length);
    if (done) expect((await session.segments()).length, `${label}: an acknowledged compaction closed its segment`).toBe(before.segments + 1);
  } else {
    expect((await session.segments()).length, `${label}: segments untouched`).toBe(before.segments);
  }

  // The hidden staging folder of a fork may remain; list() never shows it.
  const leftovers = (await disk.list(LIVE_SESSIONS)).filter((n) => n !== "s1" && n !== "s2");
  expect(leftovers.every((n) => n.startsWith(".")), `${label}: only hidden leftovers`).toBe(true);
  // A live session without meta.json is not listed (until a write rebuilds it); it is reported.
  const problems: string[] = [];
  const listed = (await sessions.list({ agentId: "a1", workspaceId: "w1", onProblem: (p) => problems.push(p.refText) })).map((m) => m.session_id).sort();
  const metaMissing = liveExists && (await disk.read(P.meta)) === undefined;
  expect(listed, label).toEqual([...(liveExists && !metaMissing ? ["s1"] : []), ...((await disk.list(P2.dir)).length > 0 ? ["s2"] : [])].sort());
  expect(problems, label).toEqual(metaMissing ? ["a1/w1/s1"] : []);

  if (scenario.kind === "fork") await checkForkTarget(disk, before, history, label, options);

  if (archivedExists) {
    // Archived: read-only, complete. A lock left by the crash moved with the folder.
    const lock = await readText(disk, ARCHIVED.lock);
    if (lock !== undefined) expect(JSON.parse(lock), label).toMatchObject({ operation: "archive", pid: IDENTITY.pid });
    if (options.expectDone) expect(lock, label).toBeUndefined();
    const frozen = await snapshot(disk);
    await expect(session.append(user("nope")), label).rejects.toBeInstanceOf(InvalidInputError);
    expect(await snapshot(disk), label).toEqual(frozen);
    return;
  }

  await appendAfter(disk, sessions, session, ids, scenario.lockOperation ?? scenario.kind, label, options);
}

async function checkForkTarget(disk: StoragePort, before: Before, sourceHistory: MessageRecord[], label: string, options: RecoveryExpectation): Promise<void> {
  const sessions = registry(disk);
  const exists = (await disk.list(P2.dir)).length > 0;
  if (options.expectDone || options.acknowledged) expect(exists, `${label}: an acknowledged fork exists`).toBe(true);
  if (!exists) {
    await expect(sessions.open(S2), label).rejects.toBeInstanceOf(NotFoundError);
    return;
  }
  const target = await sessions.open(S2);
  expect(target.diagnostics, `${label}: the fork is complete`).toEqual([]);
  expect((await fullHistory(target)).map((m) => [m.sequence, m.message_id]), `${label}: the fork holds the full history`).toEqual(
    sourceHistory.map((m) => [m.sequence, m.message_id]),
  );
  expect(target.meta.forked_from, label).toEqual({ session_id: "s1", through_sequence: sourceHistory.length });
  expect(await readText(disk, P2.instruction), label).toBe(before.instruction);
  expect(await disk.read(P2.lock), label).toBeUndefined();
  const fresh = await registry(disk).open(S2);
  await fresh.append(user("in the fork", "m_in_fork"));
  await expectMetaConsistent(disk, fresh);
}

/** A further append after the crash: through an explicit unlock when the crash left the lock. */
async function appendAfter(
  disk: StoragePort,
  sessions: Sessions,
  session: Session,
  ids: string[],
  operation: string,
  label: string,
  options: RecoveryExpectation,
): Promise<void> {
  const lock = await readText(disk, P.lock);
  if (lock !== undefined) {
    expect(options.expectDone, `${label}: an uncrashed run leaves no lock`).not.toBe(true);
    expect(JSON.parse(lock), `${label}: the lock is the crashed operation's`).toMatchObject({ operation, pid: IDENTITY.pid, hostname: IDENTITY.hostname });
    const frozen = await snapshot(disk);
    const error = await session.append(user("blocked")).then(() => undefined, (e: unknown) => e);
    expect(error, `${label}: the stale lock blocks writes`).toBeInstanceOf(WriterLockedError);
    expect((error as WriterLockedError).owner?.operation, label).toBe(operation);
    expect(await snapshot(disk), `${label}: a blocked write writes nothing`).toEqual(frozen);
    await disk.remove(P.lock); // what `sessionfold unlock --force` does
  }
  const draftIds = draftIdsOf(session);
  const revision = session.revision;
  const result = await session.append(user("after the crash", "m_after"));
  expect(result.revision, `${label}: the revision moves on`).toBeGreaterThan(revision);
  const reopened = await sessions.open(REF);
  expect(reopened.diagnostics, `${label}: the write repaired everything`).toEqual([]);
  const history = await fullHistory(reopened);
  expect(history.map((m) => m.message_id), label).toEqual([...ids, ...draftIds, "m_after"]);
  expect(history.map((m) => m.sequence), label).toEqual(history.map((_, i) => i + 1));
  expect(await disk.read(P.draft), label).toBeUndefined();
  expect(await disk.read(P.lock), label).toBeUndefined();
  try {
    await expectMetaConsistent(disk, reopened);
  } catch (error) {
    throw new Error(`${label}: meta.json does not match the files: ${(error as Error).message}`);
  }
}

// ---------------------------------------------------------------------------

const plan: [Base, string][] = [];
for (const base of BASES) {
  for (const name of ["append one", "append batch", "held append batch", "compact", "held compact", "reset", "fork", "archive"]) {
    if ((name === "compact" || name === "held compact" || name === "reset") && base.liveDraft) continue; // refused (SessionBusyError), tested in drafts.test.ts
    plan.push([base, name]);
  }
  if (base.liveDraft) plan.push([base, "finish draft"]);
}
plan.push([{
  name: "live draft, no output",
  liveDraft: true,
  write: async (s) => void (await writeSession(s, { segments: SEGS, active: msgs(5, 10), draft: draftText(12, { parts: [] }) })),
}, "finish draft"]);

describe("crash points", () => {
  test.each(plan.map(([base, name]) => [`${name} from a ${base.name} session`, base, name] as const))("%s", async (_title, base, name) => {
    const points = await runCrashPoints(base, name);
    expect(points).toBeGreaterThan(2);
  });

  test("ran at least 500 crash points in all", () => {
    if (process.env["CRASH_POINTS_REPORT"]) console.log(`crash points run: ${totalCrashPoints}`);
    expect(totalCrashPoints).toBeGreaterThanOrEqual(500);
  });
});
