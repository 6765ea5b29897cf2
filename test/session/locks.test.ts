/**
 * writer.lock: taken with create-new semantics for one mutating operation, content as
 * docs/FORMAT.md says, never removed by a writer that finds someone else's.
 */
import { describe, expect, test } from "vitest";
import { MemoryStorage, type SessionRef, WriterLockedError } from "../../core/mod.ts";
import { IDENTITY, P, readText, RecordingStorage, REF, registry, rejection, snapshot, utf8 } from "../support/session.ts";
import { draftText, FOREIGN_LOCK, ISO_MS, msgs, summarizer, user, writeSession } from "./support.ts";

const lockText = `${JSON.stringify(FOREIGN_LOCK)}\n`;

describe("a pre-existing writer.lock", () => {
  test("makes every mutating operation fail at once with its owner; the lock is never removed", async () => {
    const storage = new MemoryStorage();
    await writeSession(storage, { active: msgs(1, 4), draft: draftText(6), instruction: "Be brief." });
    await storage.createExclusive(P.lock, utf8(lockText));
    const sessions = registry(storage);
    const session = await sessions.open(REF, { agent: { instruction: "Agent text" } });
    const before = await snapshot(storage);
    const summarize = summarizer();

    const attempts: [string, () => Promise<unknown>][] = [
      ["append", () => session.append(user("blocked"))],
      ["finishDraft", () => session.finishDraft()],
      ["compact", () => session.compact({ summarizer: summarize })],
      ["snapshot", () => session.snapshot()],
      ["regenerateSystem", () => session.regenerateSystem()],
      ["archive", () => sessions.archive(REF)],
      ["fork", () => sessions.fork(REF, "s2")],
      ["delete", () => sessions.delete(REF)],
    ];
    for (const [name, attempt] of attempts) {
      const error = await rejection(attempt, WriterLockedError, "writer-locked");
      expect(error.owner, name).toEqual(FOREIGN_LOCK);
      expect(error.details["owner"], name).toEqual(FOREIGN_LOCK);
      expect(error.message, name).toContain("pid 9999 on other-host");
      expect(await readText(storage, P.lock), name).toBe(lockText);
    }
    expect(summarize.calls).toHaveLength(0);
    expect(await snapshot(storage)).toEqual(before);
    // Reading still works.
    expect((await registry(storage).open(REF)).active).toHaveLength(4);
    expect(await session.messages()).toHaveLength(4);
  });

  test("an unreadable lock still blocks, with no owner", async () => {
    const storage = new MemoryStorage();
    await writeSession(storage, { active: msgs(1, 2) });
    await storage.replace(P.lock, utf8("garbage"));
    const session = await registry(storage).open(REF);
    const error = await rejection(session.append(user("x")), WriterLockedError, "writer-locked");
    expect(error.owner).toBeUndefined();
    expect(await readText(storage, P.lock)).toBe("garbage");
  });

  test("removing the lock by hand (unlock --force) lets writes through", async () => {
    const storage = new MemoryStorage();
    await writeSession(storage, { active: msgs(1, 2) });
    await storage.createExclusive(P.lock, utf8(lockText));
    const session = await registry(storage).open(REF);
    await rejection(session.append(user("x")), WriterLockedError, "writer-locked");
    await storage.remove(P.lock);
    expect((await session.append(user("x"))).sequences).toEqual([3]);
  });
});

describe("the lock of a successful operation", () => {
  test("is gone after every kind of operation", async () => {
    const storage = new MemoryStorage();
    const sessions = registry(storage);
    const session = await sessions.create({ ...REF, instruction: "sys" }, { agent: { instruction: "agent" }, summarizer: summarizer() });
    const lockPaths = async () => Object.keys(await snapshot(storage)).filter((p) => p.endsWith("writer.lock"));
    await session.append([user("1"), user("2"), user("3")]);
    expect(await lockPaths()).toEqual([]);
    await session.compact();
    expect(await lockPaths()).toEqual([]);
    await session.snapshot();
    await session.regenerateSystem();
    expect(await lockPaths()).toEqual([]);
    await storage.replace(P.draft, utf8(draftText(6)));
    await session.reload();
    await session.finishDraft();
    expect(await lockPaths()).toEqual([]);
    await sessions.fork(REF, "s2");
    expect(await lockPaths()).toEqual([]);
    await sessions.archive(REF);
    expect(await lockPaths()).toEqual([]);
    await sessions.delete({ ...REF, sessionId: "s2" } satisfies SessionRef);
    expect(await lockPaths()).toEqual([]);
  });

  test("is created with create-new semantics and holds docs/FORMAT.md's content at the moment of the append", async () => {
    const inner = new MemoryStorage();
    await writeSession(inner, { active: msgs(1, 2) });
    const storage = new RecordingStorage(inner);
    let seen: string | undefined;
    storage.before = async (call, store) => {
      if (call.op === "append" && call.path === P.active) seen = await readText(store, P.lock);
    };
    const session = await registry(storage).open(REF);
    storage.reset();
    await session.append(user("x"));
    expect(storage.mutations(P.dir)).toEqual([
      "createExclusive writer.lock",
      "append messages/active.jsonl",
      "replace meta.json",
      "remove writer.lock",
    ]);
    expect(seen).toBeDefined();
    const lock = JSON.parse(seen!) as Record<string, unknown>;
    expect(lock).toMatchObject({ pid: IDENTITY.pid, hostname: IDENTITY.hostname, runtime: IDENTITY.runtime, operation: "append" });
    expect(lock["created_at"]).toMatch(ISO_MS);
    // docs/FORMAT.md's five fields, plus the holder's own lock id (how it recognises its lock on release).
    expect(Object.keys(lock).sort()).toEqual(["created_at", "hostname", "lock_id", "operation", "pid", "runtime"]);
    expect(seen).toBe(new TextDecoder().decode(storage.calls.find((c) => c.op === "createExclusive")!.bytes));
  });

  test("names the operation: compact, finish-draft, snapshot, archive, fork", async () => {
    const inner = new MemoryStorage();
    await writeSession(inner, { active: msgs(1, 4), instruction: "sys" });
    const storage = new RecordingStorage(inner);
    const sessions = registry(storage);
    const session = await sessions.open(REF, { summarizer: summarizer() });
    await session.compact();
    await session.snapshot();
    await inner.replace(P.draft, utf8(draftText(6)));
    await session.reload();
    await session.finishDraft();
    await sessions.fork(REF, "s2");
    await sessions.archive(REF);
    const operations = storage.calls
      .filter((c) => c.op === "createExclusive" && c.path.endsWith("/writer.lock"))
      .map((c) => (JSON.parse(new TextDecoder().decode(c.bytes)) as { operation: string }).operation);
    expect(operations).toEqual(["compact", "snapshot", "finish-draft", "fork", "archive"]);
  });

  test("a lock taken by another writer in the middle of nobody's operation is not stolen at release", async () => {
    const inner = new MemoryStorage();
    await writeSession(inner, { active: msgs(1, 2) });
    const storage = new RecordingStorage(inner);
    // Someone force-unlocks and another writer locks while our append runs.
    storage.before = async (call, store) => {
      if (call.op === "append") {
        await store.remove(P.lock);
        await store.createExclusive(P.lock, utf8(lockText));
      }
    };
    const session = await registry(storage).open(REF);
    await session.append(user("x"));
    expect(await readText(inner, P.lock)).toBe(lockText);
  });
});
