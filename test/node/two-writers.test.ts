/**
 * Two writers on one session: every write lands exactly once or fails with
 * WriterLockedError / RevisionConflictError, and nothing interleaves.
 *
 * First with two real processes (fixtures/writer-child.ts, each through the storage worker
 * with fsync on) released at the same moment, one of them also compacting; then in one
 * process with two registries over two separate NodeFileStorage instances of the same root.
 * Every attempt carries its own message id and is reported as landed (with its sequence) or
 * failed (with its error code). The files are then read through the core (no diagnostic at
 * all, whole history) and raw (plain JSON.parse of every line).
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RevisionConflictError, type Session, Sessions, WriterLockedError } from "../../core/mod.ts";
import { NodeFileStorage, openNodeSessions } from "../../runtime-node/mod.ts";
import { bundledLauncher, type ChildLauncher, fullHistory, pagedHistory, rawHistory, startChild } from "./process-support.ts";

const APPENDS = Number(process.env["TWO_WRITERS_APPENDS"] ?? 100);
const REF = "tw/ws/s1";

let base: string;
let launcher: ChildLauncher & { dispose(): Promise<void> };

beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), "sessionfold-two-writers-"));
  launcher = await bundledLauncher("writer-child");
}, 120_000);

afterAll(async () => {
  await launcher?.dispose();
  await rm(base, { recursive: true, force: true });
});

interface Attempt {
  readonly id: string;
  readonly result: "landed" | "failed";
  readonly sequence?: number;
  readonly revision?: number;
  readonly code?: string;
}

async function createSession(root: string): Promise<void> {
  const store = await openNodeSessions({ root, worker: false });
  const [agentId, workspaceId, sessionId] = REF.split("/") as [string, string, string];
  await store.sessions.create({ agentId, workspaceId, sessionId, title: "two writers" });
  await store.close();
}

/** The invariants: exactly-once for landed attempts, absence for failed ones, typed failures only, a clean contiguous history. */
async function checkStore(root: string, attempts: readonly Attempt[], otherRevisions: readonly number[] = []): Promise<{ landed: number; failed: number }> {
  const landed = attempts.filter((a) => a.result === "landed");
  const failed = attempts.filter((a) => a.result === "failed");
  expect([...new Set(failed.map((a) => a.code))].filter((c) => c !== "writer-locked" && c !== "revision-conflict"), "only typed contention failures").toEqual(
    [],
  );
  expect(new Set(attempts.map((a) => a.id)).size, "attempt ids are unique").toBe(attempts.length);

  const store = await openNodeSessions({ root, worker: false });
  try {
    const session = await store.sessions.open(REF);
    expect(session.diagnostics, "no diagnostics at all").toEqual([]);
    expect(session.draft).toBeUndefined();
    const history = await fullHistory(session);
    expect(history.map((m) => m.sequence)).toEqual(history.map((_, i) => i + 1));
    expect((await pagedHistory(session)).map((m) => m.message_id)).toEqual(history.map((m) => m.message_id));
    const where = new Map(history.map((m) => [m.message_id, m.sequence]));
    expect(where.size, "message ids are unique in the history").toBe(history.length);
    expect(history.length, "every message is a landed attempt").toBe(landed.length);
    for (const a of landed) expect(where.get(a.id), `landed ${a.id}`).toBe(a.sequence);
    for (const a of failed) expect(where.has(a.id), `failed ${a.id} (${a.code}) must be absent`).toBe(false);
    expect(session.meta.message_count).toBe(landed.length);
    // One commit, one revision: two writers never committed under the same revision.
    const revisions = [...landed.map((a) => a.revision!), ...otherRevisions];
    expect(new Set(revisions).size, "revisions are unique").toBe(revisions.length);
    expect(session.revision).toBe(Math.max(...revisions));
    expect(await readFile(join(root, session.paths.lock)).catch(() => undefined), "no writer.lock left").toBeUndefined();

    const raw = await rawHistory(join(root, session.paths.dir));
    expect(raw.problems).toEqual([]);
    expect(raw.messages.map((m) => m.message_id)).toEqual(history.map((m) => m.message_id));
    return { landed: landed.length, failed: failed.length };
  } finally {
    await store.close();
  }
}

