/**
 * The sync server's checks on what a client sends, beyond the conformance suite: a create
 * whose files do not hold what they claim is refused, naming the file and line, and changes
 * nothing; the client ledger lives in the store and binds the client to its user; the handle
 * the server keeps between pushes to one session (docs/SYNC.md "The cost of a push") appends
 * without opening the session again, and every change it did not make itself sends the push
 * back to a fresh open: another writer's commit, a crashed commit's lines with `meta.json`
 * left behind, the session deleted and made again at the same ref, two clients at once.
 */
import { describe, expect, it } from "vitest";
import { MemoryStorage, type MessageRecord, Sessions, type StoragePort } from "../../core/mod.ts";
import {
  type CreateMutation,
  type Mutation,
  type MutationResult,
  parseSyncRequest,
  STORE_OWNER,
  SYNC_PROTOCOL_VERSION,
  SyncRefusedError,
  SyncServer,
} from "../../core/sync/mod.ts";
import { draftText, summarizer } from "../session/support.ts";

const T = "2026-12-04T12:00:00.000Z";
const REF = "a1/w1/s1";
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

/** A server with one session of `m1`, `m2` pushed by client `c1` (the second push leaves a kept handle), and the next number. */
async function served(storage: StoragePort = new MemoryStorage()) {
  const server = new SyncServer({ storage });
  const numbers = new Map<string, number>();
  const push = async (mutation: Omit<Mutation, "number">, clientId = "c1"): Promise<MutationResult> => {
    const number = (numbers.get(clientId) ?? 0) + 1;
    numbers.set(clientId, number);
    const body = JSON.parse(JSON.stringify({ v: SYNC_PROTOCOL_VERSION, client_id: clientId, mutations: [{ ...mutation, number }] }));
    const outcome = await server.push(STORE_OWNER, parseSyncRequest("push", body));
    expect(outcome.error).toBeUndefined();
    return outcome.results[0]!;
  };
  const append = (base: number, id: string, clientId?: string) =>
    push({ op: "append", ref: REF, base_sequence: base, base_message_id: `m${base}`, messages: [message(base + 1, { message_id: id })] } as never, clientId);
  expect((await push({ op: "create", ref: REF, meta, instruction: null, segments: [], messages: [message(1)] } as never)).status).toBe("applied");
  expect((await append(1, "m2")).status).toBe("applied");
  const sessions = new Sessions({ storage });
  const ids = async () => (await sessions.open(REF)).active.map((m) => `${m.sequence}:${m.message_id}`);
  return { storage, server, sessions, push, append, ids };
}

describe("a sync server's kept handle", () => {
  it("appends one push after another through it, each message once, in order", async () => {
    const { append, ids } = await served();
    for (let s = 2; s < 6; s++) expect((await append(s, `m${s + 1}`)).status).toBe("applied");
    expect(await ids()).toEqual(["1:m1", "2:m2", "3:m3", "4:m4", "5:m5", "6:m6"]);
    expect((await append(5, "m6")).status).toBe("duplicate");
    expect(await ids()).toHaveLength(6);
  });

  it("is not trusted after another writer's commit: the push is decided on a fresh open (a fork at the first difference)", async () => {
    const { sessions, append, ids } = await served();
    await (await sessions.open(REF)).append({ message_id: "local3", role: "user", parts: [{ type: "text", text: "local" }] } as never);
    const result = await append(2, "m3");
    expect(result).toMatchObject({ status: "forked", fork: { at_sequence: 2 } });
    expect(await ids()).toEqual(["1:m1", "2:m2", "3:local3"]);
  });

  it("is not trusted past a crashed commit's line (meta.json left behind): the fresh open recovers the line and forks", async () => {
    const { storage, sessions, append, ids } = await served();
    const session = await sessions.open(REF);
    const before = (await storage.read(session.paths.meta))!;
    await session.append({ message_id: "crashed3", role: "user", parts: [{ type: "text", text: "crashed" }] } as never);
    await storage.replace(session.paths.meta, before);
    const result = await append(2, "m3");
    expect(result).toMatchObject({ status: "forked", fork: { at_sequence: 2 } });
    expect(await ids()).toEqual(["1:m1", "2:m2", "3:crashed3"]);
  });

  it("is not trusted when a draft was left in the session: the fresh open finishes it, as recovery says, before the append", async () => {
    const { storage, sessions, append, ids } = await served();
    const { paths } = await sessions.open(REF);
    await storage.replace(paths.draft, new TextEncoder().encode(draftText(3)));
    expect((await append(2, "m3")).status).toBe("applied");
    expect(await storage.read(paths.draft)).toBeUndefined();
    expect(await ids()).toEqual(["1:m1", "2:m2", "3:m_pending", "4:m_draft", "5:m3"]);
  });

  it("is not trusted for a session deleted and made again at the same ref: the new session's message at the base is compared", async () => {
    const { sessions, append, ids } = await served();
    const revision = (await sessions.open(REF)).revision;
    await sessions.delete(REF);
    const again = await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
    while (again.revision < revision) await again.append({ role: "user", parts: [{ type: "text", text: "other" }] });
    const result = await append(2, "m3");
    expect(result.status).toBe("rejected");
    expect(await ids()).not.toContain("3:m3");
  });

  it("is never shared by two pushes at once: two clients appending after the same base, one applied, the other forked", async () => {
    const { append, ids } = await served();
    const [a, b] = await Promise.all([append(2, "a3", "c2"), append(2, "b3", "c3")]);
    expect([a.status, b.status].sort()).toEqual(["applied", "forked"]);
    const kept = a.status === "applied" ? "a3" : "b3";
    expect(await ids()).toEqual(["1:m1", "2:m2", `3:${kept}`]);
  });
});

