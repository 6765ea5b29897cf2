/**
 * The records of re-read swaps (docs/SYNC.md "Re-reads: one local step") that a run settles
 * before anything else, in the states a crash-point run does not reach: a swap cut before its
 * first move (undone), a session created at the ref between the two moves (blocked: both
 * copies kept, reported), and a record that is not one the engine wrote (reported, nothing
 * moved or removed).
 */
import { expect, test } from "vitest";
import { MemoryStorage, Sessions, type StoragePort } from "../../core/mod.ts";
import { directRemote, syncStores } from "../../core/sync/mod.ts";
import { testPrincipal } from "../../testing/sync-conformance.ts";

const DIR = "agents/a1/workspaces/shared/sessions";
const RECORD = "sync/rereads/a1/shared/s1.json";
const hidden = (hex: string) => `${DIR}/.sync-s1-t_${hex.repeat(32)}`;
const utf8 = (text: string) => new TextEncoder().encode(text);

/** A device holding s1 with two messages, and its sync with an empty server. */
async function device(): Promise<{ storage: StoragePort; sessions: Sessions; ids: string[]; sync: () => ReturnType<typeof syncStores> }> {
  const storage = new MemoryStorage();
  const sessions = new Sessions({ storage });
  const s = await sessions.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1" });
  await s.append([{ role: "user", parts: [{ type: "text", text: "one" }] }, { role: "assistant", parts: [{ type: "text", text: "two" }] }]);
  const server = new MemoryStorage();
  const sync = () => syncStores({ local: sessions, remote: directRemote(server, { id: "server", principal: testPrincipal("alice") }) });
  return { storage, sessions, ids: s.active.map((m) => m.message_id), sync };
}

async function record(storage: StoragePort, fields: Record<string, string>): Promise<void> {
  await storage.replace(RECORD, utf8(JSON.stringify({ ref: "a1/shared/s1", from: "live", to: "live", ...fields })));
}

async function idsOf(sessions: Sessions): Promise<string[]> {
  return (await sessions.open("a1/shared/s1")).active.map((m) => m.message_id);
}

test("a swap cut before its first move is undone: the staged copy goes, the session stays as it is", async () => {
  const d = await device();
  await d.storage.replace(`${hidden("a")}/meta.json`, utf8("{}"));
  await record(d.storage, { staged: hidden("a"), aside: hidden("b") });
  const report = await d.sync();
  expect(report.conflicts).toEqual([]);
  expect(await d.storage.list(hidden("a"))).toEqual([]);
  expect(await d.storage.read(RECORD)).toBeUndefined();
  expect(await idsOf(d.sessions)).toEqual(d.ids);
});

test("a session created at the ref between the two moves blocks the swap: both copies and the record are kept and reported", async () => {
  const d = await device();
  await d.storage.replace(`${hidden("a")}/meta.json`, utf8("{}"));
  await d.storage.replace(`${hidden("b")}/messages/active.jsonl`, utf8("{}\n"));
  await record(d.storage, { staged: hidden("a"), aside: hidden("b") });
  for (let run = 0; run < 2; run++) {
    const report = await d.sync();
    expect(report.conflicts.map((c) => [c.ref, c.reason])).toEqual([["a1/shared/s1", "reread-blocked"]]);
    expect(report.conflicts[0]!.message).toContain(hidden("a"));
  }
  expect(await d.storage.list(hidden("a"))).toEqual(["meta.json"]);
  expect(await d.storage.list(hidden("b"))).toEqual(["messages"]);
  expect(await d.storage.read(RECORD)).toBeDefined();
  expect(await idsOf(d.sessions)).toEqual(d.ids);
});

test("a record that names anything but hidden folders of its session's workspace is reported and moves or removes nothing", async () => {
  for (
    const fields of [{ staged: hidden("a"), aside: `${DIR}/s1` }, { staged: `${DIR}/s1`, aside: hidden("b") }, { staged: "sync/remotes", aside: hidden("b") }]
  ) {
    const d = await device();
    await d.storage.replace(`${hidden("b")}/meta.json`, utf8("{}"));
    await record(d.storage, fields);
    const report = await d.sync();
    expect(report.conflicts.map((c) => [c.ref, c.reason])).toEqual([[RECORD, "reread-blocked"]]);
    expect(report.conflicts[0]!.message).toContain("expected a re-read record");
    expect(await idsOf(d.sessions)).toEqual(d.ids);
    expect(await d.storage.list(hidden("b"))).toEqual(["meta.json"]);
    expect(await d.storage.read(RECORD)).toBeDefined();
  }
  const d = await device();
  await d.storage.replace(RECORD, utf8("not json"));
  expect((await d.sync()).conflicts.map((c) => c.reason)).toEqual(["reread-blocked"]);
  expect(await idsOf(d.sessions)).toEqual(d.ids);
});
