/**
 * A compaction's files on Node (docs/FORMAT.md "Compaction"): the store writes `meta.json`, the segment and Active to temp
 * files and flushes them together, then puts each in place in that order, its folder fsynced before the next name goes
 * in. The system calls are recorded through a mocked `node:fs`, and the same compaction is crashed at each of them (the
 * call and every mutating call after it fail, so nothing is cleaned up, as after a SIGKILL): a fresh store must then
 * open every message exactly once, list no temp file, and take the next append.
 */
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { MessageRecord } from "../../core/mod.ts";
import { openNodeSessions } from "../../runtime-node/mod.ts";
import { fullHistory } from "../support/session.ts";
import { summarizer, user } from "../session/support.ts";

/** What the mocked `node:fs` records and when it makes the process "die". */
const fs = vi.hoisted(() => ({
  /** Recording: every flush (`fsync <file>`) and rename (`rename <from> <to>`), with the files' paths. */
  log: undefined as string[] | undefined,
  /** The mutating calls seen while counting or crashing. */
  steps: 0,
  /** The step that fails; every mutating call after it fails too. `Infinity`: none. */
  crashAt: Number.POSITIVE_INFINITY,
  /** Open descriptors' paths, for the log. */
  paths: new Map<number, string>(),
}));

vi.mock("node:fs", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:fs")>();
  const crashed = () => Object.assign(new Error("EIO: the process died here (simulated)"), { code: "EIO" });
  /** Counts a mutating call; true when it is at or after the crash point. */
  const dies = () => ++fs.steps >= fs.crashAt;
  const writes = (flags: unknown) => typeof flags === "string" ? /[wa+]/.test(flags) : typeof flags === "number" && (flags & 3) !== 0;
  const wrap = <F extends (...args: never[]) => unknown>(call: F): F =>
    ((...args: Parameters<F>) => {
      if (dies()) throw crashed();
      return call(...args);
    }) as F;
  return {
    ...real,
    openSync: ((path: string, flags?: unknown, mode?: number) => {
      if (writes(flags) && dies()) throw crashed();
      const fd = real.openSync(path, flags as never, mode);
      fs.paths.set(fd, String(path));
      return fd;
    }) as typeof real.openSync,
    fsyncSync: ((fd: number) => {
      if (dies()) throw crashed();
      fs.log?.push(`fsync ${fs.paths.get(fd)}`);
      real.fsyncSync(fd);
    }) as typeof real.fsyncSync,
    fsync: ((fd: number, done: (error: Error | null) => void) => {
      if (dies()) return queueMicrotask(() => done(crashed()));
      fs.log?.push(`fsync ${fs.paths.get(fd)}`);
      real.fsync(fd, done);
    }) as typeof real.fsync,
    renameSync: ((from: string, to: string) => {
      if (dies()) throw crashed();
      fs.log?.push(`rename ${from} ${to}`);
      real.renameSync(from, to);
    }) as typeof real.renameSync,
    writeSync: wrap(real.writeSync),
    unlinkSync: wrap(real.unlinkSync),
    linkSync: wrap(real.linkSync),
    mkdirSync: wrap(real.mkdirSync),
    rmSync: wrap(real.rmSync),
    ftruncateSync: wrap(real.ftruncateSync),
    fchmodSync: wrap(real.fchmodSync),
  };
});

const REF = { agentId: "a1", workspaceId: "w1", sessionId: "s1" };
const roots: string[] = [];
afterEach(async () => {
  Object.assign(fs, { log: undefined, steps: 0, crashAt: Number.POSITIVE_INFINITY });
  for (const root of roots.splice(0)) await rm(root, { recursive: true, force: true });
});

/** A store (on the calling thread, so the mock sees its calls) holding a session of six messages, never compacted. */
async function sessionOfSix() {
  const root = await mkdtemp(join(tmpdir(), "sessionfold-compaction-files-"));
  roots.push(root);
  const store = await openNodeSessions({ root, worker: false });
  const session = await store.sessions.create(REF);
  for (let i = 1; i <= 6; i++) await session.append(user(`m${i}`, `m_${i}`));
  return { root, store, session };
}

const ids = (messages: readonly MessageRecord[]) => messages.map((m) => m.message_id);

