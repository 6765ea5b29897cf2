/**
 * Commits: one append to active.jsonl plus one replace of meta.json per batch,
 * sequences assigned at commit, meta figures maintained, invalid input rejected before
 * anything is written.
 */
import { describe, expect, test } from "vitest";
import { InvalidInputError, MemoryStorage, type NewMessage } from "../../core/mod.ts";
import {
  decode,
  expectContiguous,
  fullHistory,
  metaOnDisk,
  P,
  readText,
  RecordingStorage,
  REF,
  registry,
  rejection,
  snapshot,
  TS,
} from "../support/session.ts";
import { assistant, expectMetaConsistent, historyBytesOnDisk, ISO_MS, msgs, user, writeSession } from "./support.ts";

describe("a commit", () => {
  test("of a batch is exactly one append to active.jsonl and one replace of meta.json, under the lock", async () => {
    const inner = new MemoryStorage();
    const storage = new RecordingStorage(inner);
    const session = await registry(storage).create(REF);
    storage.reset();
    const batch = [user("q", "m_q"), assistant("a", "m_a"), user("q2", "m_q2")];
    const { sequences, revision } = await session.append(batch);
    expect(sequences).toEqual([1, 2, 3]);
    expect(revision).toBe(1);
    expect(storage.mutations(P.dir)).toEqual([
      "createExclusive writer.lock",
      "append messages/active.jsonl",
      "replace meta.json",
      "remove writer.lock",
    ]);
    const appended = decode(storage.calls.find((c) => c.op === "append")!.bytes)!;
    expect(appended).toBe(await readText(inner, P.active));
    const rows = appended.split("\n");
    expect(rows).toHaveLength(4);
    expect(rows[3]).toBe("");
    const records = rows.slice(0, 3).map((r) => JSON.parse(r) as Record<string, unknown>);
    expect(records.map((r) => r["sequence"])).toEqual([1, 2, 3]);
    expect(records.map((r) => r["message_id"])).toEqual(["m_q", "m_a", "m_q2"]);
    // The batch mark on the first line only: what makes the multi-line append atomic.
    expect(records.map((r) => r["batch_size"])).toEqual([3, undefined, undefined]);
    expect(records[1]).toMatchObject({ role: "assistant", status: "completed", parts: [{ sequence: 1, type: "text", text: "a" }] });
    expect(records[0]!["created_at"]).toMatch(ISO_MS);
    // …and it never shows through the API.
    expect(session.active.some((m) => "batch_size" in m)).toBe(false);
  });

  test("of one message carries no batch mark", async () => {
    const storage = new MemoryStorage();
    const session = await registry(storage).create(REF);
    await session.append(user("solo"));
    expect(await readText(storage, P.active)).not.toContain("batch_size");
  });

  test("assigns contiguous sequences at commit, ignoring any the caller passed", async () => {
    const storage = new MemoryStorage();
    await writeSession(storage, { segments: [[1, 4]], active: msgs(5, 7) });
    const session = await registry(storage).open(REF);
    const { sequences } = await session.append([{ ...user("x"), sequence: 99 } as NewMessage, user("y")]);
    expect(sequences).toEqual([8, 9]);
    expectContiguous(await fullHistory(session));
    expect(session.active.map((m) => m.sequence)).toEqual([5, 6, 7, 8, 9]);
  });

  test("maintains message_count, history_bytes (= bytes of every .jsonl file) and updated_at", async () => {
    const storage = new MemoryStorage();
    await writeSession(storage, { segments: [[1, 2], [3, 4]], active: msgs(5, 6) });
    const session = await registry(storage).open(REF);
    const updatedBefore = session.meta.updated_at;
    expect(updatedBefore).toBe(TS);
    await session.append([user("x"), assistant("y")]);
    await session.append(user("z"));
    const meta = await metaOnDisk(storage);
    expect(meta["message_count"]).toBe(9);
    expect(meta["history_bytes"]).toBe(await historyBytesOnDisk(storage, P));
    expect(meta["updated_at"]).toMatch(ISO_MS);
    expect(Date.parse(meta["updated_at"] as string)).toBeGreaterThan(Date.parse(updatedBefore));
    expect(meta["created_at"]).toBe(TS);
    expect(meta["title"]).toBe("hand-written");
    await expectMetaConsistent(storage, session);
  });

  test("keeps unknown fields of meta.json and of messages", async () => {
    const storage = new MemoryStorage();
    await writeSession(storage, { active: msgs(1, 2), meta: { x_host: { keep: true } } });
    const session = await registry(storage).open(REF);
    await session.append({ ...user("x"), x_extra: 7 });
    expect((await metaOnDisk(storage))["x_host"]).toEqual({ keep: true });
    expect(session.active.at(-1)).toMatchObject({ x_extra: 7 });
    expect(await readText(storage, P.active)).toContain('"x_extra":7');
  });

  // docs/FORMAT.md "A message": a host's own fields are kept, so what JSON would change or drop is refused, named
  // with the message's index and the field's path: the handle and every later open read back what was acknowledged.
  test.each<[string, unknown, string]>([
    ["a function", () => 1, "messages[1].x_host"],
    ["a symbol", Symbol("s"), "messages[1].x_host"],
    ["NaN", Number.NaN, "messages[1].x_host"],
    ["Infinity", Number.POSITIVE_INFINITY, "messages[1].x_host"],
    ["a Date", new Date(0), "messages[1].x_host"],
    ["a Map", new Map([[1, 2]]), "messages[1].x_host"],
    ["a BigInt inside an object", { nested: { n: 1n } }, "messages[1].x_host.nested.n"],
    ["nothing in a list", [1, undefined, 3], "messages[1].x_host.1"],
    ["an object with toJSON", { toJSON: () => "other" }, "messages[1].x_host.toJSON"],
  ])("refuses a host's own field holding %s (not a JSON value) and writes nothing", async (_name, value, where) => {
    const storage = new MemoryStorage();
    await writeSession(storage, { active: msgs(1, 2) });
    const session = await registry(storage).open(REF);
    const before = await snapshot(storage);
    const error = await rejection(() => session.append([user("good"), { ...user("x"), x_host: value }]), InvalidInputError, "invalid-input");
    expect(error.message.startsWith(`${where}: expected a JSON value`)).toBe(true);
    expect(error.details["path"]).toEqual(where.split(".").slice(1));
    expect(await snapshot(storage)).toEqual(before);
    expect(session.active).toHaveLength(2);
  });

  test("keeps a host's own JSON fields as given, on the message and its parts: the handle and a new open agree", async () => {
    const storage = new MemoryStorage();
    const session = await registry(storage).create(REF);
    const extra = { x_host: { list: [1, "two", null, true, { deep: [] }], n: -0.5 }, x_gone: undefined };
    await session.append({ role: "user", parts: [{ type: "text", text: "x", x_part: { k: 1 } }], ...extra });
    const reopened = await registry(storage).open(REF);
    expect(reopened.active).toEqual(session.active);
    expect(Object.keys(session.active[0]!)).not.toContain("x_gone");
    expect(session.active[0]).toMatchObject({ x_host: extra.x_host, parts: [{ x_part: { k: 1 } }] });
  });

  test.each<[string, unknown]>([
    ["an unknown role", { role: "system", parts: [] }],
    ["a part of unknown type", { role: "user", parts: [{ type: "video", text: "x" }] }],
    ["duplicate part sequences", { role: "user", parts: [{ type: "text", text: "a", sequence: 1 }, { type: "text", text: "b", sequence: 1 }] }],
    ["status streaming", { role: "assistant", status: "streaming", parts: [] }],
    ["a bad timestamp", { role: "user", created_at: "yesterday", parts: [] }],
    ["a file without data or url", { role: "user", parts: [{ type: "file", media_type: "image/png" }] }],
  ])("rejects %s with InvalidInputError and writes nothing", async (_name, bad) => {
    const storage = new MemoryStorage();
    await writeSession(storage, { active: msgs(1, 2) });
    const session = await registry(storage).open(REF);
    const before = await snapshot(storage);
    await rejection(() => session.append([user("good"), bad as NewMessage]), InvalidInputError, "invalid-input");
    expect(await snapshot(storage)).toEqual(before);
    expect(session.revision).toBe(2);
    expect(session.active).toHaveLength(2);
  });

  test("rejects an empty batch with InvalidInputError (as a rejected promise)", async () => {
    const storage = new MemoryStorage();
    const session = await registry(storage).create(REF);
    const before = await snapshot(storage);
    const pending = session.append([]);
    expect(pending).toBeInstanceOf(Promise);
    await rejection(pending, InvalidInputError, "invalid-input");
    expect(await snapshot(storage)).toEqual(before);
  });
});
