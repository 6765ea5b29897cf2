/**
 * Deletion and retention on one backend (`Sessions.delete`, `Sessions.purge`), run on
 * memory, files and PostgreSQL: a delete removes every file of every copy and names each
 * one; a purge selects by last activity and count, archived first then oldest, skips what a
 * writer holds or a draft streams, and its dry run lists exactly what the run then deletes.
 * Not a test file itself.
 */
import { describe, expect, it } from "vitest";
import { InvalidInputError, NotFoundError, sessionPaths, type SessionRef, Sessions, type StoragePort, WriterLockedError } from "../../core/mod.ts";
import { filesUnder } from "../../core/storage/files-under.ts";

const DAY = 86_400_000;
const T0 = Date.parse("2026-01-01T00:00:00.000Z");
const utf8 = (text: string) => new TextEncoder().encode(text);

/** A fresh store of the backend under test, and how to dispose of it. */
export type StoreFactory = () => Promise<{ storage: StoragePort; teardown: () => Promise<void> }>;

/** A registry whose clock the test moves. */
function clocked(storage: StoragePort) {
  const clock = { now: T0 };
  const sessions = new Sessions({ storage, clock: () => clock.now });
  return { clock, sessions };
}

/** Creates `a/w/s` with one message, its last activity `day` days after T0. */
async function sessionAt(sessions: Sessions, clock: { now: number }, ref: string, day: number): Promise<void> {
  clock.now = T0 + day * DAY;
  const [agentId, workspaceId, sessionId] = ref.split("/") as [string, string, string];
  const session = await sessions.create({ agentId, workspaceId, sessionId });
  await session.append({ role: "user", parts: [{ type: "text", text: `hello from ${ref}` }] });
  await session.close();
}