describe.runIf(process.platform === "linux")("a compaction's files on Node", () => {
  it("are flushed together first, then put in place in FORMAT's order, each name durable before the next goes in", async () => {
    const { root, store, session } = await sessionOfSix();
    fs.log = [];
    const outcome = await session.compact({ summarizer: summarizer() });
    const log = fs.log;
    fs.log = undefined;
    await store.close();
    const file = (path: string) => join(root, path);
    const targets = [file(session.paths.meta), file(session.paths.segment(outcome.segment!)), file(session.paths.active)];
    const renames = log.flatMap((entry, at) => entry.startsWith("rename ") && targets.includes(entry.split(" ")[2]!) ? [at] : []);
    expect(renames.map((at) => log[at]!.split(" ")[2]), "meta.json, then the segment, then Active").toEqual(targets);
    const first = renames[0]!;
    for (const at of renames) {
      const temp = log[at]!.split(" ")[1]!;
      expect(log.slice(0, first), `${temp} is flushed before any name goes in`).toContain(`fsync ${temp}`);
    }
    // messages/ holds the new segments/ folder's entry: durable before the segment's name can be.
    expect(log.slice(0, first)).toContain(`fsync ${dirname(dirname(targets[1]!))}`);
    renames.forEach((at, i) => {
      const next = renames[i + 1] ?? log.length;
      expect(log.slice(at + 1, next), `${targets[i]}'s folder is flushed before the next name goes in`).toContain(`fsync ${dirname(targets[i]!)}`);
    });
  });

  it("stage the segment and Active while the summary is made, and leave no temp file when the compaction fails", async () => {
    for (const worker of [false, true]) {
      const { root, store, session } = await sessionOfSix();
      await store.close();
      const next = await openNodeSessions({ root, worker });
      const reopened = await next.sessions.open(REF);
      const messages = join(root, dirname(session.paths.active));
      const temps = async () => (await readdir(messages, { recursive: true })).filter((name) => name.split("/").at(-1)!.startsWith(".tmp-"));
      // While the summarizer runs, both files are staged (written beside their names, under temp names no listing shows).
      const seen: string[][] = [];
      const failing = summarizer(async () => {
        await next.storage.read(session.paths.meta); // the store applies calls in order: both stages are done once it answers
        seen.push(await temps());
        throw new Error("the provider is down");
      });
      await expect(reopened.compact({ summarizer: failing }), `worker: ${worker}`).rejects.toThrow(/the provider is down/);
      expect(seen[0], `worker: ${worker}`).toHaveLength(2);
      expect(await temps(), `worker: ${worker}`).toEqual([]);
      // Refused before its lock (another writer holds the session): what it staged meanwhile goes too.
      const holder = await openNodeSessions({ root, worker: false });
      const held = await holder.sessions.open(REF, { hold: true });
      await expect(reopened.compact({ summarizer: summarizer() }), `worker: ${worker}`).rejects.toThrow(/locked/);
      expect(await temps(), `worker: ${worker}`).toEqual([]);
      await held.close();
      await holder.close();
      // Then it compacts, and every message is read once.
      const outcome = await reopened.compact({ summarizer: summarizer() });
      expect(outcome.segment, `worker: ${worker}`).toEqual({ start: 1, end: 3 });
      expect(await temps(), `worker: ${worker}`).toEqual([]);
      const after = await next.sessions.open(REF);
      expect(ids(await fullHistory(after)), `worker: ${worker}`).toEqual(["m_1", "m_2", "m_3", "m_4", "m_5", "m_6"]);
      await next.close();
    }
  });

  it("lose nothing and leave nothing listed when the process dies at any system call of the compaction", async () => {
    // Count the compaction's mutating calls once, then crash at each.
    const counted = await sessionOfSix();
    fs.steps = 0;
    await counted.session.compact({ summarizer: summarizer() });
    const steps = fs.steps;
    await counted.store.close();
    expect(steps).toBeGreaterThan(10);
    const expected = ["m_1", "m_2", "m_3", "m_4", "m_5", "m_6"];
    for (let crashAt = 1; crashAt <= steps; crashAt++) {
      const label = `crash at call ${crashAt} of ${steps}`;
      const { root, store, session } = await sessionOfSix();
      Object.assign(fs, { steps: 0, crashAt });
      // The last calls give the lock back, best effort: a compaction that dies there has completed.
      await session.compact({ summarizer: summarizer() }).catch(() => undefined);
      Object.assign(fs, { crashAt: Number.POSITIVE_INFINITY });
      await store.close();
      // The next process: a fresh store over the same files.
      const next = await openNodeSessions({ root, worker: false });
      const reopened = await next.sessions.open(REF);
      expect(reopened.diagnostics.filter((d) => d.fatal), label).toEqual([]);
      expect(ids(await fullHistory(reopened)), label).toEqual(expected);
      const segments = dirname(join(root, session.paths.segment({ start: 1, end: 1 })));
      const listed = await next.storage.list(dirname(session.paths.segment({ start: 1, end: 1 })));
      expect(listed.every((name) => /^\d{12}-\d{12}\.jsonl$/.test(name)), `${label}: ${listed.join(", ")}`).toBe(true);
      expect((await readdir(segments).catch(() => [])).length, label).toBeGreaterThanOrEqual(listed.length);
      await rm(join(root, session.paths.lock), { force: true }); // what `sessionfold unlock --force` does
      await reopened.append(user("after", "m_after"));
      const after = await next.sessions.open(REF);
      expect(after.diagnostics, label).toEqual([]);
      expect(ids(await fullHistory(after)), label).toEqual([...expected, "m_after"]);
      await next.close();
    }
  });
});
