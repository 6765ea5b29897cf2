/**
 * docs/FORMAT.md "Recovery: what a reader does on open" 1–5, each with its diagnostic, and the promise that open
 * writes nothing: repairs wait for the next write.
 */
import { describe, expect, test } from "vitest";
import { CorruptSessionError, type Diagnostic, MemoryStorage, sessionPaths, UnsupportedSchemaError } from "../../core/mod.ts";
import {
  expectContiguous,
  fullHistory,
  line,
  lines,
  metaOnDisk,
  msg,
  P,
  readText,
  RecordingStorage,
  REF,
  registry,
  rejection,
  segmentName,
  snapshot,
  utf8,
  withoutLineRevisions,
} from "../support/session.ts";
import { ACTIVE, DRAFT, DRAFT_PARTS, draftText, expectMetaConsistent, msgs, segmentText, user, writeSession } from "./support.ts";
import { NEWEST_SEGMENT_FIELD } from "../../core/internal.ts";

function only(diagnostics: readonly Diagnostic[], code: Diagnostic["code"]): Diagnostic {
  const found = diagnostics.filter((d) => d.code === code);
  expect(found, `exactly one ${code} in ${JSON.stringify(diagnostics)}`).toHaveLength(1);
  return found[0]!;
}

describe("rule 1: the final line of active.jsonl", () => {
  test("a torn tail is ignored, reported as truncated_tail, and cut before the next append", async () => {
    const storage = new MemoryStorage();
    const torn = '{"record_type":"message","sequence":4,"message_id":"m_4","ro';
    await writeSession(storage, { active: msgs(1, 3), activeSuffix: torn, meta: { history_bytes: lines(msgs(1, 3)).length } });
    const before = await snapshot(storage);
    const session = await registry(storage).open(REF);
    expect(await snapshot(storage)).toEqual(before);
    const d = only(session.diagnostics, "truncated_tail");
    expect(d).toMatchObject({ file: ACTIVE, line: 4, fatal: false });
    expect(d.message).toContain(`${ACTIVE}:4`);
    expect(session.diagnostics).toHaveLength(1);
    expect(session.active.map((m) => m.sequence)).toEqual([1, 2, 3]);

    const { sequences, revision } = await session.append(user("after the crash", "m_new"));
    expect(sequences).toEqual([4]);
    expect(revision).toBe(4);
    const text = await readText(storage, P.active);
    const appended = JSON.parse(text!.split("\n")[3]!) as Record<string, unknown>;
    expect(appended["message_id"]).toBe("m_new");
    expect(text).toBe(lines(msgs(1, 3)) + line(appended));
    await expectMetaConsistent(storage, session);
  });

  test("a valid final line without newline is kept, and the newline is added before the next append", async () => {
    const storage = new MemoryStorage();
    const unterminated = lines(msgs(1, 3)).slice(0, -1);
    await writeSession(storage, { activeText: unterminated, meta: { message_count: 3 } });
    const before = await snapshot(storage);
    const session = await registry(storage).open(REF);
    expect(await snapshot(storage)).toEqual(before);
    // meta.json cannot have counted the newline the repair adds: it is rebuilt (and written first).
    expect(session.diagnostics).toEqual([
      expect.objectContaining({ file: "meta.json", line: null, code: "meta_rebuilt", fatal: false, message: expect.stringContaining("lacks its newline") }),
    ]);
    expect(session.meta.history_bytes).toBe(utf8(unterminated).length);
    expect(session.active.map((m) => m.message_id)).toEqual(["m_1", "m_2", "m_3"]);

    await session.append(user("next", "m_4"));
    const text = await readText(storage, P.active);
    const rows = text!.split("\n");
    expect(rows).toHaveLength(5);
    expect(rows[4]).toBe("");
    expect(text!.startsWith(lines(msgs(1, 3)))).toBe(true);
    expect(JSON.parse(rows[3]!)).toMatchObject({ sequence: 4, message_id: "m_4" });
    await expectMetaConsistent(storage, session);
  });

  test("an incomplete final batch (torn at a line boundary) is not committed and is cut at the next write", async () => {
    const storage = new MemoryStorage();
    const batch = [{ ...msg(4), batch_size: 3 }, msg(5)]; // the third line never arrived
    await writeSession(storage, { active: msgs(1, 3), activeSuffix: lines(batch), meta: { message_count: 3, history_bytes: lines(msgs(1, 3)).length } });
    const before = await snapshot(storage);
    const session = await registry(storage).open(REF);
    expect(await snapshot(storage)).toEqual(before);
    const d = only(session.diagnostics, "truncated_tail");
    expect(d).toMatchObject({ file: ACTIVE, line: 4, fatal: false });
    expect(d.message).toContain("2 of 3");
    expect(session.active.map((m) => m.sequence)).toEqual([1, 2, 3]);
    expect(session.meta.message_count).toBe(3);

    await session.append(user("again", "m_again"));
    const text = await readText(storage, P.active);
    expect(text!.startsWith(lines(msgs(1, 3)))).toBe(true);
    expect(text!.split("\n")).toHaveLength(5);
    expect(text).not.toContain('"m_5"');
    expect(JSON.parse(text!.split("\n")[3]!)).toMatchObject({ sequence: 4, message_id: "m_again" });
    await expectMetaConsistent(storage, session);
  });

  test("a batch torn inside its last line is cut at the batch's first line", async () => {
    const storage = new MemoryStorage();
    const batch = lines([{ ...msg(4), batch_size: 2 }]) + line(msg(5)).slice(0, 30);
    await writeSession(storage, { active: msgs(1, 3), activeSuffix: batch, meta: { message_count: 3, history_bytes: lines(msgs(1, 3)).length } });
    const session = await registry(storage).open(REF);
    expect(session.diagnostics.map((d) => [d.code, d.line, d.fatal])).toEqual([
      ["truncated_tail", 5, false],
      ["truncated_tail", 4, false],
    ]);
    expect(session.active).toHaveLength(3);
    await session.append(user("x"));
    expect((await readText(storage, P.active))!.split("\n")).toHaveLength(5);
    await expectMetaConsistent(storage, session);
  });
});

