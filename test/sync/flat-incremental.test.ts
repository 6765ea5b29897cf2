/**
 * An incremental sync costs the same whatever the history holds (docs/SYNC.md "Segments by
 * position"): one new message on a session of 40 segments lists no `segments/` folder on
 * either side, and carries as many segment names in its requests and answers, and keeps as
 * large a sync state, as on a session of 2 segments. Counted in storage calls and in the
 * names on the wire, never timed. A sync state written before positions (every agreed name)
 * is read as its position.
 */
import { describe, expect, it } from "vitest";
import { ExtractiveSummarizer, MemoryStorage, Sessions, type StoragePort } from "../../core/mod.ts";
import { directRemote, type SyncRemote, syncStores } from "../../core/sync/mod.ts";
import { syncStatePath } from "../../core/sync/sync-state.ts";
import { RecordingStorage, segmentName } from "../support/session.ts";

const REF = "a1/w1/s1";
const SEGMENT_NAME = /\d{12}-\d{12}\.jsonl/g;
const text = (t: string) => ({ role: "user" as const, parts: [{ type: "text" as const, text: t }] });

/** A store whose `list` calls of a `segments/` folder are counted. */
function listing(inner: StoragePort) {
  const storage = new RecordingStorage(inner);
  return { storage, segmentLists: () => storage.calls.filter((c) => c.op === "list" && c.path.endsWith("/segments")).length };
}

/** A remote that keeps every request and answer as the JSON that travels. */
function recorded(remote: SyncRemote) {
  const bodies: string[] = [];
  const keep = <A, R>(call: (a: A) => Promise<R>) => async (request: A) => {
    bodies.push(JSON.stringify(request));
    const answer = await call(request);
    bodies.push(JSON.stringify(answer));
    return answer;
  };
  return {
    bodies,
    remote: {
      id: remote.id,
      push: keep(remote.push),
      pull: keep(remote.pull),
      read: keep(remote.read),
      segment: keep(remote.segment),
    } satisfies SyncRemote,
  };
}

/** A device and a server that both hold one session of `segments` segments (3 messages each) and 2 more in Active, in agreement. */
async function agreedPair(segments: number) {
  const device = listing(new MemoryStorage());
  const server = listing(new MemoryStorage());
  const wire = recorded(directRemote(server.storage, { id: "server" }));
  const local = new Sessions({ storage: device.storage });
  const session = await local.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1", title: "long" });
  for (let i = 0; i < segments; i++) {
    await session.append([text(`q${i}.1`), text(`q${i}.2`), text(`q${i}.3`)]);
    await session.compact({ summarizer: new ExtractiveSummarizer() });
  }
  await session.append([text("active 1"), text("active 2")]);
  await session.close();
  expect((await (await local.open(REF)).segments()).length).toBe(segments);
  await syncStores({ local, remote: wire.remote });
  expect(await syncStores({ local, remote: wire.remote })).toMatchObject({ pushed: 0, pulled: 0, conflicts: [], reread: [] });
  return { local, device, server, wire };
}

/** A storage call with its segment and client ids left out: which segment and which client, not what was done. */
const pattern = (call: string) => call.replace(/\d{12}-\d{12}/, "<segment>").replace(/client_[0-9a-f]+/, "<client>");

/** One new message, synced: the `segments/` listings on each side, the segment names on the wire, the sync state's size. */
async function oneMessage(pair: Awaited<ReturnType<typeof agreedPair>>) {
  const session = await pair.local.open(REF);
  await session.append([text("one more")]);
  await session.close();
  pair.device.storage.reset();
  pair.server.storage.reset();
  pair.wire.bodies.length = 0;
  const report = await syncStores({ local: pair.local, remote: pair.wire.remote });
  expect(report).toMatchObject({ pushed: 1, pulled: 0, conflicts: [], reread: [] });
  const state = await pair.device.storage.read(syncStatePath("server"));
  return {
    deviceCalls: pair.device.storage.described().map(pattern),
    serverCalls: pair.server.storage.described().map(pattern),
    deviceSegmentLists: pair.device.segmentLists(),
    serverSegmentLists: pair.server.segmentLists(),
    namesOnTheWire: pair.wire.bodies.join("\n").match(SEGMENT_NAME)?.length ?? 0,
    bodyBytes: pair.wire.bodies.join("").length,
    stateBytes: state!.length,
  };
}

describe("an incremental sync of one message on a long history", () => {
  it("lists no segments/ on either side and carries as many segment names and bytes with 40 segments as with 2", async () => {
    const small = await oneMessage(await agreedPair(2));
    const large = await oneMessage(await agreedPair(40));
    expect([large.deviceSegmentLists, large.serverSegmentLists, small.deviceSegmentLists, small.serverSegmentLists]).toEqual([0, 0, 0, 0]);
    // The same storage calls, one by one: opening a session reads its newest segment's footer, whatever came before it.
    expect(large.deviceCalls).toEqual(small.deviceCalls);
    expect(large.serverCalls).toEqual(small.serverCalls);
    // The newest segment's name in each head, nothing more: 40 names would be 38 more per head.
    expect(large.namesOnTheWire).toBe(small.namesOnTheWire);
    expect(large.namesOnTheWire).toBeLessThanOrEqual(4);
    // Sequences and revisions have more digits on the longer session; every name would add 32 bytes each.
    expect(Math.abs(large.bodyBytes - small.bodyBytes)).toBeLessThan(64);
    expect(Math.abs(large.stateBytes - small.stateBytes)).toBeLessThan(16);
  });

  it("a compaction since the last sync lists segments/ once on each side, and sends only the new segment", async () => {
    const pair = await agreedPair(40);
    const session = await pair.local.open(REF);
    await session.append([text("x"), text("y")]);
    await session.compact({ summarizer: new ExtractiveSummarizer() });
    await session.close();
    pair.device.storage.reset();
    pair.server.storage.reset();
    pair.wire.bodies.length = 0;
    const report = await syncStores({ local: pair.local, remote: pair.wire.remote });
    expect(report).toMatchObject({ pushed: 2, conflicts: [], reread: [] });
    expect([pair.device.segmentLists(), pair.server.segmentLists()]).toEqual([1, 1]);
    // The new segment by name in its mutation, result and the heads; never the 40 before it.
    const names = new Set(pair.wire.bodies.join("\n").match(SEGMENT_NAME));
    expect(names.size).toBeLessThanOrEqual(2);
    const server = await new Sessions({ storage: pair.server.storage }).open(REF);
    expect((await server.segments()).length).toBe(41);
  });

  it("reads a sync state written before positions (every agreed name) as its position", async () => {
    const pair = await agreedPair(5);
    const path = syncStatePath("server");
    const state = JSON.parse(new TextDecoder().decode(await pair.device.storage.read(path))) as {
      sessions: Record<string, { segments: unknown }>;
    };
    expect(state.sessions[REF]!.segments).toEqual({ count: 5, last: expect.stringMatching(SEGMENT_NAME) });
    const names = (await (await pair.local.open(REF)).segments()).map((r) => segmentName(r.start, r.end));
    state.sessions[REF]!.segments = names;
    await pair.device.storage.replace(path, new TextEncoder().encode(JSON.stringify(state)));
    const counts = await oneMessage(pair);
    expect(counts.deviceSegmentLists).toBe(0);
    const after = JSON.parse(new TextDecoder().decode(await pair.device.storage.read(path))) as typeof state;
    expect(after.sessions[REF]!.segments).toEqual({ count: 5, last: names.at(-1) });
  });
});
