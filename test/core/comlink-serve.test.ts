/**
 * The serving half of Comlink's protocol (`serveComlinkCalls`), which the Node storage worker
 * runs instead of `Comlink.expose`: over a MessageChannel, its answers are the messages
 * `Comlink.expose` posts for the same calls (values, marked transfers, typed errors), a
 * `Comlink.wrap` caller and the storage client both work against it, and what it does not
 * serve is answered with an `InternalError`, never left waiting.
 */
import { MessageChannel } from "node:worker_threads";
import * as Comlink from "comlink";
import nodeEndpoint from "comlink/dist/esm/node-adapter.mjs";
import { afterEach, describe, expect, it } from "vitest";
import { InternalError, InvalidInputError, MemoryStorage } from "../../core/mod.ts";
import { type ComlinkLike, registerErrorTransfer, serveComlinkCalls, storageWorkerApi, WorkerStorageClient } from "../../core/internal.ts";

registerErrorTransfer(Comlink);
const channels: MessageChannel[] = [];

afterEach(() => {
  for (const channel of channels.splice(0)) (channel.port1.close(), channel.port2.close());
});

/** An API of plain-data calls like the storage worker's: values, a marked transfer, a typed error, an async answer. */
function testApi(comlink: ComlinkLike, kept: Uint8Array[]) {
  return {
    add: (a: number, b: number) => a + b,
    later: async (text: string) => ({ text, length: text.length }),
    bytes: (n: number) => {
      const bytes = new Uint8Array(n).fill(7);
      kept.push(bytes);
      return comlink.transfer({ bytes }, [bytes.buffer as never]);
    },
    refuse: (path: string): number => {
      throw new InvalidInputError(`bad path ${path}`, { path });
    },
    reject: async (): Promise<number> => {
      throw new Error("not one of ours");
    },
    nothing: () => undefined,
  };
}

/** Each raw message posted to a server, and what it answered. */
async function answersOf(serve: (endpoint: ReturnType<typeof nodeEndpoint>, kept: Uint8Array[]) => void, calls: unknown[]) {
  const channel = new MessageChannel();
  channels.push(channel);
  const kept: Uint8Array[] = [];
  serve(nodeEndpoint(channel.port1), kept);
  const answers: unknown[] = [];
  // A last call marks the end: a port delivers in order, and every method of the test API settles within microtasks,
  // which run before the next message is handled, so once its answer is in every earlier answer is too (and a message
  // without an id, handled before it, was not answered).
  const last = apply("last", "nothing");
  const drained = new Promise<void>((resolve) => {
    channel.port2.on("message", (data: { id?: unknown }) => (data?.id === last.id ? resolve() : answers.push(data)));
  });
  for (const call of [...calls, last]) channel.port2.postMessage(call);
  await drained;
  return { answers, kept };
}

const apply = (id: string, method: string, ...args: unknown[]) => ({
  id,
  type: "APPLY",
  path: [method],
  argumentList: args.map((value) => ({ type: "RAW", value })),
});