describe("rule 2: an invalid line anywhere else is corruption", () => {
  test("an invalid middle line of active.jsonl is fatal, blocks every write and nothing is rewritten", async () => {
    const storage = new MemoryStorage();
    const activeText = line(msg(1)) + "{not json}\n" + lines(msgs(3, 4)) + '{"torn';
    await writeSession(storage, { activeText, meta: { message_count: 4 }, draft: draftText(6, { pendingIds: ["m_p"] }) });
    const before = await snapshot(storage);
    const sessions = registry(storage);
    const session = await sessions.open(REF);
    const fatal = session.diagnostics.filter((d) => d.fatal);
    expect(fatal[0]).toMatchObject({ file: ACTIVE, line: 2, code: "invalid_json", fatal: true });
    expect(fatal[0]!.message).toContain(`${ACTIVE}:2`);

    const attempts: [string, () => Promise<unknown>][] = [
      ["append", () => session.append(user("blocked"))],
      ["finishDraft", () => session.finishDraft()],
      ["compact", () => session.compact({ summarizer: { summarize: async () => ({ text: "never" }) } })],
      ["snapshot", () => session.snapshot()],
      ["regenerateSystem", () => session.regenerateSystem()],
      ["archive", () => sessions.archive(REF)],
      ["fork", () => sessions.fork(REF, "s2")],
    ];
    for (const [name, attempt] of attempts) {
      const error = await rejection(attempt, CorruptSessionError, "corrupt");
      expect(error.details, name).toMatchObject({ file: ACTIVE, line: 2 });
    }
    expect(await snapshot(storage)).toEqual(before);
  });

  test("an invalid record (valid JSON, wrong shape) names its line as invalid_record", async () => {
    const storage = new MemoryStorage();
    const bad = { ...msg(2), role: "system" };
    await writeSession(storage, { activeText: lines([msg(1), bad, msg(3)]), meta: { message_count: 3 } });
    const before = await snapshot(storage);
    const session = await registry(storage).open(REF);
    expect(session.diagnostics.find((d) => d.fatal)).toMatchObject({ file: ACTIVE, line: 2, code: "invalid_record", fatal: true });
    const error = await rejection(session.append(user("x")), CorruptSessionError, "corrupt");
    expect(error.details).toMatchObject({ file: ACTIVE, line: 2, diagnostic: "invalid_record" });
    expect(await snapshot(storage)).toEqual(before);
  });

  test("a corrupt newest segment is fatal at open; its footer line is named", async () => {
    const storage = new MemoryStorage();
    await writeSession(storage, { segments: [[1, 2]], active: msgs(3, 4) });
    const name = `messages/segments/${segmentName(1, 2)}`;
    await storage.replace(`${P.dir}/${name}`, utf8(lines(msgs(1, 2)) + '{"record_type":"summary",\n'));
    const before = await snapshot(storage);
    const session = await registry(storage).open(REF);
    expect(session.diagnostics.find((d) => d.fatal)).toMatchObject({ file: name, code: "invalid_json", fatal: true });
    await rejection(session.append(user("x")), CorruptSessionError, "corrupt");
    expect(await snapshot(storage)).toEqual(before);
  });
});

