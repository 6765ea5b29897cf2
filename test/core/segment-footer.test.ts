/**
 * `segmentFooterInTail` (what `show` judges 2000 footers with, from the tails one `readMany`
 * read) against `readSegmentFooter`, which reads the tail itself: for every kind of last
 * line it either gives exactly what `readSegmentFooter` gives, or (a last line longer than
 * the tail) nothing, and the caller reads it.
 */
import { describe, expect, it } from "vitest";
import { MemoryStorage, sessionPaths } from "../../core/mod.ts";
import { concatBytes, LAST_RECORD_WINDOW, readMany, readSegmentFooter, segmentFooterInTail } from "../../core/internal.ts";
import { jsonLine, message, summary, utf8 } from "./support.ts";

const paths = sessionPaths({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
const range = { start: 1, end: 3 };
const body = jsonLine(message(1)) + jsonLine(message(2)) + jsonLine(message(3));

/** The segment's footer as both read it, from a store holding `bytes` as the segment. */
async function bothOn(bytes: Uint8Array) {
  const storage = new MemoryStorage();
  await storage.replace(paths.segment(range), bytes);
  const [tail] = await readMany(storage, [{ path: paths.segment(range), tailBytes: LAST_RECORD_WINDOW }]);
  if (!tail) throw new Error("the segment was not read");
  return { fromTail: segmentFooterInTail(tail, paths, range), read: await readSegmentFooter(storage, paths, range) };
}

function nested(depth: number): unknown {
  let value: unknown = 0;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

const cases: [string, Uint8Array][] = [
  ["a footer", utf8(body + jsonLine(summary(3)))],
  ["a footer without its newline", utf8(body + JSON.stringify(summary(3)))],
  ["a footer through another sequence", utf8(body + jsonLine(summary(2)))],
  ["a message as the last line", utf8(body)],
  ["a torn last line", utf8(body + JSON.stringify(summary(3)).slice(0, 40))],
  ["an invalid footer", utf8(body + jsonLine({ ...summary(3), text: 7 }))],
  ["an unknown record type", utf8(body + jsonLine({ record_type: "note", text: "x" }))],
  ["an empty last line", utf8(body + jsonLine(summary(3)) + "\n")],
  ["a footer nested deeper than the limit", utf8(body + jsonLine({ ...summary(3), extra: nested(200) }))],
  ["a last line that is not UTF-8", concatBytes([utf8(body), new Uint8Array([0x7b, 0xff, 0x7d, 0x0a])])],
  ["a file of one footer", utf8(jsonLine(summary(3)))],
  ["an empty file", new Uint8Array(0)],
];

describe("segmentFooterInTail", () => {
  it.each(cases)("judges %s as readSegmentFooter does", async (_, bytes) => {
    const { fromTail, read } = await bothOn(bytes);
    expect(fromTail).toBeDefined();
    expect(fromTail).toEqual(read);
  });

  it("leaves a last line longer than the tail to readSegmentFooter", async () => {
    const long = summary(3, { text: "y".repeat(3 * LAST_RECORD_WINDOW) });
    const { fromTail, read } = await bothOn(utf8(body + jsonLine(long)));
    expect(fromTail).toBeUndefined();
    expect(read?.footer).toEqual(long);
    expect(read?.diagnostics).toEqual([]);
  });
});
