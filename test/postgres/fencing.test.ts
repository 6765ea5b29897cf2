/**
 * Fencing on PostgreSQL (docs/POSTGRES.md "Fencing"): a writer whose lock connection was
 * killed (`pg_terminate_backend` from an admin connection, as a pooler, a failover or an
 * idle timeout would) is told at once (`onLeaseLost`) and refused on its next write
 * (`LeaseLostError`), while a second writer takes the session; nothing of the two
 * interleaves, and afterwards every acknowledged message is readable once and the session
 * takes writes. The same for an operation's own lock (a compaction whose summarizer is
 * waiting when the kill comes), for a sync run's lock (its state's saves), and for every connection of a handle ended at once (what a
 * server restart does to a client): typed errors, never an unhandled 'error' event.
 */
import pg from "pg";
import { describe, expect, it } from "vitest";
import { LeaseLostError, MemoryStorage, type Session, Sessions, StorageError, WriterLockedError } from "../../core/mod.ts";
import { directRemote, type SyncRemote, type SyncReport, syncStores } from "../../core/sync/mod.ts";
import { SYNC_LOCK_PATH, syncStatePath } from "../../core/sync/sync-state.ts";
import { type LeaseLost, PostgresStorage } from "../../runtime-postgres/mod.ts";
import { fullHistory } from "../node/process-support.ts";
import { POSTGRES_URL, schemasDroppedAfterAll, terminateApplication, terminateLockHolder } from "./support.ts";

const REF = { agentId: "a1", workspaceId: "w1", sessionId: "s1" };
const LOCK = "agents/a1/workspaces/w1/sessions/s1/writer.lock";
const newSchema = schemasDroppedAfterAll();

/** A store handle of its own (its connections named `application`), with the lease losses it was told of. */
function handle(schema: string, application = `fence_${Math.random().toString(16).slice(2)}`) {
  const lost: LeaseLost[] = [];
  let notify: (() => void) | undefined;
  const storage = new PostgresStorage({
    connectionString: POSTGRES_URL,
    schema,
    pool: { application_name: application },
    onLeaseLost: (event) => {
      lost.push(event);
      notify?.();
    },
  });
  return {
    storage,
    sessions: new Sessions({ storage }),
    application,
    lost,
    /** Resolves once a lease loss was told (at once when one was). */
    leaseLost: () => (lost.length > 0 ? Promise.resolve() : new Promise<void>((resolve) => (notify = resolve))),
  };
}

/** Appends until the server has freed the killed writer's lock (it does as the backend exits). */
async function appendOnceFree(session: Session, text: string, id: string): Promise<void> {
  for (;;) {
    try {
      await session.append({ role: "user", parts: [{ type: "text", text }], message_id: id });
      return;
    } catch (error) {
      if (!(error instanceof WriterLockedError) || error instanceof LeaseLostError) throw error;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }
}

/** Syncs once the server has freed a killed run's lock (it does as the backend exits, after the client heard of the end). */
async function syncOnceFree(local: Sessions, remote: SyncRemote): Promise<SyncReport> {
  for (;;) {
    try {
      return await syncStores({ local, remote });
    } catch (error) {
      if (!(error instanceof WriterLockedError) || error instanceof LeaseLostError) throw error;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }
}

/** Every acknowledged id exactly once, a contiguous history, a clean open, and one more commit taken. */
async function expectIntact(schema: string, acknowledged: readonly string[]): Promise<void> {
  const storage = new PostgresStorage({ connectionString: POSTGRES_URL, schema });
  try {
    const session = await new Sessions({ storage }).open(REF);
    expect(session.diagnostics).toEqual([]);
    const history = await fullHistory(session);
    expect(history.map((m) => m.sequence)).toEqual(history.map((_, i) => i + 1));
    const ids = history.map((m) => m.message_id);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i), "no message twice").toEqual([]);
    expect(acknowledged.filter((id) => !ids.includes(id)), "every acknowledged message is stored").toEqual([]);
    await session.append({ role: "user", parts: [{ type: "text", text: "still writable" }] });
  } finally {
    await storage.close();
  }
}

