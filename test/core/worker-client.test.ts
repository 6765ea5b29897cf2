/**
 * The host's side of a storage hop (`WorkerStorageClient`) against a real `Comlink.expose`
 * of the core's storage worker API, over a MessageChannel as between a host and its worker:
 * one message each way per call (a commit plan included), every port method answered, typed
 * errors with their class, buffers moved only where the caller handed them over, and the
 * answers it must not trust (an unknown transfer handler, a reply after `fail()`) handled.
 */
import { MessageChannel } from "node:worker_threads";
import * as Comlink from "comlink";
import nodeEndpoint from "comlink/dist/esm/node-adapter.mjs";
import { afterEach, describe, expect, it } from "vitest";
import { InternalError, InvalidInputError, MemoryStorage, StorageError } from "../../core/mod.ts";
import { type ComlinkCall, registerErrorTransfer, storageWorkerApi, WorkerStorageClient } from "../../core/internal.ts";

const utf8 = (text: string) => new TextEncoder().encode(text);

registerErrorTransfer(Comlink);
const channels: MessageChannel[] = [];

afterEach(() => {
  for (const channel of channels.splice(0)) (channel.port1.close(), channel.port2.close());
});

/** A client served over a MessageChannel; `posted` and `answered` record every message each way. */
function served(): { client: WorkerStorageClient; posted: ComlinkCall[]; answered: unknown[]; pending: boolean[] } {
  const channel = new MessageChannel();
  channels.push(channel);
  const posted: ComlinkCall[] = [];
  const answered: unknown[] = [];
  const pending: boolean[] = [];
  const worker = nodeEndpoint(channel.port1);
  const post = worker.postMessage;
  worker.postMessage = (message, transfer) => (answered.push(message), post(message, transfer));
  Comlink.expose(storageWorkerApi(Comlink, () => new MemoryStorage()), worker);
  const host = nodeEndpoint(channel.port2);
  const send = host.postMessage;
  host.postMessage = (message, transfer) => (posted.push(message as ComlinkCall), send(message, transfer));
  const client = new WorkerStorageClient({
    comlink: Comlink,
    endpoint: host,
    options: {},
    locks: false,
    details: { db: "test" },
    onPending: (now) => pending.push(now),
    terminate: () => undefined,
  });
  return { client, posted, answered, pending };
}

/**
 * A client whose "worker" answers only what the test posts to `answer` (`staging`: the link says its store stages;
 * `stagesAtOnce`: that it has read a stage's bytes when the call returns).
 */
function scripted(staging = false, stagesAtOnce = false) {
  let listener: ((event: { data: unknown }) => void) | undefined;
  const posted: ComlinkCall[] = [];
  const pending: boolean[] = [];
  const endpoint = {
    postMessage: (message: ComlinkCall) => {
      structuredClone(message); // what a real port does first: refuses what it cannot clone
      posted.push(message);
    },
    addEventListener: (_type: string, l: (event: { data: unknown }) => void) => (listener = l),
  };
  const client = new WorkerStorageClient({
    comlink: Comlink,
    endpoint,
    options: {},
    locks: false,
    staging,
    stagesAtOnce,
    details: {},
    onPending: (now) => pending.push(now),
    terminate: () => undefined,
  });
  return { client, posted, pending, answer: (data: unknown) => listener!({ data }) };
}

