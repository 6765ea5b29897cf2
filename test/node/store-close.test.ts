/**
 * Closing a Node store while an append is under way (README "Closing a store"): the append
 * settles with its own outcome (committed: it resolves), the store gives back what it holds
 * (no `writer.lock` is left for this process to trip over), and only then does the worker
 * end; an operation started after `close()` began is refused with `StoreClosedError`. The
 * race is forced: the worker's answer to the append is caught before the store's client
 * reads it, and `close()` is called right there, so the append is still owed an answer.
 */
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type Session, StoreClosedError } from "../../core/mod.ts";
import { type NodeSessions, openNodeSessions, WorkerFileStorage } from "../../runtime-node/mod.ts";

const roots: string[] = [];
afterEach(async () => {
  for (const root of roots.splice(0)) await rm(root, { recursive: true, force: true });
});

const text = (words: string) => ({ role: "user" as const, parts: [{ type: "text" as const, text: words }] });

/** A store under a fresh root and a session with one message in it, held or not. */
async function storeWithSession(hold: boolean, worker = true) {
  const root = await mkdtemp(join(tmpdir(), "sessionfold-close-"));
  roots.push(root);
  const store = await openNodeSessions({ root, worker });
  const session = await store.sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" }, { hold });
  await session.append(text("first"));
  return { root, store, session, lock: join(root, session.paths.lock) };
}

/**
 * Calls `store.close()` when the worker's next message arrives, before the store's client reads it (a listener put
 * first): the call that message answers is still in flight for the client. Resolves what `whileClosing` returned, run
 * right after `close()` began, and `close()`'s promise.
 */
function closeWhenNextAnswerArrives<T>(store: NodeSessions, whileClosing: () => T): Promise<{ closing: Promise<void>; started: T }> {
  const { worker } = store.storage as WorkerFileStorage;
  return new Promise((resolve) => {
    worker.prependOnceListener("message", () => {
      const closing = store.close();
      resolve({ closing, started: whileClosing() });
    });
  });
}

/** What a later operation on the handle and the registry gives: both refused as closed, settled. */
function laterOperations(store: NodeSessions, session: Session) {
  return Promise.all([session.append(text("too late")), store.sessions.open("a1/w1/s1")].map((p) => p.catch((e: unknown) => e)));
}

/** Reopens the store and appends: the session is free, and holds `expected` before that append. */
async function expectFreeWith(root: string, expected: string[]): Promise<void> {
  const again = await openNodeSessions({ root });
  try {
    const session = await again.sessions.open("a1/w1/s1");
    expect((await session.messages()).map((m) => (m.parts[0] as { text: string }).text)).toEqual(expected);
    expect(session.revision).toBe(expected.length);
    await expect(session.append(text("next"))).resolves.toMatchObject({ revision: expected.length + 1 });
  } finally {
    await again.close();
  }
}

describe("closing a Node store while an append is in flight", () => {
  for (const hold of [false, true]) {
    it(`the append resolves, no writer.lock stays, later operations are refused as closed (${hold ? "held" : "per-operation lock"})`, async () => {
      const { root, store, session, lock } = await storeWithSession(hold);
      expect(existsSync(lock)).toBe(hold);
      const forced = closeWhenNextAnswerArrives(store, () => laterOperations(store, session));
      const appended = session.append(text("in flight"));
      const { closing, started } = await forced;

      await expect(appended).resolves.toEqual({ sequences: [2], revision: 2 });
      await closing;
      for (const refused of await started) {
        expect(refused).toBeInstanceOf(StoreClosedError);
        expect(refused).toMatchObject({ code: "closed", message: expect.stringMatching(/store is closed/) });
      }
      expect(existsSync(lock)).toBe(false);
      await expect(session.append(text("after close"))).rejects.toBeInstanceOf(StoreClosedError);
      await expectFreeWith(root, ["first", "in flight"]);
    });
  }

  it("on the host thread (worker: false) too: the held session is given back once the append settled", async () => {
    const { root, store, session, lock } = await storeWithSession(true, false);
    // Called in one turn: the append is under way (its write not done) when close() begins.
    const appended = session.append(text("in flight"));
    const closing = store.close();
    const refused = store.sessions.list().catch((e: unknown) => e);

    await expect(appended).resolves.toEqual({ sequences: [2], revision: 2 });
    await closing;
    expect(await refused).toBeInstanceOf(StoreClosedError);
    expect(existsSync(lock)).toBe(false);
    await expectFreeWith(root, ["first", "in flight"]);
  });
});

describe("after a Node store closed", () => {
  it("a handle's reads of the store are refused once closed, with no worker to end (worker: false)", async () => {
    const { store, session } = await storeWithSession(false, false);
    await store.close();
    const reads = [session.messages(), session.messages({ beforeSequence: 1 }), session.segments(), session.exportPortable()];
    for (const refused of await Promise.all(reads.map((p) => p.catch((e: unknown) => e)))) {
      expect(refused).toBeInstanceOf(StoreClosedError);
    }
    // What the handle holds in memory stays readable: no I/O.
    expect(session.active.map((m) => (m.parts[0] as { text: string }).text)).toEqual(["first"]);
  });
});
