/**
 * Reading history (messages / beforeSequence paging), fork, archive, list and delete.
 */
import { describe, expect, test } from "vitest";
import { CorruptSessionError, InvalidIdError, InvalidInputError, MemoryStorage, NotFoundError, sessionPaths } from "../../core/mod.ts";
import {
  expectContiguous,
  fullHistory,
  lines,
  metaOnDisk,
  msg,
  P,
  readText,
  REF,
  registry,
  rejection,
  segmentName,
  snapshot,
  utf8,
} from "../support/session.ts";
import { assistant, expectMetaConsistent, historyBytesOnDisk, msgs, segmentText, summarizer, user, writeSession } from "./support.ts";

const S2 = { ...REF, sessionId: "s2" };
const P2 = sessionPaths(S2);
const ARCHIVED = sessionPaths(REF, "archived");

describe("messages()", () => {
  test("returns Active; beforeSequence returns the whole newest segment ending before it, paging back to []", async () => {
    const storage = new MemoryStorage();
    await writeSession(storage, { segments: [[1, 2], [3, 5], [6, 9]], active: msgs(10, 12) });
    const session = await registry(storage).open(REF);
    expect(await session.messages()).toEqual(msgs(10, 12));
    expect(await session.messages({ beforeSequence: 10 })).toEqual(msgs(6, 9));
    expect(await session.messages({ beforeSequence: 6 })).toEqual(msgs(3, 5));
    expect(await session.messages({ beforeSequence: 3 })).toEqual(msgs(1, 2));
    expect(await session.messages({ beforeSequence: 1 })).toEqual([]);
    // Not on a boundary: the newest segment whose end is below it.
    expect(await session.messages({ beforeSequence: 8 })).toEqual(msgs(3, 5));
    expect(await session.messages({ beforeSequence: 5 })).toEqual(msgs(1, 2));
    expect(await session.messages({ beforeSequence: 1000 })).toEqual(msgs(6, 9));
    await rejection(session.messages({ beforeSequence: 0 }), InvalidInputError, "invalid-input");
    await rejection(session.messages({ beforeSequence: 1.5 }), InvalidInputError, "invalid-input");
    const history = await fullHistory(session);
    expect(history).toEqual(msgs(1, 12));
  });

  test("a session without segments pages straight to []", async () => {
    const storage = new MemoryStorage();
    await writeSession(storage, { active: msgs(1, 3) });
    const session = await registry(storage).open(REF);
    expect(await session.messages({ beforeSequence: 1 })).toEqual([]);
    expect(await session.messages({ beforeSequence: 3 })).toEqual([]);
  });

  test("a corrupt older segment is not read by open, and names file and line when paged into", async () => {
    const storage = new MemoryStorage();
    await writeSession(storage, { segments: [[1, 3], [4, 5]], active: msgs(6, 7) });
    const bad = `${P.segmentsDir}/${segmentName(1, 3)}`;
    await storage.replace(
      bad,
      utf8(lines(msgs(1, 1)) + '{"record_type":"message","sequence":\n' + segmentText(3, 3).split("\n").slice(0, 2).join("\n") + "\n"),
    );
    const session = await registry(storage).open(REF);
    expect(session.diagnostics).toEqual([]);
    expect(await session.messages({ beforeSequence: 6 })).toEqual(msgs(4, 5));
    const error = await rejection(session.messages({ beforeSequence: 4 }), CorruptSessionError, "corrupt");
    expect(error.details).toMatchObject({ file: `messages/segments/${segmentName(1, 3)}`, line: 2, diagnostic: "invalid_json" });
    expect(error.message).toContain(`messages/segments/${segmentName(1, 3)}:2`);
    // Fork, which copies every segment, refuses it by file and line, and writes nothing.
    const forkError = await rejection(registry(storage).fork(REF, "s2"), CorruptSessionError, "corrupt");
    expect(forkError.details).toMatchObject({ file: `messages/segments/${segmentName(1, 3)}`, line: 2 });
    expect(await storage.list(sessionPaths(S2).dir)).toEqual([]);
    expect((await storage.list("agents/a1/workspaces/w1/sessions")).filter((n) => n.startsWith("."))).toEqual([]);
  });
});