describe("rule 3: overlap between the newest segment and Active", () => {
  test("duplicates are dropped in memory at once and on disk at the next write", async () => {
    const storage = new MemoryStorage();
    // A crash between writing segment 1..3 and replacing Active: Active still holds 1..6.
    await writeSession(storage, { segments: [[1, 3]], active: msgs(1, 6), meta: { message_count: 6 } });
    const before = await snapshot(storage);
    const session = await registry(storage).open(REF);
    expect(await snapshot(storage)).toEqual(before);
    const d = only(session.diagnostics, "overlap_removed");
    expect(d).toMatchObject({ file: ACTIVE, line: 1, fatal: false });
    expect(d.message).toContain("3 messages through sequence 3");
    expect(session.diagnostics.some((x) => x.fatal)).toBe(false);
    // The interrupted compaction may or may not have written meta.json: it is counted afresh.
    expect(only(session.diagnostics, "meta_rebuilt").message).toContain("predates the newest segment");
    expect(session.revision).toBe(7);
    expect(session.active.map((m) => m.sequence)).toEqual([4, 5, 6]);
    expect(session.summary?.through_sequence).toBe(3);
    expectContiguous(await fullHistory(session));

    await session.append(user("seven", "m_7"));
    const text = await readText(storage, P.active);
    expect(text!.startsWith(lines(msgs(4, 6)))).toBe(true);
    expect(text!.split("\n").filter(Boolean).map((l) => (JSON.parse(l) as { sequence: number }).sequence)).toEqual([4, 5, 6, 7]);
    expect(await readText(storage, `${P.segmentsDir}/${segmentName(1, 3)}`)).toBe(segmentText(1, 3));
    await expectMetaConsistent(storage, session);
  });
});

test("repairs write meta.json before they touch active.jsonl, so a crash between leaves the damage that rebuilds it", async () => {
  for (
    const spec of [
      { segments: [[1, 3]] as [number, number][], active: msgs(1, 6), meta: { message_count: 6 } },
      { activeText: lines(msgs(1, 3)).slice(0, -1), meta: { message_count: 3 } },
    ]
  ) {
    const inner = new MemoryStorage();
    await writeSession(inner, spec);
    const storage = new RecordingStorage(inner);
    const session = await registry(storage).open(REF);
    storage.reset();
    await session.append(user("x"));
    const writes = storage.mutations(P.dir).filter((m) => !m.includes("writer.lock"));
    expect(writes[0]).toBe("replace meta.json");
    expect(writes[1]).toMatch(/^(replace|append) messages\/active\.jsonl$/);
    expect(writes.slice(2)).toEqual(["append messages/active.jsonl", "replace meta.json"]);
    await expectMetaConsistent(inner, session);
  }
});

