/**
 * Closing a PostgreSQL store while a held session's append is under way (README "Closing a
 * store"): `PostgresStorage.close()` lets the commit on the held lock's connection finish
 * (it resolves, committed; never a raw pg error from a connection cut under it), then ends
 * the connections; a later call is refused with `StoreClosedError`. Through
 * `sessions.close()` first, the held session is given back. The race is forced: the store
 * is closed from inside the commit's call, right after it began.
 */
import { describe, expect, it } from "vitest";
import { type CommitPlan, Sessions, type StoragePort, StoreClosedError } from "../../core/mod.ts";
import { PostgresStorage } from "../../runtime-postgres/mod.ts";
import { POSTGRES_URL, schemasDroppedAfterAll } from "./support.ts";

const REF = { agentId: "a1", workspaceId: "w1", sessionId: "s1" };
const newSchema = schemasDroppedAfterAll();
const text = (words: string) => ({ role: "user" as const, parts: [{ type: "text" as const, text: words }] });

/** `storage` whose next commit plan, once armed, calls `onCommit` right after it began (still under way). */
function closedMidCommit(storage: PostgresStorage, onCommit: () => void): { port: StoragePort; arm: () => void } {
  let armed = false;
  const port = new Proxy(storage, {
    get(target, name) {
      const value: unknown = Reflect.get(target, name, target);
      if (name !== "applyCommitPlan") return typeof value === "function" ? value.bind(target) : value;
      return (plan: CommitPlan) => {
        const running = target.applyCommitPlan(plan);
        if (armed) (armed = false, onCommit());
        return running;
      };
    },
  });
  return { port, arm: () => (armed = true) };
}

/** Opens the session on a new handle: it holds `count` messages and takes an append (no lock left behind). */
async function expectFreeWith(schema: string, count: number): Promise<void> {
  const storage = new PostgresStorage({ connectionString: POSTGRES_URL, schema });
  try {
    const session = await new Sessions({ storage }).open(REF);
    expect(await session.messages()).toHaveLength(count);
    await expect(session.append(text("next"))).resolves.toMatchObject({ revision: count + 1 });
  } finally {
    await storage.close();
  }
}

describe.skipIf(!POSTGRES_URL)("closing a PostgresStorage while a held append is under way", () => {
  for (const registryFirst of [false, true]) {
    it(`the append resolves, later calls are refused as closed (${registryFirst ? "sessions.close() first" : "storage.close() alone"})`, async () => {
      const schema = newSchema("close");
      const storage = new PostgresStorage({ connectionString: POSTGRES_URL, schema });
      let closing: Promise<void> | undefined;
      const { port, arm } = closedMidCommit(storage, () => {
        closing = registryFirst ? sessions.close().then(() => storage.close()) : storage.close();
      });
      const sessions = new Sessions({ storage: port });
      const session = await sessions.create(REF, { hold: true });
      await session.append(text("first"));

      arm();
      await expect(session.append(text("in flight"))).resolves.toEqual({ sequences: [2], revision: 2 });
      await closing;
      await expect(storage.read(session.paths.meta)).rejects.toBeInstanceOf(StoreClosedError);
      await expect(storage.applyCommitPlan({ writes: [] })).rejects.toMatchObject({ code: "closed" });
      await expectFreeWith(schema, 2);
    });
  }
});