export function runRetentionTests(name: string, fresh: StoreFactory): void {
  describe(`${name}: deletion and retention`, () => {
    const withStore = (body: (storage: StoragePort) => Promise<void>) => async () => {
      const { storage, teardown } = await fresh();
      try {
        await body(storage);
      } finally {
        await teardown();
      }
    };

    it(
      "delete removes every file of every copy (meta, Active, draft, quarantine, archived copy) and lists each",
      withStore(async (storage) => {
        const { clock, sessions } = clocked(storage);
        await sessionAt(sessions, clock, "a1/w1/s1", 0);
        await sessionAt(sessions, clock, "a1/w1/keep", 0);
        const ref: SessionRef = { agentId: "a1", workspaceId: "w1", sessionId: "s1" };
        const live = sessionPaths(ref);
        const archived = sessionPaths(ref, "archived");
        await storage.replace(live.draft, utf8('{"partial":true}'));
        await storage.replace(`${live.dir}/quarantine/active.jsonl.2026-01-01T00-00-00.000Z.jsonl`, utf8("not json\n"));
        // An archived copy beside the live one (as a sync of an archive can leave): delete takes both.
        await storage.replace(archived.meta, (await storage.read(live.meta))!);
        const before = [...(await filesUnder(storage, live.dir)), ...(await filesUnder(storage, archived.dir))];
        expect(before).toEqual(
          expect.arrayContaining([live.meta, live.active, live.draft, archived.meta, `${live.dir}/quarantine/active.jsonl.2026-01-01T00-00-00.000Z.jsonl`]),
        );
        const result = await sessions.delete(ref);
        expect(result.ref).toBe("a1/w1/s1");
        expect(result.places).toEqual(["live", "archived"]);
        // Every file that was there is named, and the delete's own locks (one per copy) besides.
        expect([...result.removed].sort()).toEqual([...before, live.lock, archived.lock].sort());
        expect(await filesUnder(storage, live.dir)).toEqual([]);
        expect(await filesUnder(storage, archived.dir)).toEqual([]);
        await expect(sessions.open(ref)).rejects.toBeInstanceOf(NotFoundError);
        await expect(sessions.delete(ref)).rejects.toBeInstanceOf(NotFoundError);
        // Another session of the workspace is untouched.
        expect((await sessions.open("a1/w1/keep")).meta.message_count).toBe(1);
      }),
    );

    it(
      "delete under a live writer's lock is refused and removes nothing",
      withStore(async (storage) => {
        const { clock, sessions } = clocked(storage);
        await sessionAt(sessions, clock, "a1/w1/s1", 0);
        const holder = await new Sessions({ storage }).open("a1/w1/s1", { hold: true });
        const before = await filesUnder(storage, sessionPaths(holder.ref).dir);
        await expect(sessions.delete("a1/w1/s1")).rejects.toBeInstanceOf(WriterLockedError);
        expect(await filesUnder(storage, sessionPaths(holder.ref).dir)).toEqual(before);
        await holder.close();
      }),
    );

    it(
      "purge by age: the dry run lists archived first then oldest, and the run deletes exactly that list",
      withStore(async (storage) => {
        const { clock, sessions } = clocked(storage);
        await sessionAt(sessions, clock, "a1/w1/old", 0);
        await sessionAt(sessions, clock, "a1/w1/mid", 10);
        await sessionAt(sessions, clock, "a1/w1/new", 30);
        await sessionAt(sessions, clock, "a1/w1/gone", 5);
        await sessions.archive("a1/w1/gone");
        await sessionAt(sessions, clock, "a2/w9/other", 1);
        clock.now = T0 + 40 * DAY;
        const policy = { olderThan: 20 * DAY, includeArchived: true };
        const plan = await sessions.purge({ ...policy, dryRun: true });
        expect(plan.dryRun).toBe(true);
        expect(plan.entries.map((e) => [e.ref, e.place, e.outcome])).toEqual([
          ["a1/w1/gone", "archived", "would-delete"],
          ["a1/w1/old", "live", "would-delete"],
          ["a2/w9/other", "live", "would-delete"],
          ["a1/w1/mid", "live", "would-delete"],
        ]);
        expect(plan.entries[1]!.updatedAt).toBe("2026-01-01T00:00:00.000Z");
        // The dry run deleted nothing.
        expect((await sessions.list()).length).toBe(4);
        const run = await sessions.purge(policy);
        expect(run.entries.map((e) => [e.ref, e.place, e.outcome])).toEqual(plan.entries.map((e) => [e.ref, e.place, "deleted"]));
        for (const entry of run.entries) expect(entry.removed).toEqual(expect.arrayContaining([expect.stringMatching(/\/meta\.json$/)]));
        expect((await sessions.list()).map((m) => m.session_id)).toEqual(["new"]);
        expect(await sessions.list({ archived: true })).toEqual([]);
        // Nothing left to purge: a second run is empty.
        expect((await sessions.purge(policy)).entries).toEqual([]);
      }),
    );

    it(
      "purge by count keeps the N newest of each workspace, scoped by agent and workspace; archived only when asked",
      withStore(async (storage) => {
        const { clock, sessions } = clocked(storage);
        for (const [ref, day] of [["a1/w1/s1", 1], ["a1/w1/s2", 2], ["a1/w1/s3", 3], ["a1/w2/t1", 1], ["a1/w2/t2", 2], ["a2/w1/u1", 1]] as const) {
          await sessionAt(sessions, clock, ref, day);
        }
        await sessionAt(sessions, clock, "a1/w1/arch", 9);
        await sessions.archive("a1/w1/arch");
        const refs = (r: { entries: readonly { ref: string }[] }) => r.entries.map((e) => e.ref);
        expect(refs(await sessions.purge({ keepNewest: 1, agentId: "a1", dryRun: true }))).toEqual(["a1/w1/s1", "a1/w2/t1", "a1/w1/s2"]);
        // Archived sessions rank after live ones, so with them the newest live sessions are the ones kept.
        expect(refs(await sessions.purge({ keepNewest: 2, agentId: "a1", workspaceId: "w1", includeArchived: true, dryRun: true }))).toEqual([
          "a1/w1/arch",
          "a1/w1/s1",
        ]);
        // With both criteria a session must match both.
        clock.now = T0 + 2.5 * DAY;
        expect(refs(await sessions.purge({ keepNewest: 1, olderThan: DAY, dryRun: true }))).toEqual(["a1/w1/s1", "a1/w2/t1"]);
        const run = await sessions.purge({ keepNewest: 1, agentId: "a1", workspaceId: "w2" });
        expect(run.entries.map((e) => [e.ref, e.outcome])).toEqual([["a1/w2/t1", "deleted"]]);
        expect((await sessions.list({ agentId: "a1", workspaceId: "w2" })).map((m) => m.session_id)).toEqual(["t2"]);
        expect((await sessions.list({ agentId: "a2" })).length).toBe(1);
      }),
    );

    it(
      "a session a live writer holds, or whose draft is streaming, is skipped with the reason by the dry run and the run",
      withStore(async (storage) => {
        const { clock, sessions } = clocked(storage);
        await sessionAt(sessions, clock, "a1/w1/held", 0);
        await sessionAt(sessions, clock, "a1/w1/streaming", 1);
        await sessionAt(sessions, clock, "a1/w1/idle", 2);
        const holder = await new Sessions({ storage }).open("a1/w1/held", { hold: true });
        await storage.replace(sessionPaths({ agentId: "a1", workspaceId: "w1", sessionId: "streaming" }).draft, utf8('{"partial":true}'));
        clock.now = T0 + 10 * DAY;
        const outcomes = (r: { entries: readonly { ref: string; outcome: string; reason?: string }[] }) =>
          r.entries.map((e) => [e.ref, e.outcome, e.reason?.replace(/locked by .*/, "locked by …")]);
        const plan = await sessions.purge({ olderThan: DAY, dryRun: true });
        expect(outcomes(plan)).toEqual([
          ["a1/w1/held", "skipped", "locked by …"],
          ["a1/w1/streaming", "skipped", "a draft is streaming (messages/assistant_message.json)"],
          ["a1/w1/idle", "would-delete", undefined],
        ]);
        const run = await sessions.purge({ olderThan: DAY });
        expect(outcomes(run)).toEqual(outcomes(plan).map(([ref, outcome, reason]) => [ref, outcome === "would-delete" ? "deleted" : outcome, reason]));
        expect((await sessions.list()).map((m) => m.session_id).sort()).toEqual(["held", "streaming"]);
        expect((await holder.reload(), holder.meta.message_count)).toBe(1);
        await holder.close();
      }),
    );

    it(
      "a session whose meta.json cannot be read is listed as skipped with the reason, never deleted, and not counted by keepNewest",
      withStore(async (storage) => {
        const { clock, sessions } = clocked(storage);
        await sessionAt(sessions, clock, "a1/w1/old", 0);
        await sessionAt(sessions, clock, "a1/w1/broken", 1);
        await sessionAt(sessions, clock, "a1/w1/new", 2);
        await sessionAt(sessions, clock, "a1/w1/gone", 3);
        await sessions.archive("a1/w1/gone");
        const broken = sessionPaths({ agentId: "a1", workspaceId: "w1", sessionId: "broken" });
        await storage.replace(broken.meta, utf8("{not json"));
        const gone = sessionPaths({ agentId: "a1", workspaceId: "w1", sessionId: "gone" }, "archived");
        await storage.replace(gone.meta, utf8("{not json"));
        clock.now = T0 + 10 * DAY;
        const entries = (r: { entries: readonly { ref: string; place: string; updatedAt: string | null; outcome: string; reason?: string }[] }) =>
          r.entries.map((e) => [e.ref, e.place, e.updatedAt, e.outcome]);
        // keepNewest 1 keeps "new": the unreadable session is not one of the N, and is not deleted.
        const plan = await sessions.purge({ keepNewest: 1, includeArchived: true, dryRun: true });
        expect(entries(plan)).toEqual([
          ["a1/w1/old", "live", "2026-01-01T00:00:00.000Z", "would-delete"],
          ["a1/w1/broken", "live", null, "skipped"],
          ["a1/w1/gone", "archived", null, "skipped"],
        ]);
        expect(plan.entries[1]!.reason).toMatch(/^cannot be read: .*a1\/w1\/broken.*; not deleted, and not counted among the newest kept$/);
        const run = await sessions.purge({ olderThan: DAY, includeArchived: true });
        expect(entries(run)).toEqual([
          ["a1/w1/old", "live", "2026-01-01T00:00:00.000Z", "deleted"],
          ["a1/w1/new", "live", "2026-01-03T00:00:00.000Z", "deleted"],
          ["a1/w1/broken", "live", null, "skipped"],
          ["a1/w1/gone", "archived", null, "skipped"],
        ]);
        expect(await storage.read(broken.meta)).toEqual(utf8("{not json"));
        expect(await storage.read(gone.meta)).toEqual(utf8("{not json"));
      }),
    );

    it(
      "purge without a policy, or with a bad one, is refused before anything is read or deleted",
      withStore(async (storage) => {
        const { clock, sessions } = clocked(storage);
        await sessionAt(sessions, clock, "a1/w1/s1", 0);
        await expect(sessions.purge({})).rejects.toBeInstanceOf(InvalidInputError);
        await expect(sessions.purge({ keepNewest: -1 })).rejects.toBeInstanceOf(InvalidInputError);
        await expect(sessions.purge({ olderThan: Number.NaN })).rejects.toBeInstanceOf(InvalidInputError);
        expect((await sessions.list()).length).toBe(1);
      }),
    );
  });
}