describe("the newest-segment hint of meta.json", () => {
  const hinted = (start: number, end: number) => ({ [NEWEST_SEGMENT_FIELD]: { start, end } });

  test("a confirmed hint is used without listing segments/", async () => {
    const inner = new MemoryStorage();
    await writeSession(inner, { segments: [[1, 2], [3, 5]], active: msgs(6, 7), meta: hinted(3, 5) });
    const storage = new RecordingStorage(inner);
    const session = await registry(storage).open(REF);
    expect(session.diagnostics).toEqual([]);
    expect(session.summary?.through_sequence).toBe(5);
    expect(storage.calls.filter((c) => c.op === "list")).toEqual([]);
    expect(await session.segments()).toEqual([{ start: 1, end: 2 }, { start: 3, end: 5 }]);
  });

  test("a hint naming a segment that is not there (a crash before the segment landed) lists segments/ and rebuilds meta.json", async () => {
    const storage = new MemoryStorage();
    await writeSession(storage, { segments: [[1, 2]], active: msgs(3, 6), meta: hinted(3, 4) });
    const session = await registry(storage).open(REF);
    expect(only(session.diagnostics, "meta_rebuilt").message).toContain("000000000003-000000000004.jsonl");
    expect(session.newestSegment).toEqual({ start: 1, end: 2 });
    expect(session.active.map((m) => m.sequence)).toEqual([3, 4, 5, 6]);
    await session.append(user("seven"));
    await expectMetaConsistent(storage, session);
    expect((await metaOnDisk(storage))[NEWEST_SEGMENT_FIELD]).toEqual({ start: 1, end: 2 });
  });

  test("a stale hint (another tool compacted without updating it) is not trusted", async () => {
    // Active starts after a newer segment than the hint names.
    const storage = new MemoryStorage();
    await writeSession(storage, { segments: [[1, 2], [3, 5]], active: msgs(6, 7), meta: hinted(1, 2) });
    const session = await registry(storage).open(REF);
    expect(session.newestSegment).toEqual({ start: 3, end: 5 });
    expect(session.summary?.through_sequence).toBe(5);
    // Active is empty and meta.json counts more messages than the hinted segment holds.
    const empty = new MemoryStorage();
    await writeSession(empty, { segments: [[1, 2], [3, 5]], active: [], meta: hinted(1, 2) });
    const reset = await registry(empty).open(REF);
    expect(reset.newestSegment).toEqual({ start: 3, end: 5 });
    expect(reset.meta.message_count).toBe(5);
  });

  test("a malformed hint is ignored, never fatal", async () => {
    const storage = new MemoryStorage();
    await writeSession(storage, { segments: [[1, 2]], active: msgs(3, 3), meta: { [NEWEST_SEGMENT_FIELD]: "000000000001-000000000002" } });
    const session = await registry(storage).open(REF);
    expect(session.diagnostics.filter((d) => d.fatal)).toEqual([]);
    expect(session.newestSegment).toEqual({ start: 1, end: 2 });
  });
});

describe("rule 4: the draft", () => {
  test("a draft whose message_id is already in Active is stale: discarded, removed at the next write", async () => {
    const storage = new MemoryStorage();
    await writeSession(storage, { active: msgs(1, 4), draft: draftText(4, { id: "m_4", pendingIds: [] }) });
    const before = await snapshot(storage);
    const session = await registry(storage).open(REF);
    expect(await snapshot(storage)).toEqual(before);
    const d = only(session.diagnostics, "stale_draft");
    expect(d).toMatchObject({ file: DRAFT, line: null, fatal: false });
    expect(session.draft).toBeUndefined();

    await session.append(user("next"));
    expect(await storage.read(P.draft)).toBeUndefined();
    expect((await fullHistory(session)).map((m) => m.message_id).slice(0, 4)).toEqual(["m_1", "m_2", "m_3", "m_4"]);
    expect(session.active).toHaveLength(5);
  });

  test("a draft whose pending message is already committed is stale too", async () => {
    const storage = new MemoryStorage();
    await writeSession(storage, { active: msgs(1, 3), draft: draftText(5, { pendingIds: ["m_3"] }) });
    const session = await registry(storage).open(REF);
    expect(only(session.diagnostics, "stale_draft").fatal).toBe(false);
    expect(session.draft).toBeUndefined();
  });

  test("a live draft is retained with its parts in order and its pending messages", async () => {
    const storage = new MemoryStorage();
    await writeSession(storage, { active: msgs(1, 2), draft: draftText(4) });
    const before = await snapshot(storage);
    const session = await registry(storage).open(REF);
    expect(await snapshot(storage)).toEqual(before);
    expect(session.diagnostics).toEqual([]);
    expect(session.draft?.record.message_id).toBe("m_draft");
    expect(session.draft?.record.status).toBe("streaming");
    expect(session.draft?.record.parts).toEqual(DRAFT_PARTS);
    expect(session.draft?.record).not.toHaveProperty("pending_messages");
    expect(session.draft?.pending.map((m) => m.message_id)).toEqual(["m_pending"]);
  });

  test("an invalid draft file is corruption (fatal, writes blocked)", async () => {
    const storage = new MemoryStorage();
    await writeSession(storage, { active: msgs(1, 2), draft: '{"record_type":"message"' });
    const before = await snapshot(storage);
    const session = await registry(storage).open(REF);
    expect(session.diagnostics).toEqual([expect.objectContaining({ file: DRAFT, line: null, code: "invalid_json", fatal: true })]);
    await rejection(session.append(user("x")), CorruptSessionError, "corrupt");
    expect(await snapshot(storage)).toEqual(before);
  });
});

