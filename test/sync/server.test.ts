/**
 * The sync server's checks on what a client sends, beyond the conformance suite: a create
 * whose files do not hold what they claim is refused, naming the file and line, and changes
 * nothing; the client ledger lives in the store and binds the client to its user.
 */
import { describe, expect, it } from "vitest";
import { MemoryStorage, type MessageRecord, Sessions } from "../../core/mod.ts";
import { type CreateMutation, parseSyncRequest, STORE_OWNER, SYNC_PROTOCOL_VERSION, SyncRefusedError, SyncServer } from "../../core/sync/mod.ts";

const T = "2026-12-04T12:00:00.000Z";
const meta = {
  schema_version: 1,
  session_id: "s1",
  agent_id: "a1",
  workspace_id: "w1",
  created_at: T,
  updated_at: T,
  message_count: 0,
  history_bytes: 0,
  revision: 3,
};
const message = (sequence: number, extra: Partial<MessageRecord> = {}) =>
  ({
    record_type: "message",
    sequence,
    message_id: `m${sequence}`,
    role: "user",
    created_at: T,
    parts: [{ sequence: 1, type: "text", text: `t${sequence}` }],
    ...extra,
  }) as MessageRecord;
const footer = (end: number) =>
  JSON.stringify({ record_type: "summary", session_id: "s1", summary_id: "sum1", through_sequence: end, text: "so far", created_at: T });

function create(overrides: Partial<CreateMutation>): CreateMutation {
  return { number: 1, op: "create", ref: "a1/w1/s1", meta: meta as never, instruction: null, segments: [], messages: [message(1)], ...overrides };
}

async function push(server: SyncServer, mutation: CreateMutation) {
  return server.push(STORE_OWNER, parseSyncRequest("push", JSON.parse(JSON.stringify({ v: SYNC_PROTOCOL_VERSION, client_id: "c1", mutations: [mutation] }))));
}

describe("SyncServer", () => {
  it("installs a create with segments and Active, the session's counts from the files", async () => {
    const storage = new MemoryStorage();
    const server = new SyncServer({ storage });
    const segment = { name: "000000000001-000000000002.jsonl", text: `${JSON.stringify(message(1))}\n${JSON.stringify(message(2))}\n${footer(2)}\n` };
    const outcome = await push(server, create({ segments: [segment], messages: [message(3)] }));
    expect(outcome.results[0]!.status).toBe("applied");
    const s = await new Sessions({ storage }).open("a1/w1/s1");
    expect([s.newestSegment, s.active.map((m) => m.sequence), s.meta.message_count, s.revision]).toEqual([{ start: 1, end: 2 }, [3], 3, 3]);
    expect(s.diagnostics).toEqual([]);
  });

  it.each([
    ["a streaming draft", create({ messages: [message(1, { role: "assistant", status: "streaming" })] }), /mutations\.0\.messages\.0/],
    ["an unknown meta.json version", create({ meta: { ...meta, schema_version: 2 } as never }), /mutations\.0\.meta\.schema_version/],
    [
      "a segment without its footer",
      create({ segments: [{ name: "000000000001-000000000001.jsonl", text: `${JSON.stringify(message(1))}\n` }], messages: [] }),
      /000000000001-000000000001\.jsonl: expected a summary footer through 1/,
    ],
    [
      "a segment whose messages are not its name's",
      create({ segments: [{ name: "000000000001-000000000002.jsonl", text: `${JSON.stringify(message(1))}\n${footer(2)}\n` }], messages: [] }),
      /holds 1 messages; its name says 2/,
    ],
    ["Active that does not follow the segments", create({ messages: [message(2)] }), /message 0 has sequence 2; expected 1/],
  ])("refuses a create with %s (400 malformed), naming where; nothing is written", async (_name, mutation, why) => {
    const storage = new MemoryStorage();
    const server = new SyncServer({ storage });
    const refusal = await push(server, mutation).catch((e: unknown) => e);
    expect(refusal).toBeInstanceOf(SyncRefusedError);
    expect((refusal as SyncRefusedError).status).toBe(400);
    expect((refusal as SyncRefusedError).message).toMatch(why);
    expect(await storage.list("agents")).toEqual([]);
  });

  it("keeps the client's ledger in the store: a second server on the same store knows the client and its user", async () => {
    const storage = new MemoryStorage();
    await new SyncServer({ storage }).push({ user: "alice", may: () => true }, { v: SYNC_PROTOCOL_VERSION, client_id: "c1", mutations: [create({})] });
    const second = new SyncServer({ storage });
    const again = await second.push({ user: "alice", may: () => true }, { v: SYNC_PROTOCOL_VERSION, client_id: "c1", mutations: [create({})] });
    expect(again.results[0]).toMatchObject({ status: "duplicate", result: { status: "applied" } });
    await expect(second.push({ user: "bob", may: () => true }, { v: SYNC_PROTOCOL_VERSION, client_id: "c1", mutations: [] })).rejects.toMatchObject({
      reason: "client-id-taken",
      status: 403,
    });
  });
});
