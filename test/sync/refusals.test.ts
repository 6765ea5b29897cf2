/**
 * What one session cannot sync never holds back the others (docs/SYNC.md "The engine",
 * "One session at a time"): a mutation the remote refuses for its session (`forbidden`, a
 * `malformed` one an earlier version left in the outbox) leaves the outbox and the rest are
 * numbered on; `session-busy` keeps the session's mutations for the next run behind the
 * others; a local session that recovery reports corrupt, or one of an unknown schema, is not
 * pushed (nor pulled into); each is a conflict naming its ref, and the next run after a repair
 * syncs it by the usual comparison. A store is never synced with itself.
 */
import { afterEach, describe, expect, it } from "vitest";
import { EncryptedStorage, ExtractiveSummarizer, InvalidInputError, MemoryStorage, Sessions, type StoragePort } from "../../core/mod.ts";
import { type SyncState, syncStatePath } from "../../core/sync/sync-state.ts";
import { createSyncHandler, directRemote, httpRemote, type SyncRemote, syncStores } from "../../core/sync/mod.ts";
import { type FetchServer, serveFetchHandler } from "../../runtime-node/mod.ts";
import { testPrincipal } from "../../testing/sync-conformance.ts";
import { newKeyring } from "./encrypted-pair.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function sessionPath(ref: string, file: string): string {
  const [agent, workspace, session] = ref.split("/");
  return `agents/${agent}/workspaces/${workspace}/sessions/${session}/${file}`;
}

async function seed(sessions: Sessions, ref: string, count: number): Promise<void> {
  const [agentId, workspaceId, sessionId] = ref.split("/") as [string, string, string];
  const session = await sessions.create({ agentId, workspaceId, sessionId });
  for (let i = 1; i <= count; i++) await session.append({ role: "user", parts: [{ type: "text", text: `${ref} ${i}` }] });
}

async function text(storage: StoragePort, path: string): Promise<string> {
  return decoder.decode((await storage.read(path))!);
}

async function edit(storage: StoragePort, path: string, change: (text: string) => string): Promise<void> {
  await storage.replace(path, encoder.encode(change(await text(storage, path))));
}

async function stateOf(storage: StoragePort): Promise<SyncState> {
  return JSON.parse(await text(storage, syncStatePath("server"))) as SyncState;
}

async function serverRefs(server: StoragePort): Promise<string[]> {
  const listed = await new Sessions({ storage: server }).list();
  return listed.map((m) => `${m.agent_id}/${m.workspace_id}/${m.session_id}`).sort();
}

async function messageCount(server: StoragePort, ref: string): Promise<number> {
  return (await new Sessions({ storage: server }).open(ref)).active.length;
}

