/**
 * Repair after a split brain (docs/FORMAT.md "Repair", duplicate sequences): two writers that
 * both believed they held the session numbered their messages from what each had read, so
 * `active.jsonl` holds a run of sequences twice with different messages (`invalid_record`,
 * every write refused). Both writers' messages were acknowledged: repair keeps both, the line
 * written first keeping its sequence and every later one renumbered after the rest with its id
 * and content unchanged (its original moved to the quarantine), so one `repair --apply` makes
 * the session writable again and every message is read back exactly once.
 */
import { describe, expect, test } from "vitest";
import { CorruptSessionError, MemoryStorage, type MessageRecord } from "../../core/mod.ts";
import { fullHistory, line, lines, msg, P, readText, REF, registry, TS, utf8 } from "../support/session.ts";
import { user, writeSession } from "./support.ts";

const STAMP = "2026-12-02T13-00-00-000Z";

/** Message `sequence` of writer `who` (`a`: the one whose line comes first), committed at `revision`. */
const by = (who: string, sequence: number, revision: number, extra: Record<string, unknown> = {}): MessageRecord =>
  msg(sequence, { message_id: `${who}_${sequence}`, parts: [{ sequence: 1, type: "text", text: `${who} wrote ${sequence}` }], ...extra, revision });

async function splitBrain(records: readonly MessageRecord[], metaRevision: number) {
  const storage = new MemoryStorage();
  const text = lines(records);
  const last = Math.max(...records.map((r) => r.sequence));
  await writeSession(storage, { activeText: text, meta: { message_count: last, revision: metaRevision, history_bytes: utf8(text).length } });
  const sessions = registry(storage, undefined, () => Date.parse(TS));
  return { storage, sessions, session: await sessions.open(REF) };
}

/** Every message of the session, read afresh: `[sequence, message_id]`, and whether each id is there once. */
async function everyMessage(sessions: ReturnType<typeof registry>): Promise<{ pairs: [number, string][]; ids: string[] }> {
  const reopened = await sessions.open(REF);
  expect(reopened.diagnostics).toEqual([]);
  const history = await fullHistory(reopened);
  return { pairs: history.map((m) => [m.sequence, m.message_id]), ids: history.map((m) => m.message_id).sort() };
}

