/**
 * An open costs one storage call whatever the history: `meta.json`, Active, the draft,
 * `instruction.md` and the newest segment's footer in one `readMany`, through the storage
 * worker (one round trip) and on the host thread alike. A compacted session reads the
 * segment its `meta.json` names in that same call (the `namedIn` hint of the `lastIn`
 * prefetch), where it used to take a second trip for the footer.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ExtractiveSummarizer, NotFoundError, type StoragePort } from "../../core/mod.ts";
import { NodeFileStorage, WorkerFileStorage } from "../../runtime-node/mod.ts";
import { REF, registry } from "../support/session.ts";

let root: string;
const toClose: StoragePort[] = [];

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "sessionfold-open-calls-"));
});

afterEach(async () => {
  await Promise.all(toClose.splice(0).map((s) => s.close?.()));
  await rm(root, { recursive: true, force: true });
});

/** `inner` with every method call it receives named in `calls` (through a worker: one round trip each). */
function counted(inner: StoragePort, calls: string[]): StoragePort {
  return new Proxy(inner, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        calls.push(String(prop));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

/** The calls one open of the session makes, from a registry that has not seen it. */
async function callsOfOpen(storage: StoragePort): Promise<{ calls: string[]; segments: number; messages: number }> {
  const calls: string[] = [];
  const session = await registry(counted(storage, calls)).open(REF);
  expect(session.diagnostics).toEqual([]);
  return { calls, segments: session.meta.newest_segment === undefined ? 0 : 1, messages: session.meta.message_count };
}

const stores: [string, (root: string) => StoragePort][] = [
  ["through the storage worker", (root) => new WorkerFileStorage({ root, fsync: false })],
  ["on the host thread", (root) => new NodeFileStorage({ root, fsync: false })],
];

describe.each(stores)("an open of a files store %s", (_name, open) => {
  it("is one readMany, before and after compactions", async () => {
    const storage = open(root);
    toClose.push(storage);
    const session = await registry(storage).create(REF);
    const turn = async (n: number) => {
      for (let i = 0; i < n; i++) {
        await session.append({ role: i % 2 === 0 ? "user" : "assistant", parts: [{ type: "text", text: `message ${i}` }] });
      }
    };
    await turn(6);
    expect(await callsOfOpen(storage)).toEqual({ calls: ["readMany"], segments: 0, messages: 6 });

    await session.compact({ summarizer: new ExtractiveSummarizer() });
    await turn(4);
    expect(await callsOfOpen(storage)).toEqual({ calls: ["readMany"], segments: 1, messages: 10 });

    // A second segment: the hint names the newer one, and the open still reads it in the one call.
    await session.compact({ summarizer: new ExtractiveSummarizer() });
    expect(await callsOfOpen(storage)).toEqual({ calls: ["readMany"], segments: 1, messages: 10 });
  });

  it("of an archived session fails naming the archive and { archived: true }; that open is one readMany", async () => {
    const storage = open(root);
    toClose.push(storage);
    await registry(storage).create(REF);
    await registry(storage).archive(REF);
    const error = await registry(storage).open(REF).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotFoundError);
    expect((error as NotFoundError).message).toBe(
      'no session a1/w1/s1: it is archived (in archived-sessions/); open it with open("a1/w1/s1", { archived: true })',
    );
    expect((error as NotFoundError).details).toEqual({ ref: "a1/w1/s1", archived: true });
    const calls: string[] = [];
    const archived = await registry(counted(storage, calls)).open(REF, { archived: true });
    expect([calls, archived.meta.session_id]).toEqual([["readMany"], "s1"]);
  });

  it("is one readMany when the footer holds a default extractive summary of multi-byte text (over 4 KiB)", async () => {
    const storage = open(root);
    toClose.push(storage);
    const session = await registry(storage).create(REF);
    for (let i = 0; i < 60; i++) {
      const text = `Étape ${i} : ${"déjà vérifié, à réécrire ; ".repeat(10)}`;
      await session.append({ role: i % 2 === 0 ? "user" : "assistant", parts: [{ type: "text", text }] });
    }
    const { segment } = await session.compact({ summarizer: new ExtractiveSummarizer() });
    const footer = await storage.readTail(session.paths.segment(segment!), 64 * 1024);
    const lastLine = new TextDecoder().decode(footer!.bytes).trimEnd().split("\n").at(-1)!;
    expect(new TextEncoder().encode(lastLine).length).toBeGreaterThan(4096);
    expect(await callsOfOpen(storage)).toMatchObject({ calls: ["readMany"], segments: 1 });
  });
});
