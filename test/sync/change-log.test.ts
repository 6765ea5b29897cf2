/**
 * The pull cursor over the server's change log (docs/SYNC.md "Pull by cursor"): its size does
 * not grow with the sessions a user has, a pull after one change reads that one session
 * (counted in storage reads), a change whose log entry a crash lost is logged by the retry,
 * another writer's change is found by the sweep, a version 1 cursor still works, and a cursor
 * whose log was rewritten gets a scan.
 */
import { describe, expect, it } from "vitest";
import { MemoryStorage, type MessageRecord, Sessions, type StoragePort } from "../../core/mod.ts";
import { type Mutation, parseSyncRequest, STORE_OWNER, SYNC_PROTOCOL_VERSION, SyncServer } from "../../core/sync/mod.ts";

const T = "2026-12-04T12:00:00.000Z";
const meta = (sessionId: string) => ({
  schema_version: 1,
  session_id: sessionId,
  agent_id: "a1",
  workspace_id: "w1",
  created_at: T,
  updated_at: T,
  message_count: 0,
  history_bytes: 0,
  revision: 1,
});
const message = (sequence: number, id = `m${sequence}`) =>
  ({
    record_type: "message",
    sequence,
    message_id: id,
    role: "user",
    created_at: T,
    parts: [{ sequence: 1, type: "text", text: `t${sequence}` }],
  }) as MessageRecord;