describe("sync: one session's problem stays that session's", () => {
  it("a session the remote refuses leaves the outbox; every other session syncs, in this run and the next", async () => {
    const [device, server] = [new MemoryStorage(), new MemoryStorage()];
    const local = new Sessions({ storage: device });
    // testPrincipal("u") may write w-u and shared, not the workspace "secret".
    for (const ref of ["a1/w-u/s1", "a1/secret/s2", "a1/w-u/s3", "a1/shared/s4"]) await seed(local, ref, 2);
    const remote = directRemote(server, { id: "server", principal: testPrincipal("u") });
    const report = await syncStores({ local, remote });
    expect(report.conflicts).toEqual([{ ref: "a1/secret/s2", reason: "forbidden", message: expect.stringContaining("a1/secret/s2") }]);
    expect(await serverRefs(server)).toEqual(["a1/shared/s4", "a1/w-u/s1", "a1/w-u/s3"]);
    expect(report.pushed).toBe(6);
    expect((await stateOf(device)).pending).toEqual([]);
    // The next run asks again (the local comparison queues it anew) and still syncs the rest.
    await (await local.open("a1/w-u/s1")).append({ role: "user", parts: [{ type: "text", text: "later" }] });
    const again = await syncStores({ local, remote });
    expect(again.conflicts.map((c) => [c.ref, c.reason])).toEqual([["a1/secret/s2", "forbidden"]]);
    expect(again.pushed).toBe(1);
    expect(await messageCount(server, "a1/w-u/s1")).toBe(3);
    expect((await stateOf(device)).pending).toEqual([]);
  });

  it("an outbox an earlier version left stuck behind a refused create is cleared, and the session goes on a later run", async () => {
    const [device, server] = [new MemoryStorage(), new MemoryStorage()];
    const local = new Sessions({ storage: device });
    for (const ref of ["coder/repo/c3", "coder/repo/s1"]) await seed(local, ref, 3);
    const c3 = await local.open("coder/repo/c3");
    // What the earlier engine queued for a session with an unreadable middle line: messages 1 and 3.
    const stuck: SyncState = {
      client_id: "client_stuck",
      next_number: 2,
      pending: [{ number: 1, op: "create", ref: "coder/repo/c3", meta: c3.meta, instruction: null, segments: [], messages: [c3.active[0]!, c3.active[2]!] }],
      sessions: {},
    };
    await device.replace(syncStatePath("server"), encoder.encode(JSON.stringify(stuck)));
    const remote = directRemote(server, { id: "server" });
    const report = await syncStores({ local, remote });
    expect(report.conflicts).toEqual([{ ref: "coder/repo/c3", reason: "malformed", message: "coder/repo/c3: message 1 has sequence 3; expected 2" }]);
    expect(await serverRefs(server)).toEqual(["coder/repo/s1"]);
    expect((await stateOf(device)).pending).toEqual([]);
    // Its mutations were dropped; the next run compares again and sends the session as it is.
    const next = await syncStores({ local, remote });
    expect(next.conflicts).toEqual([]);
    expect(await serverRefs(server)).toEqual(["coder/repo/c3", "coder/repo/s1"]);
    expect(await messageCount(server, "coder/repo/c3")).toBe(3);
  });

  it("a session another writer holds on the server keeps its mutations for the next run, behind the others", async () => {
    const [device, server] = [new MemoryStorage(), new MemoryStorage()];
    const local = new Sessions({ storage: device });
    await seed(local, "a1/w1/busy", 1);
    const remote = directRemote(server, { id: "server" });
    expect((await syncStores({ local, remote })).conflicts).toEqual([]);
    // Another host's lock: never taken over, so the session is busy until it goes.
    const lock = sessionPath("a1/w1/busy", "writer.lock");
    await server.replace(
      lock,
      encoder.encode(
        JSON.stringify({
          pid: 31337,
          hostname: "another-host",
          runtime: "node",
          operation: "append",
          created_at: "2026-12-02T13:00:00.000Z",
          lock_id: "lock_other",
        }),
      ),
    );
    // Listed first (the newest), so queued before the other session.
    await seed(local, "a1/w1/after", 2);
    await (await local.open("a1/w1/busy")).append({ role: "user", parts: [{ type: "text", text: "while busy" }] });
    const report = await syncStores({ local, remote });
    expect(report.conflicts.map((c) => [c.ref, c.reason])).toEqual([["a1/w1/busy", "session-busy"]]);
    expect(await serverRefs(server)).toEqual(["a1/w1/after", "a1/w1/busy"]);
    expect(await messageCount(server, "a1/w1/after")).toBe(2);
    expect((await stateOf(device)).pending.map((m) => [m.op, m.ref])).toEqual([["append", "a1/w1/busy"]]);
    await server.remove(lock);
    const next = await syncStores({ local, remote });
    expect(next.conflicts).toEqual([]);
    expect(next.pushed).toBe(1);
    expect(await messageCount(server, "a1/w1/busy")).toBe(2);
    expect((await stateOf(device)).pending).toEqual([]);
  });

  it("a corrupt local session is not pushed: a conflict naming FILE:LINE; the others sync; after a repair it goes", async () => {
    const [device, server] = [new MemoryStorage(), new MemoryStorage()];
    const local = new Sessions({ storage: device });
    for (const ref of ["coder/repo/c3", "coder/repo/e1", "coder/repo/known", "coder/repo/s1"]) await seed(local, ref, 3);
    const remote = directRemote(server, { id: "server" });
    // "known" was synced before it was damaged.
    await syncStores({ local, remote, refs: ["coder/repo/known"] });
    await (await local.open("coder/repo/known")).append({ role: "user", parts: [{ type: "text", text: "4" }] });
    const active = (ref: string) => sessionPath(ref, "messages/active.jsonl");
    const original = await text(device, active("coder/repo/c3"));
    await edit(device, active("coder/repo/c3"), (t) => t.split("\n").map((line, i) => (i === 1 ? `xx${line}` : line)).join("\n"));
    await edit(device, active("coder/repo/e1"), (t) => t.replace(/^\{/gm, "xx{"));
    const knownOriginal = await text(device, active("coder/repo/known"));
    await edit(device, active("coder/repo/known"), (t) => t.split("\n").map((line, i) => (i === 0 ? `xx${line}` : line)).join("\n"));
    const report = await syncStores({ local, remote });
    expect(report.conflicts.map((c) => [c.ref, c.reason]).sort()).toEqual([
      ["coder/repo/c3", "corrupt"],
      ["coder/repo/e1", "corrupt"],
      ["coder/repo/known", "corrupt"],
    ]);
    expect(report.conflicts.find((c) => c.ref === "coder/repo/c3")!.message).toMatch(/^coder\/repo\/c3 .*messages\/active\.jsonl:2: /);
    expect(await serverRefs(server)).toEqual(["coder/repo/known", "coder/repo/s1"]);
    expect(await messageCount(server, "coder/repo/known")).toBe(3);
    expect((await stateOf(device)).pending).toEqual([]);
    // Repaired (the lines put back): the next run sends each by the usual comparison.
    await device.replace(active("coder/repo/c3"), encoder.encode(original));
    await device.replace(active("coder/repo/known"), encoder.encode(knownOriginal));
    const next = await syncStores({ local, remote });
    expect(next.conflicts.map((c) => c.ref)).toEqual(["coder/repo/e1"]);
    expect(await messageCount(server, "coder/repo/c3")).toBe(3);
    expect(await messageCount(server, "coder/repo/known")).toBe(4);
  });

  it("a session of an unknown schema is that session's conflict, pushed or pulled; the others sync", async () => {
    const [device, server] = [new MemoryStorage(), new MemoryStorage()];
    const local = new Sessions({ storage: device });
    for (const ref of ["a1/w1/new", "a1/w1/old", "a1/w1/ok"]) await seed(local, ref, 1);
    const remote = directRemote(server, { id: "server" });
    await syncStores({ local, remote, refs: ["a1/w1/old"] });
    // Another device adds to "old" while this device's copy is of a newer sessionfold.
    const other = new Sessions({ storage: new MemoryStorage() });
    await syncStores({ local: other, remote: directRemote(server, { id: "server" }) });
    await (await other.open("a1/w1/old")).append({ role: "user", parts: [{ type: "text", text: "elsewhere" }] });
    await syncStores({ local: other, remote: directRemote(server, { id: "server" }) });
    for (const ref of ["a1/w1/new", "a1/w1/old"]) {
      await edit(device, sessionPath(ref, "meta.json"), (t) => t.replace(/"schema_version":\s*1/, '"schema_version":99'));
    }
    const report = await syncStores({ local, remote });
    expect(report.conflicts.map((c) => [c.ref, c.reason]).sort()).toEqual([["a1/w1/new", "unsupported-schema"], ["a1/w1/old", "unsupported-schema"]]);
    expect(report.conflicts[0]!.message).toMatch(/^a1\/w1\/(new|old): .*schema_version 99/);
    expect(await serverRefs(server)).toEqual(["a1/w1/ok", "a1/w1/old"]);
    // Back to a schema this reader knows: the server's change, missed meanwhile, is pulled.
    await edit(device, sessionPath("a1/w1/old", "meta.json"), (t) => t.replace('"schema_version":99', '"schema_version":1'));
    const next = await syncStores({ local, remote });
    expect(next.conflicts.map((c) => c.ref)).toEqual(["a1/w1/new"]);
    expect((await local.open("a1/w1/old")).active.length).toBe(2);
  });

  const remotes: [string, (server: StoragePort) => SyncRemote][] = [
    ["a direct remote", (server) => directRemote(server, { id: "server" })],
    ["the HTTP handler", (server) => {
      const handler = createSyncHandler({ storage: server, authorize: () => ({ user: "u", may: () => true }), basePath: "/sync" });
      return httpRemote({ url: "http://server.test/sync", id: "server", fetch: (input, init) => handler(new Request(input, init)) });
    }],
  ];
  for (const [name, remoteOf] of remotes) {
    it(`a session corrupt on the server's side, through ${name}: its conflict, the others push and pull; after a repair it goes`, async () => {
      const [device, server] = [new MemoryStorage(), new MemoryStorage()];
      const local = new Sessions({ storage: device });
      // A server per run, as a process per `sync`: nothing of an earlier run's handles is kept.
      for (const ref of ["a1/w1/good1", "a1/w1/good2", "a1/w1/good3"]) await seed(local, ref, 3);
      await syncStores({ local, remote: remoteOf(server) });
      // Another device adds a session and a corrupt one; the server's copy of good2 is damaged.
      const other = new Sessions({ storage: new MemoryStorage() });
      await seed(other, "a1/w1/fresh", 2);
      await seed(other, "a1/w1/broken", 3);
      await syncStores({ local: other, remote: remoteOf(server) });
      for (const ref of ["a1/w1/good1", "a1/w1/good2", "a1/w1/good3"]) {
        await (await local.open(ref)).append({ role: "user", parts: [{ type: "text", text: "4" }] });
      }
      const active = (ref: string) => sessionPath(ref, "messages/active.jsonl");
      const original = await text(server, active("a1/w1/good2"));
      const junk = (t: string) => t.split("\n").map((line, i) => (i === 1 ? `xx${line}` : line)).join("\n");
      await edit(server, active("a1/w1/good2"), junk);
      await edit(server, active("a1/w1/broken"), junk);
      const cursor = (await stateOf(device)).cursor;
      const report = await syncStores({ local, remote: remoteOf(server) });
      expect(report.conflicts.map((c) => [c.ref, c.reason]).sort()).toEqual([["a1/w1/broken", "corrupt"], ["a1/w1/good2", "corrupt"]]);
      expect(report.conflicts.find((c) => c.ref === "a1/w1/good2")!.message).toMatch(/server's copy.*messages\/active\.jsonl:2/);
      // Nothing was written for good2 on the server: no fork of what its reader skipped.
      expect(await serverRefs(server)).toEqual(["a1/w1/broken", "a1/w1/fresh", "a1/w1/good1", "a1/w1/good2", "a1/w1/good3"]);
      expect(await messageCount(server, "a1/w1/good1")).toBe(4);
      expect(await messageCount(server, "a1/w1/good3")).toBe(4);
      expect((await local.open("a1/w1/fresh")).active.length).toBe(2);
      expect(await local.list().then((l) => l.map((m) => m.session_id).sort())).toEqual(["fresh", "good1", "good2", "good3"]);
      // The cursor goes on; broken, never agreed here, is asked for by its head next time (no rescan from the old cursor).
      expect((await stateOf(device)).cursor).not.toBe(cursor);
      expect((await stateOf(device)).unseen).toEqual(["a1/w1/broken"]);
      // Until the repair, each run names both again and syncs the rest.
      const meanwhile = await syncStores({ local, remote: remoteOf(server) });
      expect(meanwhile.conflicts.map((c) => [c.ref, c.reason]).sort()).toEqual([["a1/w1/broken", "corrupt"], ["a1/w1/good2", "corrupt"]]);
      // Repaired on the server: the next run sends good2's message and pulls broken.
      await server.replace(active("a1/w1/good2"), encoder.encode(original));
      await edit(server, active("a1/w1/broken"), (t) => t.replace(/^xx/gm, ""));
      const next = await syncStores({ local, remote: remoteOf(server) });
      expect(next.conflicts).toEqual([]);
      expect(await messageCount(server, "a1/w1/good2")).toBe(4);
      expect((await local.open("a1/w1/broken")).active.length).toBe(3);
      expect((await stateOf(device)).pending).toEqual([]);
      expect((await stateOf(device)).unseen).toBeUndefined();
    });
  }

  it("a create compared with a server copy that is corrupt is refused, not forked at what its reader skipped", async () => {
    const [device, server] = [new MemoryStorage(), new MemoryStorage()];
    const local = new Sessions({ storage: device });
    await seed(local, "a1/w1/s1", 3);
    await syncStores({ local, remote: directRemote(server, { id: "server" }) });
    await edit(server, sessionPath("a1/w1/s1", "messages/active.jsonl"), (t) => t.split("\n").map((line, i) => (i === 1 ? `xx${line}` : line)).join("\n"));
    // The same server under another name: this device sends the session whole again.
    const report = await syncStores({ local, remote: directRemote(server, { id: "again" }) });
    expect(report.conflicts.map((c) => [c.ref, c.reason])).toEqual([["a1/w1/s1", "corrupt"]]);
    expect(report.forks).toEqual([]);
    expect(await serverRefs(server)).toEqual(["a1/w1/s1"]);
  });

  it("a direct remote given anything but a store or a SyncServer is refused by name", () => {
    const sessions = new Sessions({ storage: new MemoryStorage() });
    for (const target of [sessions, "./backup", undefined]) {
      expect(() => directRemote(target as unknown as StoragePort)).toThrow(InvalidInputError);
    }
    expect(() => directRemote(sessions as unknown as StoragePort)).toThrow(/expected a store \(StoragePort\) or a SyncServer \(a Sessions: give its storage\)/);
  });

  it("refuses to sync a store with itself before anything is written", async () => {
    const storage = new MemoryStorage();
    const local = new Sessions({ storage });
    await seed(local, "a1/w1/s1", 1);
    await local.archive("a1/w1/s1");
    await expect(syncStores({ local, remote: directRemote(storage, { id: "self" }) })).rejects.toThrow(InvalidInputError);
    expect(await storage.read(syncStatePath("self"))).toBeUndefined();
    expect(await local.list()).toEqual([]);
  });

  it("a server copy of an unknown schema is that session's conflict in the pull, listed or logged; the others are pulled", async () => {
    const server = new MemoryStorage();
    const writer = new Sessions({ storage: new MemoryStorage() });
    for (const ref of ["a1/w1/newer", "a1/w1/ok"]) await seed(writer, ref, 2);
    await syncStores({ local: writer, remote: directRemote(server, { id: "server" }) });
    // A device that pulled both: its cursor is before the next change of "newer".
    const local = new Sessions({ storage: new MemoryStorage() });
    await syncStores({ local, remote: directRemote(server, { id: "server" }) });
    await (await writer.open("a1/w1/newer")).append({ role: "user", parts: [{ type: "text", text: "3" }] });
    await (await writer.open("a1/w1/ok")).append({ role: "user", parts: [{ type: "text", text: "3" }] });
    await syncStores({ local: writer, remote: directRemote(server, { id: "server" }) });
    // A newer sessionfold on the server's side rewrote "newer".
    await edit(server, sessionPath("a1/w1/newer", "meta.json"), (t) => t.replace(/"schema_version":\s*1/, '"schema_version":99'));
    const logged = await syncStores({ local, remote: directRemote(server, { id: "server" }) });
    expect(logged.conflicts.map((c) => [c.ref, c.reason])).toEqual([["a1/w1/newer", "unsupported-schema"]]);
    expect(logged.conflicts[0]!.message).toMatch(/^a1\/w1\/newer: the server's copy .*schema_version 99/);
    expect((await local.open("a1/w1/ok")).active.length).toBe(3);
    expect((await local.open("a1/w1/newer")).active.length).toBe(2);
    // A device new to the server: the scan names it too, and pulls the rest.
    const fresh = new Sessions({ storage: new MemoryStorage() });
    const listed = await syncStores({ local: fresh, remote: directRemote(server, { id: "server" }) });
    expect(listed.conflicts.map((c) => [c.ref, c.reason])).toEqual([["a1/w1/newer", "unsupported-schema"]]);
    expect((await fresh.list()).map((m) => m.session_id)).toEqual(["ok"]);
    // Runs until the server's copy is readable again name it each time; then it is pulled.
    expect((await syncStores({ local: fresh, remote: directRemote(server, { id: "server" }) })).conflicts.map((c) => c.ref)).toEqual(["a1/w1/newer"]);
    expect((await syncStores({ local, remote: directRemote(server, { id: "server" }) })).conflicts.map((c) => c.ref)).toEqual(["a1/w1/newer"]);
    await edit(server, sessionPath("a1/w1/newer", "meta.json"), (t) => t.replace('"schema_version":99', '"schema_version":1'));
    for (const device of [local, fresh]) {
      expect((await syncStores({ local: device, remote: directRemote(server, { id: "server" }) })).conflicts).toEqual([]);
      expect((await device.open("a1/w1/newer")).active.length).toBe(3);
    }
  });
});

describe("sync: a mutation larger than the server takes", () => {
  const servers: FetchServer[] = [];
  afterEach(async () => {
    for (const server of servers.splice(0)) await server.close();
  });

  /** A real sync server on loopback over `storage`, taking request bodies up to `maxBodyBytes`. */
  async function remoteOf(storage: StoragePort, maxBodyBytes?: number): Promise<SyncRemote> {
    const handler = createSyncHandler({
      storage,
      authorize: () => ({ user: "u", may: () => true }),
      basePath: "/sync",
      ...(maxBodyBytes ? { maxBodyBytes } : {}),
    });
    const server = await serveFetchHandler(handler);
    servers.push(server);
    return httpRemote({ url: `${server.url}/sync`, id: "server" });
  }

  async function writeLarge(sessions: Sessions, ref: string, bytes: number): Promise<void> {
    const session = await sessions.open(ref).catch(() => {
      const [agentId, workspaceId, sessionId] = ref.split("/") as [string, string, string];
      return sessions.create({ agentId, workspaceId, sessionId });
    });
    await session.append({ role: "user", parts: [{ type: "text", text: "x".repeat(bytes) }] });
  }

  it("over HTTP: the one session too large is its conflict naming the limit, the others sync; it goes once the limit is raised", async () => {
    const [device, server] = [new MemoryStorage(), new MemoryStorage()];
    const local = new Sessions({ storage: device });
    for (const ref of ["a1/w1/s1", "a1/w1/s2"]) await seed(local, ref, 2);
    await writeLarge(local, "a1/w1/big", 100_000);
    for (const ref of ["a1/w1/s3", "a1/w1/s4"]) await seed(local, ref, 2);
    const small = await remoteOf(server, 64 * 1024);
    const report = await syncStores({ local, remote: small });
    expect(report.conflicts).toEqual([{ ref: "a1/w1/big", reason: "too-large", message: expect.stringMatching(/^a1\/w1\/big: .*65536 bytes/) }]);
    expect(await serverRefs(server)).toEqual(["a1/w1/s1", "a1/w1/s2", "a1/w1/s3", "a1/w1/s4"]);
    expect((await stateOf(device)).pending).toEqual([]);
    // Known sessions too: a large message in one, small ones in others, in the same run.
    await writeLarge(local, "a1/w1/s2", 100_000);
    for (const ref of ["a1/w1/s1", "a1/w1/s3"]) await (await local.open(ref)).append({ role: "user", parts: [{ type: "text", text: "3" }] });
    const again = await syncStores({ local, remote: small });
    expect(again.conflicts.map((c) => [c.ref, c.reason]).sort()).toEqual([["a1/w1/big", "too-large"], ["a1/w1/s2", "too-large"]]);
    expect(await messageCount(server, "a1/w1/s1")).toBe(3);
    expect(await messageCount(server, "a1/w1/s3")).toBe(3);
    expect(await messageCount(server, "a1/w1/s2")).toBe(2);
    expect((await local.open("a1/w1/s2")).active.length).toBe(3);
    expect((await stateOf(device)).pending).toEqual([]);
    // The server's limit raised: the next run sends both.
    const next = await syncStores({ local, remote: await remoteOf(server) });
    expect(next.conflicts).toEqual([]);
    expect(await serverRefs(server)).toEqual(["a1/w1/big", "a1/w1/s1", "a1/w1/s2", "a1/w1/s3", "a1/w1/s4"]);
    expect(await messageCount(server, "a1/w1/s2")).toBe(3);
    expect((await stateOf(device)).pending).toEqual([]);
  });

  it("over HTTP: appends of many messages, each of which fits, stay within batchBytes: new and known sessions go, nothing refused", async () => {
    const [device, server] = [new MemoryStorage(), new MemoryStorage()];
    const local = new Sessions({ storage: device });
    await seed(local, "a1/w1/known", 1);
    const remote = await remoteOf(server, 64 * 1024);
    await syncStores({ local, remote });
    // 10 messages of 20 kB: one append of them (500 messages at most) would be over the server's 64 KiB.
    for (let i = 0; i < 10; i++) {
      await writeLarge(local, "a1/w1/known", 20_000);
      await writeLarge(local, "a1/w1/new", 20_000);
    }
    const report = await syncStores({ local, remote, batchBytes: 48 * 1024 });
    expect(report.conflicts).toEqual([]);
    expect(await messageCount(server, "a1/w1/known")).toBe(11);
    expect(await messageCount(server, "a1/w1/new")).toBe(10);
    expect((await stateOf(device)).pending).toEqual([]);
  });

  it("over HTTP: a new encrypted session larger than the limit goes in parts, each within it: a create_sealed, segments, append_sealeds", async () => {
    const provider = await newKeyring();
    const [device, server] = [await EncryptedStorage.create(new MemoryStorage(), provider), new MemoryStorage()];
    const local = new Sessions({ storage: device });
    const session = await local.create({ agentId: "a1", workspaceId: "w1", sessionId: "long" });
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 6; i++) await session.append({ role: "user", parts: [{ type: "text", text: `${round}.${i} ${"x".repeat(400)}` }] });
      await session.compact({ summarizer: new ExtractiveSummarizer() });
    }
    for (let i = 0; i < 6; i++) await session.append({ role: "user", parts: [{ type: "text", text: `after ${i} ${"y".repeat(400)}` }] });
    // The whole sealed history is over the server's limit; each segment, and a few messages, fit in it.
    const sealed = new TextDecoder().decode((await device.inner.read(`agents/a1/workspaces/w1/sessions/long/messages/active.jsonl`))!);
    expect(session.meta.history_bytes).toBeGreaterThan(16 * 1024);
    expect(sealed.length).toBeLessThan(16 * 1024);
    const report = await syncStores({ local, remote: await remoteOf(server, 16 * 1024), batchBytes: 6 * 1024, batchMessages: 4 });
    expect(report.conflicts).toEqual([]);
    const ids = (await local.open("a1/w1/long")).active.at(-1)!.sequence;
    expect(report.pushed).toBe(ids);
    // The server holds the same segments, and another device gets the same history.
    const segmentsDir = "agents/a1/workspaces/w1/sessions/long/messages/segments";
    const names = (await device.inner.list(segmentsDir)).sort();
    expect(names.length).toBe(3);
    expect((await server.list(segmentsDir)).sort()).toEqual(names);
    const other = new Sessions({ storage: await EncryptedStorage.create(new MemoryStorage(), provider) });
    expect((await syncStores({ local: other, remote: await remoteOf(server, 16 * 1024) })).conflicts).toEqual([]);
    const copy = await other.open("a1/w1/long");
    expect((await copy.segments()).length).toBe(3);
    expect(copy.active.map((m) => m.message_id)).toEqual(session.active.map((m) => m.message_id));
  });

  it("over HTTP: a batch over the limit whose mutations each fit is sent in smaller batches, nothing refused", async () => {
    const [device, server] = [new MemoryStorage(), new MemoryStorage()];
    const local = new Sessions({ storage: device });
    for (let i = 1; i <= 6; i++) await writeLarge(local, `a1/w1/s${i}`, 20_000);
    const report = await syncStores({ local, remote: await remoteOf(server, 64 * 1024) });
    expect(report.conflicts).toEqual([]);
    expect(report.pushed).toBe(6);
    expect((await serverRefs(server)).length).toBe(6);
    expect((await stateOf(device)).pending).toEqual([]);
  });
});