describe("fork", () => {
  test("copies every segment, Active and instruction.md, keeps sequences and sets forked_from", async () => {
    const storage = new MemoryStorage();
    await writeSession(storage, { segments: [[1, 2], [3, 5]], active: msgs(6, 8), instruction: "You are terse.", revision: 17, meta: { title: "original" } });
    const sessions = registry(storage);
    const progress: [number, number][] = [];
    const fork = await sessions.fork(REF, "s2", { onProgress: (done, total) => progress.push([done, total]) });
    expect(progress.at(-1)).toEqual([3, 3]);
    expect(fork.ref).toEqual(S2);
    for (const [start, end] of [[1, 2], [3, 5]] as const) {
      expect(await readText(storage, `${P2.segmentsDir}/${segmentName(start, end)}`)).toBe(segmentText(start, end));
    }
    expect(await readText(storage, P2.active)).toBe(lines(msgs(6, 8)));
    expect(await readText(storage, P2.instruction)).toBe("You are terse.");
    expect(fork.system).toBe("You are terse.");
    const meta = await metaOnDisk(storage, P2);
    expect(meta).toMatchObject({
      session_id: "s2",
      agent_id: "a1",
      workspace_id: "w1",
      title: "original",
      message_count: 8,
      forked_from: { session_id: "s1", through_sequence: 8 },
    });
    expect(meta["history_bytes"]).toBe(await historyBytesOnDisk(storage, P2));
    expect(meta["revision"]).toBeGreaterThanOrEqual(17);
    expect(fork.diagnostics).toEqual([]);
    expect(await fullHistory(fork)).toEqual(msgs(1, 8));
    expect(await storage.read(P.lock)).toBeUndefined();
    expect(await storage.read(P2.lock)).toBeUndefined();
    // The two sessions go separate ways.
    await fork.append(user("only in the fork", "m_fork"));
    const source = await sessions.open(REF);
    expect(source.active.map((m) => m.message_id)).toEqual(["m_6", "m_7", "m_8"]);
    expect(fork.active.at(-1)).toMatchObject({ sequence: 9, message_id: "m_fork" });
    await expectMetaConsistent(storage, fork);
  });

  test("of a session with a pending overlap copies the recovered view", async () => {
    const storage = new MemoryStorage();
    await writeSession(storage, { segments: [[1, 2]], active: msgs(1, 4) });
    const fork = await registry(storage).fork(REF, "s2");
    expect(await readText(storage, P2.active)).toBe(lines(msgs(3, 4)));
    expect(fork.diagnostics).toEqual([]);
    expectContiguous(await fullHistory(fork));
  });

  test("onto an existing id (live or archived) is refused and writes nothing", async () => {
    const storage = new MemoryStorage();
    await writeSession(storage, { active: msgs(1, 2) });
    await writeSession(storage, { active: msgs(1, 1), ref: S2 });
    await writeSession(storage, { active: msgs(1, 1), ref: { ...REF, sessionId: "old" }, place: "archived" });
    const before = await snapshot(storage);
    const sessions = registry(storage);
    await rejection(sessions.fork(REF, "s2"), InvalidInputError, "invalid-input");
    await rejection(sessions.fork(REF, "old"), InvalidInputError, "invalid-input");
    await rejection(sessions.fork(REF, "s1"), InvalidInputError, "invalid-input");
    await rejection(sessions.fork(REF, "../evil"), InvalidIdError, "invalid-id");
    await rejection(sessions.fork({ ...REF, sessionId: "nope" }, "s3"), NotFoundError, "not-found");
    expect(await snapshot(storage)).toEqual(before);
  });
});

describe("archive", () => {
  test("moves the whole tree to archived-sessions/<id>; the archived session opens read-only", async () => {
    const storage = new MemoryStorage();
    await writeSession(storage, { segments: [[1, 2]], active: msgs(3, 4), instruction: "sys", draft: undefined });
    const files = await snapshot(storage, P.dir);
    const sessions = registry(storage);
    const meta = await sessions.archive(REF);
    expect(meta.session_id).toBe("s1");
    expect(await snapshot(storage, P.dir)).toEqual({});
    expect(await storage.list("agents/a1/workspaces/w1/sessions")).toEqual([]);
    const moved = await snapshot(storage, ARCHIVED.dir);
    expect(Object.keys(moved).sort()).toEqual(Object.keys(files).map((p) => p.replace("/sessions/", "/archived-sessions/")).sort());
    for (const [path, bytes] of Object.entries(files)) {
      if (!path.endsWith("meta.json")) expect(moved[path.replace("/sessions/", "/archived-sessions/")]).toBe(bytes);
    }
    expect(await storage.read(ARCHIVED.lock)).toBeUndefined();

    await rejection(sessions.open(REF), NotFoundError, "not-found");
    const archived = await sessions.open(REF, { archived: true });
    expect(archived.place).toBe("archived");
    expect(await fullHistory(archived)).toEqual(msgs(1, 4));
    const before = await snapshot(storage);
    await rejection(archived.append(user("x")), InvalidInputError, "invalid-input");
    await rejection(archived.compact({ summarizer: summarizer() }), InvalidInputError, "invalid-input");
    await rejection(archived.snapshot(), InvalidInputError, "invalid-input");
    expect(await snapshot(storage)).toEqual(before);

    expect((await sessions.list()).map((m) => m.session_id)).toEqual([]);
    expect((await sessions.list({ archived: true })).map((m) => m.session_id)).toEqual(["s1"]);
    await rejection(sessions.archive(REF), NotFoundError, "not-found");
    // The id stays taken.
    await rejection(sessions.create(REF), InvalidInputError, "invalid-input");
  });

  test("an open of an archived session says it is archived and how to open it; an archived open of a live one says it is live", async () => {
    const storage = new MemoryStorage();
    const sessions = registry(storage);
    await sessions.create(REF);
    await sessions.create(S2);
    await sessions.archive(REF);
    const archived = await rejection(sessions.open(REF), NotFoundError, "not-found");
    expect(archived.message).toBe('no session a1/w1/s1: it is archived (in archived-sessions/); open it with open("a1/w1/s1", { archived: true })');
    expect(archived.details).toEqual({ ref: "a1/w1/s1", archived: true });
    const live = await rejection(sessions.open(S2, { archived: true }), NotFoundError, "not-found");
    expect(live.message).toBe("no session a1/w1/s2 in archived-sessions/: it is live; open it without { archived: true }");
    expect(live.details).toEqual({ ref: "a1/w1/s2", archived: false });
    const none = await rejection(sessions.open({ ...REF, sessionId: "s3" }), NotFoundError, "not-found");
    expect(none.message).toBe("no session a1/w1/s3");
    expect(none.details).toEqual({ ref: "a1/w1/s3" });
  });

  test("refuses when an archived session with that id exists; nothing moves", async () => {
    const storage = new MemoryStorage();
    await writeSession(storage, { active: msgs(1, 2) });
    await writeSession(storage, { active: msgs(1, 1), place: "archived" });
    const before = await snapshot(storage);
    await rejection(registry(storage).archive(REF), InvalidInputError, "invalid-input");
    expect(await snapshot(storage)).toEqual(before);
  });
});