describe("WorkerStorageClient over Comlink.expose", () => {
  it("answers every port method, one message each way per call", async () => {
    const { client, posted, answered } = served();
    await client.replace("s/meta.json", utf8("{}"));
    await client.append("s/active.jsonl", utf8("a\n"));
    expect(await client.createExclusive("s/writer.lock", utf8("l"))).toBe(true);
    expect(await client.createExclusive("s/writer.lock", utf8("l"))).toBe(false);
    expect(await client.read("s/active.jsonl")).toEqual(utf8("a\n"));
    expect(await client.readTail("s/active.jsonl", 1)).toEqual({ bytes: utf8("\n"), size: 2 });
    expect(await client.readMany([{ path: "s/meta.json" }, { path: "s/missing" }])).toEqual([{ path: "s/meta.json", bytes: utf8("{}"), size: 2 }, undefined]);
    expect(await client.list("s")).toEqual(["active.jsonl", "meta.json", "writer.lock"]);
    await client.truncate("s/active.jsonl", 1);
    expect(await client.move("s/meta.json", "s/meta.old")).toBe(true);
    await client.remove("s/meta.old");
    await client.pinFile("s/active.jsonl");
    await client.unpinFile("s/active.jsonl");
    expect(await client.readCatalog("s")).toEqual({ entries: [], unlisted: ["active.jsonl", "writer.lock"] });
    expect(await client.rebuildCatalog("s")).toBe(0);
    // open, then the 16 calls above: each one message out and one answer back.
    expect(posted.map((message) => message.path[0])).toEqual([
      "open",
      "replace",
      "append",
      "createExclusive",
      "createExclusive",
      "read",
      "readTail",
      "readMany",
      "list",
      "truncate",
      "move",
      "remove",
      "pinFile",
      "unpinFile",
      "readCatalog",
      "rebuildCatalog",
    ]);
    expect(answered).toHaveLength(posted.length);
    expect(new Set(posted.map((message) => message.id)).size).toBe(posted.length);
  });

  it("offers stage only for a worker store that stages; a store without it declines, and the core's plan refuses staged bytes", async () => {
    const { client } = served();
    expect(client.stage).toBeUndefined();
    expect(client.unstage).toBeUndefined();
    // The worker's side of a store without `stage` (MemoryStorage): a typed refusal, and an unstage that does nothing.
    const api = storageWorkerApi(Comlink, () => new MemoryStorage());
    await api.open({});
    await expect(api.stage("s/x", utf8("a"), "stage_1")).rejects.toBeInstanceOf(StorageError);
    await api.unstage("stage_1");
    // Its plans run by calls, where staged bytes have no place: refused before anything is written.
    const plan = { writes: [{ op: "replace", path: "s/x", bytes: utf8("tail"), staged: "stage_1" }] } as const;
    await expect(api.applyCommitPlan(plan)).rejects.toBeInstanceOf(InvalidInputError);
    expect(await api.read("s/x")).toBeUndefined();
    // A link that stages: both methods are offered, each one message; a stage owes no answer (no id, nothing pending),
    // and settles once posted.
    const { client: staging, posted, pending } = scripted(true);
    expect(typeof staging.stage).toBe("function");
    await staging.stage!("s/x", utf8("a"), "stage_2");
    expect(posted.at(-1)).not.toHaveProperty("id");
    expect(pending).toEqual([true]); // `open`'s only
    void staging.unstage!("stage_2");
    expect(posted.map((message) => message.path[0])).toEqual(["open", "stage", "unstage"]);
    expect(posted.at(-1)!.id).toEqual(expect.any(String));
  });

  it("joins staged lines into shared memory, lent again only once the worker answered a call posted after the stage", async () => {
    expect(scripted(true).client.stageLines).toBeUndefined(); // a store that may read staged bytes later gets no shared memory
    const { client, posted, answer } = scripted(true, true);
    const stagedBytes = () => (posted.at(-1)!.argumentList[1] as { value: Uint8Array }).value;
    const before = client.unstage!("stage_0");
    const { id: earlier } = posted.at(-1)!;
    // Lines as an open remembers them (views of the bytes read, in a run) and one of its own: joined, each with its `\n`.
    const read = utf8("one\ntwo\n");
    await client.stageLines!("s/a", [read.subarray(0, 3), read.subarray(4, 7), utf8("three")], "stage_1");
    const first = stagedBytes();
    expect(posted.at(-1)).not.toHaveProperty("id");
    expect(first.buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(new TextDecoder().decode(first)).toBe("one\ntwo\nthree\n");
    // The answer to a call posted before the stage proves nothing about it: the next stage gets other memory.
    answer({ id: earlier, type: "RAW", value: undefined });
    await before;
    await client.stageLines!("s/b", [utf8("four")], "stage_2");
    const second = stagedBytes();
    expect(second.buffer).not.toBe(first.buffer);
    expect(new TextDecoder().decode(first)).toBe("one\ntwo\nthree\n");
    // Once a call posted after both stages is answered, the worker has read them: their memory is lent again.
    const later = client.unstage!("stage_1");
    answer({ id: posted.at(-1)!.id, type: "RAW", value: undefined });
    await later;
    await client.stageLines!("s/c", [utf8("five")], "stage_3");
    expect([first.buffer, second.buffer]).toContain(stagedBytes().buffer);
    expect(new TextDecoder().decode(stagedBytes())).toBe("five\n");
  });

  it("a commit plan is one message each way, its handed-over buffers moved and the others copied", async () => {
    const { client, posted, answered } = served();
    await client.read("x");
    const before = posted.length;
    const moved = new Uint8Array(100_000).fill(1);
    const kept = new Uint8Array(100_000).fill(2);
    const line = utf8("a line\n");
    const result = await client.applyCommitPlan({
      writes: [
        { op: "replace", path: "s/segment", bytes: moved, handOver: true },
        { op: "replace", path: "s/kept", bytes: kept },
        { op: "append", path: "s/active.jsonl", bytes: line },
      ],
    });
    expect(result).toEqual({ outcome: "committed" });
    expect(posted.slice(before).map((message) => message.path[0])).toEqual(["applyCommitPlan"]);
    expect(answered).toHaveLength(posted.length);
    expect(moved.buffer.byteLength).toBe(0);
    expect(kept.length).toBe(100_000);
    expect(line).toEqual(utf8("a line\n"));
    // Whole-array checks, not toEqual: element-wise comparison of 10⁵ bytes takes a second.
    const segment = await client.read("s/segment");
    expect(segment?.length === 100_000 && segment.every((byte) => byte === 1)).toBe(true);
    const copy = await client.read("s/kept");
    expect(copy?.length === 100_000 && copy.every((byte) => byte === 2)).toBe(true);
  });

  it("a write of part of a buffer leaves the caller's array whole", async () => {
    const { client } = served();
    const big = new Uint8Array(200_000).fill(7);
    const part = big.subarray(10, 100_010);
    await client.append("big", part);
    await client.replace("small", big.subarray(0, 3));
    expect(big.buffer.byteLength).toBe(200_000);
    expect(part.length).toBe(100_000);
    expect((await client.read("big"))?.length).toBe(100_000);
    expect(await client.read("small")).toEqual(new Uint8Array(3).fill(7));
  });

  it("typed errors cross with their class, code and details", async () => {
    const { client } = served();
    const error = await client.read("../etc/passwd").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidInputError);
    expect(error).toMatchObject({ code: "invalid-input" });
    // No platform locks in this link: the client offers none.
    expect("acquireLock" in client).toBe(false);
  });

  it("an answer through a transfer handler this side lacks is an InternalError", async () => {
    const { client, posted, answer } = scripted();
    const read = client.read("x");
    answer({ id: posted.at(-1)!.id, type: "HANDLER", name: "not-registered", value: 1 });
    const error = await read.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InternalError);
    expect(error).toMatchObject({ details: { handler: "not-registered" } });
  });

  it("ignores messages that answer nothing, and answers that come after fail()", async () => {
    const { client, posted, pending, answer } = scripted();
    const open = posted[0]!;
    const list = client.list("");
    answer("not an answer");
    answer({ id: "999", type: "RAW", value: ["x"] });
    answer({ id: posted[1]!.id, type: "RAW", value: ["a"] });
    expect(await list).toEqual(["a"]);
    const read = client.read("a");
    client.fail(new StorageError("storage worker stopped"));
    answer({ id: open.id, type: "RAW", value: false });
    answer({ id: posted.at(-1)!.id, type: "RAW", value: new Uint8Array([1]) });
    await expect(read).rejects.toThrow("storage worker stopped");
    await expect(client.read("a")).rejects.toThrow("storage worker stopped");
    // Busy from the first call (open) until fail(); late answers change nothing.
    expect(pending).toEqual([true, false]);
  });

  it("a call that cannot be posted rejects with a StorageError and leaves nothing pending", async () => {
    const { client, posted, pending, answer } = scripted();
    const refused = await client.replace("a", utf8("a"), { durable: (() => true) as never }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(StorageError);
    expect((refused as Error).message).toMatch(/^storage call could not be sent/);
    answer({ id: posted[0]!.id, type: "RAW", value: false });
    expect(pending).toEqual([true, false]);
  });
});
