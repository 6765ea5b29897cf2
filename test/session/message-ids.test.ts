/**
 * A host's `message_id` names one message of a session (docs/FORMAT.md "A message"): an append that gives an id twice
 * in its batch, or one a message in Active already holds, is refused naming the id, and nothing is written. Checked
 * against an index of Active's ids kept beside the handle's state, so an append costs the same however long Active is.
 */
import { describe, expect, test } from "vitest";
import { InvalidInputError, MemoryStorage } from "../../core/mod.ts";
import { REF, registry, rejection, snapshot } from "../support/session.ts";
import { msgs, summarizer, user, writeSession } from "./support.ts";

describe("append refuses a message_id the session already uses", () => {
  test("twice in one batch: named with both indexes, nothing written", async () => {
    const storage = new MemoryStorage();
    const session = await registry(storage).create(REF);
    const before = await snapshot(storage);
    const error = await rejection(() => session.append([user("a", "m_x"), user("b", "m_y"), user("c", "m_x")]), InvalidInputError, "invalid-input");
    expect(error.message).toBe('messages[2].message_id: "m_x" is given twice in this append (messages[0] has it); nothing was written');
    expect(error.details).toMatchObject({ index: 2, message_id: "m_x" });
    expect(await snapshot(storage)).toEqual(before);
    expect(session.revision).toBe(0);
  });

  test("already in Active (read by the open, or committed by this handle): named with its sequence, nothing written", async () => {
    const storage = new MemoryStorage();
    await writeSession(storage, { active: msgs(1, 3) });
    const session = await registry(storage).open(REF);
    const before = await snapshot(storage);
    const error = await rejection(() => session.append([user("new"), user("again", "m_2")]), InvalidInputError, "invalid-input");
    expect(error.message).toBe('messages[1].message_id: "m_2" is already in the session (sequence 2); nothing was written');
    expect(error.details).toMatchObject({ index: 1, message_id: "m_2", sequence: 2 });
    expect(await snapshot(storage)).toEqual(before);
    // What this handle commits joins the index: the next append is checked against it too.
    await session.append(user("fresh", "m_fresh"));
    await expect(session.append(user("later", "m_fresh"))).rejects.toThrow('"m_fresh" is already in the session (sequence 4)');
    expect(session.revision).toBe(4);
  });

  test("after a compaction the messages that stay in Active are still checked", async () => {
    const storage = new MemoryStorage();
    await writeSession(storage, { active: msgs(1, 4) });
    const session = await registry(storage).open(REF);
    await session.append(user("q", "m_q"));
    await session.compact({ summarizer: summarizer() });
    const kept = session.active.map((m) => m.message_id);
    expect(kept).toContain("m_q");
    await expect(session.append(user("q again", "m_q"))).rejects.toThrow('"m_q" is already in the session');
    // An id given to no message is fine, and so is a new one.
    expect((await session.append([user("x", "m_new"), user("y")])).sequences).toEqual([6, 7]);
  });
});
