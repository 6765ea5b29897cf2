/**
 * The streaming draft (assistant_message.json) left by an interrupted run: retained on
 * reopen, finished as `stopped` together with the run's pending messages in one batch.
 */
import { describe, expect, test } from "vitest";
import { MemoryStorage, type MessageRecord, SessionBusyError } from "../../core/mod.ts";
import { decode, expectContiguous, fullHistory, lines, P, readText, RecordingStorage, REF, registry, rejection, snapshot } from "../support/session.ts";
import { DRAFT_PARTS, draftText, expectMetaConsistent, msgs, summarizer, user, writeSession } from "./support.ts";

async function withDraft(spec: { pendingIds?: string[]; parts?: unknown[] } = {}) {
  const inner = new MemoryStorage();
  await writeSession(inner, { active: msgs(1, 2), draft: draftText(4, spec) });
  const storage = new RecordingStorage(inner);
  return { inner, storage };
}

describe("a hand-written draft with a pending user message", () => {
  test("is retained by reopen, as written", async () => {
    const { inner } = await withDraft();
    const session = await registry(inner).open(REF);
    expect(session.draft?.record).toMatchObject({ message_id: "m_draft", status: "streaming", sequence: 4, parts: DRAFT_PARTS });
    expect(session.draft?.pending).toEqual([
      expect.objectContaining({ message_id: "m_pending", role: "user", parts: [{ sequence: 1, type: "text", text: "pending question 1" }] }),
    ]);
    const again = await registry(inner).open(REF);
    expect(again.draft?.record.parts.map((p) => p.sequence)).toEqual([1, 2, 3, 4]);
    expect(await readText(inner, P.draft)).toBe(draftText(4));
  });

  test("finishDraft() commits the pending message and the draft as stopped in one batch, then removes the draft", async () => {
    const { inner, storage } = await withDraft();
    const session = await registry(storage).open(REF);
    storage.reset();
    const result = await session.finishDraft();
    expect(result).toEqual({ sequences: [3, 4], revision: 3 });
    expect(storage.mutations(P.dir)).toEqual([
      "createExclusive writer.lock",
      "append messages/active.jsonl",
      "replace meta.json",
      "remove messages/assistant_message.json",
      "remove writer.lock",
    ]);
    const appended = decode(storage.calls.find((c) => c.op === "append")!.bytes)!;
    const rows = appended.trimEnd().split("\n").map((r) => JSON.parse(r) as Record<string, unknown>);
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatchObject({ message_id: "m_pending", sequence: 3, role: "user", batch_size: 2 });
    expect(rows[1]).toMatchObject({ message_id: "m_draft", sequence: 4, role: "assistant", status: "stopped", parts: DRAFT_PARTS });
    expect(rows[1]).not.toHaveProperty("pending_messages");
    expect(rows[1]).not.toHaveProperty("batch_size");
    expect(await readText(inner, P.active)).toBe(lines(msgs(1, 2)) + appended);
    expect(await inner.read(P.draft)).toBeUndefined();
    expect(session.draft).toBeUndefined();
    const history = await fullHistory(session);
    expectContiguous(history);
    expect(history.map((m) => m.message_id)).toEqual(["m_1", "m_2", "m_pending", "m_draft"]);
    await expectMetaConsistent(inner, session);

    const reopened = await registry(inner).open(REF);
    expect(reopened.diagnostics).toEqual([]);
    expect(reopened.draft).toBeUndefined();
    expect(await reopened.finishDraft()).toBeUndefined();
  });

  test("append() with a live draft first finishes it, in the same batch", async () => {
    const { inner, storage } = await withDraft();
    const session = await registry(storage).open(REF);
    storage.reset();
    const result = await session.append(user("new question", "m_new"));
    expect(result).toEqual({ sequences: [5], revision: 3 });
    expect(storage.calls.filter((c) => c.op === "append")).toHaveLength(1);
    expect(storage.calls.filter((c) => c.op === "replace")).toHaveLength(1);
    const appended = decode(storage.calls.find((c) => c.op === "append")!.bytes)!;
    const rows = appended.trimEnd().split("\n").map((r) => JSON.parse(r) as MessageRecord & { batch_size?: number });
    expect(rows.map((r) => [r.message_id, r.sequence, r.status, r.batch_size])).toEqual([
      ["m_pending", 3, undefined, 3],
      ["m_draft", 4, "stopped", undefined],
      ["m_new", 5, undefined, undefined],
    ]);
    expect(await inner.read(P.draft)).toBeUndefined();
    expect((await fullHistory(session)).map((m) => m.message_id)).toEqual(["m_1", "m_2", "m_pending", "m_draft", "m_new"]);
    await expectMetaConsistent(inner, session);
  });

  test("compact() is refused while a draft exists: SessionBusyError, nothing changed, no summary call", async () => {
    const { inner } = await withDraft();
    const session = await registry(inner).open(REF);
    const before = await snapshot(inner);
    const summarize = summarizer();
    const error = await rejection(session.compact({ summarizer: summarize }), SessionBusyError, "busy");
    expect(error.details).toMatchObject({ draft: "m_draft" });
    expect(summarize.calls).toHaveLength(0);
    expect(await snapshot(inner)).toEqual(before);
    expect(session.draft?.record.message_id).toBe("m_draft");
    await session.finishDraft();
    expect((await session.compact({ summarizer: summarize })).segment).toEqual({ start: 1, end: 2 });
  });
});

describe("a draft without output", () => {
  test("with pending messages: only the pending messages are committed", async () => {
    const { inner } = await withDraft({ parts: [] });
    const session = await registry(inner).open(REF);
    expect(await session.finishDraft()).toEqual({ sequences: [3], revision: 3 });
    expect((await fullHistory(session)).map((m) => m.message_id)).toEqual(["m_1", "m_2", "m_pending"]);
    expect(await inner.read(P.draft)).toBeUndefined();
  });

  test("and without pending messages: finishDraft() removes it and commits nothing", async () => {
    const { inner } = await withDraft({ parts: [], pendingIds: [] });
    const session = await registry(inner).open(REF);
    expect(session.draft).toBeDefined();
    const result = await session.finishDraft();
    expect(result).toEqual({ sequences: [], revision: 2 });
    expect(await inner.read(P.draft)).toBeUndefined();
    expect(session.draft).toBeUndefined();
    expect(session.active).toHaveLength(2);
    await expectMetaConsistent(inner, session);
  });

  test("and without pending messages: append() removes it too, so compaction is possible again", async () => {
    const { inner } = await withDraft({ parts: [], pendingIds: [] });
    const session = await registry(inner).open(REF);
    await session.append(user("x"));
    expect(await inner.read(P.draft)).toBeUndefined();
    expect(session.draft).toBeUndefined();
    expect((await session.compact({ summarizer: summarizer() })).segment).toEqual({ start: 1, end: 2 });
  });
});
