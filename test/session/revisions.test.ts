/**
 * Revisions (+1 per commit and per compaction), the optimistic check against
 * meta.json (RevisionConflictError), and one mutating operation at a time per session
 * in one process (SessionBusyError).
 */
import { describe, expect, test } from "vitest";
import { MemoryStorage, NotFoundError, RevisionConflictError, SessionBusyError } from "../../core/mod.ts";
import { deferred, expectContiguous, fullHistory, metaOnDisk, P, REF, registry, rejection, snapshot } from "../support/session.ts";
import { assistant, expectMetaConsistent, summarizer, user } from "./support.ts";

describe("revisions", () => {
  test("+1 per commit (whatever its size) and per compaction; nothing else moves it", async () => {
    const storage = new MemoryStorage();
    const sessions = registry(storage);
    const session = await sessions.create({ ...REF, title: "t" });
    expect(session.revision).toBe(0);
    expect((await metaOnDisk(storage))["revision"]).toBe(0);

    expect((await session.append(user("one"))).revision).toBe(1);
    expect((await session.append([assistant("two"), user("three"), assistant("four")])).revision).toBe(2);
    expect(session.revision).toBe(2);
    const outcome = await session.compact({ summarizer: summarizer() });
    expect(outcome.revision).toBe(3);
    expect(session.revision).toBe(3);
    expect((await metaOnDisk(storage))["revision"]).toBe(3);

    // No change: no compaction below 2 messages, finishDraft without a draft.
    const small = await sessions.create({ ...REF, sessionId: "s2" });
    expect((await small.compact({ summarizer: summarizer() })).revision).toBe(0);
    expect(await small.finishDraft()).toBeUndefined();
    expect(small.revision).toBe(0);

    const reopened = await sessions.open(REF);
    expect(reopened.revision).toBe(3);
    await expectMetaConsistent(storage, reopened);
  });

  test("a handle whose session another writer deleted is refused and its reload() is NotFoundError: following the conflict's advice never makes the session again", async () => {
    const storage = new MemoryStorage();
    const sessions = registry(storage);
    const session = await sessions.create({ ...REF, instruction: "Be brief." });
    await session.append(user("one"));
    await registry(storage).delete(REF);

    const conflict = await rejection(session.append(user("after the delete")), RevisionConflictError, "revision-conflict");
    expect(conflict.message).toContain("meta.json is gone");
    expect(conflict.details).toEqual({ expected: 1, found: null });
    await rejection(session.reload(), NotFoundError, "not-found");
    await rejection(session.append(user("after the reload")), RevisionConflictError, "revision-conflict");
    expect(await snapshot(storage)).toEqual({});
    await rejection(sessions.open(REF), NotFoundError, "not-found");
  });

  test("a second handle that committed makes the first get RevisionConflictError and write nothing; reload() then works", async () => {
    const storage = new MemoryStorage();
    const sessions = registry(storage);
    await sessions.create(REF);
    const first = await sessions.open(REF);
    const second = await registry(storage).open(REF);
    await first.append(user("from first", "m_a"));
    const stale = await sessions.open(REF);
    await second.reload();
    await second.append(user("from second", "m_b"));

    const before = await snapshot(storage);
    const error = await rejection(stale.append(user("lost", "m_c")), RevisionConflictError, "revision-conflict");
    expect(error.details).toMatchObject({ expected: 1, found: 2 });
    expect(await snapshot(storage)).toEqual(before);

    const again = await sessions.open(REF);
    await rejection(first.append(user("first again")), RevisionConflictError, "revision-conflict");
    expect(await snapshot(storage)).toEqual(before);

    await first.reload();
    expect(first.revision).toBe(2);
    const { sequences, revision } = await first.append(user("after reload", "m_d"));
    expect(sequences).toEqual([3]);
    expect(revision).toBe(3);
    const history = await fullHistory(first);
    expect(history.map((m) => m.message_id)).toEqual(["m_a", "m_b", "m_d"]);
    expectContiguous(history);
    await expectMetaConsistent(storage, first);
    expect(again.revision).toBe(2);
  });

  test("a compaction by another handle is a conflict too", async () => {
    const storage = new MemoryStorage();
    const sessions = registry(storage);
    const a = await sessions.create(REF);
    await a.append([user("1"), assistant("2"), user("3"), assistant("4")]);
    const b = await sessions.open(REF);
    await b.compact({ summarizer: summarizer() });
    const before = await snapshot(storage);
    await rejection(a.append(user("5")), RevisionConflictError, "revision-conflict");
    expect(await snapshot(storage)).toEqual(before);
    await a.reload();
    expect(await a.segments()).toEqual([{ start: 1, end: 2 }]);
    await a.append(user("5"));
    expect(a.revision).toBe(3);
  });
});

describe("one mutating operation at a time (SessionBusyError)", () => {
  test("through the same handle", async () => {
    const storage = new MemoryStorage();
    const session = await registry(storage).create(REF);
    await session.append([user("1"), assistant("2")]);
    const gate = deferred<{ text: string }>();
    const reached = deferred();
    const slow = summarizer(() => (reached.resolve(), gate.promise));
    const compacting = session.compact({ summarizer: slow });
    await reached.promise; // the compaction runs, waiting for its summary
    const before = await snapshot(storage);
    const error = await rejection(session.append(user("meanwhile")), SessionBusyError, "busy");
    expect(error.details).toMatchObject({ operation: "compact" });
    await rejection(session.finishDraft(), SessionBusyError, "busy");
    await rejection(session.snapshot(), SessionBusyError, "busy");
    expect(await snapshot(storage)).toEqual(before);
    gate.resolve({ text: "summary" });
    expect((await compacting).revision).toBe(2);
    expect((await session.append(user("later"))).revision).toBe(3);
  });

  test("through two handles to the same session in one process (same store)", async () => {
    const storage = new MemoryStorage();
    const a = await registry(storage).create(REF);
    await a.append([user("1"), assistant("2")]);
    const b = await registry(storage).open(REF);
    const gate = deferred<{ text: string }>();
    const reached = deferred();
    const compacting = a.compact({ summarizer: summarizer(() => (reached.resolve(), gate.promise)) });
    await reached.promise; // the compaction runs, waiting for its summary
    const before = await snapshot(storage);
    await rejection(b.append(user("meanwhile")), SessionBusyError, "busy");
    await rejection(b.compact({ summarizer: summarizer() }), SessionBusyError, "busy");
    expect(await snapshot(storage)).toEqual(before);
    gate.resolve({ text: "summary" });
    await compacting;
    // b is now behind: the optimistic check refuses it once, a reload lets it write.
    await rejection(b.append(user("x")), RevisionConflictError, "revision-conflict");
    await b.reload();
    expect((await b.append(user("x"))).sequences).toEqual([3]);
  });

  test("two appends issued together on one handle: the second is busy, the first commits", async () => {
    const storage = new MemoryStorage();
    const session = await registry(storage).create(REF);
    const [first, second] = await Promise.allSettled([session.append(user("a", "m_a")), session.append(user("b", "m_b"))]);
    expect(first.status).toBe("fulfilled");
    expect(second.status).toBe("rejected");
    expect((second as PromiseRejectedResult).reason).toBeInstanceOf(SessionBusyError);
    expect(session.active.map((m) => m.message_id)).toEqual(["m_a"]);
    expect(await storage.read(P.lock)).toBeUndefined();
  });
});