describe("two writers on one session", () => {
  it(`two processes, ${APPENDS} appends each (one also compacting): exactly once or a typed failure, nothing interleaves`, async () => {
    const root = join(base, "processes");
    await createSession(root);
    const a = startChild(launcher, [root, REF, "A", String(APPENDS), "30"], "pipe");
    const b = startChild(launcher, [root, REF, "B", String(APPENDS)], "pipe");
    await Promise.all([a.next("ready"), b.next("ready")]);
    a.process.stdin!.write("go\n");
    b.process.stdin!.write("go\n");
    const [endA, endB] = await Promise.all([a.closed, b.closed]);
    for (const [child, end] of [[a, endA], [b, endB]] as const) {
      expect(child.reports.find((r) => r.type === "fatal"), `writer ${child.pid} failed`).toBeUndefined();
      expect(end.code, `writer ${child.pid} exit (stderr: ${end.stderr.slice(-1000)})`).toBe(0);
      expect(child.reports.at(-1)).toMatchObject({ type: "done", landed: APPENDS });
    }
    const attempts = [...a.reports, ...b.reports].filter((r) => r.type === "attempt") as unknown as Attempt[];
    const compactions = a.reports.filter((r) => r.type === "compact");
    const compactFailures = compactions.filter((r) => r["result"] === "failed");
    expect(compactFailures.every((r) => r["code"] === "writer-locked" || r["code"] === "revision-conflict")).toBe(true);
    const compactRevisions = compactions.filter((r) => r["result"] === "landed" && r["segment"] !== null).map((r) => r["revision"] as number);
    const { landed, failed } = await checkStore(root, attempts, compactRevisions);
    expect(landed).toBe(2 * APPENDS);
    // The two really contended (otherwise this test proved nothing).
    expect(failed, "typed failures seen").toBeGreaterThan(0);
    expect(new Set(attempts.filter((x) => x.result === "failed").map((x) => x.code)), "both kinds of contention seen").toEqual(
      new Set(["writer-locked", "revision-conflict"]),
    );
    expect(compactRevisions.length, "compactions that landed").toBeGreaterThan(0);
  }, 180_000);

  it("two registries over two NodeFileStorage instances of one root, appending concurrently in one process", async () => {
    const root = join(base, "in-process");
    await createSession(root);
    const open = async (pid: number): Promise<Session> => {
      const sessions = new Sessions({ storage: new NodeFileStorage({ root }), identity: { pid, hostname: hostname(), runtime: "node" } });
      return await sessions.open(REF);
    };
    const [first, second] = await Promise.all([open(process.pid), open(process.pid + 1_000_000)]);
    const attempts: Attempt[] = [];
    const writer = async (session: Session, tag: string, count: number) => {
      for (let i = 0; i < count; i++) {
        for (let n = 0;; n++) {
          const id = `${tag}-${i}-${n}`;
          try {
            const result = await session.append({ role: "user", parts: [{ type: "text", text: `payload ${id}` }], message_id: id });
            attempts.push({ id, result: "landed", sequence: result.sequences[0]!, revision: result.revision });
            break;
          } catch (error) {
            if (error instanceof WriterLockedError) {
              attempts.push({ id, result: "failed", code: error.code });
              await new Promise((resolve) => setImmediate(resolve));
            } else if (error instanceof RevisionConflictError) {
              attempts.push({ id, result: "failed", code: error.code });
              await session.reload();
            } else {
              throw error;
            }
          }
        }
      }
    };
    const count = Math.max(10, Math.floor(APPENDS / 2));
    await Promise.all([writer(first, "X", count), writer(second, "Y", count)]);
    const { landed, failed } = await checkStore(root, attempts);
    expect(landed).toBe(2 * count);
    expect(failed, "typed failures seen").toBeGreaterThan(0);
  }, 120_000);
});