describe("list and delete", () => {
  test("list filters by agent, workspace and archived, newest update first, skipping hidden folders", async () => {
    const storage = new MemoryStorage();
    const sessions = registry(storage);
    const a = await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1", title: "first" });
    await sessions.create({ agentId: "a1", workspaceId: "w2", sessionId: "s2" });
    await sessions.create({ agentId: "a2", workspaceId: "w1", sessionId: "s3" });
    await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s4" });
    await a.append(user("bump")); // s1 becomes the newest update
    await storage.replace("agents/a1/workspaces/w1/sessions/.fork-s9-t_1/meta.json", utf8("{}"));
    const problems: string[] = [];
    await storage.replace("agents/a1/workspaces/w1/sessions/broken/meta.json", utf8("not json"));

    expect((await sessions.list({ onProblem: (p) => problems.push(p.refText) })).map((m) => m.session_id)).toEqual(["s1", "s4", "s3", "s2"]);
    expect(problems).toEqual(["a1/w1/broken"]);
    expect((await sessions.list({ agentId: "a1" })).map((m) => m.session_id)).toEqual(["s1", "s4", "s2"]);
    expect((await sessions.list({ agentId: "a1", workspaceId: "w1" })).map((m) => m.session_id)).toEqual(["s1", "s4"]);
    expect((await sessions.list({ workspaceId: "w1" })).map((m) => m.session_id)).toEqual(["s1", "s4", "s3"]);
    expect(await sessions.list({ agentId: "nobody" })).toEqual([]);
    await sessions.archive({ agentId: "a1", workspaceId: "w1", sessionId: "s4" });
    expect((await sessions.list({ agentId: "a1", workspaceId: "w1" })).map((m) => m.session_id)).toEqual(["s1"]);
    expect((await sessions.list({ archived: true })).map((m) => m.session_id)).toEqual(["s4"]);
    await rejection(sessions.list({ agentId: "../x" }), InvalidIdError, "invalid-id");
  });

  test("delete removes everything of a live or an archived session", async () => {
    const storage = new MemoryStorage();
    await writeSession(storage, { segments: [[1, 2]], active: msgs(3, 4), instruction: "sys", draft: "{}" });
    await writeSession(storage, { active: [msg(1)], ref: S2, place: "archived" });
    const sessions = registry(storage);
    await sessions.delete(REF);
    expect(await snapshot(storage, P.dir)).toEqual({});
    await rejection(sessions.open(REF), NotFoundError, "not-found");
    await rejection(sessions.delete(REF), NotFoundError, "not-found");
    await sessions.delete(S2, { archived: true });
    expect(await snapshot(storage)).toEqual({});
    // The id is free again.
    const again = await sessions.create(REF);
    expect(again.revision).toBe(0);
    expect(again.active).toEqual([]);
  });
});

test("create refuses an existing id, and an invalid id before anything is written", async () => {
  const storage = new MemoryStorage();
  const sessions = registry(storage);
  await sessions.create({ ...REF, title: "t", modelLabel: "gpt-5", timezone: "Europe/Berlin" });
  const meta = await metaOnDisk(storage);
  expect(meta).toMatchObject({
    schema_version: 1,
    session_id: "s1",
    agent_id: "a1",
    workspace_id: "w1",
    title: "t",
    model_label: "gpt-5",
    timezone: "Europe/Berlin",
    message_count: 0,
    history_bytes: 0,
    revision: 0,
  });
  const before = await snapshot(storage);
  await rejection(sessions.create(REF), InvalidInputError, "invalid-input");
  await rejection(sessions.create({ ...REF, sessionId: ".hidden" }), InvalidIdError, "invalid-id");
  await rejection(sessions.create({ ...REF, agentId: "a/b" }), InvalidIdError, "invalid-id");
  expect(await snapshot(storage)).toEqual(before);
  expect(assistant("x").role).toBe("assistant");
});