/** A storage that counts the reads (`read`, `readTail`, `readMany`, `list`) and the session folders they reach. */
function counting(inner: StoragePort) {
  const paths: string[] = [];
  const storage = new Proxy(inner, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        if (prop === "read" || prop === "readTail" || prop === "list") paths.push(String(args[0]));
        if (prop === "readMany") { for (const r of args[0] as { path?: string; lastIn?: string }[]) paths.push(r.path ?? r.lastIn ?? ""); }
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return {
    storage,
    /** Reads since the last call, and the sessions (`agents/<a>/workspaces/<w>/sessions/<s>`) they reached. */
    take() {
      const taken = paths.splice(0);
      const sessions = new Set(taken.map((p) => /^agents\/[^/]+\/workspaces\/[^/]+\/sessions\/[^/]+/.exec(p)?.[0]).filter(Boolean));
      return { reads: taken.length, sessions: sessions.size };
    },
  };
}

/** A server over a counted memory store holding `n` sessions created through sync, its clock stopped (no sweep falls due). */
async function serverWith(n: number) {
  const counted = counting(new MemoryStorage());
  const server = new SyncServer({ storage: counted.storage, clock: () => Date.parse(T) });
  await push(server, "c1", Array.from({ length: n }, (_, i) => createOf(i + 1, `s${i}`)));
  return { server, counted };
}

async function push(server: SyncServer, clientId: string, mutations: readonly Mutation[]) {
  return server.push(STORE_OWNER, parseSyncRequest("push", JSON.parse(JSON.stringify({ v: SYNC_PROTOCOL_VERSION, client_id: clientId, mutations }))));
}

const createOf = (number: number, sessionId: string): Mutation => ({
  number,
  op: "create",
  ref: `a1/w1/${sessionId}`,
  meta: meta(sessionId) as never,
  instruction: null,
  segments: [],
  messages: [message(1, `${sessionId}-m1`)],
});

const appendTo = (number: number, sessionId: string): Mutation => ({
  number,
  op: "append",
  ref: `a1/w1/${sessionId}`,
  base_sequence: 1,
  base_message_id: `${sessionId}-m1`,
  messages: [message(2, `${sessionId}-m2`)],
});

describe("the pull cursor over the change log", () => {
  it("is the same size with 1, 100 and 1,000 sessions", async () => {
    const sizes = [];
    for (const n of [1, 100, 1000]) {
      const { server } = await serverWith(n);
      const first = await server.pull(STORE_OWNER, { v: SYNC_PROTOCOL_VERSION });
      expect(first.sessions).toHaveLength(n);
      await push(server, "c1", [appendTo(n + 1, "s0")]);
      const next = await server.pull(STORE_OWNER, { v: SYNC_PROTOCOL_VERSION, cursor: first.cursor });
      expect(next.sessions.map((h) => h.ref)).toEqual(["a1/w1/s0"]);
      sizes.push(first.cursor.length, next.cursor.length);
    }
    expect(new Set(sizes).size).toBe(1);
  });

  it("reads one session, and as many storage reads with 1,000 sessions as with 10, for a pull after one change", async () => {
    const measured = [];
    for (const n of [10, 1000]) {
      const { server, counted } = await serverWith(n);
      const { cursor } = await server.pull(STORE_OWNER, { v: SYNC_PROTOCOL_VERSION });
      expect(counted.take().sessions).toBe(n);
      await push(server, "c1", [appendTo(n + 1, "s7")]);
      counted.take();
      const pulled = await server.pull(STORE_OWNER, { v: SYNC_PROTOCOL_VERSION, cursor });
      expect(pulled.sessions.map((h) => [h.ref, h.last_sequence])).toEqual([["a1/w1/s7", 2]]);
      measured.push(counted.take());
    }
    expect(measured[0]!.sessions).toBe(1);
    expect(measured[1]).toEqual(measured[0]);
  });

  it("a crash between a mutation's data and its log entry: the retry finds its effect and logs it", async () => {
    const memory = new MemoryStorage();
    let failLog = false;
    const storage = new Proxy(memory, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target) as unknown;
        if (prop !== "createExclusive") return typeof value === "function" ? value.bind(target) : value;
        return (path: string, bytes: Uint8Array) => {
          if (failLog && path.startsWith("sync/changes/")) return Promise.reject(new Error("the server died"));
          return memory.createExclusive(path, bytes);
        };
      },
    });
    const server = new SyncServer({ storage, clock: () => Date.parse(T) });
    await push(server, "c1", [createOf(1, "s1")]);
    const { cursor } = await server.pull(STORE_OWNER, { v: SYNC_PROTOCOL_VERSION });
    failLog = true;
    const append = appendTo(2, "s1");
    await expect(push(server, "c1", [append])).rejects.toThrow("the server died");
    expect((await new Sessions({ storage: memory }).open("a1/w1/s1")).active).toHaveLength(2);
    // Not logged yet, and no sweep is due: the pull cannot know.
    expect((await server.pull(STORE_OWNER, { v: SYNC_PROTOCOL_VERSION, cursor })).sessions).toEqual([]);
    failLog = false;
    const retry = await push(server, "c1", [append]);
    expect(retry.results.map((r) => r.status)).toEqual(["duplicate"]);
    expect((await server.pull(STORE_OWNER, { v: SYNC_PROTOCOL_VERSION, cursor })).sessions.map((h) => [h.ref, h.last_sequence])).toEqual([["a1/w1/s1", 2]]);
  });

  it("finds another writer's change at the next sweep", async () => {
    const storage = new MemoryStorage();
    let now = Date.parse(T);
    const server = new SyncServer({ storage, clock: () => now, sweepIntervalMs: 60_000 });
    await push(server, "c1", [createOf(1, "s1")]);
    const { cursor } = await server.pull(STORE_OWNER, { v: SYNC_PROTOCOL_VERSION });
    await (await new Sessions({ storage }).open("a1/w1/s1")).append({ role: "user", parts: [{ type: "text", text: "written on the server" }] });
    now += 59_000;
    expect((await server.pull(STORE_OWNER, { v: SYNC_PROTOCOL_VERSION, cursor })).sessions).toEqual([]);
    now += 1_000;
    const swept = await server.pull(STORE_OWNER, { v: SYNC_PROTOCOL_VERSION, cursor });
    expect(swept.sessions.map((h) => [h.ref, h.last_sequence])).toEqual([["a1/w1/s1", 2]]);
    expect((await server.pull(STORE_OWNER, { v: SYNC_PROTOCOL_VERSION, cursor: swept.cursor })).sessions).toEqual([]);
  });

  it("still answers a version 1 cursor (the sessions and tombstones seen), with a version 2 cursor", async () => {
    const { server } = await serverWith(3);
    await push(server, "c1", [appendTo(4, "s1")]);
    const heads = (await server.pull(STORE_OWNER, { v: SYNC_PROTOCOL_VERSION })).sessions;
    const v1 = btoa(JSON.stringify({ s: Object.fromEntries(heads.map((h) => [h.ref, `live:${h.ref.endsWith("s1") ? h.revision - 1 : h.revision}`])), t: [] }));
    const pulled = await server.pull(STORE_OWNER, { v: SYNC_PROTOCOL_VERSION, cursor: v1 });
    expect(pulled.sessions.map((h) => h.ref)).toEqual(["a1/w1/s1"]);
    expect(JSON.parse(atob(pulled.cursor)).v).toBe(2);
    expect((await server.pull(STORE_OWNER, { v: SYNC_PROTOCOL_VERSION, cursor: pulled.cursor })).sessions).toEqual([]);
  });

  it("answers a cursor whose log entry is gone (a store restored from a backup) with every session", async () => {
    const { server, counted } = await serverWith(3);
    const { cursor } = await server.pull(STORE_OWNER, { v: SYNC_PROTOCOL_VERSION });
    await counted.storage.remove("sync/changes");
    const pulled = await server.pull(STORE_OWNER, { v: SYNC_PROTOCOL_VERSION, cursor });
    expect(pulled.sessions).toHaveLength(3);
  });

  it("answers a cursor before a gap in the log (an entry a crash lost) with every session, not with nothing", async () => {
    const { server, counted } = await serverWith(3);
    const { cursor } = await server.pull(STORE_OWNER, { v: SYNC_PROTOCOL_VERSION });
    await push(server, "c1", [appendTo(4, "s0")]);
    await push(server, "c1", [appendTo(5, "s1")]);
    const page = "sync/changes/0000000000";
    const names = await counted.storage.list(page);
    await counted.storage.remove(`${page}/${names.at(-2)}`);
    expect((await server.pull(STORE_OWNER, { v: SYNC_PROTOCOL_VERSION, cursor })).sessions).toHaveLength(3);
  });

  it("refuses a cursor it did not give (400 malformed)", async () => {
    const { server } = await serverWith(1);
    await expect(server.pull(STORE_OWNER, { v: SYNC_PROTOCOL_VERSION, cursor: btoa('{"v":2,"n":"12"}') })).rejects.toMatchObject({
      reason: "malformed",
      status: 400,
    });
  });
});
