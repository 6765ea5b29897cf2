/**
 * "Never slow down as they grow": open + append of a session with 1,000 segments touches
 * meta.json, the newest segment's tail, active.jsonl, the draft and instruction.md only.
 */
import { expect, test } from "vitest";
import { MemoryStorage } from "../../core/mod.ts";
import { lines, metaFields, metaText, P, RecordingStorage, REF, registry, segmentName, utf8 } from "../support/session.ts";
import { historyBytesOnDisk, msgs, segmentText, user } from "./support.ts";

const SEGMENTS = 1000;
const PER_SEGMENT = 3;

async function bigSession(): Promise<MemoryStorage> {
  const storage = new MemoryStorage();
  let bytes = 0;
  for (let i = 0; i < SEGMENTS; i++) {
    const start = i * PER_SEGMENT + 1;
    const end = start + PER_SEGMENT - 1;
    const text = segmentText(start, end);
    bytes += utf8(text).length;
    await storage.replace(`${P.segmentsDir}/${segmentName(start, end)}`, utf8(text));
  }
  const last = SEGMENTS * PER_SEGMENT;
  const active = lines(msgs(last + 1, last + 4));
  await storage.replace(P.active, utf8(active));
  bytes += utf8(active).length;
  await storage.replace(P.meta, utf8(metaText(metaFields({ message_count: last + 4, history_bytes: bytes, revision: last + 4 + SEGMENTS }))));
  return storage;
}

test("open + append of a 1,000-segment session reads only meta, the newest segment's tail, Active, the draft and instruction.md", async () => {
  const inner = await bigSession();
  const storage = new RecordingStorage(inner);
  const session = await registry(storage).open(REF);
  expect(session.diagnostics).toEqual([]);
  expect(await session.segments()).toHaveLength(SEGMENTS);
  const newest = `${P.segmentsDir}/${segmentName(2998, 3000)}`;
  expect(session.summary?.through_sequence).toBe(3000);
  await session.append(user("one more"));
  expect(session.active.at(-1)?.sequence).toBe(3005);

  const rel = (path: string) => (path.startsWith(`${P.dir}/`) ? path.slice(P.dir.length + 1) : path === P.dir ? "." : path);
  const reads = new Set(storage.calls.filter((c) => c.op === "read").map((c) => rel(c.path)));
  expect([...reads].sort()).toEqual(["instruction.md", "messages/active.jsonl", "messages/assistant_message.json", "meta.json"]);
  // meta.json is read once (its read is the session's existence), the footer a bounded tail
  // read; writer.lock is read back once, a tail read too, to release only this holder's lock.
  const tails = storage.calls.filter((c) => c.op === "readTail");
  expect(tails.map((c) => c.path)).toEqual([newest, P.lock]);
  expect(tails.every((c) => (c.maxBytes ?? Infinity) <= 4096)).toBe(true);
  const listings = new Set(storage.calls.filter((c) => c.op === "list").map((c) => rel(c.path)));
  expect([...listings].sort()).toEqual(["messages/segments"]);
  const segmentPaths = new Set(storage.calls.filter((c) => c.path.startsWith(`${P.segmentsDir}/`)).map((c) => c.path));
  expect([...segmentPaths]).toEqual([newest]);
  expect(storage.mutations(P.dir)).toEqual([
    "createExclusive writer.lock",
    "append messages/active.jsonl",
    "replace meta.json",
    "remove writer.lock",
  ]);
  expect(session.meta.history_bytes).toBe(await historyBytesOnDisk(inner, P));
});

test("paging back one segment reads exactly that segment", async () => {
  const inner = await bigSession();
  const storage = new RecordingStorage(inner);
  const session = await registry(storage).open(REF);
  storage.reset();
  const page = await session.messages({ beforeSequence: 1501 });
  expect(page.map((m) => m.sequence)).toEqual([1498, 1499, 1500]);
  expect(storage.described(P.dir)).toEqual([`read messages/segments/${segmentName(1498, 1500)}`]);
});