describe("repair keeps both writers' messages", () => {
  test("a later writer's block (sequences 5–7 twice): its messages are renumbered 8–10, ids and texts kept, originals quarantined", async () => {
    const first = [1, 2, 3, 4].map((n) => by("a", n, n));
    const a = [5, 6, 7].map((n) => by("a", n, n));
    const b = [5, 6, 7].map((n) => by("b", n, n));
    const { storage, sessions, session } = await splitBrain([...first, ...a, ...b], 7);
    expect(session.diagnostics.filter((d) => d.fatal).map((d) => [d.code, d.line])).toEqual([["invalid_record", 8]]);
    await expect(session.append(user("refused"))).rejects.toBeInstanceOf(CorruptSessionError);

    const plan = await session.repair();
    expect(plan.refused).toEqual([]);
    expect(plan.moves).toEqual([
      {
        from: "messages/active.jsonl",
        to: `quarantine/messages_active.jsonl.${STAMP}.jsonl`,
        lines: [8, 9, 10].map((n, i) => ({
          line: n,
          code: "renumbered",
          reason: `sequence ${5 + i} is held by a message written before it (another writer's); kept as sequence ${8 + i}`,
          bytes: line(b[i]).length - 1,
        })),
        bytes: b.reduce((sum, r) => sum + line(r).length - 1, 0),
        reason: "lines recovery reports or cuts: unreadable, torn, duplicated or already in a segment",
      },
    ]);
    expect(plan.kept).toEqual({ messages: 10, segments: 0, lastSequence: 10 });
    const done = await session.repair({ apply: true });
    expect(done).toEqual({ ...plan, applied: true });
    // Above every revision the files hold (7), and above the sequences: each renumbered line carries it.
    expect(done.meta.revision).toBe(10);
    const active = (await readText(storage, P.active))!.trimEnd().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(active.slice(7)).toEqual([5, 6, 7].map((_n, i) => ({ ...b[i], sequence: 8 + i, revision: 10 })));
    // The last key of a renumbered line is its revision, as every writer's line ends.
    expect((await readText(storage, P.active))!.trimEnd().split("\n").at(-1)).toMatch(/"revision":10\}$/);
    const quarantine = (await readText(storage, `${P.dir}/quarantine/messages_active.jsonl.${STAMP}.jsonl`))!.trimEnd().split("\n").map((l) =>
      JSON.parse(l) as { line: number; code: string; text: string }
    );
    expect(quarantine.map((q) => [q.line, q.code, q.text])).toEqual(b.map((r, i) => [8 + i, "renumbered", line(r).trimEnd()]));

    await expect(session.append(user("after the repair"))).resolves.toEqual({ sequences: [11], revision: 11 });
    const { pairs, ids } = await everyMessage(sessions);
    expect(pairs.map(([s]) => s)).toEqual(Array.from({ length: 11 }, (_, i) => i + 1));
    expect(ids).toHaveLength(new Set(ids).size);
    expect(pairs.slice(4, 10)).toEqual([[5, "a_5"], [6, "a_6"], [7, "a_7"], [8, "b_5"], [9, "b_6"], [10, "b_7"]]);
  });

  test("interleaved writers with a batch each: for every sequence the line written first keeps it, every other is renumbered after, none lost", async () => {
    // File order as two racing writers leave it; b's 5–6 is one batch (its first line marked).
    const records = [
      ...[1, 2, 3, 4].map((n) => by("a", n, n)),
      by("a", 5, 5),
      by("b", 5, 5, { batch_size: 2 }),
      by("b", 6, 5),
      by("a", 6, 6),
      by("b", 7, 6),
      by("a", 7, 7),
      by("a", 8, 8),
    ];
    const { sessions, session } = await splitBrain(records, 6);
    const done = await session.repair({ apply: true });
    expect(done.refused).toEqual([]);
    expect(done.moves[0]!.lines!.map((l) => [l.line, l.code])).toEqual([[6, "renumbered"], [8, "renumbered"], [10, "renumbered"]]);
    const { pairs, ids } = await everyMessage(sessions);
    expect(pairs).toEqual([[1, "a_1"], [2, "a_2"], [3, "a_3"], [4, "a_4"], [5, "a_5"], [6, "b_6"], [7, "b_7"], [8, "a_8"], [9, "b_5"], [10, "a_6"], [
      11,
      "a_7",
    ]]);
    expect(ids).toEqual(records.map((r) => r.message_id).sort());
    // The renumbered lines carry no batch mark: no commit is left looking torn.
    expect(session.active.every((m) => !("batch_size" in m) || m.sequence < 9)).toBe(true);
    await expect(session.append(user("after"))).resolves.toMatchObject({ sequences: [12] });
  });

  test("the same message committed twice (same id and content, another sequence and time) is kept once; its second copy is quarantined", async () => {
    const records = [
      ...[1, 2, 3].map((n) => by("a", n, n)),
      by("a", 4, 4),
      { ...by("a", 4, 4), sequence: 3, created_at: "2026-12-02T13:00:05.000Z" } as MessageRecord,
    ];
    // The retried copy of a_4 landed as sequence 3 of a writer that had read two messages.
    const { sessions, session } = await splitBrain(records, 4);
    const done = await session.repair({ apply: true });
    expect(done.moves[0]!.lines).toEqual([{
      line: 5,
      code: "duplicate",
      reason: "message a_4 committed a second time as sequence 3, identical to the kept sequence 4",
      bytes: line(records[4]).length - 1,
    }]);
    const { pairs } = await everyMessage(sessions);
    expect(pairs).toEqual([[1, "a_1"], [2, "a_2"], [3, "a_3"], [4, "a_4"]]);
  });

  test("a gap is still refused: a sequence no line holds is not invented", async () => {
    const { session } = await splitBrain([by("a", 1, 1), by("a", 2, 2), by("b", 2, 2), by("a", 4, 4)], 4);
    const report = await session.repair();
    expect(report.refused.map((r) => r.reason)).toEqual([expect.stringContaining("message sequence 4 where 3 was expected: sequences 3–3 are missing")]);
  });
});