describe("rule 5: meta.json missing or behind", () => {
  test("a missing meta.json is rebuilt from the files; revision ≥ highest sequence + segments", async () => {
    const storage = new MemoryStorage();
    await writeSession(storage, { segments: [[1, 2], [3, 5]], active: msgs(6, 8), meta: null });
    const before = await snapshot(storage);
    const session = await registry(storage).open(REF);
    expect(await snapshot(storage)).toEqual(before);
    expect(only(session.diagnostics, "missing_meta")).toMatchObject({ file: "meta.json", line: null, fatal: false });
    expect(session.meta.message_count).toBe(8);
    expect(session.revision).toBe(8 + 2);
    expect(session.meta.history_bytes).toBe(
      utf8(segmentText(1, 2)).length + utf8(segmentText(3, 5)).length + utf8(lines(msgs(6, 8))).length,
    );

    const { revision } = await session.append(user("nine"));
    expect(revision).toBe(11);
    await expectMetaConsistent(storage, session);
    expect((await metaOnDisk(storage))["session_id"]).toBe("s1");
  });

  test("an empty or zero-filled meta.json (a machine crash before its unflushed write landed) is rebuilt like a missing one", async () => {
    for (const bytes of [new Uint8Array(0), new Uint8Array(312)]) {
      const storage = new MemoryStorage();
      await writeSession(storage, { segments: [[1, 2]], active: msgs(3, 5) });
      await storage.replace(sessionPaths(REF).meta, bytes);
      const session = await registry(storage).open(REF);
      expect(only(session.diagnostics, "missing_meta")).toMatchObject({ file: "meta.json", line: null, fatal: false });
      expect(session.meta.message_count).toBe(5);
      expect(session.revision).toBe(5 + 1);
      await session.append(user("six"));
      await expectMetaConsistent(storage, session);
    }
  });

  test("a meta.json behind the messages is rebuilt; its revision never goes backwards", async () => {
    const storage = new MemoryStorage();
    // meta counts 2 messages at revision 40, but 4 are committed (a crash before the meta write).
    await writeSession(storage, { active: msgs(1, 4), meta: { message_count: 2, history_bytes: 10, revision: 40, title: "kept" } });
    const session = await registry(storage).open(REF);
    expect(only(session.diagnostics, "meta_rebuilt")).toMatchObject({ file: "meta.json", line: null, fatal: false });
    // Up to two commits (one per missing message) may have gone unrecorded: 40 + 2.
    expect(session.revision).toBe(42);
    expect(session.meta.title).toBe("kept");
    expect(session.meta.message_count).toBe(4);

    const low = new MemoryStorage();
    await writeSession(low, { segments: [[1, 3]], active: msgs(4, 6), meta: { message_count: 1, revision: 0 } });
    const rebuilt = await registry(low).open(REF);
    expect(rebuilt.revision).toBe(6 + 1);
    await rebuilt.append(user("x"));
    expect(rebuilt.revision).toBe(8);
    await expectMetaConsistent(low, rebuilt);
  });

  test("an unknown schema_version refuses the session with UnsupportedSchemaError and writes nothing", async () => {
    const storage = new MemoryStorage();
    await writeSession(storage, { active: msgs(1, 2), meta: { schema_version: 2 } });
    const before = await snapshot(storage);
    const error = await rejection(registry(storage).open(REF), UnsupportedSchemaError, "unsupported-schema");
    expect(error.details).toMatchObject({ schema_version: 2 });
    expect(await snapshot(storage)).toEqual(before);
  });
});

test("open of a session damaged in every recoverable way writes nothing; the first write repairs all of it", async () => {
  const storage = new MemoryStorage();
  await writeSession(storage, {
    segments: [[1, 2]],
    activeText: lines(msgs(1, 4)) + '{"record_type":"mess',
    draft: draftText(4, { id: "m_4", pendingIds: [] }),
    meta: null,
  });
  const before = await snapshot(storage);
  const session = await registry(storage).open(REF);
  await registry(storage).open(REF);
  expect(await snapshot(storage)).toEqual(before);
  expect(session.diagnostics.map((d) => d.code).sort()).toEqual(["missing_meta", "overlap_removed", "stale_draft", "truncated_tail"]);
  await session.append(user("five", "m_5"));
  expect(await storage.read(P.draft)).toBeUndefined();
  expect(withoutLineRevisions(await readText(storage, P.active))).toBe(lines(msgs(3, 4)) + line(session.active.at(-1)));
  await expectMetaConsistent(storage, session);
  const again = await registry(storage).open(REF);
  expect(again.diagnostics).toEqual([]);
  expectContiguous(await fullHistory(again));
});
