/**
 * The shape of `core/session/` (issue 26): small modules with one purpose each, and every
 * mutation of a session planned as a value and written by the one commit path. Checked
 * twice: over the sources (which modules write to storage at all) and by counting the
 * storage calls of a compaction, a reset and recovery's repairs.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { applyCommitPlanByCalls, type CommitPlan, type CommitPlanResult, MemoryStorage } from "../../core/mod.ts";
import { P, RecordingStorage, REF, registry } from "../support/session.ts";
import { assistant, msgs, summarizer, user, writeSession } from "../session/support.ts";
import { ROOT } from "./import-graph.ts";

const SESSION_DIR = join(ROOT, "core/session");
const modules = readdirSync(SESSION_DIR).filter((name) => name.endsWith(".ts"));
const source = (name: string) => readFileSync(join(SESSION_DIR, name), "utf8");

/** A storage call that writes: the port's mutating methods, on whatever names the store. */
const WRITE_CALL = /\b(?:storage|#storage)\??\.(?:replace|append|truncate|remove|move|createExclusive|applyCommitPlan|stage|unstage)\??!?\.?\(/;

describe("core/session modules", () => {
  it("are at most 300 lines each", () => {
    const long = modules.map((name) => ({ name, lines: source(name).split("\n").length - 1 })).filter((m) => m.lines > 300);
    expect(long).toEqual([]);
  });

  it("plan compaction, reset and repair without writing: only the commit path and the named appliers call storage writes", () => {
    const writers = modules.filter((name) => WRITE_CALL.test(source(name))).sort();
    // The planners (segment-close, planned-change, recovery, repair-plan, repair-lines, segment-rules, load) are not here.
    expect(writers).toEqual([
      "apply-commit-plan.ts", // the one dispatch to StoragePort.applyCommitPlan
      "archive.ts", // an archive's move of the session's folder, under its lock
      "build-locked-operation.ts", // the streaming draft
      "commit-path.ts", // every commit, segment close and recovery repair (as plans through the lease; truncate/remove where a plan has no such write)
      "create.ts", // a new session's meta.json and instruction.md
      "delete.ts", // a deletion's removal of the session's folders
      "fork.ts", // the fork's copy, into a staged folder
      "import-portable.ts", // an import's files, into a staged folder
      "lease.ts", // a held lease's meta.json catch-up, and the commit path's plans (fenced by lease-fence.ts while held)
      "lock.ts", // writer.lock itself and its reclaim guards
      "registry.ts", // a failed fork's or import's staged folder removed
      "repair.ts", // the quarantine plan's apply (create-new and move, which a commit plan has no write for)
      "session.ts", // instruction.md (snapshot), the draft's removal
      "staged-close.ts", // a compaction's segment and Active staged before its close plan (StoragePort.stage), and dropped when unused
      "staging.ts", // meta.json of a staged folder and the move into place
    ]);
    for (const planner of ["segment-close.ts", "planned-change.ts", "recovery.ts", "repair-plan.ts", "repair-lines.ts", "segment-rules.ts", "load.ts"]) {
      expect(source(planner)).not.toMatch(/applyCommitPlan|\.replace\(paths|\.append\(paths/);
    }
  });
});

/** A store that runs commit plans itself (as a worker does) and records them apart from its other calls. */
class PlanRecordingStorage extends RecordingStorage {
  plans: CommitPlan[] = [];
  applyCommitPlan(plan: CommitPlan): Promise<CommitPlanResult> {
    this.plans.push(plan);
    return applyCommitPlanByCalls(this.inner, plan);
  }
  /** Each plan as `lock`/`expect`/`release` marks and its writes, paths relative to the session. */
  planned(): string[][] {
    const rel = (path: string) => path.slice(P.dir.length + 1);
    return this.plans.map((plan) => [
      ...(plan.lock ? [`lock${plan.hold ? " hold" : ""}`] : []),
      ...(plan.expect ? ["expect"] : []),
      ...plan.writes.map((w) => `${w.op} ${rel(w.path)}`),
      ...(plan.release ? ["release"] : []),
    ]);
  }
}

describe("compaction, reset and recovery's repairs reach storage through the one commit path", () => {
  async function session(storage: PlanRecordingStorage) {
    const s = await registry(storage).create(REF);
    await s.append([user("1"), assistant("2"), user("3"), assistant("4")]);
    storage.reset();
    storage.plans = [];
    return s;
  }

  it("compaction: one summarizer call, then the lock, one plan with meta.json, the segment and Active that also gives the lock back", async () => {
    const storage = new PlanRecordingStorage(new MemoryStorage());
    const s = await session(storage);
    let calls = 0;
    await s.compact({ summarizer: summarizer(() => (calls++, Promise.resolve({ text: "summary" }))) });
    expect(calls).toBe(1);
    expect(storage.mutations()).toEqual([]);
    expect(storage.planned()).toEqual([
      ["lock hold", "expect"],
      ["replace meta.json", "replace messages/segments/000000000001-000000000002.jsonl", "replace messages/active.jsonl", "release"],
    ]);
  });

  it("reset: the same two plans, Active closed whole", async () => {
    const storage = new PlanRecordingStorage(new MemoryStorage());
    const s = await session(storage);
    await s.reset();
    expect(storage.mutations()).toEqual([]);
    expect(storage.planned()).toEqual([
      ["lock hold", "expect"],
      ["replace meta.json", "replace messages/segments/000000000001-000000000004.jsonl", "replace messages/active.jsonl", "release"],
    ]);
  });

  it("recovery's repairs (an overlap left by an interrupted compaction): meta.json, then Active rewritten, each a plan, then the append", async () => {
    const storage = new PlanRecordingStorage(new MemoryStorage());
    await writeSession(storage.inner, { segments: [[1, 3]], active: msgs(1, 6), meta: { message_count: 6 } });
    const s = await registry(storage).open(REF);
    expect(s.diagnostics.map((d) => d.code).sort()).toEqual(["meta_rebuilt", "overlap_removed"]);
    storage.reset();
    await s.append(user("7"));
    expect(storage.mutations()).toEqual([]);
    expect(storage.planned()).toEqual([
      ["lock hold", "expect"],
      ["replace meta.json"],
      ["replace messages/active.jsonl"],
      ["append messages/active.jsonl", "replace meta.json"],
      ["release"],
    ]);
  });
});
