/**
 * `Session.repair()` on every kind of damage the recovery rules of docs/FORMAT.md name: a
 * plan by default (nothing written), and with `apply` the bad lines moved into a quarantine
 * file beside the session (never deleted, named by file and time), every valid record kept
 * with its exact bytes and sequence, `meta.json` rebuilt, the report saying exactly what
 * moved; a gap it cannot close is refused with the reason and nothing changes.
 */
import { describe, expect, test } from "vitest";
import { CorruptSessionError, MemoryStorage, type RepairReport, sessionPaths } from "../../core/mod.ts";
import { fullHistory, line, lines, metaOnDisk, msg, P, readText, REF, registry, rejection, segmentName, snapshot, TS, utf8 } from "../support/session.ts";
import { DRAFT, draftText, expectMetaConsistent, msgs, segmentText, user, writeSession } from "./support.ts";
import { planRepair } from "../../core/internal.ts";

const STAMP = "2026-12-02T13-00-00-000Z";
const ACTIVE_QUARANTINE = `quarantine/messages_active.jsonl.${STAMP}.jsonl`;

/** The quarantined lines of a quarantine file, as records. */
async function quarantined(storage: MemoryStorage, path: string): Promise<Record<string, unknown>[]> {
  const text = await readText(storage, `${P.dir}/${path}`);
  return text!.trimEnd().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** A session with `text` as active.jsonl (meta.json counting its messages), opened with a fixed clock. */
async function damaged(text: string, spec: Parameters<typeof writeSession>[1] = {}) {
  const storage = new MemoryStorage();
  // meta.json counts the highest sequence written, as the writer that wrote them would have.
  const sequences = text.split("\n").map((l) => {
    try {
      return (JSON.parse(l) as { sequence?: unknown }).sequence;
    } catch {
      return undefined;
    }
  });
  const last = Math.max(0, ...sequences.filter((n): n is number => typeof n === "number"));
  await writeSession(storage, { activeText: text, ...spec, meta: { message_count: last, revision: last, history_bytes: utf8(text).length, ...spec.meta } });
  const sessions = registry(storage, undefined, () => Date.parse(TS));
  return { storage, sessions, session: await sessions.open(REF) };
}

/** Plans, checks that planning wrote nothing, applies, and checks the plan was what was done. */
async function planThenApply(storage: MemoryStorage, session: Awaited<ReturnType<typeof damaged>>["session"]): Promise<RepairReport> {
  const before = await snapshot(storage);
  const plan = await session.repair();
  expect(await snapshot(storage)).toEqual(before);
  expect(plan.applied).toBe(false);
  const done = await session.repair({ apply: true });
  expect(done).toEqual({ ...plan, applied: true });
  expect(session.diagnostics.filter((d) => d.fatal)).toEqual([]);
  return done;
}

describe("repair: a plan by default, the plan carried out with apply", () => {
  test("a healthy session has nothing to repair and nothing is written", async () => {
    const { storage, session } = await damaged(lines(msgs(1, 3)));
    const before = await snapshot(storage);
    const report = await session.repair({ apply: true });
    expect(report).toMatchObject({ clean: true, refused: [], moves: [], rewritten: [], meta: { action: "unchanged", revision: 3 } });
    expect(await snapshot(storage)).toEqual(before);
  });

  test("rule 2, invalid JSON in the middle of active.jsonl: the line moves, the session is writable again", async () => {
    const garbage = "this is not JSON \u001b[2J";
    const text = lines(msgs(1, 2)) + `${garbage}\n` + lines(msgs(3, 4));
    const { storage, session } = await damaged(text);
    await expect(session.append(user("refused"))).rejects.toBeInstanceOf(CorruptSessionError);
    const report = await planThenApply(storage, session);
    expect(report.moves).toEqual([
      {
        from: "messages/active.jsonl",
        to: ACTIVE_QUARANTINE,
        lines: [{
          line: 3,
          code: "invalid_json",
          reason: expect.stringMatching(/^invalid JSON .* near "this is not JSON \\u001b\[2J"$/),
          bytes: utf8(garbage).length,
        }],
        bytes: utf8(garbage).length,
        reason: expect.any(String),
      },
    ]);
    expect(report).toMatchObject({
      clean: false,
      rewritten: ["messages/active.jsonl"],
      kept: { messages: 4, segments: 0, lastSequence: 4 },
      meta: { action: "updated", previousRevision: 4, revision: 5 },
    });
    // Every valid line is kept byte for byte; the bad one is in the quarantine, exactly.
    expect(await readText(storage, P.active)).toBe(lines(msgs(1, 4)));
    expect(await quarantined(storage, ACTIVE_QUARANTINE)).toEqual([
      {
        record_type: "quarantined_line",
        file: "messages/active.jsonl",
        line: 3,
        code: "invalid_json",
        reason: report.moves[0]!.lines![0]!.reason,
        quarantined_at: TS,
        text: garbage,
      },
    ]);
    expect((await fullHistory(session)).map((m) => m.sequence)).toEqual([1, 2, 3, 4]);
    await expectMetaConsistent(storage, session);
    expect((await session.append(user("after the repair"))).sequences).toEqual([5]);
  });

  test("rule 2, a valid JSON line that is not a record (invalid_record): moved", async () => {
    const text = lines(msgs(1, 2)) + line({ record_type: "message", note: "no sequence" }) + lines(msgs(3, 3));
    const { storage, session } = await damaged(text);
    const report = await planThenApply(storage, session);
    expect(report.moves[0]!.lines).toEqual([{
      line: 3,
      code: "invalid_record",
      reason: expect.stringContaining("invalid message record"),
      bytes: expect.any(Number),
    }]);
    expect(await readText(storage, P.active)).toBe(lines(msgs(1, 3)));
  });

  test("a bad line that held a message leaves a gap: refused with the reason, nothing changes", async () => {
    const text = lines(msgs(1, 2)) + '{"record_type":"message","sequence":3,"mess\n' + lines(msgs(4, 5));
    const { storage, session } = await damaged(text);
    const before = await snapshot(storage);
    const plan = await session.repair();
    expect(plan.refused).toEqual([
      {
        file: "messages/active.jsonl",
        line: 4,
        reason:
          "messages/active.jsonl:4: message sequence 4 where 3 was expected: sequences 3–3 are missing (line 3 could not be read and may have held them); repair never renumbers messages",
      },
    ]);
    const error = await rejection(session.repair({ apply: true }), CorruptSessionError);
    expect(error.message).toContain("cannot be repaired: messages/active.jsonl:4: message sequence 4 where 3 was expected");
    expect(error.details).toMatchObject({ file: "messages/active.jsonl", line: 4 });
    expect(await snapshot(storage)).toEqual(before);
  });

  test("rule 1, a torn tail: moved to the quarantine instead of cut", async () => {
    const torn = '{"record_type":"message","sequence":4,"ro';
    const { storage, session } = await damaged(lines(msgs(1, 3)) + torn, { meta: { history_bytes: lines(msgs(1, 3)).length } });
    const report = await planThenApply(storage, session);
    expect(report.moves[0]!.lines).toEqual([{ line: 4, code: "truncated_tail", reason: expect.stringContaining("interrupted append"), bytes: torn.length }]);
    expect((await quarantined(storage, ACTIVE_QUARANTINE))[0]!["text"]).toBe(torn);
    expect(await readText(storage, P.active)).toBe(lines(msgs(1, 3)));
  });

  test("rule 1, an interrupted commit (a final batch missing messages): its lines move", async () => {
    const batch = [msg(4, { batch_size: 3 }), msg(5)];
    const { storage, session } = await damaged(lines([...msgs(1, 3), ...batch]), { meta: { message_count: 3 } });
    const report = await planThenApply(storage, session);
    expect(report.moves[0]!.lines!.map((l) => [l.line, l.code])).toEqual([[4, "interrupted_commit"], [5, "interrupted_commit"]]);
    expect(report.kept.lastSequence).toBe(3);
    expect(await readText(storage, P.active)).toBe(lines(msgs(1, 3)));
  });

  test("a final line without its newline: kept, the newline added", async () => {
    const { storage, session } = await damaged(lines(msgs(1, 3)).slice(0, -1));
    const report = await planThenApply(storage, session);
    expect(report.moves).toEqual([]);
    expect(report.rewritten).toEqual(["messages/active.jsonl"]);
    expect(await readText(storage, P.active)).toBe(lines(msgs(1, 3)));
  });

  test("an exact duplicate line moves; a different message with the same sequence is kept, renumbered after the rest", async () => {
    const { storage, session } = await damaged(lines([...msgs(1, 3), msg(3), msg(4)]), { meta: { message_count: 4 } });
    const report = await planThenApply(storage, session);
    expect(report.moves[0]!.lines).toEqual([{
      line: 4,
      code: "duplicate",
      reason: "a second copy of message 3, identical to a line kept above",
      bytes: line(msg(3)).length - 1,
    }]);
    expect(await readText(storage, P.active)).toBe(lines(msgs(1, 4)));

    // A second writer's message (test/session/repair-duplicates.test.ts has the split brain in full).
    const other = await damaged(lines([...msgs(1, 3), msg(3, { message_id: "m_other" }), msg(4)]), { meta: { message_count: 4 } });
    const renumbered = await planThenApply(other.storage, other.session);
    expect(renumbered.moves[0]!.lines).toEqual([{
      line: 4,
      code: "renumbered",
      reason: "sequence 3 is held by a message written before it (another writer's); kept as sequence 5",
      bytes: line(msg(3, { message_id: "m_other" })).length - 1,
    }]);
    expect(other.session.active.map((m) => [m.sequence, m.message_id])).toEqual([[1, "m_1"], [2, "m_2"], [3, "m_3"], [4, "m_4"], [5, "m_other"]]);
  });

  test("rule 3, messages of Active already in the newest segment: moved", async () => {
    const { storage, session } = await damaged(lines(msgs(3, 6)), { segments: [[1, 4]], meta: { message_count: 6 } });
    const report = await planThenApply(storage, session);
    expect(report.moves[0]!.lines!.map((l) => [l.line, l.code])).toEqual([[1, "overlap_removed"], [2, "overlap_removed"]]);
    expect(await readText(storage, P.active)).toBe(lines(msgs(5, 6)));
    expect(report.kept).toEqual({ messages: 6, segments: 1, lastSequence: 6 });
    await expectMetaConsistent(storage, session);
  });

  test("a bad line inside a closed segment: moved, the segment rewritten with its other lines", async () => {
    const storage = new MemoryStorage();
    await writeSession(storage, { segments: [[1, 4]], active: msgs(5, 6) });
    const segment = `${P.segmentsDir}/${segmentName(1, 4)}`;
    const good = segmentText(1, 4).split("\n");
    await storage.replace(segment, utf8([...good.slice(0, 2), "{broken", ...good.slice(2)].join("\n")));
    const session = await registry(storage, undefined, () => Date.parse(TS)).open(REF);
    const report = await session.repair({ apply: true });
    expect(report.moves).toEqual([
      expect.objectContaining({
        from: `messages/segments/${segmentName(1, 4)}`,
        to: `quarantine/messages_segments_${segmentName(1, 4)}.${STAMP}.jsonl`,
        lines: [expect.objectContaining({ line: 3, code: "invalid_json" })],
      }),
    ]);
    expect(await readText(storage, segment)).toBe(segmentText(1, 4));
    await expectMetaConsistent(storage, session);
  });

  test("a segment that lost a message, a segment without a readable footer, a gap between segments: refused", async () => {
    const cases: [string, (storage: MemoryStorage) => Promise<void>, RegExp][] = [
      [
        "lost message",
        async (s) =>
          s.replace(
            `${P.segmentsDir}/${segmentName(1, 4)}`,
            utf8(
              lines([msg(1), msg(2), msg(4)]) +
                line({ record_type: "summary", session_id: "s1", summary_id: "sum_1", through_sequence: 4, text: "t", created_at: TS }),
            ),
          ),
        /message sequence 4 where 3 was expected: sequences 3–3 are missing; repair never renumbers/,
      ],
      [
        "broken footer",
        async (s) => s.replace(`${P.segmentsDir}/${segmentName(1, 4)}`, utf8(lines(msgs(1, 4)) + '{"record_type":"summ\n')),
        /no readable summary footer through sequence 4; repair cannot write a summary/,
      ],
      ["gap", async (s) => s.remove(`${P.segmentsDir}/${segmentName(1, 4)}`), /sequences 1–4 are in no segment; repair never renumbers messages/],
    ];
    for (const [name, breakIt, reason] of cases) {
      const storage = new MemoryStorage();
      await writeSession(storage, { segments: [[1, 4], [5, 8]], active: msgs(9, 10) });
      await breakIt(storage);
      const report = await planRepair(storage, P, REF, () => Date.parse(TS)).then((p) => p.report);
      expect(report.refused.map((r) => r.reason).join("\n"), name).toMatch(reason);
      expect(report.moves, name).toEqual([]);
    }
  });

  test("meta.json unreadable: moved whole, rebuilt from the files with its still-valid fields", async () => {
    const storage = new MemoryStorage();
    await writeSession(storage, { active: msgs(1, 3) });
    const broken = `${(await readText(storage, P.meta))!.replace('"message_count": 3', '"message_count": "three"')}`;
    await storage.replace(P.meta, utf8(broken));
    const session = await registry(storage, undefined, () => Date.parse(TS)).open(REF);
    const report = await planThenApply(storage, session);
    expect(report.moves).toEqual([{
      from: "meta.json",
      to: `quarantine/meta.json.${STAMP}`,
      bytes: utf8(broken).length,
      reason: expect.stringContaining("meta.json cannot be read: not a valid meta.json record"),
    }]);
    expect(await readText(storage, `${P.dir}/quarantine/meta.json.${STAMP}`)).toBe(broken);
    expect(report.meta).toEqual({ action: "rebuilt", previousRevision: 3, revision: 4, salvaged: ["title", "created_at"] });
    expect(await metaOnDisk(storage)).toMatchObject({ title: "hand-written", created_at: TS, message_count: 3, revision: 4 });
    await expectMetaConsistent(storage, session);
  });

  test("meta.json of another session, missing, or behind: moved and rebuilt, rebuilt, updated", async () => {
    const other = new MemoryStorage();
    await writeSession(other, { active: msgs(1, 2), meta: { session_id: "elsewhere" } });
    const moved = await planRepair(other, P, REF, () => Date.parse(TS));
    expect(moved.report.moves[0]).toMatchObject({ from: "meta.json", reason: "meta.json names a1/w1/elsewhere, not the session it lies in" });
    expect(moved.report.meta.action).toBe("rebuilt");

    const missing = new MemoryStorage();
    await writeSession(missing, { active: msgs(1, 2), meta: null });
    expect((await planRepair(missing, P, REF, () => Date.parse(TS))).report).toMatchObject({
      moves: [],
      meta: { action: "rebuilt", previousRevision: null, revision: 2 },
    });

    const behind = new MemoryStorage();
    await writeSession(behind, { active: msgs(1, 5), meta: { message_count: 3, revision: 3 } });
    expect((await planRepair(behind, P, REF, () => Date.parse(TS))).report).toMatchObject({
      moves: [],
      rewritten: [],
      meta: { action: "updated", previousRevision: 3, revision: 5 },
    });
  });

  test("meta.json of a version this reader does not know: refused, never guessed", async () => {
    const storage = new MemoryStorage();
    await writeSession(storage, { active: msgs(1, 2), meta: { schema_version: 2 } });
    const { report } = await planRepair(storage, P, REF, () => Date.parse(TS));
    expect(report.refused).toEqual([{
      file: "meta.json",
      line: null,
      reason: expect.stringMatching(/schema_version 2 is not supported .*; repair never guesses/),
    }]);
  });

  test("rule 4, a stale draft and an unreadable draft: moved whole, not deleted", async () => {
    const stale = await damaged(lines(msgs(1, 3)), { draft: draftText(3, { id: msg(3).message_id, pendingIds: [] }) });
    const report = await planThenApply(stale.storage, stale.session);
    expect(report.moves).toEqual([{
      from: DRAFT,
      to: `quarantine/messages_assistant_message.json.${STAMP}`,
      bytes: expect.any(Number),
      reason: `${DRAFT}: the draft is already committed in Active (a stale draft)`,
    }]);
    expect(await readText(stale.storage, P.draft)).toBeUndefined();

    const unreadable = await damaged(lines(msgs(1, 3)), { draft: "{not a draft" });
    const done = await planThenApply(unreadable.storage, unreadable.session);
    expect(done.moves[0]).toMatchObject({ from: DRAFT, reason: expect.stringContaining("cannot be read: invalid JSON") });
    expect(await readText(unreadable.storage, `${P.dir}/quarantine/messages_assistant_message.json.${STAMP}`)).toBe("{not a draft");
  });

  test("instruction.md that is not UTF-8: moved whole", async () => {
    const storage = new MemoryStorage();
    await writeSession(storage, { active: msgs(1, 2) });
    await storage.replace(P.instruction, new Uint8Array([0x68, 0xff, 0xfe]));
    const session = await registry(storage, undefined, () => Date.parse(TS)).open(REF);
    const report = await planThenApply(storage, session);
    expect(report.moves).toEqual([{
      from: "instruction.md",
      to: `quarantine/instruction.md.${STAMP}`,
      bytes: 3,
      reason: expect.stringContaining("not valid UTF-8"),
    }]);
    expect(await storage.read(`${P.dir}/quarantine/instruction.md.${STAMP}`)).toEqual(new Uint8Array([0x68, 0xff, 0xfe]));
  });

  test("never overwrites a quarantine file: a second repair in the same millisecond gets its own name", async () => {
    const { storage, session } = await damaged(lines(msgs(1, 1)) + "first\n" + lines(msgs(2, 2)));
    await session.repair({ apply: true });
    await storage.replace(P.active, utf8(lines(msgs(1, 2)) + "second\n" + lines(msgs(3, 3))));
    await session.reload();
    const again = await session.repair({ apply: true });
    expect(again.moves[0]!.to).toBe(`quarantine/messages_active.jsonl.${STAMP}-2.jsonl`);
    expect((await quarantined(storage, ACTIVE_QUARANTINE))[0]!["text"]).toBe("first");
    expect((await quarantined(storage, again.moves[0]!.to))[0]!["text"]).toBe("second");
  });

  test("apply takes the writer lock: refused while another writer holds it", async () => {
    const { storage, session } = await damaged(lines(msgs(1, 1)) + "junk\n" + lines(msgs(2, 2)));
    await storage.replace(P.lock, utf8(JSON.stringify({ pid: 1, hostname: "h", runtime: "node", operation: "append", created_at: TS, lock_id: "lock_x" })));
    await expect(session.repair({ apply: true })).rejects.toMatchObject({ code: "writer-locked" });
    expect(await readText(storage, P.active)).toContain("junk");
  });

  test("sessionPaths of the report's files stay inside the session folder", async () => {
    const { session } = await damaged(lines(msgs(1, 1)) + "junk\n");
    const plan = await session.repair();
    for (const move of plan.moves) expect(`${sessionPaths(REF).dir}/${move.to}`.startsWith(`${P.dir}/quarantine/`)).toBe(true);
  });
});
