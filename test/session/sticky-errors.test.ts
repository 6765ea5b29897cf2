import { describe, expect, it } from "vitest";
import { CorruptSessionError, MemoryStorage, RevisionConflictError } from "../../core/mod.ts";
import { P, registry, rejection, segmentName, snapshot, utf8 } from "../support/session.ts";
import { msgs, REF_STRING, segmentText, user, writeSession } from "./support.ts";

describe("errors that stay until the host acts", () => {
  it("a revision conflict refuses every write until reload(), then writes land after the other writer's", async () => {
    const storage = new MemoryStorage();
    await writeSession(storage, { active: msgs(1, 2) });
    const first = await registry(storage).open(REF_STRING);
    const second = await registry(storage).open(REF_STRING);
    await second.append(user("from the second handle"));
    await rejection(first.append(user("stale 1")), RevisionConflictError, "revision-conflict");
    const before = await snapshot(storage);
    await rejection(first.append(user("stale 2")), RevisionConflictError, "revision-conflict");
    expect(await snapshot(storage)).toEqual(before);
    await first.reload();
    const { sequences } = await first.append(user("after reload"));
    expect(sequences).toEqual([4]);
  });

  it("corruption found while paging into an older segment blocks every write (recovery rule 2)", async () => {
    const storage = new MemoryStorage();
    await writeSession(storage, { segments: [[1, 2], [3, 4]], active: msgs(5, 6) });
    const broken = segmentText(1, 2).replace(/\n/, "\n{not json\n");
    await storage.replace(`${P.segmentsDir}/${segmentName(1, 2)}`, utf8(broken));
    const session = await registry(storage).open(REF_STRING);
    expect(session.diagnostics).toEqual([]);
    const error = await rejection(session.messages({ beforeSequence: 3 }), CorruptSessionError, "corrupt");
    expect(error.details).toMatchObject({ file: `messages/segments/${segmentName(1, 2)}`, line: 2 });
    expect(session.diagnostics.map((d) => [d.code, d.line, d.fatal])).toEqual([["invalid_json", 2, true]]);
    const before = await snapshot(storage);
    await rejection(session.append(user("blocked")), CorruptSessionError, "corrupt");
    expect(await snapshot(storage)).toEqual(before);
  });
});