describe("serveComlinkCalls", () => {
  it("answers each call with the message Comlink.expose posts for it", async () => {
    const calls = [
      apply("1", "add", 2, 3),
      apply("2", "later", "héllo"),
      apply("3", "bytes", 5),
      apply("4", "refuse", "x/y"),
      apply("5", "reject"),
      apply("6", "nothing"),
    ];
    const exposed = await answersOf((endpoint, kept) => Comlink.expose(testApi(Comlink, kept), endpoint), calls);
    const served = await answersOf((endpoint, kept) => serveComlinkCalls(Comlink, endpoint, (comlink) => testApi(comlink, kept)), calls);
    // In id order, each error's stack left out (it names the server's own frames).
    const withoutStacks = (value: unknown) => JSON.parse(JSON.stringify(value, (key, field) => (key === "stack" ? undefined : field)));
    const byId = (answers: unknown[]) => [...answers].sort((a, b) => Number((a as { id: string }).id) - Number((b as { id: string }).id)).map(withoutStacks);
    expect(byId(served.answers)).toEqual(byId(exposed.answers));
    expect(byId(served.answers)[0]).toEqual({ id: "1", type: "RAW", value: 5 });
    expect(byId(served.answers)[3]).toMatchObject({ type: "HANDLER", name: "sessionfold-error", value: { name: "InvalidInputError" } });
    // The marked buffer moved with its answer, as under Comlink.expose: the server's copy is empty.
    expect(served.kept.map((bytes) => bytes.byteLength)).toEqual([0]);
    expect(exposed.kept.map((bytes) => bytes.byteLength)).toEqual([0]);
  });

  it("serves a Comlink.wrap caller: values, typed errors with their class, buffers", async () => {
    const channel = new MessageChannel();
    channels.push(channel);
    serveComlinkCalls(Comlink, nodeEndpoint(channel.port1), (comlink) => testApi(comlink, []));
    const remote = Comlink.wrap<ReturnType<typeof testApi>>(nodeEndpoint(channel.port2));
    expect(await remote.add(40, 2)).toBe(42);
    expect(await remote.later("abc")).toEqual({ text: "abc", length: 3 });
    expect(Array.from((await remote.bytes(3)).bytes)).toEqual([7, 7, 7]);
    const refused = await remote.refuse("a/b").catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(InvalidInputError);
    expect(refused).toMatchObject({ message: "bad path a/b", details: { path: "a/b" } });
    expect(await remote.reject().catch((error: unknown) => error)).toBeInstanceOf(InternalError);
    remote[Comlink.releaseProxy]();
  });

  it("runs a call posted without an id and answers nothing, whatever it returns or throws", async () => {
    const { id: _, ...unanswered } = apply("0", "bytes", 4);
    const calls = [unanswered, { ...unanswered, path: ["reject"], argumentList: [] }, { ...unanswered, path: ["refuse"] }, apply("1", "add", 1, 2)];
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => rejections.push(reason);
    process.on("unhandledRejection", onRejection);
    try {
      const { answers, kept } = await answersOf((endpoint, kept) => serveComlinkCalls(Comlink, endpoint, (comlink) => testApi(comlink, kept)), calls);
      expect(answers).toEqual([{ id: "1", type: "RAW", value: 3 }]);
      expect(kept.map((bytes) => bytes.length)).toEqual([4]); // it ran
      await new Promise((resolve) => setImmediate(resolve));
      expect(rejections).toEqual([]);
    } finally {
      process.off("unhandledRejection", onRejection);
    }
  });

  it("answers what it does not serve with an InternalError and ignores messages without an id", async () => {
    const calls = [
      { id: "1", type: "GET", path: ["add"] },
      apply("2", "missing"),
      apply("3", "constructor"),
      apply("4", "toString"),
      { id: "5", type: "APPLY", path: ["add", "call"], argumentList: [] },
      { id: "6", type: "APPLY", path: ["add"], argumentList: "not a list" },
      { type: "APPLY", path: ["add"], argumentList: [] },
      "not a call",
      null,
    ];
    const { answers } = await answersOf((endpoint) => serveComlinkCalls(Comlink, endpoint, (comlink) => testApi(comlink, [])), calls);
    expect(answers).toHaveLength(6);
    for (const answer of answers) {
      expect(answer).toMatchObject({ type: "HANDLER", name: "sessionfold-error" });
      expect(() => Comlink.transferHandlers.get("sessionfold-error")!.deserialize((answer as { value: never }).value)).toThrow(InternalError);
    }
  });

  it("serves the storage worker API to the storage client, one message each way per call", async () => {
    const channel = new MessageChannel();
    channels.push(channel);
    const worker = nodeEndpoint(channel.port1);
    let answered = 0;
    const post = worker.postMessage;
    worker.postMessage = (message, transfer) => (answered++, post(message, transfer));
    serveComlinkCalls(Comlink, worker, (comlink) => storageWorkerApi(comlink, () => new MemoryStorage()));
    const client = new WorkerStorageClient({
      comlink: Comlink,
      endpoint: nodeEndpoint(channel.port2),
      options: {},
      locks: false,
      details: {},
      terminate: () => undefined,
    });
    const utf8 = (text: string) => new TextEncoder().encode(text);
    await client.replace("s/meta.json", utf8("{}"));
    expect(await client.applyCommitPlan({ writes: [{ op: "append", path: "s/active.jsonl", bytes: utf8("a\n") }] })).toEqual({ outcome: "committed" });
    expect(new TextDecoder().decode(await client.read("s/active.jsonl"))).toBe("a\n");
    expect(await client.readMany([{ path: "s/meta.json" }, { path: "s/none" }])).toMatchObject([{ bytes: utf8("{}") }, undefined]);
    await expect(client.read("../escape")).rejects.toBeInstanceOf(InvalidInputError);
    // open, replace, the plan, read, readMany, the refused read.
    expect(answered).toBe(6);
  });
});
