/**
 * A device that writes to a session another device archived or deleted (docs/SYNC.md
 * "Archived sessions", "Deleted elsewhere"): the server never holds a second copy at an
 * archived ref, a tail written after the archive becomes a fork, a tombstone never deletes
 * messages the remote never acknowledged, and each session is one conflict per run. Through a
 * direct remote and a real HTTP server on loopback over a folder, devices in folders.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { EncryptedStorage, MemoryStorage, Sessions, type StoragePort } from "../../core/mod.ts";
import { createSyncHandler, directRemote, httpRemote, type SyncRemote, syncStores } from "../../core/sync/mod.ts";
import { NodeFileStorage, serveFetchHandler } from "../../runtime-node/mod.ts";
import { newKeyring } from "./encrypted-pair.ts";

interface Pair {
  readonly server: StoragePort;
  /** The remote under the name `id` in a device's sync state ("server" by default). */
  remote(id?: string): SyncRemote;
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function folder(): Promise<StoragePort> {
  const dir = await mkdtemp(join(tmpdir(), "sessionfold-removed-"));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return new NodeFileStorage({ root: dir });
}

const pairs: [string, () => Promise<Pair>][] = [
  ["a direct remote", () => {
    const server = new MemoryStorage();
    return Promise.resolve({ server, remote: (id = "server") => directRemote(server, { id }) });
  }],
  ["a real HTTP server on loopback over a folder", async () => {
    const server = await folder();
    const handler = createSyncHandler({ storage: server, authorize: () => ({ user: "u", may: () => true }), basePath: "/sync" });
    const loopback = await serveFetchHandler(handler);
    cleanups.push(() => loopback.close());
    return { server, remote: (id = "server") => httpRemote({ url: `${loopback.url}/sync`, id }) };
  }],
];

/** A device in a folder; with a key provider, an encrypted store. */
async function device(provider?: Parameters<typeof EncryptedStorage.create>[1]): Promise<Sessions> {
  return new Sessions({ storage: provider ? await EncryptedStorage.create(await folder(), provider) : await folder() });
}

async function write(sessions: Sessions, ref: string, text: string): Promise<void> {
  await (await sessions.open(ref)).append({ role: "user", parts: [{ type: "text", text }] });
}

async function texts(sessions: Sessions, ref: string, archived = false): Promise<string[]> {
  const session = await sessions.open(ref, { archived });
  return session.active.map((m) => (m.parts[0] as { text: string }).text);
}

async function refs(sessions: Sessions, archived = false): Promise<string[]> {
  return (await sessions.list({ archived })).map((m) => `${m.agent_id}/${m.workspace_id}/${m.session_id}`).sort();
}

/** Devices A and B share `a/w/s5` with the message "first". */
async function shared(pair: Pair, provider?: Parameters<typeof EncryptedStorage.create>[1]): Promise<{ a: Sessions; b: Sessions }> {
  const [a, b] = [await device(provider), await device(provider)];
  await a.create({ agentId: "a", workspaceId: "w", sessionId: "s5", title: "shared" });
  await write(a, "a/w/s5", "first");
  await syncStores({ local: a, remote: pair.remote() });
  await syncStores({ local: b, remote: pair.remote() });
  return { a, b };
}

/** `shared`, then B archives or deletes `a/w/s5` and syncs. */
async function removedOnB(pair: Pair, removal: "archive" | "delete"): Promise<{ a: Sessions; b: Sessions }> {
  const { a, b } = await shared(pair);
  await (removal === "archive" ? b.archive("a/w/s5") : b.delete("a/w/s5"));
  await syncStores({ local: b, remote: pair.remote() });
  return { a, b };
}