describe("a sync server's kept handle and a damaged meta.json", () => {
  it("leaves the push to the fresh open, whose typed error names the file and where; nothing is written", async () => {
    const { storage, server, sessions } = await served();
    const { paths } = await sessions.open(REF);
    const activeBefore = await storage.read(paths.active);
    await storage.replace(paths.meta, new TextEncoder().encode("{ not json"));
    const body = {
      v: SYNC_PROTOCOL_VERSION,
      client_id: "c1",
      mutations: [{ op: "append", ref: REF, number: 3, base_sequence: 2, base_message_id: "m2", messages: [message(3, { message_id: "m3" })] }],
    };
    // Not the kept handle's own parse (a SyntaxError): the open's check, which says what it found and where, as that
    // session's refusal (docs/SYNC.md "One session at a time").
    const pushed = server.push(STORE_OWNER, parseSyncRequest("push", JSON.parse(JSON.stringify(body))));
    await expect(pushed).rejects.toMatchObject({ reason: "corrupt", status: 409, details: { ref: REF } });
    await expect(pushed).rejects.toThrow(/server's copy .*meta\.json: invalid JSON .* at character 3/);
    expect(await storage.read(paths.active)).toEqual(activeBefore);
  });
});

describe("parseSyncRequest", () => {
  it("refuses a body that is not a JSON object, naming what it is", () => {
    for (const [body, found] of [[null, "null"], [[1], "an array"], ["x", '"x"'], [3, "3"]] as const) {
      expect(() => parseSyncRequest("pull", body)).toThrow(new RegExp(`^pull: expected a JSON object, found ${found.replace("[", "\\[")}$`));
      expect(() => parseSyncRequest("pull", body)).toThrow(expect.objectContaining({ reason: "malformed", status: 400 }));
    }
  });
});

describe("a sync server's pushes to one session at once", () => {
  /** A push of one append of `id` after m2 by `clientId`, its first mutation, to `server`. */
  const appendAfterM2 = (server: SyncServer, clientId: string, id: string) =>
    server.push(
      STORE_OWNER,
      parseSyncRequest(
        "push",
        JSON.parse(JSON.stringify({
          v: SYNC_PROTOCOL_VERSION,
          client_id: clientId,
          mutations: [{ op: "append", ref: REF, number: 1, base_sequence: 2, base_message_id: "m2", messages: [message(3, { message_id: id })] }],
        })),
      ),
    );

  it("take turns: two clients appending after the same base with no handle kept, one applied and the other forked, neither failing", async () => {
    const { storage, ids } = await served();
    // A second server on the store keeps no handle: both pushes open the session, at once.
    const server = new SyncServer({ storage });
    const [a, b] = await Promise.all([appendAfterM2(server, "c2", "a3"), appendAfterM2(server, "c3", "b3")]);
    expect([a.error, b.error]).toEqual([undefined, undefined]);
    expect([a.results[0]!.status, b.results[0]!.status].sort()).toEqual(["applied", "forked"]);
    expect(await ids()).toEqual(["1:m1", "2:m2", a.results[0]!.status === "applied" ? "3:a3" : "3:b3"]);
  });

  it("refuses session-busy (409) while the host's own operation has the session in hand in the same process, and applies it after", async () => {
    const { server, sessions, ids } = await served();
    let summarizing!: () => void;
    const inSummarizer = new Promise<void>((resolve) => (summarizing = resolve));
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    const compaction = (await sessions.open(REF)).compact({
      summarizer: summarizer(async () => {
        summarizing();
        await finished;
        return { text: "summary" };
      }),
    });
    await inSummarizer;
    await expect(appendAfterM2(server, "c2", "a3")).rejects.toMatchObject({ reason: "session-busy", status: 409 });
    finish();
    await compaction;
    expect((await appendAfterM2(server, "c2", "a3")).results[0]!.status).toBe("applied");
    expect((await ids()).at(-1)).toBe("3:a3");
  });
});