describe.skipIf(!POSTGRES_URL)("fencing: a writer whose lock connection was killed", () => {
  it("a lease holder is told at once and refused on its next commit while another writer takes the session", async () => {
    const schema = newSchema("fence");
    const a = handle(schema);
    const b = handle(schema);
    const acknowledged: string[] = [];
    try {
      const held = await a.sessions.create({ ...REF, title: "lease" }, { hold: true });
      for (let i = 0; i < 5; i++) {
        await held.append({ role: "user", parts: [{ type: "text", text: `held ${i}` }], message_id: `a${i}` });
        acknowledged.push(`a${i}`);
      }
      expect(await terminateLockHolder(schema, LOCK)).toBe(1);
      await a.leaseLost();
      expect(a.lost.map((event) => [event.lock, event.error.details.outcome])).toEqual([[LOCK, "not-written"]]);

      // The second writer finds the lock free and commits (per operation).
      const other = await b.sessions.open(REF);
      for (let i = 0; i < 3; i++) {
        await appendOnceFree(other, `other ${i}`, `b${i}`);
        acknowledged.push(`b${i}`);
      }

      // Before fencing: the lease holder appended on with no error (issue 27, attack 1).
      const refused = await held.append({ role: "user", parts: [{ type: "text", text: "after the kill" }], message_id: "a-late" }).catch((error: unknown) =>
        error
      );
      expect(refused).toBeInstanceOf(LeaseLostError);
      expect((refused as LeaseLostError).code).toBe("writer-locked");
      expect((refused as LeaseLostError).details).toMatchObject({ path: LOCK, outcome: "not-written" });
      // Refused again, never a silent success, until the handle is closed.
      await expect(held.append({ role: "user", parts: [{ type: "text", text: "again" }], message_id: "a-late2" })).rejects.toBeInstanceOf(LeaseLostError);
      await held.close().catch((error: unknown) => expect(error).toBeInstanceOf(LeaseLostError));

      // The other writer goes on; the first handle's store can take the session again.
      await other.append({ role: "user", parts: [{ type: "text", text: "other 3" }], message_id: "b3" });
      acknowledged.push("b3");
      const again = await a.sessions.open(REF, { hold: true });
      await again.append({ role: "user", parts: [{ type: "text", text: "held again" }], message_id: "a5" });
      acknowledged.push("a5");
      await again.close();
    } finally {
      await a.storage.close();
      await b.storage.close();
    }
    await expectIntact(schema, acknowledged);
  });

  it("a lease holder killed while it commits without pause: every commit either acknowledged or refused typed, none beside the other writer's", async () => {
    const schema = newSchema("fence");
    const a = handle(schema);
    const b = handle(schema);
    const acknowledged: string[] = [];
    try {
      const held = await a.sessions.create({ ...REF, title: "lease" }, { hold: true });
      let refusal: unknown;
      const writing = (async () => {
        for (let i = 0;; i++) {
          try {
            await held.append({ role: "user", parts: [{ type: "text", text: `held ${i}` }], message_id: `a${i}` });
            acknowledged.push(`a${i}`);
          } catch (error) {
            refusal = error;
            return;
          }
        }
      })();
      while (acknowledged.length < 20) await new Promise((resolve) => setTimeout(resolve, 1));
      expect(await terminateLockHolder(schema, LOCK)).toBe(1);
      await writing;
      expect(refusal).toBeInstanceOf(LeaseLostError);
      const other = await b.sessions.open(REF);
      for (let i = 0; i < 3; i++) {
        await appendOnceFree(other, `other ${i}`, `b${i}`);
        acknowledged.push(`b${i}`);
      }
      await expect(held.append({ role: "user", parts: [{ type: "text", text: "late" }] })).rejects.toBeInstanceOf(LeaseLostError);
      await held.close().catch(() => undefined);
    } finally {
      await a.storage.close();
      await b.storage.close();
    }
    await expectIntact(schema, acknowledged);
  });

  it("an operation's own lock (a compaction waiting on its summarizer) is fenced the same way", async () => {
    const schema = newSchema("fence");
    const a = handle(schema);
    const b = handle(schema);
    const acknowledged: string[] = [];
    try {
      const session = await a.sessions.create({ ...REF, title: "compaction" });
      for (let i = 0; i < 6; i++) {
        await session.append({ role: i % 2 ? "assistant" : "user", parts: [{ type: "text", text: `message ${i}` }], message_id: `a${i}` });
        acknowledged.push(`a${i}`);
      }
      let summarizing!: () => void;
      const started = new Promise<void>((resolve) => (summarizing = resolve));
      let finish!: () => void;
      const gate = new Promise<void>((resolve) => (finish = resolve));
      const compaction = session.compact({
        summarizer: {
          summarize: async () => {
            summarizing();
            await gate;
            return { text: "a summary" };
          },
        },
      });
      await started;
      expect(await terminateLockHolder(schema, LOCK)).toBe(1);
      await a.leaseLost();
      const other = await b.sessions.open(REF);
      await appendOnceFree(other, "while the compaction waited", "b0");
      acknowledged.push("b0");
      finish();
      await expect(compaction).rejects.toBeInstanceOf(LeaseLostError);
      // The handle's next operation takes a new lock and sees the other writer's commit.
      await session.reload();
      await session.append({ role: "user", parts: [{ type: "text", text: "after" }], message_id: "a6" });
      acknowledged.push("a6");
    } finally {
      await a.storage.close();
      await b.storage.close();
    }
    await expectIntact(schema, acknowledged);
  });

  it("a sync run's lock guards its state: killed while the run waits at the server, another handle's run takes it, and the first run's save is refused", async () => {
    const schema = newSchema("fence");
    const a = handle(schema);
    const b = handle(schema);
    const server = new MemoryStorage();
    try {
      const session = await a.sessions.create({ ...REF, title: "synced" });
      for (let i = 0; i < 4; i++) await session.append({ role: "user", parts: [{ type: "text", text: `message ${i}` }], message_id: `a${i}` });
      const remote = directRemote(server, { id: "server" });
      let atServer!: () => void;
      const pushing = new Promise<void>((resolve) => (atServer = resolve));
      let answer!: () => void;
      const gate = new Promise<void>((resolve) => (answer = resolve));
      const run = syncStores({ local: a.sessions, remote: { ...remote, push: async (request) => (atServer(), await gate, remote.push(request)) } });
      await pushing;
      const saved = await a.storage.read(syncStatePath("server"));
      expect(await terminateLockHolder(schema, SYNC_LOCK_PATH)).toBe(1);
      await a.leaseLost();
      expect(a.lost.map((event) => event.lock)).toEqual([SYNC_LOCK_PATH]);
      // Once the server has freed the lock, another handle's run takes it and syncs (its outbox numbered from the same state).
      const other = await syncOnceFree(b.sessions, remote);
      expect(other.acknowledged.sort()).toEqual(["a0", "a1", "a2", "a3"]);
      const afterOther = await a.storage.read(syncStatePath("server"));

      answer();
      const refused = await run.catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(LeaseLostError);
      expect((refused as LeaseLostError).details).toMatchObject({ path: SYNC_LOCK_PATH, outcome: "not-written" });
      expect((refused as LeaseLostError).message).toContain("run it again");
      expect(afterOther, "the other run saved its state").not.toEqual(saved);
      expect(await a.storage.read(syncStatePath("server")), "the first run's late save never landed over it").toEqual(afterOther);

      const again = await syncStores({ local: a.sessions, remote });
      expect(again.pushed).toBe(0);
      const copy = await fullHistory(await new Sessions({ storage: server }).open(REF));
      expect(copy.map((m) => m.message_id)).toEqual(["a0", "a1", "a2", "a3"]);
      expect(await a.storage.read(SYNC_LOCK_PATH), "no lock left").toBeUndefined();
    } finally {
      await a.storage.close();
      await b.storage.close();
    }
  });
});