for (const [name, pairOf] of pairs) {
  describe(`sync with a session removed elsewhere, through ${name}`, () => {
    for (const encrypted of [false, true]) {
      it(`the report counts the deletes and archives pushed and pulled${encrypted ? " (encrypted devices)" : ""}`, async () => {
        const pair = await pairOf();
        const { a, b } = await shared(pair, encrypted ? await newKeyring() : undefined);
        await a.create({ agentId: "a", workspaceId: "w", sessionId: "s6" });
        await write(a, "a/w/s6", "to delete");
        await syncStores({ local: a, remote: pair.remote() });
        await syncStores({ local: b, remote: pair.remote() });
        await a.archive("a/w/s5");
        await a.delete("a/w/s6");
        const pushed = await syncStores({ local: a, remote: pair.remote() });
        expect([pushed.pushed, pushed.deletes, pushed.archives]).toEqual([0, { pushed: 1, pulled: 0 }, { pushed: 1, pulled: 0 }]);
        const pulled = await syncStores({ local: b, remote: pair.remote() });
        expect([pulled.pulled, pulled.deletes, pulled.archives]).toEqual([0, { pushed: 0, pulled: 1 }, { pushed: 0, pulled: 1 }]);
        expect([await refs(b), await refs(b, true)]).toEqual([[], ["a/w/s5"]]);
        // Nothing more to say: neither counts again.
        for (const device of [a, b]) {
          const again = await syncStores({ local: device, remote: pair.remote() });
          expect([again.deletes, again.archives]).toEqual([{ pushed: 0, pulled: 0 }, { pushed: 0, pulled: 0 }]);
        }
      });
    }

    for (const encrypted of [false, true]) {
      it(`a tail written after another device archived the session becomes a fork; the server holds the ref archived only${encrypted ? " (encrypted devices)" : ""}`, async () => {
        const pair = await pairOf();
        const { a, b } = await shared(pair, encrypted ? await newKeyring() : undefined);
        await b.archive("a/w/s5");
        expect((await syncStores({ local: b, remote: pair.remote() })).conflicts).toEqual([]);
        await write(a, "a/w/s5", "A wrote after B archived");
        const report = await syncStores({ local: a, remote: pair.remote() });
        expect(report.conflicts).toEqual([]);
        expect(report.forks).toEqual([{ ref: "a/w/s5", forked_as: expect.stringMatching(/^a\/w\/s5\.fork-/), at_sequence: 1 }]);
        const forkRef = report.forks[0]!.forked_as;
        const server = new Sessions({ storage: pair.server });
        expect(await refs(server)).toEqual([forkRef]);
        expect(await refs(server, true)).toEqual(["a/w/s5"]);
        if (!encrypted) expect(await texts(server, forkRef)).toEqual(["first", "A wrote after B archived"]);
        expect((await a.open(forkRef)).meta.forked_from).toEqual({ session_id: "s5", through_sequence: 1 });
        // A ends as the server: the session archived as it was, the tail in the fork.
        expect(await texts(a, "a/w/s5", true)).toEqual(["first"]);
        expect(await texts(a, forkRef)).toEqual(["first", "A wrote after B archived"]);
        // B syncs on and gets the fork; neither device has anything left to say.
        const onB = await syncStores({ local: b, remote: pair.remote() });
        expect(onB.conflicts).toEqual([]);
        expect(await texts(b, forkRef)).toEqual(["first", "A wrote after B archived"]);
        const again = await syncStores({ local: a, remote: pair.remote() });
        expect([again.conflicts, again.pushed, again.forks]).toEqual([[], 0, []]);
      });
    }

    it("a device that archived a session offline while another wrote to it ends with the whole session archived", async () => {
      const pair = await pairOf();
      const { a, b } = await shared(pair);
      await write(a, "a/w/s5", "A wrote before the archive arrived");
      await b.archive("a/w/s5");
      await syncStores({ local: a, remote: pair.remote() });
      const report = await syncStores({ local: b, remote: pair.remote() });
      expect(report.conflicts).toEqual([]);
      expect(await texts(b, "a/w/s5", true)).toEqual(["first", "A wrote before the archive arrived"]);
      expect(await refs(new Sessions({ storage: pair.server }), true)).toEqual(["a/w/s5"]);
      expect((await syncStores({ local: a, remote: pair.remote() })).conflicts).toEqual([]);
      expect(await texts(a, "a/w/s5", true)).toEqual(["first", "A wrote before the archive arrived"]);
    });

    it("a create at a ref the server holds archived is refused, naming it: no second copy, the device's own session kept", async () => {
      const pair = await pairOf();
      await removedOnB(pair, "archive");
      // Another device made a session of its own at that ref.
      const c = await device();
      await c.create({ agentId: "a", workspaceId: "w", sessionId: "s5" });
      await write(c, "a/w/s5", "C's own session");
      for (let run = 0; run < 2; run++) {
        const report = await syncStores({ local: c, remote: pair.remote() });
        expect(report.conflicts).toEqual([{ ref: "a/w/s5", reason: "deleted", message: expect.stringContaining("a/w/s5") }]);
        expect(await refs(new Sessions({ storage: pair.server }))).toEqual([]);
        expect(await texts(c, "a/w/s5")).toEqual(["C's own session"]);
      }
    });

    it("a create of the archived session itself (a device's sync state begun anew) is acknowledged, not refused", async () => {
      const pair = await pairOf();
      const { a, b } = await removedOnB(pair, "archive");
      // Under another name, B's state is new: it sends its archived session whole, as a create and an archive.
      const report = await syncStores({ local: b, remote: pair.remote("again") });
      expect([report.conflicts, report.forks]).toEqual([[], []]);
      expect(await refs(new Sessions({ storage: pair.server }))).toEqual([]);
      expect(await texts(new Sessions({ storage: pair.server }), "a/w/s5", true)).toEqual(["first"]);
      expect((await syncStores({ local: a, remote: pair.remote() })).conflicts).toEqual([]);
    });

    it("a message written after another device deleted the session is kept, once a conflict per run, until the user forks it", async () => {
      const pair = await pairOf();
      const { a } = await removedOnB(pair, "delete");
      await write(a, "a/w/s5", "A wrote after B deleted");
      for (let run = 0; run < 2; run++) {
        const report = await syncStores({ local: a, remote: pair.remote() });
        expect(report.conflicts).toEqual([{ ref: "a/w/s5", reason: "deleted", message: expect.stringContaining("kept as it is") }]);
        expect(await texts(a, "a/w/s5")).toEqual(["first", "A wrote after B deleted"]);
      }
      // The way out: a fork under a new id syncs, and the delete of the old copy here is the remote's own.
      await a.fork("a/w/s5", "s5-kept");
      await a.delete("a/w/s5");
      const report = await syncStores({ local: a, remote: pair.remote() });
      expect(report.conflicts).toEqual([]);
      expect(await texts(new Sessions({ storage: pair.server }), "a/w/s5-kept")).toEqual(["first", "A wrote after B deleted"]);
      expect((await syncStores({ local: a, remote: pair.remote() })).conflicts).toEqual([]);
    });

    it("a new session at a deleted ref is one conflict per run, never deleted by the tombstone", async () => {
      const pair = await pairOf();
      const { a } = await removedOnB(pair, "delete");
      await syncStores({ local: a, remote: pair.remote() });
      expect(await refs(a)).toEqual([]);
      await a.create({ agentId: "a", workspaceId: "w", sessionId: "s5", title: "brand new" });
      await write(a, "a/w/s5", "new important text");
      for (let run = 0; run < 3; run++) {
        const report = await syncStores({ local: a, remote: pair.remote() });
        expect(report.conflicts.map((c) => [c.ref, c.reason])).toEqual([["a/w/s5", "deleted"]]);
        expect(await texts(a, "a/w/s5")).toEqual(["new important text"]);
      }
    });
  });
}