describe.skipIf(!POSTGRES_URL)("a lost connection is a typed error, never a host crash", () => {
  it("every connection of a handle ended at once (a server restart, as the client sees it), with a lease held", async () => {
    const schema = newSchema("fence");
    const a = handle(schema);
    const acknowledged: string[] = [];
    try {
      const held = await a.sessions.create({ ...REF, title: "restart" }, { hold: true });
      await held.append({ role: "user", parts: [{ type: "text", text: "before" }], message_id: "a0" });
      acknowledged.push("a0");
      // Idle pooled connections and the checked-out lock connection end together.
      expect(await terminateApplication(a.application)).toBeGreaterThanOrEqual(2);
      await a.leaseLost();
      await expect(held.append({ role: "user", parts: [{ type: "text", text: "after" }] })).rejects.toBeInstanceOf(LeaseLostError);
      await held.close().catch((error: unknown) => expect(error).toBeInstanceOf(LeaseLostError));
      // The same handle connects again: a read meeting a dead pooled connection is sent again;
      // a commit meeting one (which the pool may not have noticed yet) gets a typed error and
      // the next takes a live connection.
      const reopened = await a.sessions.open(REF);
      for (let attempt = 0;; attempt++) {
        try {
          await reopened.append({ role: "user", parts: [{ type: "text", text: "after the restart" }], message_id: `a1-${attempt}` });
          acknowledged.push(`a1-${attempt}`);
          break;
        } catch (error) {
          expect(error).toBeInstanceOf(StorageError);
          expect((error as StorageError).details.sqlstate).toBe("57P01");
          expect(attempt).toBeLessThan(10);
        }
      }
    } finally {
      await a.storage.close();
    }
    await expectIntact(schema, acknowledged);
  });

  it("per operation: a commit whose connection is ended while the server works on it gets a typed error", async () => {
    const schema = newSchema("fence");
    const a = handle(schema);
    const acknowledged: string[] = [];
    const blocker = new pg.Client({ connectionString: POSTGRES_URL });
    await blocker.connect();
    try {
      const session = await a.sessions.create({ ...REF, title: "per operation" });
      await session.append({ role: "user", parts: [{ type: "text", text: "before" }], message_id: "a0" });
      acknowledged.push("a0");
      // Hold active.jsonl's row, so the next commit waits on the server with its connection checked out.
      await blocker.query("BEGIN");
      await blocker.query(`SELECT 1 FROM "${schema}".entries WHERE path = $1 FOR UPDATE`, ["agents/a1/workspaces/w1/sessions/s1/messages/active.jsonl"]);
      const commit = session.append({ role: "user", parts: [{ type: "text", text: "in flight" }], message_id: "a1" }).then(
        () => undefined,
        (e: unknown) => e,
      );
      await waitForLockWait(blocker, a.application);
      expect(await terminateApplication(a.application)).toBeGreaterThanOrEqual(1);
      const error = await commit;
      expect(error).toBeInstanceOf(StorageError);
      expect((error as StorageError).details.sqlstate).toBe("57P01");
      await blocker.query("ROLLBACK");
      await session.append({ role: "user", parts: [{ type: "text", text: "after" }], message_id: "a2" });
      acknowledged.push("a2");
    } finally {
      await blocker.end();
      await a.storage.close();
    }
    await expectIntact(schema, acknowledged);
  });
});

/** Waits (on the server's own view) until a backend of `application` waits for a lock. */
async function waitForLockWait(client: pg.Client, application: string): Promise<void> {
  for (;;) {
    const found = await client.query("SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'", [application]);
    if ((found.rowCount ?? 0) > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
